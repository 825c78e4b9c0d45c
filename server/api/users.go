package api

import (
	"errors"
	"net/http"
	"slices"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

func (s *Server) userRoutes() []*Route {
	const tag, base = "Instance Users", "/api/v1/instance/users"
	return []*Route{
		{Method: "GET", Path: base, Tag: tag, Summary: "List users and service accounts",
			Perms: []auth.Permission{auth.PrincipalsRead}, Result: []wire.User{}, Handle: s.listUsers},
		{Method: "GET", Path: base + "/{user_id}", Tag: tag, Summary: "Get a user",
			Perms: []auth.Permission{auth.PrincipalsRead}, Result: wire.User{}, Handle: s.getUser},
		{Method: "PATCH", Path: base + "/{user_id}", Tag: tag, Summary: "Change a user's instance role",
			Perms: []auth.Permission{auth.PrincipalsManage}, Body: wire.UserUpdate{}, Result: wire.User{}, Handle: s.updateUser},
	}
}

func (s *Server) listUsers(r *Request) (any, error) {
	users, err := s.store.ListUsers(r.ctx)
	if err != nil {
		return nil, err
	}
	// Deleted service accounts are kept only so their revoked keys read
	// back with an owner; they are no longer users.
	users = slices.DeleteFunc(users, func(u store.User) bool { return u.DeletedAt != nil })
	return s.usersWithOrgs(r, users)
}

func (s *Server) pathUser(r *Request) (*store.User, error) {
	id, err := r.pathUUID("user_id")
	if err != nil {
		return nil, err
	}
	u, err := s.store.GetUser(r.ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && u.DeletedAt != nil) {
		return nil, errorf(http.StatusNotFound, "user %s not found", id)
	}
	return u, err
}

func (s *Server) getUser(r *Request) (any, error) {
	u, err := s.pathUser(r)
	if err != nil {
		return nil, err
	}
	users, err := s.usersWithOrgs(r, []store.User{*u})
	if err != nil {
		return nil, err
	}
	return users[0], nil
}

func (s *Server) updateUser(r *Request) (any, error) {
	id, err := r.pathUUID("user_id")
	if err != nil {
		return nil, err
	}
	var role string
	if err := r.body(func(o *validate.Object) {
		role = requiredLiteral(o, "instance_role", auth.InstanceRoles)
	}); err != nil {
		return nil, err
	}
	u, err := backend.ChangeInstanceRole(r.ctx, s.store, r.actor(), id, role)
	if err != nil {
		return nil, err
	}
	return s.oneUser(r, u)
}
