package store

import (
	"context"

	"github.com/google/uuid"
)

// InsertAuditEvent records one mutation.
func (s *Store) InsertAuditEvent(ctx context.Context, e *AuditEvent) error {
	_, err := s.db.NewInsert().Model(e).Exec(ctx)
	return mapErr(err)
}

// ListAuditEvents pages through audit events, newest first; orgID narrows
// to one organization.
func (s *Store) ListAuditEvents(ctx context.Context, orgID *uuid.UUID, p PageQuery) ([]AuditEvent, *PageKey, error) {
	var out []AuditEvent
	q := s.db.NewSelect().Model(&out)
	if orgID != nil {
		q = q.Where("org_id = ?", *orgID)
	}
	if err := paginate(q, p, true).Scan(ctx); err != nil {
		return nil, nil, mapErr(err)
	}
	items, next := trimPage(out, p.Limit, func(e AuditEvent) PageKey { return PageKey{e.CreatedAt, e.ID} })
	return items, next, nil
}
