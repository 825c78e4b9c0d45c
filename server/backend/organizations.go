package backend

import (
	"context"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/store"
)

// OrganizationCreate is a new organization; a nil Slug is derived from the
// name (acme, acme-2, …).
type OrganizationCreate struct {
	Name string
	Slug *string
}

// CreateOrganization creates an organization and audits it. Lookups of
// derived slugs come first because a failed insert would abort a
// PostgreSQL transaction; a race that still clashes is a conflict.
func CreateOrganization(ctx context.Context, st *store.Store, actor Actor, in OrganizationCreate) (*store.Organization, error) {
	now := store.Now()
	org := &store.Organization{ID: uuid.New(), Name: in.Name, CreatedAt: now, UpdatedAt: now}
	err := retryDerivedSlug(in.Slug, func() error {
		return st.InTx(ctx, func(tx *store.Store) error {
			var err error
			org.Slug, err = pickSlug(in.Slug, Slugify(in.Name, "org"), func(s string) (bool, error) { return tx.OrganizationSlugTaken(ctx, s) })
			if err != nil {
				return err
			}
			if err := tx.CreateOrganization(ctx, org); err != nil {
				return err
			}
			return Audit(ctx, tx, actor, AuditEntry{Action: "organization.created", TargetType: "organization", TargetID: org.ID.String(),
				OrgID: &org.ID, Details: map[string]any{"name": org.Name, "slug": org.Slug}})
		})
	})
	if err != nil {
		return nil, slugConflict(err, org.Slug)
	}
	return org, nil
}

// Rename is a {name?, slug?} change; for an organization, RequireSSO
// replaces its require_sso (an empty list clears it).
type Rename struct {
	Name, Slug *string
	RequireSSO *[]string
}

// UpdateOrganization renames an organization and audits the change, before
// and after.
func UpdateOrganization(ctx context.Context, st *store.Store, actor Actor, org store.Organization, in Rename) (*store.Organization, error) {
	before := map[string]any{"name": org.Name, "slug": org.Slug, "require_sso": []string(org.RequireSSO)}
	if in.Name != nil {
		org.Name = *in.Name
	}
	if in.Slug != nil {
		org.Slug = *in.Slug
	}
	if in.RequireSSO != nil {
		org.RequireSSO = nil
		if len(*in.RequireSSO) > 0 {
			org.RequireSSO = store.Strings(*in.RequireSSO)
		}
	}
	org.UpdatedAt = store.Now()
	details := map[string]any{"before": before, "after": map[string]any{"name": org.Name, "slug": org.Slug, "require_sso": []string(org.RequireSSO)}}
	err := st.InTx(ctx, func(tx *store.Store) error {
		if err := tx.UpdateOrganization(ctx, &org); err != nil {
			return slugConflict(err, org.Slug)
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "organization.updated", TargetType: "organization", TargetID: org.ID.String(),
			OrgID: &org.ID, Details: details})
	})
	if err != nil {
		return nil, err
	}
	return &org, nil
}

// DeleteOrganization deletes an organization with everything in it but its
// usage events, and audits it.
func DeleteOrganization(ctx context.Context, st *store.Store, actor Actor, org *store.Organization) error {
	return st.InTx(ctx, func(tx *store.Store) error {
		if err := tx.DeleteOrganization(ctx, org.ID); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "organization.deleted", TargetType: "organization", TargetID: org.ID.String(),
			OrgID: &org.ID, Details: map[string]any{"name": org.Name, "slug": org.Slug}})
	})
}
