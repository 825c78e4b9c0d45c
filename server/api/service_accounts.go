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

// Service accounts hold the admin role: what they may actually do is set
// by their keys' ceilings, which never exceed the issuer's own rights.
const serviceAccountRole = auth.OrgAdmin

func (s *Server) createServiceAccount(r *Request) (any, error) {
	var name string
	var in keyInput
	if err := r.body(func(o *validate.Object) {
		name = requiredString(o, "name", nameRule)
		if v, ok := o.Require("management_key"); ok {
			if ko := validate.ReadObject(v, o.Loc().With("management_key"), o.Errors()); ko != nil {
				in = readKeyInput(ko, time.Now())
				ko.Close()
			}
		}
	}); err != nil {
		return nil, err
	}
	var out wire.ServiceAccountBundle
	err := s.store.InTx(r.ctx, func(tx *store.Store) error {
		now := store.Now()
		id := uuid.New()
		sa := &store.User{
			ID: id, Email: "sa-" + id.String() + "@" + r.Org.Slug + ".service-accounts.invalid", Name: name,
			InstanceRole: auth.InstanceMember, ServiceAccount: true, ManagingOrgID: &r.Org.ID, CreatedAt: now, UpdatedAt: now,
		}
		if err := tx.CreateUser(r.ctx, sa); err != nil {
			return err
		}
		m := &store.Membership{OrgID: r.Org.ID, UserID: sa.ID, Role: serviceAccountRole, Status: auth.MembershipActive, CreatedAt: now, UpdatedAt: now}
		if err := tx.CreateMembership(r.ctx, m); err != nil {
			return err
		}
		if err := r.audit(tx, auditEntry{Action: "service_account.created", TargetType: "user", TargetID: sa.ID.String(),
			Details: map[string]any{"name": name}}); err != nil {
			return err
		}
		k, token, err := s.issueKey(tx, r, sa.ID, in)
		if err != nil {
			return err
		}
		key := toManagementKey(k, time.Now())
		key.Token = token
		out = wire.ServiceAccountBundle{
			ServiceAccount: toUser(sa, []uuid.UUID{r.Org.ID}), Membership: toMembership(m), ManagementKey: key,
		}
		return nil
	})
	return out, err
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

func (s *Server) serviceAccount(r *Request) (*store.User, error) {
	id, err := r.pathUUID("user_id")
	if err != nil {
		return nil, err
	}
	u, err := s.store.GetUser(r.ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (!u.ServiceAccount || u.DeletedAt != nil ||
		u.ManagingOrgID == nil || *u.ManagingOrgID != r.Org.ID)) {
		return nil, errorf(http.StatusNotFound, "service account %s not found", id)
	}
	return u, err
}

func (s *Server) getServiceAccount(r *Request) (any, error) {
	u, err := s.serviceAccount(r)
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
	u, err := s.serviceAccount(r)
	if err != nil {
		return nil, err
	}
	now := store.Now()
	err = s.store.InTx(r.ctx, func(tx *store.Store) error {
		if err := tx.DeleteServiceAccount(r.ctx, u.ID, now); err != nil {
			return err
		}
		return r.audit(tx, auditEntry{Action: "service_account.deleted", TargetType: "user", TargetID: u.ID.String(),
			Details: map[string]any{"name": u.Name}})
	})
	if err != nil {
		return nil, err
	}
	return wire.Deleted{ID: u.ID, DeletedAt: now}, nil
}
