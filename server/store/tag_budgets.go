package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// TagBudget links a policy to the tag whose keys its selected_keys target
// follows (issue 21).
type TagBudget struct {
	bun.BaseModel `bun:"table:tag_budgets"`

	PolicyID    uuid.UUID `bun:"policy_id,pk,type:uuid"`
	OrgID       uuid.UUID `bun:"org_id,type:uuid"`
	WorkspaceID uuid.UUID `bun:"workspace_id,type:uuid"`
	TagKey      string    `bun:"tag_key"`
	TagValue    string    `bun:"tag_value"`
	CreatedAt   time.Time `bun:"created_at"`
}

// CreateTagBudget inserts a link.
func (s *Store) CreateTagBudget(ctx context.Context, b *TagBudget) error {
	_, err := s.db.NewInsert().Model(b).Exec(ctx)
	return mapErr(err)
}

// ListOrgTagBudgets returns an organization's links, by policy id.
func (s *Store) ListOrgTagBudgets(ctx context.Context, orgID uuid.UUID) ([]TagBudget, error) {
	out := []TagBudget{}
	err := s.db.NewSelect().Model(&out).Where("org_id = ?", orgID).OrderExpr("policy_id ASC").Scan(ctx)
	return out, mapErr(err)
}

// ListTagBudgets returns a workspace's links, oldest first.
func (s *Store) ListTagBudgets(ctx context.Context, wsID uuid.UUID) ([]TagBudget, error) {
	out := []TagBudget{}
	err := s.db.NewSelect().Model(&out).Where("workspace_id = ?", wsID).OrderExpr("created_at ASC, policy_id ASC").Scan(ctx)
	return out, mapErr(err)
}
