package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// invitationTTL is how long an invitation token stays redeemable.
const invitationTTL = 7 * 24 * time.Hour

func (s *Server) invitationRoutes() []*Route {
	const tag, base = "Invitations", "/api/v1/organizations/{org_id}/invitations"
	return []*Route{
		{Method: "GET", Path: base, Tag: tag, Summary: "List invitations (complete set, no tokens)",
			Perms: []auth.Permission{auth.MembersRead}, Result: []wire.Invitation{}, Handle: s.listInvitations},
		{Method: "POST", Path: base, Tag: tag, Summary: "Issue an invitation (the token is shown once)",
			Perms: []auth.Permission{auth.MembersManage}, Body: wire.InvitationCreate{}, Result: wire.Invitation{}, Handle: s.createInvitation},
		{Method: "POST", Path: base + "/{invitation_id}/reissue", Tag: tag, Summary: "Reissue an invitation with a new token and expiry",
			Perms: []auth.Permission{auth.MembersManage}, Result: wire.Invitation{}, Handle: s.reissueInvitation},
		{Method: "POST", Path: base + "/{invitation_id}/revoke", Tag: tag, Summary: "Revoke an invitation",
			Perms: []auth.Permission{auth.MembersManage}, Result: wire.Invitation{}, Handle: s.revokeInvitation},
		{Method: "DELETE", Path: base + "/{invitation_id}", Tag: tag, Summary: "Revoke an invitation",
			Perms: []auth.Permission{auth.MembersManage}, Result: wire.Invitation{}, Handle: s.revokeInvitation},
		{Method: "POST", Path: "/api/v1/invitations/accept", Tag: tag, Access: Public,
			Summary: "Accept an invitation: signed in as the invited email, or creating the account with a password",
			Body:    wire.InvitationAccept{}, Result: wire.InvitationAccepted{}, Handle: s.acceptInvitation},
	}
}

func (s *Server) listInvitations(r *Request) (any, error) {
	invs, err := s.store.ListInvitations(r.ctx, r.Org.ID)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := make([]wire.Invitation, len(invs))
	for i := range invs {
		out[i] = toInvitation(&invs[i], now)
	}
	return out, nil
}

func (s *Server) createInvitation(r *Request) (any, error) {
	var email, role string
	if err := r.body(func(o *validate.Object) {
		email = requiredString(o, "email", emailRule)
		role = requiredLiteral(o, "role", auth.OrgRoles)
	}); err != nil {
		return nil, err
	}
	if err := mayGrant(r, auth.OrgRoleRights(role)); err != nil {
		return nil, err
	}
	token, _, hash := auth.NewToken(auth.InvitationPrefix)
	now := store.Now()
	inv := &store.Invitation{ID: uuid.New(), OrgID: r.Org.ID, Email: normalizeEmail(email), Role: role, TokenHash: hash,
		InvitedBy: &r.P.User.ID, ExpiresAt: now.Add(invitationTTL), CreatedAt: now, UpdatedAt: now}
	err := s.store.InTx(r.ctx, func(tx *store.Store) error {
		if err := tx.CreateInvitation(r.ctx, inv); err != nil {
			return err
		}
		return r.audit(tx, auditEntry{Action: "invitation.issued", TargetType: "invitation", TargetID: inv.ID.String(),
			Details: map[string]any{"email": inv.Email, "role": role}})
	})
	if err != nil {
		return nil, err
	}
	out := toInvitation(inv, time.Now())
	out.Token = token
	return out, nil
}

func (s *Server) pathInvitation(tx *store.Store, r *Request) (*store.Invitation, error) {
	id, err := r.pathUUID("invitation_id")
	if err != nil {
		return nil, err
	}
	inv, err := tx.GetInvitation(r.ctx, r.Org.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(http.StatusNotFound, "invitation %s not found", id)
	}
	return inv, err
}

func (s *Server) reissueInvitation(r *Request) (any, error) {
	var out wire.Invitation
	err := s.store.InTx(r.ctx, func(tx *store.Store) error {
		inv, err := s.pathInvitation(tx, r)
		if err != nil {
			return err
		}
		if inv.AcceptedAt != nil {
			return errorf(http.StatusConflict, "invitation %s was already accepted", inv.ID)
		}
		// A reissue hands the caller a fresh token: for an owner invitation
		// that is granting the owner role, which only owners may do.
		if err := mayGrant(r, auth.OrgRoleRights(inv.Role)); err != nil {
			return err
		}
		token, _, hash := auth.NewToken(auth.InvitationPrefix)
		now := store.Now()
		// The old token stops working: its hash is replaced.
		inv.TokenHash, inv.ExpiresAt, inv.RevokedAt, inv.UpdatedAt = hash, now.Add(invitationTTL), nil, now
		if err := tx.UpdateInvitation(r.ctx, inv); err != nil {
			return err
		}
		out = toInvitation(inv, time.Now())
		out.Token = token
		return r.audit(tx, auditEntry{Action: "invitation.reissued", TargetType: "invitation", TargetID: inv.ID.String(),
			Details: map[string]any{"email": inv.Email}})
	})
	return out, err
}

func (s *Server) revokeInvitation(r *Request) (any, error) {
	var out wire.Invitation
	err := s.store.InTx(r.ctx, func(tx *store.Store) error {
		inv, err := s.pathInvitation(tx, r)
		if err != nil {
			return err
		}
		if inv.AcceptedAt != nil {
			return errorf(http.StatusConflict, "invitation %s was already accepted; remove the member instead", inv.ID)
		}
		if inv.RevokedAt == nil {
			now := store.Now()
			inv.RevokedAt, inv.UpdatedAt = &now, now
			if err := tx.UpdateInvitation(r.ctx, inv); err != nil {
				return err
			}
			if err := r.audit(tx, auditEntry{Action: "invitation.revoked", TargetType: "invitation", TargetID: inv.ID.String(),
				Details: map[string]any{"email": inv.Email}}); err != nil {
				return err
			}
		}
		out = toInvitation(inv, time.Now())
		return nil
	})
	return out, err
}

func (s *Server) acceptInvitation(r *Request) (any, error) {
	var token, name string
	var password *string
	if err := r.body(func(o *validate.Object) {
		token = requiredString(o, "token", validate.StringRule{Min: 1, Max: 256, Secret: true})
		password = optionalString(o, "password", passwordRule)
		if p := optionalString(o, "name", personNameRule); p != nil {
			name = *p
		}
	}); err != nil {
		return nil, err
	}
	// Guessing tokens is throttled per client address like sign-ins; the
	// password is hashed (within the gate) only for a token that exists,
	// and outside the transaction, which must not wait for a slot.
	var hash string
	notFound := errorf(http.StatusNotFound, "invitation not found; it may have been reissued")
	err := s.guardAttempt(r, s.invites, "invitation.accept_throttled", "", func() (bool, error) {
		_, err := s.store.GetInvitationByHash(r.ctx, auth.HashToken(token))
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if password != nil && r.P == nil {
			hash, err = auth.Passwords.Hash(r.ctx, *password)
		}
		return true, err
	})
	if err != nil {
		return nil, err
	}
	var out wire.InvitationAccepted
	var newUser *store.User
	err = s.store.InTx(r.ctx, func(tx *store.Store) error {
		inv, err := tx.GetInvitationByHash(r.ctx, auth.HashToken(token))
		if errors.Is(err, store.ErrNotFound) {
			return notFound
		}
		if err != nil {
			return err
		}
		switch toInvitation(inv, time.Now()).Status {
		case "accepted":
			return errorf(http.StatusConflict, "invitation was already accepted")
		case "revoked":
			return errorf(http.StatusConflict, "invitation was revoked")
		case "expired":
			return errorf(http.StatusConflict, "invitation has expired; ask for it to be reissued")
		}
		now := store.Now()
		var u *store.User
		if r.P != nil {
			if r.P.User.Email != inv.Email {
				return errorf(http.StatusForbidden, "this invitation was issued to a different email address")
			}
			u = r.P.User
		} else {
			if _, err := tx.GetUserByEmail(r.ctx, inv.Email); err == nil {
				return errorf(http.StatusConflict, "an account with this email exists; sign in, then accept the invitation")
			} else if !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if password == nil {
				return validate.Single(validate.Loc{"body", "password"}, "missing", "Field required (to create the account)", nil, nil)
			}
			if name == "" {
				name = inv.Email
			}
			u = &store.User{ID: uuid.New(), Email: inv.Email, Name: name, PasswordHash: &hash, InstanceRole: auth.InstanceMember,
				CreatedAt: now, UpdatedAt: now}
			if err := tx.CreateUser(r.ctx, u); err != nil {
				return err
			}
			newUser = u
		}
		m := &store.Membership{OrgID: inv.OrgID, UserID: u.ID, Role: inv.Role, Status: auth.MembershipActive, CreatedAt: now, UpdatedAt: now}
		if err := tx.CreateMembership(r.ctx, m); errors.Is(err, store.ErrConflict) {
			return errorf(http.StatusConflict, "already a member of the organization")
		} else if err != nil {
			return err
		}
		inv.AcceptedAt, inv.AcceptedBy, inv.UpdatedAt = &now, &u.ID, now
		if err := tx.UpdateInvitation(r.ctx, inv); err != nil {
			return err
		}
		if newUser != nil {
			if err := s.startSession(tx, r, u.ID); err != nil {
				return err
			}
			// The invitee created the account: they are the actor, not "system".
			r.P = &Principal{User: u}
		}
		out = wire.InvitationAccepted{User: toUser(u, nil), Membership: toMembership(m)}
		return r.audit(tx, auditEntry{Action: "invitation.accepted", TargetType: "invitation", TargetID: inv.ID.String(),
			OrgID: &inv.OrgID, Details: map[string]any{"email": inv.Email, "role": inv.Role, "user_id": u.ID.String()}})
	})
	if err != nil {
		return nil, err
	}
	orgs, err := s.store.UserOrgs(r.ctx, []uuid.UUID{out.User.ID})
	if err == nil {
		out.User.Orgs = orgs[out.User.ID]
	}
	return out, err
}
