package api

import (
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

func (s *Server) organizationRoutes() []*Route {
	const tag = "Instance Organizations"
	pageQ := []QueryParam{
		{Name: "limit", Description: "Page size, 1 to 200 (default 50).", Integer: true},
		{Name: "cursor", Description: "The opaque page.next_cursor of the previous page."},
	}
	return []*Route{
		{Method: "POST", Path: "/api/v1/instance/organizations", Tag: tag, Summary: "Create an organization",
			Perms: []auth.Permission{auth.OrganizationsCreate}, Body: wire.OrganizationCreate{}, Result: wire.Organization{}, Handle: s.createOrganization},
		{Method: "GET", Path: "/api/v1/instance/organizations", Tag: tag, Summary: "List all organizations",
			Perms: []auth.Permission{auth.OrganizationsRead}, Result: wire.Organization{}, Paginated: true, Query: pageQ, Handle: s.listAllOrganizations},
		{Method: "GET", Path: "/api/v1/instance/organizations/{org_id}", Tag: tag, Summary: "Get an organization",
			Perms: []auth.Permission{auth.OrganizationsRead}, Result: wire.Organization{}, Handle: s.getOrganizationByInstance},
		{Method: "PATCH", Path: "/api/v1/instance/organizations/{org_id}", Tag: tag, Summary: "Update an organization",
			Perms: []auth.Permission{auth.OrganizationsUpdate}, Body: wire.OrganizationUpdate{}, Result: wire.Organization{}, Handle: s.updateOrganizationByInstance},
		{Method: "DELETE", Path: "/api/v1/instance/organizations/{org_id}", Tag: tag, Summary: "Delete an organization",
			Perms: []auth.Permission{auth.OrganizationsDelete}, Result: wire.Deleted{}, RefreshesBundles: true, Handle: s.deleteOrganizationByInstance},
		// The same collection at /api/v1/organizations: creating needs the
		// instance permission; listing shows the organizations the caller
		// belongs to (all of them for instance staff).
		{Method: "POST", Path: "/api/v1/organizations", Tag: tag, Summary: "Create an organization",
			Perms: []auth.Permission{auth.OrganizationsCreate}, Body: wire.OrganizationCreate{}, Result: wire.Organization{}, Handle: s.createOrganization},
		{Method: "GET", Path: "/api/v1/organizations", Tag: tag, Summary: "List the caller's organizations",
			Access: Authenticated, Result: wire.Organization{}, Paginated: true, Query: pageQ, Handle: s.listMyOrganizations},

		{Method: "GET", Path: "/api/v1/organizations/{org_id}", Tag: "Organization Settings", Summary: "Get the organization",
			Perms: []auth.Permission{auth.OrganizationsRead}, Result: wire.Organization{}, Handle: s.getOrganization},
		{Method: "PATCH", Path: "/api/v1/organizations/{org_id}", Tag: "Organization Settings", Summary: "Update the organization",
			Perms: []auth.Permission{auth.OrganizationsUpdate}, Body: wire.OrganizationUpdate{}, Result: wire.Organization{}, Handle: s.updateOrganization},
		{Method: "DELETE", Path: "/api/v1/organizations/{org_id}", Tag: "Organization Settings", Summary: "Delete the organization",
			Perms: []auth.Permission{auth.OrganizationsDelete}, Result: wire.Deleted{}, RefreshesBundles: true, Handle: s.deleteOrganization},
		{Method: "GET", Path: "/api/v1/organizations/{org_id}/settings", Tag: "Organization Settings", Summary: "Get organization settings",
			Perms: []auth.Permission{auth.OrganizationsRead}, Result: wire.Organization{}, Handle: s.getOrganization},
		{Method: "PATCH", Path: "/api/v1/organizations/{org_id}/settings", Tag: "Organization Settings", Summary: "Update organization settings (name, slug, require_sso)",
			Perms: []auth.Permission{auth.OrganizationsUpdate}, Body: wire.OrganizationUpdate{}, Result: wire.Organization{}, Handle: s.updateOrganization},
	}
}

func (s *Server) createOrganization(r *Request) (any, error) {
	var in backend.OrganizationCreate
	if err := r.body(func(o *validate.Object) {
		in.Name = requiredString(o, "name", nameRule)
		in.Slug = readSlug(o)
	}); err != nil {
		return nil, err
	}
	org, err := backend.CreateOrganization(r.ctx, s.store, r.actor(), in)
	if err != nil {
		return nil, err
	}
	return toOrganization(org), nil
}

func (s *Server) listAllOrganizations(r *Request) (any, error) {
	return s.listOrganizations(r, nil)
}

func (s *Server) listMyOrganizations(r *Request) (any, error) {
	ks := r.P.KeyScope()
	staff := auth.InstanceRoleRights(r.P.User.InstanceRole).Has(auth.OrganizationsRead) && ks.Level == auth.LevelInstance &&
		r.P.Ceiling().Has(auth.OrganizationsRead)
	if staff {
		return s.listOrganizations(r, nil)
	}
	if ks.Level != auth.LevelInstance {
		// A scoped key sees its own organization only.
		pq, err := r.pageQuery("orgs:key:" + r.P.Key.ID.String())
		if err != nil {
			return nil, err
		}
		org, err := s.store.GetOrganization(r.ctx, ks.OrgID)
		if err != nil {
			return nil, err
		}
		if pq.After != nil {
			return page[wire.Organization]{}, nil
		}
		return page[wire.Organization]{items: []wire.Organization{toOrganization(org)}}, nil
	}
	return s.listOrganizations(r, &r.P.User.ID)
}

func (s *Server) listOrganizations(r *Request, memberOf *uuid.UUID) (any, error) {
	binding := "orgs:all"
	if memberOf != nil {
		binding = "orgs:member:" + memberOf.String()
	}
	pq, err := r.pageQuery(binding)
	if err != nil {
		return nil, err
	}
	orgs, next, err := s.store.ListOrganizations(r.ctx, memberOf, pq)
	if err != nil {
		return nil, err
	}
	out := make([]wire.Organization, len(orgs))
	for i := range orgs {
		out[i] = toOrganization(&orgs[i])
	}
	return page[wire.Organization]{items: out, next: r.nextCursor(binding, next)}, nil
}

// The instance routes name an organization in the path but act with
// instance rights; they resolve it themselves.
func (s *Server) instanceOrg(r *Request) error {
	org, err := s.store.GetOrganizationByRef(r.ctx, r.R.PathValue("org_id"))
	if errors.Is(err, store.ErrNotFound) {
		return errorf(http.StatusNotFound, "organization %q not found", r.R.PathValue("org_id"))
	}
	r.Org = org
	return err
}

func (s *Server) getOrganizationByInstance(r *Request) (any, error) {
	if err := s.instanceOrg(r); err != nil {
		return nil, err
	}
	return s.getOrganization(r)
}

func (s *Server) updateOrganizationByInstance(r *Request) (any, error) {
	if err := s.instanceOrg(r); err != nil {
		return nil, err
	}
	return s.updateOrganization(r)
}

func (s *Server) deleteOrganizationByInstance(r *Request) (any, error) {
	if err := s.instanceOrg(r); err != nil {
		return nil, err
	}
	return s.deleteOrganization(r)
}

func (s *Server) getOrganization(r *Request) (any, error) {
	return toOrganization(r.Org), nil
}

func (s *Server) updateOrganization(r *Request) (any, error) {
	var in backend.Rename
	var requireSSO []string
	err := r.body(func(o *validate.Object) {
		in.Name = optionalString(o, "name", nameRule)
		in.Slug = readSlug(o)
		requireSSO = readRequireSSO(o)
	})
	if err != nil {
		return nil, err
	}
	if requireSSO != nil {
		// A setting that cannot work is refused when saved: each name must
		// be a provider people can sign in through.
		var errs validate.Errors
		for i, n := range requireSSO {
			if _, err := s.store.GetIdentityProviderByName(r.ctx, n); errors.Is(err, store.ErrNotFound) {
				errs.Add(validate.Loc{"body", "require_sso", i}, "value_error", "Value error, no identity provider has this name", n, nil)
			} else if err != nil {
				return nil, err
			}
		}
		if err := errs.Err(); err != nil {
			return nil, err
		}
		in.RequireSSO = &requireSSO
	}
	org, err := backend.UpdateOrganization(r.ctx, s.store, r.actor(), *r.Org, in)
	if err != nil {
		return nil, err
	}
	return toOrganization(org), nil
}

func (s *Server) deleteOrganization(r *Request) (any, error) {
	now := store.Now()
	if err := backend.DeleteOrganization(r.ctx, s.store, r.actor(), r.Org); err != nil {
		return nil, err
	}
	return wire.Deleted{ID: r.Org.ID, DeletedAt: now}, nil
}

// readRequireSSO reads require_sso: provider names; [] clears it.
func readRequireSSO(o *validate.Object) []string {
	v, ok := o.Raw("require_sso")
	if !ok {
		return nil
	}
	out := []string{}
	validate.List(v, o.Loc().With("require_sso"), validate.ListRule{Max: 20}, o.Errors(), func(v any, loc validate.Loc) {
		if n, ok := validate.String(v, loc, idpNameRule, o.Errors()); ok && !contains(out, n) {
			out = append(out, n)
		}
	})
	return out
}
