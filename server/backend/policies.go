package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
)

// PolicyCreate is a policy of a workspace.
type PolicyCreate struct {
	Workspace  *store.Workspace
	Name       string
	Enabled    bool
	Definition policy.Definition
}

// CreatePolicy stores a policy, its definition in canonical form, under a
// name no other policy of the workspace has.
func CreatePolicy(ctx context.Context, st *store.Store, actor Actor, in PolicyCreate) (*store.Policy, error) {
	if err := storable(in.Definition); err != nil {
		return nil, err
	}
	text, err := canonicalDefinition(&in.Definition)
	if err != nil {
		return nil, err
	}
	now := store.Now()
	ws := in.Workspace
	p := &store.Policy{ID: uuid.New(), OrgID: ws.OrgID, WorkspaceID: ws.ID, Name: in.Name, Enabled: in.Enabled, Definition: text,
		CreatedAt: now, UpdatedAt: now}
	err = st.InTx(ctx, func(tx *store.Store) error {
		if err := tx.CreatePolicy(ctx, p); err != nil {
			return policyNameConflict(err, p.Name)
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "policy.created", TargetType: "policy", TargetID: p.ID.String(),
			OrgID: &ws.OrgID, WorkspaceID: &ws.ID, Details: map[string]any{"name": p.Name, "enabled": p.Enabled}})
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// PolicyIn is the workspace's policy id.
func PolicyIn(ctx context.Context, st *store.Store, workspaceID, id uuid.UUID) (*store.Policy, error) {
	p, err := st.GetPolicy(ctx, workspaceID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(NotFound, "policy %s not found", id)
	}
	return p, err
}

// PolicyUpdate changes what is set of a policy's name, enabled flag and
// definition.
type PolicyUpdate struct {
	Name       *string
	Enabled    *bool
	Definition *policy.Definition
}

// UpdatePolicy applies in to the workspace's policy id. The audit says
// whether the definition changed, not what it is: definitions are read
// from the policy itself.
func UpdatePolicy(ctx context.Context, st *store.Store, actor Actor, ws *store.Workspace, id uuid.UUID, in PolicyUpdate) (*store.Policy, error) {
	if in.Definition != nil {
		if err := storable(*in.Definition); err != nil {
			return nil, err
		}
	}
	var p *store.Policy
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if p, err = PolicyIn(ctx, tx, ws.ID, id); err != nil {
			return err
		}
		if in.Name != nil {
			p.Name = *in.Name
		}
		if in.Enabled != nil {
			p.Enabled = *in.Enabled
		}
		if in.Definition != nil {
			if p.Definition, err = canonicalDefinition(in.Definition); err != nil {
				return err
			}
		}
		p.UpdatedAt = store.Now()
		if err := tx.UpdatePolicy(ctx, p); err != nil {
			return policyNameConflict(err, p.Name)
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "policy.updated", TargetType: "policy", TargetID: p.ID.String(),
			OrgID: &ws.OrgID, WorkspaceID: &ws.ID,
			Details: map[string]any{"name": p.Name, "enabled": p.Enabled, "definition_changed": in.Definition != nil}})
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// SetPolicyEnabled enables or disables the workspace's policy id; setting
// what is already set changes (and audits) nothing.
func SetPolicyEnabled(ctx context.Context, st *store.Store, actor Actor, ws *store.Workspace, id uuid.UUID, enabled bool) (*store.Policy, error) {
	action := "policy.disabled"
	if enabled {
		action = "policy.enabled"
	}
	var p *store.Policy
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if p, err = PolicyIn(ctx, tx, ws.ID, id); err != nil || p.Enabled == enabled {
			return err
		}
		p.Enabled, p.UpdatedAt = enabled, store.Now()
		if err := tx.UpdatePolicy(ctx, p); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: action, TargetType: "policy", TargetID: p.ID.String(),
			OrgID: &ws.OrgID, WorkspaceID: &ws.ID, Details: map[string]any{"name": p.Name}})
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// DeletePolicy deletes the workspace's policy id.
func DeletePolicy(ctx context.Context, st *store.Store, actor Actor, ws *store.Workspace, id uuid.UUID) (*store.Policy, error) {
	var p *store.Policy
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if p, err = PolicyIn(ctx, tx, ws.ID, id); err != nil {
			return err
		}
		if err := tx.DeletePolicy(ctx, p.ID); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "policy.deleted", TargetType: "policy", TargetID: p.ID.String(),
			OrgID: &ws.OrgID, WorkspaceID: &ws.ID, Details: map[string]any{"name": p.Name}})
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// canonicalDefinition is the form a definition is stored in, so that
// equal definitions read back byte for byte alike.
func canonicalDefinition(def *policy.Definition) (string, error) {
	b, err := json.Marshal(def)
	if err != nil {
		return "", fmt.Errorf("policy definition: %w", err)
	}
	return string(b), nil
}

// storable refuses a definition holding a value gw could not enforce
// (policy.CheckStorable), where it is saved. Definitions already stored are
// rewritten (a tag budget's key list) without it: an older version's value
// must not stop the key change that triggers the rewrite.
func storable(def policy.Definition) error {
	return policy.StorableErr(def, validate.Loc{"body", "definition"})
}

func policyNameConflict(err error, name string) error {
	if errors.Is(err, store.ErrConflict) {
		return errorf(Conflict, "a policy named %q already exists in this workspace", name)
	}
	return err
}
