package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Guardrail is a guardrail (issue 32); WorkspaceID is nil for an
// organization's, which applies to every workspace. Definition is its
// JSON (backend.GuardrailDefinition), webhook secrets sealed within.
type Guardrail struct {
	bun.BaseModel `bun:"table:guardrails"`

	ID          uuid.UUID  `bun:"id,pk,type:uuid"`
	OrgID       uuid.UUID  `bun:"org_id,type:uuid"`
	WorkspaceID *uuid.UUID `bun:"workspace_id,type:uuid"`
	Name        string     `bun:"name"`
	Enabled     bool       `bun:"enabled"`
	Definition  string     `bun:"definition"`
	CreatedAt   time.Time  `bun:"created_at"`
	UpdatedAt   time.Time  `bun:"updated_at"`
}

// CreateGuardrail inserts a guardrail; a name taken at its level is
// ErrConflict.
func (s *Store) CreateGuardrail(ctx context.Context, g *Guardrail) error {
	_, err := s.db.NewInsert().Model(g).Exec(ctx)
	return mapErr(err)
}

// GetGuardrail finds a guardrail of exactly the scope by id.
func (s *Store) GetGuardrail(ctx context.Context, sc AliasScope, id uuid.UUID) (*Guardrail, error) {
	g := new(Guardrail)
	err := sc.where(s.db.NewSelect().Model(g)).Where("id = ?", id).Scan(ctx)
	return g, mapErr(err)
}

// ListGuardrails returns the scope's guardrails by name.
func (s *Store) ListGuardrails(ctx context.Context, sc AliasScope) ([]Guardrail, error) {
	out := []Guardrail{}
	err := sc.where(s.db.NewSelect().Model(&out)).OrderExpr("name ASC").Scan(ctx)
	return out, mapErr(err)
}

// GuardrailsForOrg returns every guardrail of an organization, its
// workspaces' included, by id.
func (s *Store) GuardrailsForOrg(ctx context.Context, orgID uuid.UUID) ([]Guardrail, error) {
	out := []Guardrail{}
	err := s.db.NewSelect().Model(&out).Where("org_id = ?", orgID).OrderExpr("id ASC").Scan(ctx)
	return out, mapErr(err)
}

// UpdateGuardrail writes name, enabled, definition and updated_at.
func (s *Store) UpdateGuardrail(ctx context.Context, g *Guardrail) error {
	_, err := s.db.NewUpdate().Model(g).Column("name", "enabled", "definition", "updated_at").WherePK().Exec(ctx)
	return mapErr(err)
}

// DeleteGuardrail removes a guardrail.
func (s *Store) DeleteGuardrail(ctx context.Context, id uuid.UUID) error {
	res, err := s.db.NewDelete().Model((*Guardrail)(nil)).Where("id = ?", id).Exec(ctx)
	return affectedOne(res, err)
}
