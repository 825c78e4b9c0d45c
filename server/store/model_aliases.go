package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// ModelAlias is a name routed to catalog models; WorkspaceID is nil for an
// organization's alias. Targets is the canonical JSON of its targets.
type ModelAlias struct {
	bun.BaseModel `bun:"table:model_aliases"`

	ID          uuid.UUID  `bun:"id,pk,type:uuid"`
	OrgID       uuid.UUID  `bun:"org_id,type:uuid"`
	WorkspaceID *uuid.UUID `bun:"workspace_id,type:uuid"`
	Name        string     `bun:"name"`
	Targets     string     `bun:"targets"`
	CreatedAt   time.Time  `bun:"created_at"`
	UpdatedAt   time.Time  `bun:"updated_at"`
}

// AliasScope is where aliases live: an organization, or one of its
// workspaces.
type AliasScope struct {
	OrgID       uuid.UUID
	WorkspaceID *uuid.UUID
}

func (sc AliasScope) where(q *bun.SelectQuery) *bun.SelectQuery {
	q = q.Where("org_id = ?", sc.OrgID)
	if sc.WorkspaceID == nil {
		return q.Where("workspace_id IS NULL")
	}
	return q.Where("workspace_id = ?", *sc.WorkspaceID)
}

// CreateModelAlias inserts an alias; a name taken at its level is
// ErrConflict.
func (s *Store) CreateModelAlias(ctx context.Context, a *ModelAlias) error {
	_, err := s.db.NewInsert().Model(a).Exec(ctx)
	return mapErr(err)
}

// GetModelAlias finds an alias of the scope by name.
func (s *Store) GetModelAlias(ctx context.Context, sc AliasScope, name string) (*ModelAlias, error) {
	a := new(ModelAlias)
	err := sc.where(s.db.NewSelect().Model(a)).Where("name = ?", name).Scan(ctx)
	return a, mapErr(err)
}

// ListModelAliases returns the scope's aliases by name.
func (s *Store) ListModelAliases(ctx context.Context, sc AliasScope) ([]ModelAlias, error) {
	out := []ModelAlias{}
	err := sc.where(s.db.NewSelect().Model(&out)).OrderExpr("name ASC").Scan(ctx)
	return out, mapErr(err)
}

// ModelAliasesForOrg returns every alias of an organization, its
// workspaces' included.
func (s *Store) ModelAliasesForOrg(ctx context.Context, orgID uuid.UUID) ([]ModelAlias, error) {
	out := []ModelAlias{}
	err := s.db.NewSelect().Model(&out).Where("org_id = ?", orgID).OrderExpr("id ASC").Scan(ctx)
	return out, mapErr(err)
}

// UpdateModelAlias writes targets and updated_at.
func (s *Store) UpdateModelAlias(ctx context.Context, a *ModelAlias) error {
	_, err := s.db.NewUpdate().Model(a).Column("targets", "updated_at").WherePK().Exec(ctx)
	return mapErr(err)
}

// DeleteModelAlias removes an alias.
func (s *Store) DeleteModelAlias(ctx context.Context, id uuid.UUID) error {
	res, err := s.db.NewDelete().Model((*ModelAlias)(nil)).Where("id = ?", id).Exec(ctx)
	return affectedOne(res, err)
}
