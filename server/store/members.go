package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// CreateMembership adds a user to an organization; a duplicate is ErrConflict.
func (s *Store) CreateMembership(ctx context.Context, m *Membership) error {
	_, err := s.db.NewInsert().Model(m).Exec(ctx)
	return mapErr(err)
}

// GetMembership finds a user's membership in an organization.
func (s *Store) GetMembership(ctx context.Context, orgID, userID uuid.UUID) (*Membership, error) {
	m := new(Membership)
	err := s.db.NewSelect().Model(m).Where("org_id = ?", orgID).Where("user_id = ?", userID).Scan(ctx)
	return m, mapErr(err)
}

// ListUserMemberships returns a user's memberships, oldest first.
func (s *Store) ListUserMemberships(ctx context.Context, userID uuid.UUID) ([]Membership, error) {
	out := []Membership{}
	err := s.db.NewSelect().Model(&out).Where("user_id = ?", userID).OrderExpr("created_at ASC, org_id ASC").Scan(ctx)
	return out, mapErr(err)
}

// MemberRow is a membership joined with its user.
type MemberRow struct {
	Membership
	Email          string `bun:"email"`
	Name           string `bun:"name"`
	ServiceAccount bool   `bun:"service_account"`
}

// ListMembers returns an organization's members with their names.
func (s *Store) ListMembers(ctx context.Context, orgID uuid.UUID) ([]MemberRow, error) {
	out := []MemberRow{}
	err := s.db.NewSelect().Model(&out).ModelTableExpr("memberships AS m").
		ColumnExpr("m.*, u.email, u.name, u.service_account").
		Join("JOIN users AS u ON u.id = m.user_id").
		Where("m.org_id = ?", orgID).OrderExpr("m.created_at ASC, m.user_id ASC").Scan(ctx)
	return out, mapErr(err)
}

// UpdateMembership writes role, status and updated_at.
func (s *Store) UpdateMembership(ctx context.Context, m *Membership) error {
	_, err := s.db.NewUpdate().Model(m).Column("role", "status", "updated_at").WherePK().Exec(ctx)
	return mapErr(err)
}

// DeleteMembership removes a user from an organization and from all of its
// workspaces, and deletes the user's keys scoped inside it.
func (s *Store) DeleteMembership(ctx context.Context, orgID, userID uuid.UUID) error {
	res, err := s.db.NewDelete().Model((*Membership)(nil)).Where("org_id = ?", orgID).Where("user_id = ?", userID).Exec(ctx)
	if err := affectedOne(res, err); err != nil {
		return err
	}
	wsIDs := s.db.NewSelect().Model((*Workspace)(nil)).Column("id").Where("org_id = ?", orgID)
	if _, err := s.db.NewDelete().Model((*WorkspaceMember)(nil)).Where("user_id = ?", userID).Where("workspace_id IN (?)", wsIDs).Exec(ctx); err != nil {
		return mapErr(err)
	}
	return s.RevokeUserOrgKeys(ctx, orgID, userID, Now())
}

// RevokeUserOrgKeys revokes a user's management keys scoped to an
// organization or its workspaces (on removal or suspension: a member who
// comes back gets new keys, not the old ones revived).
func (s *Store) RevokeUserOrgKeys(ctx context.Context, orgID, userID uuid.UUID, at time.Time) error {
	_, err := s.db.NewUpdate().Model((*ManagementKey)(nil)).Set("revoked_at = ?", at).Set("updated_at = ?", at).
		Where("user_id = ?", userID).Where("org_id = ?", orgID).Where("revoked_at IS NULL").Exec(ctx)
	return mapErr(err)
}

// CountOrgOwners counts the active owners of an organization. Inside a
// transaction it holds their rows (see countLocked), so two owners demoting
// each other at once cannot both pass a last-owner check.
func (s *Store) CountOrgOwners(ctx context.Context, orgID uuid.UUID) (int, error) {
	return s.countLocked(ctx, s.db.NewSelect().Model((*Membership)(nil)).Column("user_id").Where("org_id = ?", orgID).
		Where("role = 'owner'").Where("status = 'active'").OrderExpr("user_id"))
}

// countLocked counts the rows of q, locking them on PostgreSQL: a concurrent
// transaction counting the same rows waits for this one and then sees its
// writes (READ COMMITTED re-checks locked rows). A fixed row order keeps two
// lockers from deadlocking. SQLite needs no lock: gw opens its transactions
// IMMEDIATE, so writers are already serialized.
func (s *Store) countLocked(ctx context.Context, q *bun.SelectQuery) (int, error) {
	if s.db.Dialect().Name() == dialect.PG {
		q = q.For("UPDATE")
	}
	var ids []uuid.UUID
	if err := q.Scan(ctx, &ids); err != nil {
		return 0, mapErr(err)
	}
	return len(ids), nil
}

// AddWorkspaceMember adds a user to a workspace; a duplicate is ErrConflict.
func (s *Store) AddWorkspaceMember(ctx context.Context, m *WorkspaceMember) error {
	_, err := s.db.NewInsert().Model(m).Exec(ctx)
	return mapErr(err)
}

// GetWorkspaceMember finds a user's membership in a workspace.
func (s *Store) GetWorkspaceMember(ctx context.Context, wsID, userID uuid.UUID) (*WorkspaceMember, error) {
	m := new(WorkspaceMember)
	err := s.db.NewSelect().Model(m).Where("workspace_id = ?", wsID).Where("user_id = ?", userID).Scan(ctx)
	return m, mapErr(err)
}

// WorkspaceMemberRow is a workspace membership joined with its user.
type WorkspaceMemberRow struct {
	WorkspaceMember
	Email string `bun:"email"`
	Name  string `bun:"name"`
}

// ListWorkspaceMembers returns a workspace's members with their names.
func (s *Store) ListWorkspaceMembers(ctx context.Context, wsID uuid.UUID) ([]WorkspaceMemberRow, error) {
	out := []WorkspaceMemberRow{}
	err := s.db.NewSelect().Model(&out).ModelTableExpr("workspace_members AS wm").
		ColumnExpr("wm.*, u.email, u.name").
		Join("JOIN users AS u ON u.id = wm.user_id").
		Where("wm.workspace_id = ?", wsID).OrderExpr("wm.created_at ASC, wm.user_id ASC").Scan(ctx)
	return out, mapErr(err)
}

// UpdateWorkspaceMember sets a workspace member's role.
func (s *Store) UpdateWorkspaceMember(ctx context.Context, wsID, userID uuid.UUID, role string, at time.Time) error {
	res, err := s.db.NewUpdate().Model((*WorkspaceMember)(nil)).Set("role = ?", role).Set("updated_at = ?", at).
		Where("workspace_id = ?", wsID).Where("user_id = ?", userID).Exec(ctx)
	return affectedOne(res, err)
}

// DeleteWorkspaceMember removes a user from a workspace.
func (s *Store) DeleteWorkspaceMember(ctx context.Context, wsID, userID uuid.UUID) error {
	res, err := s.db.NewDelete().Model((*WorkspaceMember)(nil)).Where("workspace_id = ?", wsID).Where("user_id = ?", userID).Exec(ctx)
	return affectedOne(res, err)
}

// WorkspaceCandidates lists active organization members not yet in the
// workspace.
func (s *Store) WorkspaceCandidates(ctx context.Context, orgID, wsID uuid.UUID) ([]MemberRow, error) {
	out := []MemberRow{}
	inWs := s.db.NewSelect().Model((*WorkspaceMember)(nil)).Column("user_id").Where("workspace_id = ?", wsID)
	err := s.db.NewSelect().Model(&out).ModelTableExpr("memberships AS m").
		ColumnExpr("m.*, u.email, u.name, u.service_account").
		Join("JOIN users AS u ON u.id = m.user_id").
		Where("m.org_id = ?", orgID).Where("m.status = 'active'").Where("m.user_id NOT IN (?)", inWs).
		OrderExpr("u.email ASC").Scan(ctx)
	return out, mapErr(err)
}
