package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// SCIMToken is an organization's SCIM token (issue 31): the secret is
// stored as its hash only.
type SCIMToken struct {
	bun.BaseModel `bun:"table:scim_tokens"`

	ID         uuid.UUID  `bun:"id,pk,type:uuid"`
	OrgID      uuid.UUID  `bun:"org_id,type:uuid"`
	Label      string     `bun:"label"`
	Prefix     string     `bun:"prefix"`
	TokenHash  string     `bun:"token_hash"`
	CreatedBy  *uuid.UUID `bun:"created_by,type:uuid"`
	CreatedAt  time.Time  `bun:"created_at"`
	LastUsedAt *time.Time `bun:"last_used_at"`
}

// SCIMUser links an account to the organization whose provisioning
// client created or adopted it.
type SCIMUser struct {
	bun.BaseModel `bun:"table:scim_users"`

	OrgID      uuid.UUID `bun:"org_id,pk,type:uuid"`
	UserID     uuid.UUID `bun:"user_id,pk,type:uuid"`
	ExternalID string    `bun:"external_id"`
	GivenName  string    `bun:"given_name"`
	FamilyName string    `bun:"family_name"`
	CreatedAt  time.Time `bun:"created_at"`
	UpdatedAt  time.Time `bun:"updated_at"`
}

// SCIMGroup is an organization's provisioned group.
type SCIMGroup struct {
	bun.BaseModel `bun:"table:scim_groups"`

	ID          uuid.UUID `bun:"id,pk,type:uuid"`
	OrgID       uuid.UUID `bun:"org_id,type:uuid"`
	DisplayName string    `bun:"display_name"`
	ExternalID  string    `bun:"external_id"`
	CreatedAt   time.Time `bun:"created_at"`
	UpdatedAt   time.Time `bun:"updated_at"`
}

// SCIMGroupMember is one member of a provisioned group.
type SCIMGroupMember struct {
	bun.BaseModel `bun:"table:scim_group_members"`

	GroupID uuid.UUID `bun:"group_id,pk,type:uuid"`
	UserID  uuid.UUID `bun:"user_id,pk,type:uuid"`
}

// SCIMGroupMemberRow is a member with the group's name and the email.
type SCIMGroupMemberRow struct {
	GroupID     uuid.UUID `bun:"group_id,type:uuid"`
	UserID      uuid.UUID `bun:"user_id,type:uuid"`
	DisplayName string    `bun:"display_name"`
	Email       string    `bun:"email"`
}

// SCIMGrant is a membership the group mappings made for an
// organization's SCIM groups (WorkspaceID nil: the organization's).
type SCIMGrant struct {
	bun.BaseModel `bun:"table:scim_grants"`

	ID          uuid.UUID  `bun:"id,pk,type:uuid"`
	OrgID       uuid.UUID  `bun:"org_id,type:uuid"`
	UserID      uuid.UUID  `bun:"user_id,type:uuid"`
	WorkspaceID *uuid.UUID `bun:"workspace_id,type:uuid"`
	Role        string     `bun:"role"`
	CreatedAt   time.Time  `bun:"created_at"`
}

// CreateSCIMToken inserts a token.
func (s *Store) CreateSCIMToken(ctx context.Context, t *SCIMToken) error {
	_, err := s.db.NewInsert().Model(t).Exec(ctx)
	return mapErr(err)
}

// ListSCIMTokens lists an organization's tokens, oldest first.
func (s *Store) ListSCIMTokens(ctx context.Context, orgID uuid.UUID) ([]SCIMToken, error) {
	out := []SCIMToken{}
	return out, mapErr(s.db.NewSelect().Model(&out).Where("org_id = ?", orgID).OrderExpr("created_at ASC, id ASC").Scan(ctx))
}

// GetSCIMTokenByHash finds the token whose secret hashes to hash.
func (s *Store) GetSCIMTokenByHash(ctx context.Context, hash string) (*SCIMToken, error) {
	t := new(SCIMToken)
	return t, mapErr(s.db.NewSelect().Model(t).Where("token_hash = ?", hash).Scan(ctx))
}

// TouchSCIMToken records a token's use.
func (s *Store) TouchSCIMToken(ctx context.Context, id uuid.UUID, at time.Time) error {
	_, err := s.db.NewUpdate().Model((*SCIMToken)(nil)).Set("last_used_at = ?", at).Where("id = ?", id).Exec(ctx)
	return mapErr(err)
}

// DeleteSCIMToken deletes an organization's token; another
// organization's is ErrNotFound.
func (s *Store) DeleteSCIMToken(ctx context.Context, orgID, id uuid.UUID) (*SCIMToken, error) {
	t := new(SCIMToken)
	if err := s.db.NewSelect().Model(t).Where("id = ? AND org_id = ?", id, orgID).Scan(ctx); err != nil {
		return nil, mapErr(err)
	}
	res, err := s.db.NewDelete().Model((*SCIMToken)(nil)).Where("id = ? AND org_id = ?", id, orgID).Exec(ctx)
	return t, affectedOne(res, err)
}

// SCIMUserRow is an account an organization's SCIM token sees, with its
// link when the organization's provisioning created or adopted it.
type SCIMUserRow struct {
	User
	ExternalID *string    `bun:"external_id"`
	GivenName  *string    `bun:"given_name"`
	FamilyName *string    `bun:"family_name"`
	LinkedAt   *time.Time `bun:"linked_at"`
}

// SCIMUsers lists the accounts an organization's SCIM token sees: people
// (not service accounts, not deleted) linked to it or members of it
// (any status); narrowed to one id or one email when given.
func (s *Store) SCIMUsers(ctx context.Context, orgID uuid.UUID, id *uuid.UUID, email string) ([]SCIMUserRow, error) {
	out := []SCIMUserRow{}
	q := s.db.NewSelect().Model(&out).ModelTableExpr("users AS u").
		ColumnExpr("u.*, su.external_id, su.given_name, su.family_name, su.created_at AS linked_at").
		Join("LEFT JOIN scim_users AS su ON su.user_id = u.id AND su.org_id = ?", orgID).
		Where("u.deleted_at IS NULL").Where("u.service_account = ?", false).
		Where("(su.user_id IS NOT NULL OR EXISTS (SELECT 1 FROM memberships AS m WHERE m.org_id = ? AND m.user_id = u.id))", orgID)
	if id != nil {
		q = q.Where("u.id = ?", *id)
	}
	if email != "" {
		q = q.Where("u.email = ?", email)
	}
	return out, mapErr(q.OrderExpr("u.created_at ASC, u.id ASC").Scan(ctx))
}

// UpsertSCIMUser writes a link.
func (s *Store) UpsertSCIMUser(ctx context.Context, l *SCIMUser) error {
	_, err := s.db.NewInsert().Model(l).On("CONFLICT (org_id, user_id) DO UPDATE").
		Set("external_id = EXCLUDED.external_id, given_name = EXCLUDED.given_name, family_name = EXCLUDED.family_name, updated_at = EXCLUDED.updated_at").
		Exec(ctx)
	return mapErr(err)
}

// DeleteSCIMUser removes a link and the account's places in the
// organization's groups.
func (s *Store) DeleteSCIMUser(ctx context.Context, orgID, userID uuid.UUID) error {
	if _, err := s.db.NewDelete().Model((*SCIMGroupMember)(nil)).Where("user_id = ?", userID).
		Where("group_id IN (SELECT id FROM scim_groups WHERE org_id = ?)", orgID).Exec(ctx); err != nil {
		return mapErr(err)
	}
	_, err := s.db.NewDelete().Model((*SCIMUser)(nil)).Where("org_id = ? AND user_id = ?", orgID, userID).Exec(ctx)
	return mapErr(err)
}

// UpdateUserAccount writes an account's email and name; a taken email is
// ErrConflict.
func (s *Store) UpdateUserAccount(ctx context.Context, id uuid.UUID, email, name string, at time.Time) error {
	res, err := s.db.NewUpdate().Model((*User)(nil)).Set("email = ?", email).Set("name = ?", name).Set("updated_at = ?", at).
		Where("id = ?", id).Exec(ctx)
	return affectedOne(res, err)
}

// CreateSCIMGroup inserts a group; a name taken in the organization is
// ErrConflict.
func (s *Store) CreateSCIMGroup(ctx context.Context, g *SCIMGroup) error {
	_, err := s.db.NewInsert().Model(g).Exec(ctx)
	return mapErr(err)
}

// GetSCIMGroup finds an organization's group; another organization's is
// ErrNotFound.
func (s *Store) GetSCIMGroup(ctx context.Context, orgID, id uuid.UUID) (*SCIMGroup, error) {
	g := new(SCIMGroup)
	return g, mapErr(s.db.NewSelect().Model(g).Where("id = ? AND org_id = ?", id, orgID).Scan(ctx))
}

// ListSCIMGroups lists an organization's groups, oldest first.
func (s *Store) ListSCIMGroups(ctx context.Context, orgID uuid.UUID) ([]SCIMGroup, error) {
	out := []SCIMGroup{}
	return out, mapErr(s.db.NewSelect().Model(&out).Where("org_id = ?", orgID).OrderExpr("created_at ASC, id ASC").Scan(ctx))
}

// UpdateSCIMGroup writes a group's name, external id and updated_at; a
// taken name is ErrConflict.
func (s *Store) UpdateSCIMGroup(ctx context.Context, g *SCIMGroup) error {
	_, err := s.db.NewUpdate().Model(g).Column("display_name", "external_id", "updated_at").WherePK().Exec(ctx)
	return mapErr(err)
}

// DeleteSCIMGroup deletes a group and its members.
func (s *Store) DeleteSCIMGroup(ctx context.Context, id uuid.UUID) error {
	res, err := s.db.NewDelete().Model((*SCIMGroup)(nil)).Where("id = ?", id).Exec(ctx)
	return affectedOne(res, err)
}

// SetSCIMGroupMembers makes userIDs the group's members.
func (s *Store) SetSCIMGroupMembers(ctx context.Context, groupID uuid.UUID, userIDs []uuid.UUID) error {
	if _, err := s.db.NewDelete().Model((*SCIMGroupMember)(nil)).Where("group_id = ?", groupID).Exec(ctx); err != nil {
		return mapErr(err)
	}
	if len(userIDs) == 0 {
		return nil
	}
	rows := make([]SCIMGroupMember, len(userIDs))
	for i, id := range userIDs {
		rows[i] = SCIMGroupMember{GroupID: groupID, UserID: id}
	}
	_, err := s.db.NewInsert().Model(&rows).Exec(ctx)
	return mapErr(err)
}

// ListSCIMGroupMembers lists the members of an organization's groups
// (one group's when groupID is set), with the groups' names and the
// members' emails.
func (s *Store) ListSCIMGroupMembers(ctx context.Context, orgID uuid.UUID, groupID *uuid.UUID) ([]SCIMGroupMemberRow, error) {
	out := []SCIMGroupMemberRow{}
	q := s.db.NewSelect().TableExpr("scim_group_members AS gm").ColumnExpr("gm.group_id, gm.user_id, g.display_name, u.email").
		Join("JOIN scim_groups AS g ON g.id = gm.group_id").Join("JOIN users AS u ON u.id = gm.user_id").
		Where("g.org_id = ?", orgID)
	if groupID != nil {
		q = q.Where("gm.group_id = ?", *groupID)
	}
	return out, mapErr(q.OrderExpr("u.email ASC").Scan(ctx, &out))
}

// ListSCIMGroupsOfUser lists the organization's groups a user is in, by
// name.
func (s *Store) ListSCIMGroupsOfUser(ctx context.Context, orgID, userID uuid.UUID) ([]SCIMGroupMemberRow, error) {
	out := []SCIMGroupMemberRow{}
	err := s.db.NewSelect().TableExpr("scim_group_members AS gm").ColumnExpr("gm.group_id, gm.user_id, g.display_name, '' AS email").
		Join("JOIN scim_groups AS g ON g.id = gm.group_id").
		Where("g.org_id = ?", orgID).Where("gm.user_id = ?", userID).OrderExpr("g.display_name ASC").Scan(ctx, &out)
	return out, mapErr(err)
}

// ListSCIMGrants lists what the mappings gave a user for an
// organization's SCIM groups.
func (s *Store) ListSCIMGrants(ctx context.Context, orgID, userID uuid.UUID) ([]SCIMGrant, error) {
	out := []SCIMGrant{}
	return out, mapErr(s.db.NewSelect().Model(&out).Where("org_id = ? AND user_id = ?", orgID, userID).
		OrderExpr("created_at ASC, id ASC").Scan(ctx))
}

// CreateSCIMGrant records a membership a mapping made.
func (s *Store) CreateSCIMGrant(ctx context.Context, g *SCIMGrant) error {
	_, err := s.db.NewInsert().Model(g).Exec(ctx)
	return mapErr(err)
}

// UpdateSCIMGrantRole records a mapped membership's new role.
func (s *Store) UpdateSCIMGrantRole(ctx context.Context, id uuid.UUID, role string) error {
	_, err := s.db.NewUpdate().Model((*SCIMGrant)(nil)).Set("role = ?", role).Where("id = ?", id).Exec(ctx)
	return mapErr(err)
}

// DeleteSCIMGrant forgets a mapped membership.
func (s *Store) DeleteSCIMGrant(ctx context.Context, id uuid.UUID) error {
	_, err := s.db.NewDelete().Model((*SCIMGrant)(nil)).Where("id = ?", id).Exec(ctx)
	return mapErr(err)
}
