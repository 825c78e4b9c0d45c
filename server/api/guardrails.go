package api

import (
	"encoding/json"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/guardrails"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// guardrailRoutes are the guardrails of an organization (applying to
// every workspace) and of a workspace (issue 32).
func (s *Server) guardrailRoutes() []*Route {
	type place struct{ tag, prefix string }
	places := []place{
		{"Organization Settings", "/api/v1/organizations/{org_id}/guardrails"},
		{"Workspace Policies", orgWS + "/{workspace_ref}/guardrails"},
	}
	read := []auth.Permission{auth.PoliciesRead}
	manage := []auth.Permission{auth.PoliciesManage}
	var routes []*Route
	for _, p := range places {
		routes = append(routes,
			&Route{Method: "GET", Path: p.prefix, Tag: p.tag, Summary: "List the guardrails defined here (complete set)",
				Perms: read, Result: []wire.Guardrail{}, Handle: s.listGuardrails},
			&Route{Method: "POST", Path: p.prefix, Tag: p.tag, Summary: "Create a guardrail",
				Perms: manage, Body: wire.GuardrailCreate{}, Result: wire.Guardrail{}, RefreshesBundles: true, Handle: s.createGuardrail},
			&Route{Method: "GET", Path: p.prefix + "/{guardrail_id}", Tag: p.tag, Summary: "Get a guardrail",
				Perms: read, Result: wire.Guardrail{}, Handle: s.getGuardrail},
			&Route{Method: "PATCH", Path: p.prefix + "/{guardrail_id}", Tag: p.tag, Summary: "Update a guardrail's members given",
				Perms: manage, Body: wire.GuardrailUpdate{}, Result: wire.Guardrail{}, RefreshesBundles: true, Handle: s.updateGuardrail},
			&Route{Method: "DELETE", Path: p.prefix + "/{guardrail_id}", Tag: p.tag, Summary: "Delete a guardrail",
				Perms: manage, Result: wire.Deleted{}, RefreshesBundles: true, Handle: s.deleteGuardrail},
		)
	}
	return routes
}

// toGuardrail answers a guardrail; webhook secrets only as has_secret.
func toGuardrail(g *store.Guardrail) (wire.Guardrail, error) {
	d, err := backend.ReadGuardrailDefinition(g)
	if err != nil {
		return wire.Guardrail{}, err
	}
	target, err := json.Marshal(d.Target)
	if err != nil {
		return wire.Guardrail{}, err
	}
	out := wire.Guardrail{ID: g.ID, OrgID: g.OrgID, WorkspaceID: g.WorkspaceID, Name: g.Name, Enabled: g.Enabled,
		Target: wire.PolicyTarget(target), Stages: make([]string, len(d.Stages)), Detectors: make([]wire.GuardrailDetector, len(d.Detectors)),
		Action: string(d.Action), OnError: string(d.OnError), CreatedAt: g.CreatedAt, UpdatedAt: g.UpdatedAt}
	for i, st := range d.Stages {
		out.Stages[i] = string(st)
	}
	for i, det := range d.Detectors {
		out.Detectors[i] = wire.GuardrailDetector{Kind: det.Kind, Types: det.Types, Patterns: det.Patterns, Words: det.Words,
			URL: det.URL, TimeoutMS: det.TimeoutMS, HasSecret: det.SecretSealed != ""}
	}
	return out, nil
}

// sealGuardrailSecret seals a webhook's signing secret bound to its
// guardrail and URL.
func (s *Server) sealGuardrailSecret(secret []byte, id uuid.UUID, url string) (string, error) {
	return s.opts.Keyring.Seal(secret, secrets.GuardrailWebhookAAD(id, url))
}

// readGuardrail reads a body and holds each webhook URL to the egress
// policy (a URL gw may not call is refused when saved).
func (s *Server) readGuardrail(r *Request, create bool) (backend.GuardrailInput, error) {
	policy, err := s.egressPolicy(r.ctx)
	if err != nil {
		return backend.GuardrailInput{}, err
	}
	var in backend.GuardrailInput
	err = r.body(func(o *validate.Object) {
		in = backend.ParseGuardrail(o, create)
		for i, d := range in.Detectors {
			if d.Kind != guardrails.KindWebhook || d.URL == "" {
				continue
			}
			loc := validate.Loc{"body", "detectors", i, "url"}
			if !httpURL(d.URL) {
				o.Errors().Add(loc, "url_parsing", "Input should be an absolute http(s) URL", d.URL, nil)
				continue
			}
			checkEgress(r.ctx, policy, o.Errors(), loc, d.URL, d.URL)
		}
	})
	return in, err
}

func (s *Server) listGuardrails(r *Request) (any, error) {
	gs, err := s.store.ListGuardrails(r.ctx, aliasScope(r))
	if err != nil {
		return nil, err
	}
	return convertEach(gs, toGuardrail)
}

func (s *Server) createGuardrail(r *Request) (any, error) {
	in, err := s.readGuardrail(r, true)
	if err != nil {
		return nil, err
	}
	g, err := backend.CreateGuardrail(r.ctx, s.store, r.actor(), backend.GuardrailCreate{Scope: aliasScope(r), In: in, Seal: s.sealGuardrailSecret})
	if err != nil {
		return nil, err
	}
	return toGuardrail(g)
}

func (s *Server) getGuardrail(r *Request) (any, error) {
	id, err := r.pathUUID("guardrail_id")
	if err != nil {
		return nil, err
	}
	g, err := backend.GuardrailIn(r.ctx, s.store, aliasScope(r), id)
	if err != nil {
		return nil, err
	}
	return toGuardrail(g)
}

func (s *Server) updateGuardrail(r *Request) (any, error) {
	in, err := s.readGuardrail(r, false)
	if err != nil {
		return nil, err
	}
	id, err := r.pathUUID("guardrail_id")
	if err != nil {
		return nil, err
	}
	g, err := backend.UpdateGuardrail(r.ctx, s.store, r.actor(), aliasScope(r), id, in, s.sealGuardrailSecret)
	if err != nil {
		return nil, err
	}
	return toGuardrail(g)
}

func (s *Server) deleteGuardrail(r *Request) (any, error) {
	now := store.Now()
	id, err := r.pathUUID("guardrail_id")
	if err != nil {
		return nil, err
	}
	g, err := backend.DeleteGuardrail(r.ctx, s.store, r.actor(), aliasScope(r), id)
	if err != nil {
		return nil, err
	}
	return wire.Deleted{ID: g.ID, DeletedAt: now}, nil
}
