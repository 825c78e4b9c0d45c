package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// IdentityProvider is an OpenID provider people sign in through (issue 31).
type IdentityProvider struct {
	bun.BaseModel `bun:"table:identity_providers"`

	ID                  uuid.UUID `bun:"id,pk,type:uuid"`
	Name                string    `bun:"name"`
	Kind                string    `bun:"kind"`
	Issuer              string    `bun:"issuer"`
	ClientID            string    `bun:"client_id"`
	ClientSecretSealed  *string   `bun:"client_secret_sealed"`
	SecretHint          *string   `bun:"secret_hint"`
	Scopes              Strings   `bun:"scopes,type:text"`
	ClaimEmail          string    `bun:"claim_email"`
	ClaimName           string    `bun:"claim_name"`
	ClaimGroups         string    `bun:"claim_groups"`
	AllowedEmailDomains Strings   `bun:"allowed_email_domains,type:text"`
	JIT                 bool      `bun:"jit"`
	// GroupMappings is JSON: []GroupMapping.
	GroupMappings string `bun:"group_mappings"`
	// Discovery is the provider's discovery document as last fetched.
	Discovery string    `bun:"discovery"`
	CreatedAt time.Time `bun:"created_at"`
	UpdatedAt time.Time `bun:"updated_at"`
}

// GroupMapping turns membership of an identity-provider group into an
// organization membership and workspace memberships.
type GroupMapping struct {
	Group      string             `json:"group"`
	OrgID      uuid.UUID          `json:"org_id"`
	Role       string             `json:"role"`
	Workspaces []WorkspaceMapping `json:"workspaces,omitempty"`
}

// WorkspaceMapping is one workspace membership a group mapping makes.
type WorkspaceMapping struct {
	WorkspaceID uuid.UUID `json:"workspace_id"`
	Role        string    `json:"role"`
}

// SSOLogin is a sign-in under way, from start to callback.
type SSOLogin struct {
	bun.BaseModel `bun:"table:sso_logins"`

	StateHash    string    `bun:"state_hash,pk"`
	ProviderID   uuid.UUID `bun:"provider_id,type:uuid"`
	Nonce        string    `bun:"nonce"`
	CodeVerifier string    `bun:"code_verifier"`
	ReturnTo     string    `bun:"return_to"`
	CreatedAt    time.Time `bun:"created_at"`
	ExpiresAt    time.Time `bun:"expires_at"`
}

// UserIdentity links a provider's subject to an account.
type UserIdentity struct {
	bun.BaseModel `bun:"table:user_identities"`

	ProviderID   uuid.UUID `bun:"provider_id,pk,type:uuid"`
	Subject      string    `bun:"subject,pk"`
	UserID       uuid.UUID `bun:"user_id,type:uuid"`
	Email        string    `bun:"email"`
	Groups       Strings   `bun:"groups,type:text"`
	CreatedAt    time.Time `bun:"created_at"`
	LastSignedIn time.Time `bun:"last_signed_in"`
}

// SSOGrant is a membership a provider's group mappings made: of the
// organization (WorkspaceID nil) or of one of its workspaces.
type SSOGrant struct {
	bun.BaseModel `bun:"table:sso_grants"`

	ID          uuid.UUID  `bun:"id,pk,type:uuid"`
	ProviderID  uuid.UUID  `bun:"provider_id,type:uuid"`
	UserID      uuid.UUID  `bun:"user_id,type:uuid"`
	OrgID       uuid.UUID  `bun:"org_id,type:uuid"`
	WorkspaceID *uuid.UUID `bun:"workspace_id,type:uuid"`
	Role        string     `bun:"role"`
	CreatedAt   time.Time  `bun:"created_at"`
}

// CreateIdentityProvider inserts a provider; a taken name is ErrConflict.
func (s *Store) CreateIdentityProvider(ctx context.Context, p *IdentityProvider) error {
	_, err := s.db.NewInsert().Model(p).Exec(ctx)
	return mapErr(err)
}

// GetIdentityProviderByName finds a provider by name.
func (s *Store) GetIdentityProviderByName(ctx context.Context, name string) (*IdentityProvider, error) {
	p := new(IdentityProvider)
	return p, mapErr(s.db.NewSelect().Model(p).Where("name = ?", name).Scan(ctx))
}

// GetIdentityProvider finds a provider by id.
func (s *Store) GetIdentityProvider(ctx context.Context, id uuid.UUID) (*IdentityProvider, error) {
	p := new(IdentityProvider)
	return p, mapErr(s.db.NewSelect().Model(p).Where("id = ?", id).Scan(ctx))
}

// ListIdentityProviders lists every provider, by name.
func (s *Store) ListIdentityProviders(ctx context.Context) ([]IdentityProvider, error) {
	out := []IdentityProvider{}
	return out, mapErr(s.db.NewSelect().Model(&out).OrderExpr("name ASC").Scan(ctx))
}

// UpdateIdentityProvider writes every mutable column.
func (s *Store) UpdateIdentityProvider(ctx context.Context, p *IdentityProvider) error {
	_, err := s.db.NewUpdate().Model(p).ExcludeColumn("id", "name", "kind", "created_at").WherePK().Exec(ctx)
	return mapErr(err)
}

// DeleteIdentityProvider removes a provider; its identities, grants and
// sign-ins under way go with it.
func (s *Store) DeleteIdentityProvider(ctx context.Context, id uuid.UUID) error {
	res, err := s.db.NewDelete().Model((*IdentityProvider)(nil)).Where("id = ?", id).Exec(ctx)
	return affectedOne(res, err)
}

// OrganizationsRequiringSSO lists the organizations whose require_sso is
// set.
func (s *Store) OrganizationsRequiringSSO(ctx context.Context) ([]Organization, error) {
	out := []Organization{}
	return out, mapErr(s.db.NewSelect().Model(&out).Where("require_sso IS NOT NULL").OrderExpr("slug ASC").Scan(ctx))
}

// CreateSSOLogin records a sign-in under way, sweeping the expired ones
// (starts are public: abandoned ones must not pile up).
func (s *Store) CreateSSOLogin(ctx context.Context, l *SSOLogin) error {
	if _, err := s.db.NewDelete().Model((*SSOLogin)(nil)).Where("expires_at < ?", l.CreatedAt).Exec(ctx); err != nil {
		return mapErr(err)
	}
	_, err := s.db.NewInsert().Model(l).Exec(ctx)
	return mapErr(err)
}

// TakeSSOLogin reads and deletes the sign-in whose state hashes to
// stateHash: it can be taken once. Expired rows are swept on the way.
func (s *Store) TakeSSOLogin(ctx context.Context, stateHash string, now time.Time) (*SSOLogin, error) {
	if _, err := s.db.NewDelete().Model((*SSOLogin)(nil)).Where("expires_at < ?", now).Exec(ctx); err != nil {
		return nil, mapErr(err)
	}
	l := new(SSOLogin)
	if err := s.db.NewSelect().Model(l).Where("state_hash = ?", stateHash).Scan(ctx); err != nil {
		return nil, mapErr(err)
	}
	res, err := s.db.NewDelete().Model((*SSOLogin)(nil)).Where("state_hash = ?", stateHash).Exec(ctx)
	// Two callbacks racing with one state: only the one that deleted the
	// row goes on.
	if err := affectedOne(res, err); err != nil {
		return nil, err
	}
	return l, nil
}

// GetUserIdentity finds the account linked to a provider's subject.
func (s *Store) GetUserIdentity(ctx context.Context, providerID uuid.UUID, subject string) (*UserIdentity, error) {
	i := new(UserIdentity)
	return i, mapErr(s.db.NewSelect().Model(i).Where("provider_id = ? AND subject = ?", providerID, subject).Scan(ctx))
}

// UpsertUserIdentity writes a link, its email, groups and sign-in time.
func (s *Store) UpsertUserIdentity(ctx context.Context, i *UserIdentity) error {
	_, err := s.db.NewInsert().Model(i).On("CONFLICT (provider_id, subject) DO UPDATE").
		Set("email = EXCLUDED.email, groups = EXCLUDED.groups, last_signed_in = EXCLUDED.last_signed_in").Exec(ctx)
	return mapErr(err)
}

// ListSSOGrants lists what a provider's mappings gave a user.
func (s *Store) ListSSOGrants(ctx context.Context, providerID, userID uuid.UUID) ([]SSOGrant, error) {
	out := []SSOGrant{}
	return out, mapErr(s.db.NewSelect().Model(&out).Where("provider_id = ? AND user_id = ?", providerID, userID).
		OrderExpr("created_at ASC, id ASC").Scan(ctx))
}

// CreateSSOGrant records a membership a mapping made.
func (s *Store) CreateSSOGrant(ctx context.Context, g *SSOGrant) error {
	_, err := s.db.NewInsert().Model(g).Exec(ctx)
	return mapErr(err)
}

// UpdateSSOGrantRole records a mapped membership's new role.
func (s *Store) UpdateSSOGrantRole(ctx context.Context, id uuid.UUID, role string) error {
	_, err := s.db.NewUpdate().Model((*SSOGrant)(nil)).Set("role = ?", role).Where("id = ?", id).Exec(ctx)
	return mapErr(err)
}

// DeleteSSOGrant forgets a mapped membership.
func (s *Store) DeleteSSOGrant(ctx context.Context, id uuid.UUID) error {
	_, err := s.db.NewDelete().Model((*SSOGrant)(nil)).Where("id = ?", id).Exec(ctx)
	return mapErr(err)
}
