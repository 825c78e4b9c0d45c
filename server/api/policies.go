package api

import (
	"encoding/json"
	"fmt"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

func (s *Server) policyRoutes() []*Route {
	const tag, base = "Workspace Policies", orgWS + "/{workspace_ref}/policies"
	read := []auth.Permission{auth.PoliciesRead}
	manage := []auth.Permission{auth.PoliciesManage}
	return []*Route{
		{Method: "GET", Path: base, Tag: tag, Summary: "List the workspace's policies (complete set)",
			Perms: read, Result: []wire.Policy{}, Handle: s.listPolicies},
		{Method: "POST", Path: base, Tag: tag, Summary: "Create a policy",
			Perms: manage, Body: wire.PolicyCreate{}, Result: wire.Policy{}, RefreshesBundles: true, Handle: s.createPolicy},
		{Method: "GET", Path: base + "/candidates", Tag: tag, Summary: "Users or inference keys a selected_users / selected_keys target may name",
			Perms: read, Result: []wire.PolicyCandidate{}, Query: []QueryParam{{Name: "target", Description: "users or keys", Enum: []string{"users", "keys"}, Required: true}},
			Handle: s.policyCandidates},
		{Method: "GET", Path: base + "/{policy_id}", Tag: tag, Summary: "Get a policy",
			Perms: read, Result: wire.Policy{}, Handle: s.getPolicy},
		{Method: "PATCH", Path: base + "/{policy_id}", Tag: tag, Summary: "Update a policy's name, enabled flag or definition",
			Perms: manage, Body: wire.PolicyUpdate{}, Result: wire.Policy{}, RefreshesBundles: true, Handle: s.updatePolicy},
		{Method: "DELETE", Path: base + "/{policy_id}", Tag: tag, Summary: "Delete a policy",
			Perms: manage, Result: wire.Deleted{}, RefreshesBundles: true, Handle: s.deletePolicy},
		{Method: "POST", Path: base + "/{policy_id}/enable", Tag: tag, Summary: "Enable a policy",
			Perms: manage, Result: wire.Policy{}, RefreshesBundles: true, Handle: s.setPolicyEnabled(true)},
		{Method: "POST", Path: base + "/{policy_id}/disable", Tag: tag, Summary: "Disable a policy",
			Perms: manage, Result: wire.Policy{}, RefreshesBundles: true, Handle: s.setPolicyEnabled(false)},
	}
}

func toPolicy(p *store.Policy) (wire.Policy, error) {
	var def policy.Definition
	if err := json.Unmarshal([]byte(p.Definition), &def); err != nil {
		return wire.Policy{}, fmt.Errorf("stored definition of policy %s: %w", p.ID, err)
	}
	// Parsed and written again, so the answer is the canonical form.
	text, err := json.Marshal(def)
	if err != nil {
		return wire.Policy{}, err
	}
	return wire.Policy{ID: p.ID, OrgID: p.OrgID, WorkspaceID: p.WorkspaceID, Name: p.Name, Enabled: p.Enabled,
		Definition: text, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}, nil
}

func readDefinition(o *validate.Object, required bool) *policy.Definition {
	var v any
	var ok bool
	if required {
		v, ok = o.Require("definition")
	} else {
		v, ok = o.Raw("definition")
	}
	if !ok {
		return nil
	}
	before := o.Errors().Len()
	def := policy.ParseDefinition(v, o.Loc().With("definition"), o.Errors())
	if o.Errors().Len() > before {
		return nil
	}
	// Here too (the backend checks again), so a body's problems show at once.
	policy.CheckStorable(def, o.Loc().With("definition"), o.Errors())
	if o.Errors().Len() > before {
		return nil
	}
	return &def
}

func (s *Server) listPolicies(r *Request) (any, error) {
	ps, err := s.store.ListPolicies(r.ctx, r.WS.ID)
	if err != nil {
		return nil, err
	}
	return convertEach(ps, toPolicy)
}

func (s *Server) createPolicy(r *Request) (any, error) {
	in := backend.PolicyCreate{Workspace: r.WS, Enabled: true}
	if err := r.body(func(o *validate.Object) {
		in.Name = requiredString(o, "name", nameRule)
		if e := readEnabled(o); e != nil {
			in.Enabled = *e
		}
		if def := readDefinition(o, true); def != nil {
			in.Definition = *def
		}
	}); err != nil {
		return nil, err
	}
	p, err := backend.CreatePolicy(r.ctx, s.store, r.actor(), in)
	if err != nil {
		return nil, err
	}
	return toPolicy(p)
}

func (s *Server) getPolicy(r *Request) (any, error) {
	id, err := r.pathUUID("policy_id")
	if err != nil {
		return nil, err
	}
	p, err := backend.PolicyIn(r.ctx, s.store, r.WS.ID, id)
	if err != nil {
		return nil, err
	}
	return toPolicy(p)
}

func (s *Server) updatePolicy(r *Request) (any, error) {
	var in backend.PolicyUpdate
	if err := r.body(func(o *validate.Object) {
		in.Name = optionalString(o, "name", nameRule)
		in.Enabled = readEnabled(o)
		in.Definition = readDefinition(o, false)
	}); err != nil {
		return nil, err
	}
	id, err := r.pathUUID("policy_id")
	if err != nil {
		return nil, err
	}
	p, err := backend.UpdatePolicy(r.ctx, s.store, r.actor(), r.WS, id, in)
	if err != nil {
		return nil, err
	}
	return toPolicy(p)
}

func (s *Server) setPolicyEnabled(enabled bool) func(*Request) (any, error) {
	return func(r *Request) (any, error) {
		id, err := r.pathUUID("policy_id")
		if err != nil {
			return nil, err
		}
		p, err := backend.SetPolicyEnabled(r.ctx, s.store, r.actor(), r.WS, id, enabled)
		if err != nil {
			return nil, err
		}
		return toPolicy(p)
	}
}

func (s *Server) deletePolicy(r *Request) (any, error) {
	now := store.Now()
	id, err := r.pathUUID("policy_id")
	if err != nil {
		return nil, err
	}
	p, err := backend.DeletePolicy(r.ctx, s.store, r.actor(), r.WS, id)
	if err != nil {
		return nil, err
	}
	return wire.Deleted{ID: p.ID, DeletedAt: now}, nil
}

// policyCandidates lists what a selected_users target may name (the
// organization's active members) or a selected_keys target (the
// workspace's inference keys).
func (s *Server) policyCandidates(r *Request) (any, error) {
	var errs validate.Errors
	target, _ := validate.Literal(r.R.URL.Query().Get("target"), validate.Loc{"query", "target"}, []string{"users", "keys"}, &errs)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	out := []wire.PolicyCandidate{}
	if target == "users" {
		rows, err := s.store.ListMembers(r.ctx, r.Org.ID)
		if err != nil {
			return nil, err
		}
		for _, m := range rows {
			if m.Status == auth.MembershipActive {
				out = append(out, wire.PolicyCandidate{ID: m.UserID.String(), Label: m.Email, Kind: "user"})
			}
		}
		return out, nil
	}
	keys, err := s.store.ListInferenceKeys(r.ctx, r.WS.ID)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if k.RevokedAt == nil {
			out = append(out, wire.PolicyCandidate{ID: k.ID.String(), Label: k.Name + " (" + k.Prefix + "…)", Kind: "key"})
		}
	}
	return out, nil
}
