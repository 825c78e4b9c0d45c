package api

import (
	"context"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/catalogdb"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

func (s *Server) modelAliasRoutes() []*Route {
	type place struct{ tag, prefix string }
	places := []place{
		{"Model Catalog", "/api/v1/organizations/{org_id}/model-aliases"},
		{"Workspace Model Catalog", orgWS + "/{workspace_ref}/model-aliases"},
	}
	read := []auth.Permission{auth.CatalogRead}
	manage := []auth.Permission{auth.CatalogManage}
	var routes []*Route
	for _, p := range places {
		routes = append(routes,
			&Route{Method: "GET", Path: p.prefix, Tag: p.tag, Summary: "List the model aliases defined here (complete set)",
				Perms: read, Result: []wire.ModelAlias{}, Handle: s.listModelAliases},
			&Route{Method: "POST", Path: p.prefix, Tag: p.tag, Summary: "Create a model alias",
				Perms: manage, Body: wire.ModelAliasCreate{}, Result: wire.ModelAlias{}, RefreshesBundles: true, Handle: s.createModelAlias},
			&Route{Method: "GET", Path: p.prefix + "/{name}", Tag: p.tag, Summary: "Get a model alias",
				Perms: read, Result: wire.ModelAlias{}, Handle: s.getModelAlias},
			&Route{Method: "PATCH", Path: p.prefix + "/{name}", Tag: p.tag, Summary: "Replace a model alias's targets",
				Perms: manage, Body: wire.ModelAliasUpdate{}, Result: wire.ModelAlias{}, RefreshesBundles: true, Handle: s.updateModelAlias},
			&Route{Method: "DELETE", Path: p.prefix + "/{name}", Tag: p.tag, Summary: "Delete a model alias",
				Perms: manage, Result: wire.Deleted{}, RefreshesBundles: true, Handle: s.deleteModelAlias},
		)
	}
	return routes
}

// aliasScope is the scope the request's URL names.
func aliasScope(r *Request) store.AliasScope {
	sc := store.AliasScope{OrgID: r.Org.ID}
	if r.WS != nil {
		sc.WorkspaceID = &r.WS.ID
	}
	return sc
}

// readTargets reads a required targets member (backend.ParseAliasTargets).
func readTargets(o *validate.Object) []backend.AliasTarget {
	v, ok := o.Require("targets")
	if !ok {
		return nil
	}
	return backend.ParseAliasTargets(v, o.Loc().With("targets"), o.Errors())
}

// activeModels is the set of model ids in the catalog in force.
func (s *Server) activeModels(ctx context.Context) (map[string]bool, error) {
	rows, err := catalogdb.LoadRows(ctx, s.store)
	if err != nil {
		return nil, err
	}
	c, err := rows.Active()
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(c.Models))
	for _, m := range c.Models {
		out[m.ID] = true
	}
	return out, nil
}

func toModelAlias(a *store.ModelAlias, active map[string]bool) (wire.ModelAlias, error) {
	ts, err := backend.AliasTargets(a)
	if err != nil {
		return wire.ModelAlias{}, err
	}
	out := wire.ModelAlias{ID: a.ID, OrgID: a.OrgID, WorkspaceID: a.WorkspaceID, Name: a.Name, Targets: make([]wire.ModelAliasTarget, len(ts)),
		CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
	for i, t := range ts {
		out.Targets[i] = wire.ModelAliasTarget{Model: t.Model, Weight: t.Weight, Retired: !active[t.Model]}
	}
	return out, nil
}

// oneAlias answers with an alias, its retired targets marked.
func (s *Server) oneAlias(r *Request, a *store.ModelAlias) (any, error) {
	active, err := s.activeModels(r.ctx)
	if err != nil {
		return nil, err
	}
	return toModelAlias(a, active)
}

func (s *Server) listModelAliases(r *Request) (any, error) {
	as, err := s.store.ListModelAliases(r.ctx, aliasScope(r))
	if err != nil {
		return nil, err
	}
	active, err := s.activeModels(r.ctx)
	if err != nil {
		return nil, err
	}
	out := make([]wire.ModelAlias, len(as))
	for i := range as {
		if out[i], err = toModelAlias(&as[i], active); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Server) createModelAlias(r *Request) (any, error) {
	in := backend.AliasCreate{Scope: aliasScope(r)}
	if err := r.body(func(o *validate.Object) {
		in.Name = requiredString(o, "name", backend.AliasNameRule)
		in.Targets = readTargets(o)
	}); err != nil {
		return nil, err
	}
	a, err := backend.CreateModelAlias(r.ctx, s.store, r.actor(), in)
	if err != nil {
		return nil, err
	}
	return s.oneAlias(r, a)
}

func (s *Server) getModelAlias(r *Request) (any, error) {
	a, err := backend.ModelAliasIn(r.ctx, s.store, aliasScope(r), r.R.PathValue("name"))
	if err != nil {
		return nil, err
	}
	return s.oneAlias(r, a)
}

func (s *Server) updateModelAlias(r *Request) (any, error) {
	var targets []backend.AliasTarget
	if err := r.body(func(o *validate.Object) { targets = readTargets(o) }); err != nil {
		return nil, err
	}
	a, err := backend.UpdateModelAlias(r.ctx, s.store, r.actor(), aliasScope(r), r.R.PathValue("name"), targets)
	if err != nil {
		return nil, err
	}
	return s.oneAlias(r, a)
}

func (s *Server) deleteModelAlias(r *Request) (any, error) {
	now := store.Now()
	a, err := backend.DeleteModelAlias(r.ctx, s.store, r.actor(), aliasScope(r), r.R.PathValue("name"))
	if err != nil {
		return nil, err
	}
	return wire.Deleted{ID: a.ID, DeletedAt: now}, nil
}
