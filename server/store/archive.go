package store

import (
	"context"

	"github.com/google/uuid"
)

// GetUsageEvent is the organization's usage event id (ErrNotFound when it
// has none of that id: another organization's answers as unknown).
func (s *Store) GetUsageEvent(ctx context.Context, orgID, id uuid.UUID) (*UsageEvent, error) {
	e := new(UsageEvent)
	err := s.db.NewSelect().Model(e).Where("id = ?", id).Where("org_id = ?", orgID).Scan(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	return e, nil
}

// ArchivingWorkspaces are the workspaces, of every organization, with an
// archive setting (for the retention sweeper).
func (s *Store) ArchivingWorkspaces(ctx context.Context) ([]Workspace, error) {
	var out []Workspace
	err := s.db.NewSelect().Model(&out).Where("archive IS NOT NULL").Order("id").Scan(ctx)
	return out, mapErr(err)
}
