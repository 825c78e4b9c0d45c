package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

func (s *Server) memberRoutes() []*Route {
	const tag, base = "Members", "/api/v1/organizations/{org_id}/members"
	return []*Route{
		{Method: "GET", Path: base, Tag: tag, Summary: "List organization members",
			Perms: []auth.Permission{auth.MembersRead}, Result: []wire.Member{}, Handle: s.listMembers},
		{Method: "POST", Path: base, Tag: tag, Summary: "Add an existing user to the organization",
			Perms: []auth.Permission{auth.MembersManage}, Body: wire.MemberAdd{}, Result: wire.Member{}, Handle: s.addMember},
		{Method: "PATCH", Path: base + "/{user_id}", Tag: tag, Summary: "Change a member's role or status",
			Perms: []auth.Permission{auth.MembersManage}, Body: wire.MemberUpdate{}, Result: wire.Member{}, RefreshesBundles: true, Handle: s.updateMember},
		{Method: "DELETE", Path: base + "/{user_id}", Tag: tag, Summary: "Remove a member (their keys in the organization are revoked)",
			Perms: []auth.Permission{auth.MembersManage}, Result: wire.Member{}, RefreshesBundles: true, Handle: s.removeMember},
	}
}

func toMember(m *store.MemberRow) wire.Member {
	return wire.Member{UserID: m.UserID, OrgID: m.OrgID, Email: m.Email, Name: m.Name, ServiceAccount: m.ServiceAccount,
		Role: m.Role, Status: m.Status, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}
}

func (s *Server) listMembers(r *Request) (any, error) {
	rows, err := s.store.ListMembers(r.ctx, r.Org.ID)
	if err != nil {
		return nil, err
	}
	out := make([]wire.Member, len(rows))
	for i := range rows {
		out[i] = toMember(&rows[i])
	}
	return out, nil
}

// mayGrant refuses to grant, change or take away a role carrying
// permissions the caller does not hold here: a key or person can never make
// anyone more powerful than themselves, nor unmake someone who is (so only
// owners make or unmake owners).
func mayGrant(r *Request, role auth.Set) error {
	if missing := r.Rights.Missing(role.Sorted()); len(missing) > 0 {
		return errorf(http.StatusForbidden, "cannot grant or change a role holding permissions the caller lacks here: %s", strings.Join(missing, ", "))
	}
	return nil
}

func (s *Server) addMember(r *Request) (any, error) {
	var userID *uuid.UUID
	var email *string
	var role string
	if err := r.body(func(o *validate.Object) {
		if v, ok := o.Raw("user_id"); ok {
			if id, ok := validate.UUID(v, o.Loc().With("user_id"), o.Errors()); ok {
				userID = &id
			}
		}
		email = optionalString(o, "email", emailRule)
		if userID == nil && email == nil && !o.Has("user_id") && !o.Has("email") {
			o.Errors().Add(o.Loc(), "missing", "Field required: one of user_id or email", nil, nil)
		}
		role = requiredLiteral(o, "role", auth.OrgRoles)
	}); err != nil {
		return nil, err
	}
	if err := mayGrant(r, auth.OrgRoleRights(role)); err != nil {
		return nil, err
	}
	var out wire.Member
	err := s.store.InTx(r.ctx, func(tx *store.Store) error {
		var u *store.User
		var err error
		if userID != nil {
			u, err = tx.GetUser(r.ctx, *userID)
		} else {
			u, err = tx.GetUserByEmail(r.ctx, normalizeEmail(*email))
		}
		if errors.Is(err, store.ErrNotFound) || (err == nil && u.DeletedAt != nil) {
			return errorf(http.StatusNotFound, "no such user; invite people who have no account yet")
		}
		if err != nil {
			return err
		}
		now := store.Now()
		m := store.Membership{OrgID: r.Org.ID, UserID: u.ID, Role: role, Status: auth.MembershipActive, CreatedAt: now, UpdatedAt: now}
		if err := tx.CreateMembership(r.ctx, &m); errors.Is(err, store.ErrConflict) {
			return errorf(http.StatusConflict, "%s is already a member of the organization", u.Email)
		} else if err != nil {
			return err
		}
		out = toMember(&store.MemberRow{Membership: m, Email: u.Email, Name: u.Name, ServiceAccount: u.ServiceAccount})
		return r.audit(tx, auditEntry{Action: "member.added", TargetType: "user", TargetID: u.ID.String(), Details: map[string]any{"role": role}})
	})
	return out, err
}

func (s *Server) memberRow(tx *store.Store, r *Request, userID uuid.UUID) (*store.MemberRow, error) {
	m, err := tx.GetMembership(r.ctx, r.Org.ID, userID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(http.StatusNotFound, "user %s is not a member of the organization", userID)
	}
	if err != nil {
		return nil, err
	}
	u, err := tx.GetUser(r.ctx, userID)
	if err != nil {
		return nil, err
	}
	return &store.MemberRow{Membership: *m, Email: u.Email, Name: u.Name, ServiceAccount: u.ServiceAccount}, nil
}

// keepAnOwner refuses a change that would leave the organization without
// an active owner.
func keepAnOwner(tx *store.Store, r *Request, row *store.MemberRow) error {
	if row.Role != auth.OrgOwner || row.Status != auth.MembershipActive {
		return nil
	}
	n, err := tx.CountOrgOwners(r.ctx, r.Org.ID)
	if err != nil {
		return err
	}
	if n <= 1 {
		return errorf(http.StatusConflict, "the organization must keep at least one active owner")
	}
	return nil
}

func (s *Server) updateMember(r *Request) (any, error) {
	userID, err := r.pathUUID("user_id")
	if err != nil {
		return nil, err
	}
	var role, status *string
	if err := r.body(func(o *validate.Object) {
		role = optionalLiteral(o, "role", auth.OrgRoles)
		status = optionalLiteral(o, "status", []string{auth.MembershipActive, auth.MembershipSuspended})
	}); err != nil {
		return nil, err
	}
	var out wire.Member
	err = s.store.InTx(r.ctx, func(tx *store.Store) error {
		row, err := s.memberRow(tx, r, userID)
		if err != nil {
			return err
		}
		if err := mayGrant(r, auth.OrgRoleRights(row.Role)); err != nil {
			return err
		}
		if role != nil {
			if err := mayGrant(r, auth.OrgRoleRights(*role)); err != nil {
				return err
			}
		}
		if (role != nil && *role != auth.OrgOwner) || (status != nil && *status != auth.MembershipActive) {
			if err := keepAnOwner(tx, r, row); err != nil {
				return err
			}
		}
		if role != nil {
			row.Role = *role
		}
		if status != nil {
			row.Status = *status
		}
		row.UpdatedAt = store.Now()
		if err := tx.UpdateMembership(r.ctx, &row.Membership); err != nil {
			return err
		}
		if row.Status == auth.MembershipSuspended {
			if err := tx.RevokeUserOrgKeys(r.ctx, r.Org.ID, userID, row.UpdatedAt); err != nil {
				return err
			}
		}
		out = toMember(row)
		return r.audit(tx, auditEntry{Action: "member.updated", TargetType: "user", TargetID: userID.String(),
			Details: map[string]any{"role": row.Role, "status": row.Status}})
	})
	return out, err
}

func (s *Server) removeMember(r *Request) (any, error) {
	userID, err := r.pathUUID("user_id")
	if err != nil {
		return nil, err
	}
	var out wire.Member
	err = s.store.InTx(r.ctx, func(tx *store.Store) error {
		row, err := s.memberRow(tx, r, userID)
		if err != nil {
			return err
		}
		if err := mayGrant(r, auth.OrgRoleRights(row.Role)); err != nil {
			return err
		}
		if err := keepAnOwner(tx, r, row); err != nil {
			return err
		}
		if err := tx.DeleteMembership(r.ctx, r.Org.ID, userID); err != nil {
			return err
		}
		out = toMember(row)
		return r.audit(tx, auditEntry{Action: "member.removed", TargetType: "user", TargetID: userID.String()})
	})
	return out, err
}
