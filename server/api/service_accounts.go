package api

import (
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

func (s *Server) serviceAccountRoutes() []*Route {
	const tag, base = "Service Accounts", "/api/v1/organizations/{org_id}/service-accounts"
	return []*Route{
		{Method: "POST", Path: base, Tag: tag, Summary: "Create a service account with its first management key",
			Perms: []auth.Permission{auth.MembersManage, auth.ManagementKeysIssue}, Body: wire.ServiceAccountCreate{},
			Result: wire.ServiceAccountBundle{}, Handle: s.createServiceAccount},
		{Method: "GET", Path: base, Tag: tag, Summary: "List service accounts",
			Perms: []auth.Permission{auth.MembersRead}, Result: []wire.User{}, Handle: s.listServiceAccounts},
		{Method: "GET", Path: base + "/{user_id}", Tag: tag, Summary: "Get a service account",
			Perms: []auth.Permission{auth.MembersRead}, Result: wire.User{}, Handle: s.getServiceAccount},
		{Method: "DELETE", Path: base + "/{user_id}", Tag: tag, Summary: "Delete a service account and revoke its keys",
			Perms: []auth.Permission{auth.MembersManage}, Result: wire.Deleted{}, RefreshesBundles: true, Handle: s.deleteServiceAccount},
	}
}

func (s *Server) createServiceAccount(r *Request) (any, error) {
	in := backend.ServiceAccountCreate{Org: r.Org}
	if err := r.body(func(o *validate.Object) {
		in.Name = requiredString(o, "name", nameRule)
		if v, ok := o.Require("management_key"); ok {
			if ko := validate.ReadObject(v, o.Loc().With("management_key"), o.Errors()); ko != nil {
				in.Key = readKeyInput(ko, time.Now())
				ko.Close()
			}
		}
	}); err != nil {
		return nil, err
	}
	made, err := backend.CreateServiceAccount(r.ctx, s.store, r.actor(), in)
	if err != nil {
		return nil, err
	}
	key := toManagementKey(made.Key, time.Now())
	key.Token = made.Token
	return wire.ServiceAccountBundle{
		ServiceAccount: toUser(made.Account, []uuid.UUID{r.Org.ID}), Membership: toMembership(made.Membership), ManagementKey: key,
	}, nil
}

func (s *Server) listServiceAccounts(r *Request) (any, error) {
	users, err := s.store.ListServiceAccounts(r.ctx, r.Org.ID)
	if err != nil {
		return nil, err
	}
	return s.usersWithOrgs(r, users)
}

func (s *Server) usersWithOrgs(r *Request, users []store.User) ([]wire.User, error) {
	ids := make([]uuid.UUID, len(users))
	for i, u := range users {
		ids[i] = u.ID
	}
	orgs, err := s.store.UserOrgs(r.ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]wire.User, len(users))
	for i := range users {
		out[i] = toUser(&users[i], orgs[users[i].ID])
	}
	return out, nil
}

func (s *Server) getServiceAccount(r *Request) (any, error) {
	id, err := r.pathUUID("user_id")
	if err != nil {
		return nil, err
	}
	u, err := backend.ServiceAccountIn(r.ctx, s.store, r.Org.ID, id)
	if err != nil {
		return nil, err
	}
	users, err := s.usersWithOrgs(r, []store.User{*u})
	if err != nil {
		return nil, err
	}
	return users[0], nil
}

func (s *Server) deleteServiceAccount(r *Request) (any, error) {
	id, err := r.pathUUID("user_id")
	if err != nil {
		return nil, err
	}
	u, err := backend.DeleteServiceAccount(r.ctx, s.store, r.actor(), r.Org.ID, id)
	if err != nil {
		return nil, err
	}
	return wire.Deleted{ID: u.ID, DeletedAt: *u.DeletedAt}, nil
}
