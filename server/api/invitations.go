package api

import (
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

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
		{Method: "POST", Path: "/api/v1/invitations/accept", Tag: tag, Access: Public, Statuses: []int{403, 404, 429, 503},
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
	in := backend.InvitationCreate{OrgID: r.Org.ID}
	if err := r.body(func(o *validate.Object) {
		in.Email = requiredString(o, "email", emailRule)
		in.Role = requiredLiteral(o, "role", auth.OrgRoles)
	}); err != nil {
		return nil, err
	}
	inv, token, err := backend.IssueInvitation(r.ctx, s.store, r.actor(), in)
	if err != nil {
		return nil, err
	}
	out := toInvitation(inv, time.Now())
	out.Token = token
	return out, nil
}

func (s *Server) reissueInvitation(r *Request) (any, error) {
	id, err := r.pathUUID("invitation_id")
	if err != nil {
		return nil, err
	}
	inv, token, err := backend.ReissueInvitation(r.ctx, s.store, r.actor(), r.Org.ID, id)
	if err != nil {
		return nil, err
	}
	out := toInvitation(inv, time.Now())
	out.Token = token
	return out, nil
}

func (s *Server) revokeInvitation(r *Request) (any, error) {
	id, err := r.pathUUID("invitation_id")
	if err != nil {
		return nil, err
	}
	inv, err := backend.RevokeInvitation(r.ctx, s.store, r.actor(), r.Org.ID, id)
	if err != nil {
		return nil, err
	}
	return toInvitation(inv, time.Now()), nil
}

// acceptInvitation accepts as the signed-in caller, or, with nobody signed
// in, creates the invited account and signs it in.
func (s *Server) acceptInvitation(r *Request) (any, error) {
	in := backend.InvitationAccept{Session: sessionStart(r)}
	var password *string
	if err := r.body(func(o *validate.Object) {
		in.Token = requiredString(o, "token", validate.StringRule{Min: 1, Max: 256, Secret: true})
		password = optionalString(o, "password", passwordRule)
		if p := optionalString(o, "name", personNameRule); p != nil {
			in.Name = *p
		}
	}); err != nil {
		return nil, err
	}
	// Guessing tokens is throttled per client address like sign-ins; the
	// password is hashed (within the gate) only for a token that exists,
	// and outside the transaction, which must not wait for a slot.
	err := s.guardAttempt(r, s.invites, "invitation.accept_throttled", "", func() (bool, error) {
		_, err := s.store.GetInvitationByHash(r.ctx, auth.HashToken(in.Token))
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if password != nil && r.P == nil {
			hash, err := auth.Passwords.Hash(r.ctx, *password)
			in.PasswordHash = &hash
			return true, err
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	acc, err := backend.AcceptInvitation(r.ctx, s.store, r.actor(), in)
	if err != nil {
		return nil, err
	}
	if acc.Session != nil {
		s.setSessionCookie(r, acc.Session, acc.SessionToken)
	}
	out := wire.InvitationAccepted{User: toUser(acc.User, nil), Membership: toMembership(acc.Membership)}
	orgs, err := s.store.UserOrgs(r.ctx, []uuid.UUID{acc.User.ID})
	if err != nil {
		return nil, err
	}
	out.User.Orgs = orgs[acc.User.ID]
	return out, nil
}
