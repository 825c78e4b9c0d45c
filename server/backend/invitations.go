package backend

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
)

// InvitationTTL is how long an invitation token stays redeemable.
const InvitationTTL = 7 * 24 * time.Hour

// InvitationStatus is what an invitation is at now: pending, accepted,
// revoked or expired.
func InvitationStatus(inv *store.Invitation, now time.Time) string {
	switch {
	case inv.AcceptedAt != nil:
		return "accepted"
	case inv.RevokedAt != nil:
		return "revoked"
	case !now.Before(inv.ExpiresAt):
		return "expired"
	}
	return "pending"
}

// InvitationCreate invites an email address into an organization with a
// role.
type InvitationCreate struct {
	OrgID uuid.UUID
	Email string
	Role  string
}

// IssueInvitation invites someone with a role the actor may grant. The
// token is returned once and never stored.
func IssueInvitation(ctx context.Context, st *store.Store, actor Actor, in InvitationCreate) (*store.Invitation, string, error) {
	if err := actor.MayGrant(auth.OrgRoleRights(in.Role)); err != nil {
		return nil, "", err
	}
	token, _, hash := auth.NewToken(auth.InvitationPrefix)
	now := store.Now()
	inv := &store.Invitation{ID: uuid.New(), OrgID: in.OrgID, Email: NormalizeEmail(in.Email), Role: in.Role, TokenHash: hash,
		InvitedBy: actor.UserID, ExpiresAt: now.Add(InvitationTTL), CreatedAt: now, UpdatedAt: now}
	err := st.InTx(ctx, func(tx *store.Store) error {
		if err := tx.CreateInvitation(ctx, inv); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "invitation.issued", TargetType: "invitation", TargetID: inv.ID.String(),
			OrgID: &inv.OrgID, Details: map[string]any{"email": inv.Email, "role": inv.Role}})
	})
	if err != nil {
		return nil, "", err
	}
	return inv, token, nil
}

// ReissueInvitation gives a pending (or revoked, or expired) invitation a
// new token and expiry; the old token stops working. The new token is a
// grant of the invitation's role, so the actor must be able to grant it.
func ReissueInvitation(ctx context.Context, st *store.Store, actor Actor, orgID, id uuid.UUID) (*store.Invitation, string, error) {
	var inv *store.Invitation
	token, _, hash := auth.NewToken(auth.InvitationPrefix)
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if inv, err = orgInvitation(ctx, tx, orgID, id); err != nil {
			return err
		}
		if inv.AcceptedAt != nil {
			return errorf(Conflict, "invitation %s was already accepted", inv.ID)
		}
		if err := actor.MayGrant(auth.OrgRoleRights(inv.Role)); err != nil {
			return err
		}
		now := store.Now()
		inv.TokenHash, inv.ExpiresAt, inv.RevokedAt, inv.UpdatedAt = hash, now.Add(InvitationTTL), nil, now
		if err := tx.UpdateInvitation(ctx, inv); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "invitation.reissued", TargetType: "invitation", TargetID: inv.ID.String(),
			OrgID: &orgID, Details: map[string]any{"email": inv.Email}})
	})
	if err != nil {
		return nil, "", err
	}
	return inv, token, nil
}

// RevokeInvitation makes an invitation's token unusable. Revoking twice
// changes (and audits) nothing; an accepted invitation is a membership,
// which is removed instead.
func RevokeInvitation(ctx context.Context, st *store.Store, actor Actor, orgID, id uuid.UUID) (*store.Invitation, error) {
	var inv *store.Invitation
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if inv, err = orgInvitation(ctx, tx, orgID, id); err != nil {
			return err
		}
		if inv.AcceptedAt != nil {
			return errorf(Conflict, "invitation %s was already accepted; remove the member instead", inv.ID)
		}
		if inv.RevokedAt != nil {
			return nil
		}
		now := store.Now()
		inv.RevokedAt, inv.UpdatedAt = &now, now
		if err := tx.UpdateInvitation(ctx, inv); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "invitation.revoked", TargetType: "invitation", TargetID: inv.ID.String(),
			OrgID: &orgID, Details: map[string]any{"email": inv.Email}})
	})
	if err != nil {
		return nil, err
	}
	return inv, nil
}

func orgInvitation(ctx context.Context, tx *store.Store, orgID, id uuid.UUID) (*store.Invitation, error) {
	inv, err := tx.GetInvitation(ctx, orgID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(NotFound, "invitation %s not found", id)
	}
	return inv, err
}

// InvitationAccept redeems an invitation's token. Name, PasswordHash and
// Session are for the account an invitation creates when nobody is signed
// in. The caller hashes the password outside the transaction, which must
// not wait for a hashing slot.
type InvitationAccept struct {
	Token        string
	Name         string
	PasswordHash *string
	Session      SessionStart
}

// InvitationAccepted is the new member's account and membership, and for
// an account created by accepting, its first session and that session's
// token (shown once, as a cookie).
type InvitationAccepted struct {
	Invitation   *store.Invitation
	User         *store.User
	Membership   *store.Membership
	Session      *store.Session
	SessionToken string
}

// AcceptInvitation makes whoever accepts a member with the invitation's
// role. The actor is who accepts: a signed-in user, whose email must be
// the one invited; or nobody (an actor without a user), and then the
// account the invitation names is created, signed in, and is the actor the
// audit records: a person who created their own account, not the system.
func AcceptInvitation(ctx context.Context, st *store.Store, actor Actor, in InvitationAccept) (*InvitationAccepted, error) {
	out := &InvitationAccepted{}
	err := st.InTx(ctx, func(tx *store.Store) error {
		inv, err := redeemableInvitation(ctx, tx, in.Token)
		if err != nil {
			return err
		}
		if actor.UserID != nil {
			out.User, err = invitedUser(ctx, tx, *actor.UserID, inv)
		} else {
			out.User, err = createInvitedAccount(ctx, tx, inv, in)
		}
		if err != nil {
			return err
		}
		accepter := actor
		if actor.UserID == nil {
			accepter = User(out.User.ID, false, nil, actor.RequestID)
		}
		if out.Membership, err = redeem(ctx, tx, inv, out.User.ID); err != nil {
			return err
		}
		if actor.UserID == nil {
			if out.Session, out.SessionToken, err = StartSession(ctx, tx, out.User.ID, in.Session); err != nil {
				return err
			}
		}
		out.Invitation = inv
		return Audit(ctx, tx, accepter, AuditEntry{Action: "invitation.accepted", TargetType: "invitation", TargetID: inv.ID.String(),
			OrgID: &inv.OrgID, Details: map[string]any{"email": inv.Email, "role": inv.Role, "user_id": out.User.ID.String()}})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// redeemableInvitation finds the pending invitation a token names.
func redeemableInvitation(ctx context.Context, tx *store.Store, token string) (*store.Invitation, error) {
	inv, err := tx.GetInvitationByHash(ctx, auth.HashToken(token))
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(NotFound, "invitation not found; it may have been reissued")
	}
	if err != nil {
		return nil, err
	}
	switch InvitationStatus(inv, time.Now()) {
	case "accepted":
		return nil, errorf(Conflict, "invitation was already accepted")
	case "revoked":
		return nil, errorf(Conflict, "invitation was revoked")
	case "expired":
		return nil, errorf(Conflict, "invitation has expired; ask for it to be reissued")
	}
	return inv, nil
}

// invitedUser is the signed-in user accepting, who must be the person
// invited.
func invitedUser(ctx context.Context, tx *store.Store, userID uuid.UUID, inv *store.Invitation) (*store.User, error) {
	u, err := tx.GetUser(ctx, userID)
	if err != nil {
		return nil, err
	}
	if u.Email != inv.Email {
		return nil, errorf(Forbidden, "this invitation was issued to a different email address")
	}
	return u, nil
}

// createInvitedAccount creates the account of the email invited, which
// must not have one yet (its owner signs in to accept instead).
func createInvitedAccount(ctx context.Context, tx *store.Store, inv *store.Invitation, in InvitationAccept) (*store.User, error) {
	if _, err := tx.GetUserByEmail(ctx, inv.Email); err == nil {
		return nil, errorf(Conflict, "an account with this email exists; sign in, then accept the invitation")
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if in.PasswordHash == nil {
		return nil, validate.Single(validate.Loc{"body", "password"}, "missing", "Field required (to create the account)", nil, nil)
	}
	name := in.Name
	if name == "" {
		name = inv.Email
	}
	now := store.Now()
	u := &store.User{ID: uuid.New(), Email: inv.Email, Name: name, PasswordHash: in.PasswordHash, InstanceRole: auth.InstanceMember,
		CreatedAt: now, UpdatedAt: now}
	if err := tx.CreateUser(ctx, u); err != nil {
		return nil, err
	}
	return u, nil
}

// redeem makes userID an active member with the invitation's role and
// marks the invitation accepted by them.
func redeem(ctx context.Context, tx *store.Store, inv *store.Invitation, userID uuid.UUID) (*store.Membership, error) {
	now := store.Now()
	m := &store.Membership{OrgID: inv.OrgID, UserID: userID, Role: inv.Role, Status: auth.MembershipActive, CreatedAt: now, UpdatedAt: now}
	if err := tx.CreateMembership(ctx, m); errors.Is(err, store.ErrConflict) {
		return nil, errorf(Conflict, "already a member of the organization")
	} else if err != nil {
		return nil, err
	}
	inv.AcceptedAt, inv.AcceptedBy, inv.UpdatedAt = &now, &userID, now
	return m, tx.UpdateInvitation(ctx, inv)
}
