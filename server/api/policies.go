package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
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
	return &def
}

func canonical(def *policy.Definition) (string, error) {
	b, err := json.Marshal(def)
	return string(b), err
}

func policyNameConflict(err error, name string) error {
	if errors.Is(err, store.ErrConflict) {
		return errorf(http.StatusConflict, "a policy named %q already exists in this workspace", name)
	}
	return err
}

func (s *Server) listPolicies(r *Request) (any, error) {
	ps, err := s.store.ListPolicies(r.ctx, r.WS.ID)
	if err != nil {
		return nil, err
	}
	out := make([]wire.Policy, len(ps))
	for i := range ps {
		if out[i], err = toPolicy(&ps[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Server) createPolicy(r *Request) (any, error) {
	var name string
	enabled := true
	var def *policy.Definition
	if err := r.body(func(o *validate.Object) {
		name = requiredString(o, "name", nameRule)
		if v, ok := o.Raw("enabled"); ok {
			enabled, _ = validate.Bool(v, o.Loc().With("enabled"), o.Errors())
		}
		def = readDefinition(o, true)
	}); err != nil {
		return nil, err
	}
	text, err := canonical(def)
	if err != nil {
		return nil, err
	}
	now := store.Now()
	p := &store.Policy{ID: uuid.New(), OrgID: r.Org.ID, WorkspaceID: r.WS.ID, Name: name, Enabled: enabled, Definition: text, CreatedAt: now, UpdatedAt: now}
	err = s.store.InTx(r.ctx, func(tx *store.Store) error {
		if err := tx.CreatePolicy(r.ctx, p); err != nil {
			return policyNameConflict(err, name)
		}
		return r.audit(tx, auditEntry{Action: "policy.created", TargetType: "policy", TargetID: p.ID.String(),
			Details: map[string]any{"name": name, "enabled": enabled}})
	})
	if err != nil {
		return nil, err
	}
	return toPolicy(p)
}

func (s *Server) pathPolicy(tx *store.Store, r *Request) (*store.Policy, error) {
	id, err := r.pathUUID("policy_id")
	if err != nil {
		return nil, err
	}
	p, err := tx.GetPolicy(r.ctx, r.WS.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(http.StatusNotFound, "policy %s not found", id)
	}
	return p, err
}

func (s *Server) getPolicy(r *Request) (any, error) {
	p, err := s.pathPolicy(s.store, r)
	if err != nil {
		return nil, err
	}
	return toPolicy(p)
}

func (s *Server) updatePolicy(r *Request) (any, error) {
	var name *string
	var enabled *bool
	var def *policy.Definition
	if err := r.body(func(o *validate.Object) {
		name = optionalString(o, "name", nameRule)
		if v, ok := o.Raw("enabled"); ok {
			if b, ok := validate.Bool(v, o.Loc().With("enabled"), o.Errors()); ok {
				enabled = &b
			}
		}
		def = readDefinition(o, false)
	}); err != nil {
		return nil, err
	}
	var out wire.Policy
	err := s.store.InTx(r.ctx, func(tx *store.Store) error {
		p, err := s.pathPolicy(tx, r)
		if err != nil {
			return err
		}
		if name != nil {
			p.Name = *name
		}
		if enabled != nil {
			p.Enabled = *enabled
		}
		if def != nil {
			if p.Definition, err = canonical(def); err != nil {
				return err
			}
		}
		p.UpdatedAt = store.Now()
		if err := tx.UpdatePolicy(r.ctx, p); err != nil {
			return policyNameConflict(err, p.Name)
		}
		if out, err = toPolicy(p); err != nil {
			return err
		}
		return r.audit(tx, auditEntry{Action: "policy.updated", TargetType: "policy", TargetID: p.ID.String(),
			Details: map[string]any{"name": p.Name, "enabled": p.Enabled, "definition_changed": def != nil}})
	})
	return out, err
}

func (s *Server) setPolicyEnabled(enabled bool) func(*Request) (any, error) {
	action := "policy.disabled"
	if enabled {
		action = "policy.enabled"
	}
	return func(r *Request) (any, error) {
		var out wire.Policy
		err := s.store.InTx(r.ctx, func(tx *store.Store) error {
			p, err := s.pathPolicy(tx, r)
			if err != nil {
				return err
			}
			if p.Enabled != enabled {
				p.Enabled, p.UpdatedAt = enabled, store.Now()
				if err := tx.UpdatePolicy(r.ctx, p); err != nil {
					return err
				}
				if err := r.audit(tx, auditEntry{Action: action, TargetType: "policy", TargetID: p.ID.String(),
					Details: map[string]any{"name": p.Name}}); err != nil {
					return err
				}
			}
			out, err = toPolicy(p)
			return err
		})
		return out, err
	}
}

func (s *Server) deletePolicy(r *Request) (any, error) {
	now := store.Now()
	var id uuid.UUID
	err := s.store.InTx(r.ctx, func(tx *store.Store) error {
		p, err := s.pathPolicy(tx, r)
		if err != nil {
			return err
		}
		id = p.ID
		if err := tx.DeletePolicy(r.ctx, p.ID); err != nil {
			return err
		}
		return r.audit(tx, auditEntry{Action: "policy.deleted", TargetType: "policy", TargetID: p.ID.String(),
			Details: map[string]any{"name": p.Name}})
	})
	if err != nil {
		return nil, err
	}
	return wire.Deleted{ID: id, DeletedAt: now}, nil
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
