package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Place is where an id belongs: its organization and workspace (nil where
// it is not confined to one: a platform credential, an instance key) and,
// for a key, the principal it belongs to.
type Place struct {
	OrgID, WorkspaceID *uuid.UUID
	UserID             uuid.UUID
}

// ReferentQuery lists the ids a batch of usage events names, by kind.
type ReferentQuery struct {
	InferenceKeys, ManagementKeys, Credentials, Policies, Users []uuid.UUID
}

// Referents is where each named id that exists belongs; an id absent from
// its map names nothing (or something deleted since).
type Referents struct {
	InferenceKeys, ManagementKeys, Credentials, Policies map[uuid.UUID]Place
	// UserOrgs are the organizations each named user is a member of;
	// InstanceRoles their instance roles (every existing user has one).
	UserOrgs      map[uuid.UUID][]uuid.UUID
	InstanceRoles map[uuid.UUID]string
}

// Referents finds where the ids of q belong, one query per kind of id
// (never one per event), for usage ingest's reach check.
func (s *Store) Referents(ctx context.Context, q ReferentQuery) (*Referents, error) {
	out := &Referents{InferenceKeys: map[uuid.UUID]Place{}, ManagementKeys: map[uuid.UUID]Place{}, Credentials: map[uuid.UUID]Place{},
		Policies: map[uuid.UUID]Place{}, UserOrgs: map[uuid.UUID][]uuid.UUID{}, InstanceRoles: map[uuid.UUID]string{}}
	type placed struct {
		ID          uuid.UUID  `bun:"id,type:uuid"`
		OrgID       *uuid.UUID `bun:"org_id,type:uuid"`
		WorkspaceID *uuid.UUID `bun:"workspace_id,type:uuid"`
		UserID      uuid.UUID  `bun:"user_id,type:uuid"`
	}
	for _, k := range []struct {
		ids   []uuid.UUID
		model any
		user  bool
		into  map[uuid.UUID]Place
	}{
		{q.InferenceKeys, (*InferenceKey)(nil), true, out.InferenceKeys},
		{q.ManagementKeys, (*ManagementKey)(nil), true, out.ManagementKeys},
		{q.Credentials, (*ProviderCredential)(nil), false, out.Credentials},
		{q.Policies, (*Policy)(nil), false, out.Policies},
	} {
		if len(k.ids) == 0 {
			continue
		}
		cols := []string{"id", "org_id", "workspace_id"}
		if k.user {
			cols = append(cols, "user_id")
		}
		var rows []placed
		if err := s.db.NewSelect().Model(k.model).Column(cols...).Where("id IN (?)", bun.List(k.ids)).Scan(ctx, &rows); err != nil {
			return nil, mapErr(err)
		}
		for _, r := range rows {
			k.into[r.ID] = Place{OrgID: r.OrgID, WorkspaceID: r.WorkspaceID, UserID: r.UserID}
		}
	}
	if len(q.Users) > 0 {
		var users []User
		if err := s.db.NewSelect().Model(&users).Column("id", "instance_role").Where("id IN (?)", bun.List(q.Users)).Scan(ctx); err != nil {
			return nil, mapErr(err)
		}
		for _, u := range users {
			out.InstanceRoles[u.ID] = u.InstanceRole
		}
		orgs, err := s.UserOrgs(ctx, q.Users)
		if err != nil {
			return nil, err
		}
		out.UserOrgs = orgs
	}
	return out, nil
}

// BundleVersions maps each of orgs that has a bundle to its latest
// version, without reading the bundles themselves.
func (s *Store) BundleVersions(ctx context.Context, orgs []uuid.UUID) (map[uuid.UUID]int64, error) {
	out := make(map[uuid.UUID]int64, len(orgs))
	if len(orgs) == 0 {
		return out, nil
	}
	var rows []Bundle
	if err := s.db.NewSelect().Model(&rows).Column("org_id", "version").Where("org_id IN (?)", bun.List(orgs)).Scan(ctx); err != nil {
		return nil, mapErr(err)
	}
	for _, b := range rows {
		out[b.OrgID] = b.Version
	}
	return out, nil
}

// ExistingOrganizations returns those of ids that name an organization.
func (s *Store) ExistingOrganizations(ctx context.Context, ids []uuid.UUID) ([]uuid.UUID, error) {
	var out []uuid.UUID
	if len(ids) == 0 {
		return out, nil
	}
	err := s.db.NewSelect().Model((*Organization)(nil)).Column("id").Where("id IN (?)", bun.List(ids)).OrderExpr("id ASC").Scan(ctx, &out)
	return out, mapErr(err)
}
