package api

import (
	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
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

func (s *Server) addMember(r *Request) (any, error) {
	in := backend.MemberAdd{OrgID: r.Org.ID}
	if err := r.body(func(o *validate.Object) {
		if v, ok := o.Raw("user_id"); ok {
			if id, ok := validate.UUID(v, o.Loc().With("user_id"), o.Errors()); ok {
				in.UserID = &id
			}
		}
		in.Email = optionalString(o, "email", emailRule)
		if in.UserID == nil && in.Email == nil && !o.Has("user_id") && !o.Has("email") {
			o.Errors().Add(o.Loc(), "missing", "Field required: one of user_id or email", nil, nil)
		}
		in.Role = requiredLiteral(o, "role", auth.OrgRoles)
	}); err != nil {
		return nil, err
	}
	row, err := backend.AddMember(r.ctx, s.store, r.actor(), in)
	if err != nil {
		return nil, err
	}
	return toMember(row), nil
}

func (s *Server) updateMember(r *Request) (any, error) {
	userID, err := r.pathUUID("user_id")
	if err != nil {
		return nil, err
	}
	var in backend.MemberUpdate
	if err := r.body(func(o *validate.Object) {
		in.Role = optionalLiteral(o, "role", auth.OrgRoles)
		in.Status = optionalLiteral(o, "status", []string{auth.MembershipActive, auth.MembershipSuspended})
	}); err != nil {
		return nil, err
	}
	row, err := backend.UpdateMember(r.ctx, s.store, r.actor(), r.Org.ID, userID, in)
	if err != nil {
		return nil, err
	}
	return toMember(row), nil
}

func (s *Server) removeMember(r *Request) (any, error) {
	userID, err := r.pathUUID("user_id")
	if err != nil {
		return nil, err
	}
	row, err := backend.RemoveMember(r.ctx, s.store, r.actor(), r.Org.ID, userID)
	if err != nil {
		return nil, err
	}
	return toMember(row), nil
}
