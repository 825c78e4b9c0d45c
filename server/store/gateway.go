package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// SetBundleSigningKey stores the signing key pair once; a replica that
// loses the race keeps the winner's pair (the update is conditional).
func (s *Store) SetBundleSigningKey(ctx context.Context, public, privateSealed string) error {
	_, err := s.db.NewUpdate().Model((*InstanceState)(nil)).
		Set("bundle_public_key = ?", public).Set("bundle_private_key_sealed = ?", privateSealed).
		Where("id = 1").Where("bundle_public_key IS NULL").Exec(ctx)
	return mapErr(err)
}

// ReplaceBundlePrivateKey re-seals the private key (secret key rotation).
func (s *Store) ReplaceBundlePrivateKey(ctx context.Context, privateSealed string) error {
	_, err := s.db.NewUpdate().Model((*InstanceState)(nil)).Set("bundle_private_key_sealed = ?", privateSealed).Where("id = 1").Exec(ctx)
	return mapErr(err)
}

// ListCatalogProviders returns every provider, by id.
func (s *Store) ListCatalogProviders(ctx context.Context) ([]CatalogProvider, error) {
	out := []CatalogProvider{}
	return out, mapErr(s.db.NewSelect().Model(&out).OrderExpr("id ASC").Scan(ctx))
}

// ListCatalogModels returns every model, by id.
func (s *Store) ListCatalogModels(ctx context.Context) ([]CatalogModel, error) {
	out := []CatalogModel{}
	return out, mapErr(s.db.NewSelect().Model(&out).OrderExpr("id ASC").Scan(ctx))
}

// UpsertCatalogProvider inserts or replaces a provider.
func (s *Store) UpsertCatalogProvider(ctx context.Context, p *CatalogProvider) error {
	_, err := s.db.NewInsert().Model(p).
		On("CONFLICT (id) DO UPDATE").
		Set("name = EXCLUDED.name, kind = EXCLUDED.kind, base_url = EXCLUDED.base_url, retired_at = EXCLUDED.retired_at, updated_at = EXCLUDED.updated_at").
		Exec(ctx)
	return mapErr(err)
}

// UpsertCatalogModel inserts or replaces a model.
func (s *Store) UpsertCatalogModel(ctx context.Context, m *CatalogModel) error {
	_, err := s.db.NewInsert().Model(m).
		On("CONFLICT (id) DO UPDATE").
		Set("provider = EXCLUDED.provider, name = EXCLUDED.name, context_window = EXCLUDED.context_window, " +
			"max_output_tokens = EXCLUDED.max_output_tokens, input_per_mtok = EXCLUDED.input_per_mtok, " +
			"output_per_mtok = EXCLUDED.output_per_mtok, cache_read_per_mtok = EXCLUDED.cache_read_per_mtok, " +
			"cache_write_per_mtok = EXCLUDED.cache_write_per_mtok, capabilities = EXCLUDED.capabilities, " +
			"modalities = EXCLUDED.modalities, released = EXCLUDED.released, retired_at = EXCLUDED.retired_at, " +
			"updated_at = EXCLUDED.updated_at").
		Exec(ctx)
	return mapErr(err)
}

// CountCatalogProviders counts providers (to seed an empty catalog).
func (s *Store) CountCatalogProviders(ctx context.Context) (int, error) {
	n, err := s.db.NewSelect().Model((*CatalogProvider)(nil)).Count(ctx)
	return int(n), mapErr(err)
}

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
	_, err := s.db.NewUpdate().Model(c).Column("label", "base_url", "secret_sealed", "secret_hint", "updated_at").WherePK().Exec(ctx)
	return mapErr(err)
}

// DeleteProviderCredential removes a credential.
func (s *Store) DeleteProviderCredential(ctx context.Context, id uuid.UUID) error {
	res, err := s.db.NewDelete().Model((*ProviderCredential)(nil)).Where("id = ?", id).Exec(ctx)
	return affectedOne(res, err)
}

// CreateInferenceKey inserts an inference key.
func (s *Store) CreateInferenceKey(ctx context.Context, k *InferenceKey) error {
	_, err := s.db.NewInsert().Model(k).Exec(ctx)
	return mapErr(err)
}

// GetInferenceKey finds a workspace's inference key by id.
func (s *Store) GetInferenceKey(ctx context.Context, wsID, id uuid.UUID) (*InferenceKey, error) {
	k := new(InferenceKey)
	err := s.db.NewSelect().Model(k).Where("workspace_id = ?", wsID).Where("id = ?", id).Scan(ctx)
	return k, mapErr(err)
}

// ListInferenceKeys returns a workspace's inference keys, oldest first.
func (s *Store) ListInferenceKeys(ctx context.Context, wsID uuid.UUID) ([]InferenceKey, error) {
	out := []InferenceKey{}
	err := s.db.NewSelect().Model(&out).Where("workspace_id = ?", wsID).OrderExpr("created_at ASC, id ASC").Scan(ctx)
	return out, mapErr(err)
}

// ActiveInferenceKeysForOrg returns the organization's unrevoked keys whose
// owners are active members (a removed or suspended member's keys stop).
func (s *Store) ActiveInferenceKeysForOrg(ctx context.Context, orgID uuid.UUID) ([]InferenceKey, error) {
	out := []InferenceKey{}
	active := s.db.NewSelect().Model((*Membership)(nil)).Column("user_id").Where("org_id = ?", orgID).Where("status = 'active'")
	err := s.db.NewSelect().Model(&out).Where("org_id = ?", orgID).Where("revoked_at IS NULL").
		Where("user_id IN (?)", active).OrderExpr("id ASC").Scan(ctx)
	return out, mapErr(err)
}

// RevokeInferenceKey sets revoked_at once and reports whether this call
// did (idempotent; concurrent revokes agree on one time).
func (s *Store) RevokeInferenceKey(ctx context.Context, id uuid.UUID, at time.Time) (bool, error) {
	res, err := s.db.NewUpdate().Model((*InferenceKey)(nil)).Set("revoked_at = ?", at).Set("updated_at = ?", at).
		Where("id = ?", id).Where("revoked_at IS NULL").Exec(ctx)
	return rowsChanged(res, err)
}

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

// GetBundle reads an organization's latest bundle.
func (s *Store) GetBundle(ctx context.Context, orgID uuid.UUID) (*Bundle, error) {
	b := new(Bundle)
	return b, mapErr(s.db.NewSelect().Model(b).Where("org_id = ?", orgID).Scan(ctx))
}

// SaveBundle stores a newly compiled bundle unless the stored one's version
// is already b's or later, and reports whether it stored it: version only
// moves forward, and a compiler that loses a race learns it and starts over.
func (s *Store) SaveBundle(ctx context.Context, b *Bundle) (bool, error) {
	res, err := s.db.NewInsert().Model(b).
		On("CONFLICT (org_id) DO UPDATE").
		Set("version = EXCLUDED.version, hash = EXCLUDED.hash, signature = EXCLUDED.signature, body = EXCLUDED.body, compiled_at = EXCLUDED.compiled_at").
		Where("?TableAlias.version < EXCLUDED.version").
		Exec(ctx)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ListBundles returns every organization's latest bundle.
func (s *Store) ListBundles(ctx context.Context) ([]Bundle, error) {
	out := []Bundle{}
	return out, mapErr(s.db.NewSelect().Model(&out).OrderExpr("org_id ASC").Scan(ctx))
}

// ListOrganizationIDs returns every organization's id.
func (s *Store) ListOrganizationIDs(ctx context.Context) ([]uuid.UUID, error) {
	var out []uuid.UUID
	err := s.db.NewSelect().Model((*Organization)(nil)).Column("id").OrderExpr("id ASC").Scan(ctx, &out)
	return out, mapErr(err)
}
