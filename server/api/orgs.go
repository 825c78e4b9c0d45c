package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
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
		{Method: "PATCH", Path: "/api/v1/organizations/{org_id}/settings", Tag: "Organization Settings", Summary: "Update organization settings (name, slug)",
			Perms: []auth.Permission{auth.OrganizationsUpdate}, Body: wire.OrganizationUpdate{}, Result: wire.Organization{}, Handle: s.updateOrganization},
	}
}

func (s *Server) createOrganization(r *Request) (any, error) {
	var name string
	var slug *string
	if err := r.body(func(o *validate.Object) {
		name = requiredString(o, "name", nameRule)
		slug = readSlug(o)
	}); err != nil {
		return nil, err
	}
	now := store.Now()
	org := &store.Organization{ID: uuid.New(), Name: name, CreatedAt: now, UpdatedAt: now}
	err := retryDerivedSlug(slug, func() error {
		return s.store.InTx(r.ctx, func(tx *store.Store) error {
			var err error
			org.Slug, err = pickSlug(slug, slugify(name, "org"), func(s string) (bool, error) { return tx.OrganizationSlugTaken(r.ctx, s) })
			if err != nil {
				return err
			}
			if err := tx.CreateOrganization(r.ctx, org); err != nil {
				return err
			}
			return r.audit(tx, auditEntry{Action: "organization.created", TargetType: "organization", TargetID: org.ID.String(),
				OrgID: &org.ID, Details: map[string]any{"name": org.Name, "slug": org.Slug}})
		})
	})
	if err != nil {
		return nil, slugConflict(err, org.Slug)
	}
	return toOrganization(org), nil
}

// pickSlug returns the caller's slug, or derives a free one from the name
// (acme, acme-2, …). Lookups come first because a failed insert would abort
// a PostgreSQL transaction; a race that still clashes surfaces as a 409.
func pickSlug(given *string, derived string, taken func(string) (bool, error)) (string, error) {
	if given != nil {
		return *given, nil
	}
	for i := 1; i <= 50; i++ {
		slug := derived
		if i > 1 {
			slug = fmt.Sprintf("%s-%d", derived, i)
		}
		t, err := taken(slug)
		if err != nil || !t {
			return slug, err
		}
	}
	return "", errorf(http.StatusConflict, "could not derive a free slug from the name; give one explicitly")
}

// retryDerivedSlug reruns a create whose derived slug was taken by a
// concurrent create between the lookup and the insert (on PostgreSQL the
// failed insert aborts the transaction, so the whole transaction reruns).
// A slug the caller chose is never retried: its clash is the caller's 409.
func retryDerivedSlug(given *string, create func() error) error {
	err := create()
	for attempt := 0; given == nil && errors.Is(err, store.ErrConflict) && attempt < 10; attempt++ {
		err = create()
	}
	return err
}

func slugConflict(err error, slug string) error {
	if errors.Is(err, store.ErrConflict) {
		return errorf(http.StatusConflict, "slug %q is already taken", slug)
	}
	return err
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

// readRename reads a {name?, slug?} body into name and slug and returns
// the before/after details for the audit event.
func (r *Request) readRename(name, slug *string) (map[string]any, error) {
	var newName, newSlug *string
	if err := r.body(func(o *validate.Object) {
		newName = optionalString(o, "name", nameRule)
		newSlug = readSlug(o)
	}); err != nil {
		return nil, err
	}
	before := map[string]any{"name": *name, "slug": *slug}
	if newName != nil {
		*name = *newName
	}
	if newSlug != nil {
		*slug = *newSlug
	}
	return map[string]any{"before": before, "after": map[string]any{"name": *name, "slug": *slug}}, nil
}

func (s *Server) updateOrganization(r *Request) (any, error) {
	org := *r.Org
	details, err := r.readRename(&org.Name, &org.Slug)
	if err != nil {
		return nil, err
	}
	org.UpdatedAt = store.Now()
	err = s.store.InTx(r.ctx, func(tx *store.Store) error {
		if err := tx.UpdateOrganization(r.ctx, &org); err != nil {
			return slugConflict(err, org.Slug)
		}
		return r.audit(tx, auditEntry{Action: "organization.updated", TargetType: "organization", TargetID: org.ID.String(), Details: details})
	})
	if err != nil {
		return nil, err
	}
	return toOrganization(&org), nil
}

func (s *Server) deleteOrganization(r *Request) (any, error) {
	now := store.Now()
	err := s.store.InTx(r.ctx, func(tx *store.Store) error {
		if err := tx.DeleteOrganization(r.ctx, r.Org.ID); err != nil {
			return err
		}
		return r.audit(tx, auditEntry{Action: "organization.deleted", TargetType: "organization", TargetID: r.Org.ID.String(),
			Details: map[string]any{"name": r.Org.Name, "slug": r.Org.Slug}})
	})
	if err != nil {
		return nil, err
	}
	return wire.Deleted{ID: r.Org.ID, DeletedAt: now}, nil
}
