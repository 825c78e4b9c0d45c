package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// UsageEventsForExport reads the events of an organization (of one
// workspace, with ws) that occurred in [from, to), oldest first, with the
// columns a cost export needs: the FOCUS export folds them into charges.
// The window is bounded by its caller (a custom report period).
func (s *Store) UsageEventsForExport(ctx context.Context, org uuid.UUID, ws *uuid.UUID, from, to time.Time) ([]UsageEvent, error) {
	out := []UsageEvent{}
	q := s.db.NewSelect().Model(&out).
		Column("id", "org_id", "workspace_id", "model", "provider", "input_tokens", "output_tokens", "cache_read_tokens",
			"cache_write_tokens", "reasoning_tokens", "cache_write_1h_tokens", "cost_nano_usd", "occurred_at", "provenance", "tags").
		Where("org_id = ?", org).Where("occurred_at >= ?", from.UTC()).Where("occurred_at < ?", to.UTC())
	if ws != nil {
		q = q.Where("workspace_id = ?", *ws)
	}
	return out, mapErr(q.OrderExpr("occurred_at ASC, id ASC").Scan(ctx))
}
