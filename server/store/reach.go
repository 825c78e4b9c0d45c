package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// BundleVersions maps each of orgs that has a bundle to its latest
// version, without reading the bundles themselves.
func (s *Store) BundleVersions(ctx context.Context, orgs []uuid.UUID) (map[uuid.UUID]int64, error) {
	out := make(map[uuid.UUID]int64, len(orgs))
	if len(orgs) == 0 {
		return out, nil
	}
	var rows []Bundle
	if err := s.db.NewSelect().Model(&rows).Column("org_id", "version").Where("org_id IN (?)", bun.List(orgs)).Scan(ctx); err != nil {
		return nil, mapErr(err)
	}
	for _, b := range rows {
		out[b.OrgID] = b.Version
	}
	return out, nil
}

// ExistingOrganizations returns those of ids that name an organization.
func (s *Store) ExistingOrganizations(ctx context.Context, ids []uuid.UUID) ([]uuid.UUID, error) {
	var out []uuid.UUID
	if len(ids) == 0 {
		return out, nil
	}
	err := s.db.NewSelect().Model((*Organization)(nil)).Column("id").Where("id IN (?)", bun.List(ids)).OrderExpr("id ASC").Scan(ctx, &out)
	return out, mapErr(err)
}
