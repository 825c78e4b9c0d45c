package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// OAuthClient is an OAuth client an administrator registered (issue 31);
// one identified by a Client ID Metadata Document has no row.
type OAuthClient struct {
	bun.BaseModel `bun:"table:oauth_clients"`

	ID           uuid.UUID  `bun:"id,pk,type:uuid"`
	ClientID     string     `bun:"client_id"`
	Name         string     `bun:"name"`
	RedirectURIs Strings    `bun:"redirect_uris,type:text"`
	SecretHash   *string    `bun:"secret_hash"`
	CreatedBy    *uuid.UUID `bun:"created_by,type:uuid"`
	CreatedAt    time.Time  `bun:"created_at"`
}

// OAuthGrant is a person's consent: a client may act as them in a
// workspace, for a resource.
type OAuthGrant struct {
	bun.BaseModel `bun:"table:oauth_grants"`

	ID            uuid.UUID  `bun:"id,pk,type:uuid"`
	OrgID         uuid.UUID  `bun:"org_id,type:uuid"`
	WorkspaceID   uuid.UUID  `bun:"workspace_id,type:uuid"`
	UserID        uuid.UUID  `bun:"user_id,type:uuid"`
	ClientID      string     `bun:"client_id"`
	ClientName    string     `bun:"client_name"`
	Resource      string     `bun:"resource"`
	Scope         string     `bun:"scope"`
	CreatedAt     time.Time  `bun:"created_at"`
	LastUsedAt    *time.Time `bun:"last_used_at"`
	RevokedAt     *time.Time `bun:"revoked_at"`
	RevokedReason *string    `bun:"revoked_reason"`
}

// OAuthCode is an authorization code, by its hash.
type OAuthCode struct {
	bun.BaseModel `bun:"table:oauth_codes"`

	CodeHash      string     `bun:"code_hash,pk"`
	GrantID       uuid.UUID  `bun:"grant_id,type:uuid"`
	ClientID      string     `bun:"client_id"`
	RedirectURI   string     `bun:"redirect_uri"`
	CodeChallenge string     `bun:"code_challenge"`
	ExpiresAt     time.Time  `bun:"expires_at"`
	UsedAt        *time.Time `bun:"used_at"`
}

// OAuthRefreshToken is a refresh token, by its hash.
type OAuthRefreshToken struct {
	bun.BaseModel `bun:"table:oauth_refresh_tokens"`

	TokenHash string     `bun:"token_hash,pk"`
	GrantID   uuid.UUID  `bun:"grant_id,type:uuid"`
	CreatedAt time.Time  `bun:"created_at"`
	ExpiresAt time.Time  `bun:"expires_at"`
	UsedAt    *time.Time `bun:"used_at"`
}

// OAuthRefreshTTL is a refresh token's lifetime: a grant idle longer can
// mint no token (server/backend issues them, server/publish leaves such
// grants out of bundles).
const OAuthRefreshTTL = 30 * 24 * time.Hour

// CreateOAuthClient stores a registered client; a taken client_id is
// ErrConflict.
func (s *Store) CreateOAuthClient(ctx context.Context, c *OAuthClient) error {
	_, err := s.db.NewInsert().Model(c).Exec(ctx)
	return mapErr(err)
}

// GetOAuthClient is the registered client client_id.
func (s *Store) GetOAuthClient(ctx context.Context, clientID string) (*OAuthClient, error) {
	c := new(OAuthClient)
	err := s.db.NewSelect().Model(c).Where("client_id = ?", clientID).Scan(ctx)
	return c, mapErr(err)
}

// ListOAuthClients lists the registered clients by client_id.
func (s *Store) ListOAuthClients(ctx context.Context) ([]OAuthClient, error) {
	out := []OAuthClient{}
	err := s.db.NewSelect().Model(&out).OrderExpr("client_id ASC").Scan(ctx)
	return out, mapErr(err)
}

// DeleteOAuthClient deletes the registered client client_id.
func (s *Store) DeleteOAuthClient(ctx context.Context, clientID string) error {
	res, err := s.db.NewDelete().Model((*OAuthClient)(nil)).Where("client_id = ?", clientID).Exec(ctx)
	return affectedOne(res, err)
}

// CreateOAuthGrant stores a grant.
func (s *Store) CreateOAuthGrant(ctx context.Context, g *OAuthGrant) error {
	_, err := s.db.NewInsert().Model(g).Exec(ctx)
	return mapErr(err)
}

// GetOAuthGrant is the grant id.
func (s *Store) GetOAuthGrant(ctx context.Context, id uuid.UUID) (*OAuthGrant, error) {
	g := new(OAuthGrant)
	err := s.db.NewSelect().Model(g).Where("id = ?", id).Scan(ctx)
	return g, mapErr(err)
}

// ListOAuthGrants lists a workspace's grants, newest first.
func (s *Store) ListOAuthGrants(ctx context.Context, workspaceID uuid.UUID) ([]OAuthGrant, error) {
	out := []OAuthGrant{}
	err := s.db.NewSelect().Model(&out).Where("workspace_id = ?", workspaceID).OrderExpr("created_at DESC, id ASC").Scan(ctx)
	return out, mapErr(err)
}

// LiveOAuthGrantsForOrg lists the organization's grants a bundle carries:
// unrevoked, used (or made) since idleSince, of a person who is an active
// member and not disabled (as ActiveInferenceKeysForOrg does for keys). A
// grant idle longer has no refresh token left that could mint a token.
func (s *Store) LiveOAuthGrantsForOrg(ctx context.Context, orgID uuid.UUID, idleSince time.Time) ([]OAuthGrant, error) {
	out := []OAuthGrant{}
	active := s.db.NewSelect().Model((*Membership)(nil)).Column("user_id").Where("org_id = ?", orgID).Where("status = 'active'")
	disabled := s.db.NewSelect().Model((*User)(nil)).Column("id").Where("disabled_at IS NOT NULL")
	err := s.db.NewSelect().Model(&out).Where("org_id = ?", orgID).Where("revoked_at IS NULL").
		Where("(created_at >= ? OR last_used_at >= ?)", idleSince, idleSince).
		Where("user_id IN (?)", active).Where("user_id NOT IN (?)", disabled).OrderExpr("id ASC").Scan(ctx)
	return out, mapErr(err)
}

// RevokeOAuthGrant marks the grant revoked, reporting false when it
// already was.
func (s *Store) RevokeOAuthGrant(ctx context.Context, id uuid.UUID, reason string, at time.Time) (bool, error) {
	res, err := s.db.NewUpdate().Model((*OAuthGrant)(nil)).Set("revoked_at = ?", at).Set("revoked_reason = ?", reason).
		Where("id = ?", id).Where("revoked_at IS NULL").Exec(ctx)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, mapErr(err)
}

// TouchOAuthGrant records a grant's latest token issue.
func (s *Store) TouchOAuthGrant(ctx context.Context, id uuid.UUID, at time.Time) error {
	_, err := s.db.NewUpdate().Model((*OAuthGrant)(nil)).Set("last_used_at = ?", at).Where("id = ?", id).Exec(ctx)
	return mapErr(err)
}

// CreateOAuthCode stores an authorization code.
func (s *Store) CreateOAuthCode(ctx context.Context, c *OAuthCode) error {
	_, err := s.db.NewInsert().Model(c).Exec(ctx)
	return mapErr(err)
}

// GetOAuthCode is the code of hash hash.
func (s *Store) GetOAuthCode(ctx context.Context, hash string) (*OAuthCode, error) {
	c := new(OAuthCode)
	err := s.db.NewSelect().Model(c).Where("code_hash = ?", hash).Scan(ctx)
	return c, mapErr(err)
}

// UseOAuthCode marks the code used, reporting false when another request
// used it first: of two redemptions at once, exactly one wins.
func (s *Store) UseOAuthCode(ctx context.Context, hash string, at time.Time) (bool, error) {
	res, err := s.db.NewUpdate().Model((*OAuthCode)(nil)).Set("used_at = ?", at).
		Where("code_hash = ?", hash).Where("used_at IS NULL").Exec(ctx)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, mapErr(err)
}

// CreateOAuthRefreshToken stores a refresh token.
func (s *Store) CreateOAuthRefreshToken(ctx context.Context, t *OAuthRefreshToken) error {
	_, err := s.db.NewInsert().Model(t).Exec(ctx)
	return mapErr(err)
}

// GetOAuthRefreshToken is the refresh token of hash hash.
func (s *Store) GetOAuthRefreshToken(ctx context.Context, hash string) (*OAuthRefreshToken, error) {
	t := new(OAuthRefreshToken)
	err := s.db.NewSelect().Model(t).Where("token_hash = ?", hash).Scan(ctx)
	return t, mapErr(err)
}

// UseOAuthRefreshToken marks the token used, reporting false when another
// request used it first.
func (s *Store) UseOAuthRefreshToken(ctx context.Context, hash string, at time.Time) (bool, error) {
	res, err := s.db.NewUpdate().Model((*OAuthRefreshToken)(nil)).Set("used_at = ?", at).
		Where("token_hash = ?", hash).Where("used_at IS NULL").Exec(ctx)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, mapErr(err)
}

// SetOAuthCIMDAllowPrivate stores the instance setting
// oauth_cimd_allow_private.
func (s *Store) SetOAuthCIMDAllowPrivate(ctx context.Context, allow bool, at time.Time) error {
	_, err := s.db.NewUpdate().Model((*InstanceState)(nil)).Set("oauth_cimd_allow_private = ?", allow).
		Set("settings_updated_at = ?", at).Where("id = 1").Exec(ctx)
	return mapErr(err)
}

// RevokeOAuthClientGrants revokes every live grant of a client and counts
// them.
func (s *Store) RevokeOAuthClientGrants(ctx context.Context, clientID, reason string, at time.Time) (int64, error) {
	res, err := s.db.NewUpdate().Model((*OAuthGrant)(nil)).Set("revoked_at = ?", at).Set("revoked_reason = ?", reason).
		Where("client_id = ?", clientID).Where("revoked_at IS NULL").Exec(ctx)
	if err != nil {
		return 0, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n, mapErr(err)
}
