package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// CreateProviderCredential inserts a credential.
func (s *Store) CreateProviderCredential(ctx context.Context, c *ProviderCredential) error {
	_, err := s.db.NewInsert().Model(c).Exec(ctx)
	return mapErr(err)
}

// GetProviderCredential finds a credential by id.
func (s *Store) GetProviderCredential(ctx context.Context, id uuid.UUID) (*ProviderCredential, error) {
	c := new(ProviderCredential)
	return c, mapErr(s.db.NewSelect().Model(c).Where("id = ?", id).Scan(ctx))
}

// CredentialScope selects credentials of exactly one scope: platform (both
// nil), organization (OrgID only) or workspace (both).
type CredentialScope struct {
	OrgID, WorkspaceID *uuid.UUID
}

// ListProviderCredentials lists the credentials of exactly one scope.
func (s *Store) ListProviderCredentials(ctx context.Context, sc CredentialScope) ([]ProviderCredential, error) {
	out := []ProviderCredential{}
	q := s.db.NewSelect().Model(&out)
	q = whereScope(q, sc)
	return out, mapErr(q.OrderExpr("created_at ASC, id ASC").Scan(ctx))
}

func whereScope(q *bun.SelectQuery, sc CredentialScope) *bun.SelectQuery {
	if sc.OrgID == nil {
		q = q.Where("org_id IS NULL")
	} else {
		q = q.Where("org_id = ?", *sc.OrgID)
	}
	if sc.WorkspaceID == nil {
		return q.Where("workspace_id IS NULL")
	}
	return q.Where("workspace_id = ?", *sc.WorkspaceID)
}

// ListAllProviderCredentials returns every credential (for re-sealing).
func (s *Store) ListAllProviderCredentials(ctx context.Context) ([]ProviderCredential, error) {
	out := []ProviderCredential{}
	return out, mapErr(s.db.NewSelect().Model(&out).OrderExpr("id ASC").Scan(ctx))
}

// CredentialsForOrg returns the platform credentials and every credential
// of the organization and its workspaces (what its bundle may reference).
func (s *Store) CredentialsForOrg(ctx context.Context, orgID uuid.UUID) ([]ProviderCredential, error) {
	out := []ProviderCredential{}
	err := s.db.NewSelect().Model(&out).Where("org_id IS NULL OR org_id = ?", orgID).OrderExpr("id ASC").Scan(ctx)
	return out, mapErr(err)
}

// UpdateProviderCredential writes the mutable fields.
func (s *Store) UpdateProviderCredential(ctx context.Context, c *ProviderCredential) error {
	_, err := s.db.NewUpdate().Model(c).Column("label", "base_url", "secret_sealed", "secret_hint", "settings", "updated_at").WherePK().Exec(ctx)
	return mapErr(err)
}

// DeleteProviderCredential removes a credential.
func (s *Store) DeleteProviderCredential(ctx context.Context, id uuid.UUID) error {
	res, err := s.db.NewDelete().Model((*ProviderCredential)(nil)).Where("id = ?", id).Exec(ctx)
	return affectedOne(res, err)
}

// CountCredentialsOnCatalogURL counts the credentials of a provider, at
// every scope, that have no base URL of their own and so send their
// secret to wherever the catalog says the provider is.
func (s *Store) CountCredentialsOnCatalogURL(ctx context.Context, provider string) (int, error) {
	n, err := s.db.NewSelect().Model((*ProviderCredential)(nil)).Where("provider = ?", provider).
		Where("base_url IS NULL").Count(ctx)
	return int(n), mapErr(err)
}
