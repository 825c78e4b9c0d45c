package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// CreateOrganization inserts an organization; a taken slug is ErrConflict.
func (s *Store) CreateOrganization(ctx context.Context, o *Organization) error {
	_, err := s.db.NewInsert().Model(o).Exec(ctx)
	return mapErr(err)
}

// GetOrganization finds an organization by id.
func (s *Store) GetOrganization(ctx context.Context, id uuid.UUID) (*Organization, error) {
	o := new(Organization)
	err := s.db.NewSelect().Model(o).Where("id = ?", id).Scan(ctx)
	return o, mapErr(err)
}

// GetOrganizationByRef finds an organization by UUID or slug.
func (s *Store) GetOrganizationByRef(ctx context.Context, ref string) (*Organization, error) {
	if id, err := uuid.Parse(ref); err == nil && len(ref) == 36 {
		return s.GetOrganization(ctx, id)
	}
	o := new(Organization)
	err := s.db.NewSelect().Model(o).Where("slug = ?", ref).Scan(ctx)
	return o, mapErr(err)
}

// ListOrganizations pages through organizations; when memberOf is set, only
// those where that user has an active membership (a suspended member has no
// access, so the organization is not theirs to list).
func (s *Store) ListOrganizations(ctx context.Context, memberOf *uuid.UUID, p PageQuery) ([]Organization, *PageKey, error) {
	var out []Organization
	q := s.db.NewSelect().Model(&out)
	if memberOf != nil {
		q = q.Where("id IN (?)", s.db.NewSelect().Model((*Membership)(nil)).Column("org_id").
			Where("user_id = ?", *memberOf).Where("status = 'active'"))
	}
	if err := paginate(q, p, false).Scan(ctx); err != nil {
		return nil, nil, mapErr(err)
	}
	items, next := trimPage(out, p.Limit, func(o Organization) PageKey { return PageKey{o.CreatedAt, o.ID} })
	return items, next, nil
}

// UpdateOrganization writes name, slug, require_sso and updated_at.
func (s *Store) UpdateOrganization(ctx context.Context, o *Organization) error {
	_, err := s.db.NewUpdate().Model(o).Column("name", "slug", "require_sso", "updated_at").WherePK().Exec(ctx)
	return mapErr(err)
}

// DeleteOrganization removes an organization; its workspaces, memberships,
// keys, invitations and service accounts go with it (foreign keys cascade).
func (s *Store) DeleteOrganization(ctx context.Context, id uuid.UUID) error {
	res, err := s.db.NewDelete().Model((*Organization)(nil)).Where("id = ?", id).Exec(ctx)
	return affectedOne(res, err)
}

func affectedOne(res interface{ RowsAffected() (int64, error) }, err error) error {
	if err != nil {
		return mapErr(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// CreateWorkspace inserts a workspace; a slug taken in the organization is
// ErrConflict.
func (s *Store) CreateWorkspace(ctx context.Context, w *Workspace) error {
	_, err := s.db.NewInsert().Model(w).Exec(ctx)
	return mapErr(err)
}

// GetWorkspaceByRef finds a workspace of an organization by UUID or slug.
func (s *Store) GetWorkspaceByRef(ctx context.Context, orgID uuid.UUID, ref string) (*Workspace, error) {
	w := new(Workspace)
	q := s.db.NewSelect().Model(w).Where("org_id = ?", orgID)
	if id, err := uuid.Parse(ref); err == nil && len(ref) == 36 {
		q = q.Where("id = ?", id)
	} else {
		q = q.Where("slug = ?", ref)
	}
	return w, mapErr(q.Scan(ctx))
}

// GetWorkspace finds a workspace by id.
func (s *Store) GetWorkspace(ctx context.Context, id uuid.UUID) (*Workspace, error) {
	w := new(Workspace)
	return w, mapErr(s.db.NewSelect().Model(w).Where("id = ?", id).Scan(ctx))
}

// WorkspaceOrgs maps each of ids that names a workspace (deleted ones
// too) to its organization.
func (s *Store) WorkspaceOrgs(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]uuid.UUID, error) {
	out := make(map[uuid.UUID]uuid.UUID, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var ws []Workspace
	if err := s.db.NewSelect().Model(&ws).Column("id", "org_id").Where("id IN (?)", bun.List(ids)).Scan(ctx); err != nil {
		return nil, mapErr(err)
	}
	for _, w := range ws {
		out[w.ID] = w.OrgID
	}
	return out, nil
}

// WorkspaceFilter narrows ListWorkspaces.
type WorkspaceFilter struct {
	OrgID uuid.UUID
	// MemberID, when set, keeps workspaces where this user is a member.
	MemberID *uuid.UUID
	// OnlyID, when set, keeps just this workspace.
	OnlyID *uuid.UUID
}

// ListWorkspaces returns an organization's workspaces, oldest first.
func (s *Store) ListWorkspaces(ctx context.Context, f WorkspaceFilter) ([]Workspace, error) {
	out := []Workspace{}
	q := s.db.NewSelect().Model(&out).Where("org_id = ?", f.OrgID)
	if f.MemberID != nil {
		q = q.Where("id IN (?)", s.db.NewSelect().Model((*WorkspaceMember)(nil)).Column("workspace_id").Where("user_id = ?", *f.MemberID))
	}
	if f.OnlyID != nil {
		q = q.Where("id = ?", *f.OnlyID)
	}
	err := q.OrderExpr("created_at ASC, id ASC").Scan(ctx)
	return out, mapErr(err)
}

// UpdateWorkspace writes name, slug, rate limits, tag settings and
// updated_at.
func (s *Store) UpdateWorkspace(ctx context.Context, w *Workspace) error {
	_, err := s.db.NewUpdate().Model(w).Column("name", "slug", "rate_limit_rpm", "rate_limit_tpm", "required_tags", "tag_values", "mcp_default", "mcp_audit_arguments", "archive", "response_cache", "prompt_cache", "updated_at").WherePK().Exec(ctx)
	return mapErr(err)
}

// DeleteWorkspace removes a workspace with its memberships, keys and
// credentials (cascading); usage events have no foreign key and stay.
func (s *Store) DeleteWorkspace(ctx context.Context, id uuid.UUID) error {
	res, err := s.db.NewDelete().Model((*Workspace)(nil)).Where("id = ?", id).Exec(ctx)
	return affectedOne(res, err)
}

// CreateUser inserts a user; a taken email is ErrConflict.
func (s *Store) CreateUser(ctx context.Context, u *User) error {
	_, err := s.db.NewInsert().Model(u).Exec(ctx)
	return mapErr(err)
}

// GetUser finds a user by id.
func (s *Store) GetUser(ctx context.Context, id uuid.UUID) (*User, error) {
	u := new(User)
	return u, mapErr(s.db.NewSelect().Model(u).Where("id = ?", id).Scan(ctx))
}

// ShareUsers holds the users' rows until the transaction ends against
// writes, which wait for it, as a write to one of them holds off this
// lock (PostgreSQL, FOR SHARE, in id order; SQLite's transactions take
// turns anyway). What the transaction then reads of them stays true
// until it commits: a key issued under it is seen by a disable that
// follows, or sees the account disabled by one that came first.
func (s *Store) ShareUsers(ctx context.Context, ids ...uuid.UUID) error {
	if s.root.Dialect().Name() != dialect.PG || len(ids) == 0 {
		return nil
	}
	var locked []uuid.UUID
	err := s.db.NewSelect().Model((*User)(nil)).Column("id").Where("id IN (?)", bun.List(ids)).
		OrderExpr("id ASC").For("SHARE").Scan(ctx, &locked)
	return mapErr(err)
}

// GetUserByEmail finds a user by (normalised, lower-case) email.
func (s *Store) GetUserByEmail(ctx context.Context, email string) (*User, error) {
	u := new(User)
	return u, mapErr(s.db.NewSelect().Model(u).Where("email = ?", email).Scan(ctx))
}

// ListUsers returns every user, oldest first.
func (s *Store) ListUsers(ctx context.Context) ([]User, error) {
	out := []User{}
	err := s.db.NewSelect().Model(&out).OrderExpr("created_at ASC, id ASC").Scan(ctx)
	return out, mapErr(err)
}

// UpdateUserRole sets a user's instance role.
func (s *Store) UpdateUserRole(ctx context.Context, id uuid.UUID, role string, at time.Time) error {
	res, err := s.db.NewUpdate().Model((*User)(nil)).Set("instance_role = ?", role).Set("updated_at = ?", at).Where("id = ?", id).Exec(ctx)
	return affectedOne(res, err)
}

// CountInstanceOwners counts users holding the instance owner role, holding
// their rows inside a transaction like CountOrgOwners.
func (s *Store) CountInstanceOwners(ctx context.Context) (int, error) {
	return s.countLocked(ctx, s.db.NewSelect().Model((*User)(nil)).Column("id").Where("instance_role = 'owner'").OrderExpr("id"))
}

// DeleteServiceAccount retires a service account: its keys are revoked, its
// memberships and sessions removed, and the record kept (marked deleted) so
// the revoked keys still read back with their owner.
func (s *Store) DeleteServiceAccount(ctx context.Context, id uuid.UUID, at time.Time) error {
	res, err := s.db.NewUpdate().Model((*User)(nil)).Set("deleted_at = ?", at).Set("updated_at = ?", at).
		Where("id = ?", id).Where("service_account").Where("deleted_at IS NULL").Exec(ctx)
	if err := affectedOne(res, err); err != nil {
		return err
	}
	if _, err := s.db.NewUpdate().Model((*ManagementKey)(nil)).Set("revoked_at = ?", at).Set("updated_at = ?", at).
		Where("user_id = ?", id).Where("revoked_at IS NULL").Exec(ctx); err != nil {
		return mapErr(err)
	}
	if _, err := s.db.NewDelete().Model((*WorkspaceMember)(nil)).Where("user_id = ?", id).Exec(ctx); err != nil {
		return mapErr(err)
	}
	_, err = s.db.NewDelete().Model((*Membership)(nil)).Where("user_id = ?", id).Exec(ctx)
	return mapErr(err)
}

// UserOrgs maps each of the given users to the organizations they belong to.
func (s *Store) UserOrgs(ctx context.Context, userIDs []uuid.UUID) (map[uuid.UUID][]uuid.UUID, error) {
	out := make(map[uuid.UUID][]uuid.UUID, len(userIDs))
	if len(userIDs) == 0 {
		return out, nil
	}
	var rows []Membership
	err := s.db.NewSelect().Model(&rows).Where("user_id IN (?)", bun.List(userIDs)).OrderExpr("created_at ASC, org_id ASC").Scan(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	for _, m := range rows {
		out[m.UserID] = append(out[m.UserID], m.OrgID)
	}
	return out, nil
}

// ListServiceAccounts returns the service accounts an organization manages.
func (s *Store) ListServiceAccounts(ctx context.Context, orgID uuid.UUID) ([]User, error) {
	out := []User{}
	err := s.db.NewSelect().Model(&out).Where("service_account").Where("managing_org_id = ?", orgID).Where("deleted_at IS NULL").
		OrderExpr("created_at ASC, id ASC").Scan(ctx)
	return out, mapErr(err)
}

// OrganizationSlugTaken reports whether an organization uses slug.
func (s *Store) OrganizationSlugTaken(ctx context.Context, slug string) (bool, error) {
	ok, err := s.db.NewSelect().Model((*Organization)(nil)).Where("slug = ?", slug).Exists(ctx)
	return ok, mapErr(err)
}

// WorkspaceSlugTaken reports whether a workspace of the organization uses slug.
func (s *Store) WorkspaceSlugTaken(ctx context.Context, orgID uuid.UUID, slug string) (bool, error) {
	ok, err := s.db.NewSelect().Model((*Workspace)(nil)).Where("org_id = ?", orgID).Where("slug = ?", slug).Exists(ctx)
	return ok, mapErr(err)
}
