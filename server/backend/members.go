package backend

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
)

// MemberAdd names an existing user, by id or by email, to join an
// organization with a role.
type MemberAdd struct {
	OrgID  uuid.UUID
	UserID *uuid.UUID
	Email  *string
	Role   string
}

// AddMember makes an existing user an active member with a role the actor
// may grant. People without an account are invited instead.
func AddMember(ctx context.Context, st *store.Store, actor Actor, in MemberAdd) (*store.MemberRow, error) {
	if err := actor.MayGrant(auth.OrgRoleRights(in.Role)); err != nil {
		return nil, err
	}
	var row *store.MemberRow
	err := st.InTx(ctx, func(tx *store.Store) error {
		var u *store.User
		var err error
		if in.UserID != nil {
			u, err = tx.GetUser(ctx, *in.UserID)
		} else {
			u, err = tx.GetUserByEmail(ctx, NormalizeEmail(*in.Email))
		}
		if errors.Is(err, store.ErrNotFound) || (err == nil && u.DeletedAt != nil) {
			return errorf(NotFound, "no such user; invite people who have no account yet")
		}
		if err != nil {
			return err
		}
		now := store.Now()
		m := store.Membership{OrgID: in.OrgID, UserID: u.ID, Role: in.Role, Status: auth.MembershipActive, CreatedAt: now, UpdatedAt: now}
		if err := tx.CreateMembership(ctx, &m); errors.Is(err, store.ErrConflict) {
			return errorf(Conflict, "%s is already a member of the organization", u.Email)
		} else if err != nil {
			return err
		}
		row = &store.MemberRow{Membership: m, Email: u.Email, Name: u.Name, ServiceAccount: u.ServiceAccount}
		return Audit(ctx, tx, actor, AuditEntry{Action: "member.added", TargetType: "user", TargetID: u.ID.String(), OrgID: &in.OrgID,
			Details: map[string]any{"role": in.Role}})
	})
	return row, err
}

// MemberUpdate changes what is set of a member's role and status (active
// or suspended).
type MemberUpdate struct{ Role, Status *string }

// UpdateMember changes a member's role or status. The actor must be able to
// grant both the member's role and the new one (so only owners make or
// unmake owners), the organization keeps an active owner, and suspending a
// member revokes their management keys in the organization.
func UpdateMember(ctx context.Context, st *store.Store, actor Actor, orgID, userID uuid.UUID, in MemberUpdate) (*store.MemberRow, error) {
	var row *store.MemberRow
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if row, err = memberRow(ctx, tx, orgID, userID); err != nil {
			return err
		}
		if err := actor.MayGrant(auth.OrgRoleRights(row.Role)); err != nil {
			return err
		}
		if in.Role != nil {
			if err := actor.MayGrant(auth.OrgRoleRights(*in.Role)); err != nil {
				return err
			}
		}
		if (in.Role != nil && *in.Role != auth.OrgOwner) || (in.Status != nil && *in.Status != auth.MembershipActive) {
			if err := keepAnOwner(ctx, tx, row); err != nil {
				return err
			}
		}
		if in.Role != nil {
			row.Role = *in.Role
		}
		if in.Status != nil {
			row.Status = *in.Status
		}
		row.UpdatedAt = store.Now()
		if err := tx.UpdateMembership(ctx, &row.Membership); err != nil {
			return err
		}
		if row.Status == auth.MembershipSuspended {
			if err := tx.RevokeUserOrgKeys(ctx, orgID, userID, row.UpdatedAt); err != nil {
				return err
			}
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "member.updated", TargetType: "user", TargetID: userID.String(), OrgID: &orgID,
			Details: map[string]any{"role": row.Role, "status": row.Status}})
	})
	return row, err
}

// RemoveMember takes a member out of the organization (their management
// keys there go with the membership); the actor must be able to grant the
// member's role, and the organization keeps an active owner.
func RemoveMember(ctx context.Context, st *store.Store, actor Actor, orgID, userID uuid.UUID) (*store.MemberRow, error) {
	var row *store.MemberRow
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if row, err = memberRow(ctx, tx, orgID, userID); err != nil {
			return err
		}
		if err := actor.MayGrant(auth.OrgRoleRights(row.Role)); err != nil {
			return err
		}
		if err := keepAnOwner(ctx, tx, row); err != nil {
			return err
		}
		if err := tx.DeleteMembership(ctx, orgID, userID); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "member.removed", TargetType: "user", TargetID: userID.String(), OrgID: &orgID})
	})
	return row, err
}

// memberRow reads a membership with the member's email and name.
func memberRow(ctx context.Context, tx *store.Store, orgID, userID uuid.UUID) (*store.MemberRow, error) {
	m, err := tx.GetMembership(ctx, orgID, userID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(NotFound, "user %s is not a member of the organization", userID)
	}
	if err != nil {
		return nil, err
	}
	u, err := tx.GetUser(ctx, userID)
	if err != nil {
		return nil, err
	}
	return &store.MemberRow{Membership: *m, Email: u.Email, Name: u.Name, ServiceAccount: u.ServiceAccount}, nil
}

// keepAnOwner refuses a change that would leave the organization without
// an active owner.
func keepAnOwner(ctx context.Context, tx *store.Store, row *store.MemberRow) error {
	if row.Role != auth.OrgOwner || row.Status != auth.MembershipActive {
		return nil
	}
	n, err := tx.CountOrgOwners(ctx, row.OrgID)
	if err != nil {
		return err
	}
	if n <= 1 {
		return errorf(Conflict, "the organization must keep at least one active owner")
	}
	return nil
}
