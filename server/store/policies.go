package store

import (
	"context"

	"github.com/google/uuid"
)

// CreatePolicy inserts a policy; a name taken in the workspace is ErrConflict.
func (s *Store) CreatePolicy(ctx context.Context, p *Policy) error {
	_, err := s.db.NewInsert().Model(p).Exec(ctx)
	return mapErr(err)
}

// GetPolicy finds a workspace's policy by id.
func (s *Store) GetPolicy(ctx context.Context, wsID, id uuid.UUID) (*Policy, error) {
	p := new(Policy)
	err := s.db.NewSelect().Model(p).Where("workspace_id = ?", wsID).Where("id = ?", id).Scan(ctx)
	return p, mapErr(err)
}

// ListPolicies returns a workspace's policies, oldest first.
func (s *Store) ListPolicies(ctx context.Context, wsID uuid.UUID) ([]Policy, error) {
	out := []Policy{}
	err := s.db.NewSelect().Model(&out).Where("workspace_id = ?", wsID).OrderExpr("created_at ASC, id ASC").Scan(ctx)
	return out, mapErr(err)
}

// EnabledPoliciesForOrg returns the enabled policies of an organization.
func (s *Store) EnabledPoliciesForOrg(ctx context.Context, orgID uuid.UUID) ([]Policy, error) {
	out := []Policy{}
	err := s.db.NewSelect().Model(&out).Where("org_id = ?", orgID).Where("enabled").OrderExpr("id ASC").Scan(ctx)
	return out, mapErr(err)
}

// UpdatePolicy writes name, enabled, definition and updated_at.
func (s *Store) UpdatePolicy(ctx context.Context, p *Policy) error {
	_, err := s.db.NewUpdate().Model(p).Column("name", "enabled", "definition", "updated_at").WherePK().Exec(ctx)
	return mapErr(err)
}

// DeletePolicy removes a policy.
func (s *Store) DeletePolicy(ctx context.Context, id uuid.UUID) error {
	res, err := s.db.NewDelete().Model((*Policy)(nil)).Where("id = ?", id).Exec(ctx)
	return affectedOne(res, err)
}
