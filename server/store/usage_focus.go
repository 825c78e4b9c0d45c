package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// usageExportPage is how many events UsageEventsForExport reads at a time.
var usageExportPage = 5000

// UsageEventsForExport reads the events of an organization (of one
// workspace, with ws) that occurred in [from, to), oldest first, in pages
// of usageExportPage (5000) passed to fn, with the columns a cost export needs:
// the FOCUS export folds them into charges as they come, so a long window
// never holds its events in memory at once.
func (s *Store) UsageEventsForExport(ctx context.Context, org uuid.UUID, ws *uuid.UUID, from, to time.Time, fn func([]UsageEvent) error) error {
	var after *PageKey
	for {
		page := make([]UsageEvent, 0, usageExportPage)
		q := s.db.NewSelect().Model(&page).
			Column("id", "org_id", "workspace_id", "model", "provider", "input_tokens", "output_tokens", "cache_read_tokens",
				"cache_write_tokens", "reasoning_tokens", "cache_write_1h_tokens", "cost_nano_usd", "occurred_at", "provenance", "provenance_id", "tags").
			Where("org_id = ?", org).Where("occurred_at >= ?", from.UTC()).Where("occurred_at < ?", to.UTC())
		if ws != nil {
			q = q.Where("workspace_id = ?", *ws)
		}
		if after != nil {
			q = q.Where("(occurred_at > ? OR (occurred_at = ? AND id > ?))", after.CreatedAt, after.CreatedAt, after.ID)
		}
		if err := q.OrderExpr("occurred_at ASC, id ASC").Limit(int64(usageExportPage)).Scan(ctx); err != nil {
			return mapErr(err)
		}
		if len(page) == 0 {
			return nil
		}
		if err := withProvenances(ctx, s.db, org, page); err != nil {
			return err
		}
		if err := fn(page); err != nil {
			return err
		}
		if len(page) < usageExportPage {
			return nil
		}
		last := page[len(page)-1]
		after = &PageKey{CreatedAt: last.OccurredAt, ID: last.ID}
	}
}
