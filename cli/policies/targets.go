package policies

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/cli/cmdutil/budgetstate"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/wire"
)

// namedDefinition is a policy's definition with the name it is known by.
type namedDefinition struct {
	Name       string
	Definition policy.Definition
}

// warnUnmatchedTargets writes to w a warning for every id of a
// selected_keys target in defs that names no inference key of the
// workspace, and of a selected_users target that names no member of it
// (nor the owner of one of its keys). The API keeps any string there, as
// the spec has it, but such an id matches no request: a key or user of
// another organization or workspace never reaches this workspace's
// policies (issue 27, row 6). The lists are read only when a target needs
// them; one the caller may not read is said so instead. Warnings never
// fail the command.
func warnUnmatchedTargets(ctx context.Context, c *client.Client, org, ws string, w io.Writer, defs []namedDefinition) {
	var keyIDs, userIDs bool
	for _, d := range defs {
		keyIDs = keyIDs || d.Definition.Target.Kind == policy.TargetSelectedKeys
		userIDs = userIDs || d.Definition.Target.Kind == policy.TargetSelectedUsers
	}
	if !keyIDs && !userIDs {
		return
	}
	keys, users := map[string]bool{}, map[uuid.UUID]bool{}
	ks, err := c.ListInferenceKeys(ctx, org, ws)
	if err != nil {
		fmt.Fprintf(w, "warning: the policies' target ids were not checked: cannot list the inference keys of workspace %s: %v\n", ws, err)
		return
	}
	for _, k := range ks {
		keys[k.ID.String()] = true
		users[k.UserID] = true
	}
	if userIDs {
		ms, err := c.ListWorkspaceMembers(ctx, org, ws)
		if err != nil {
			fmt.Fprintf(w, "warning: selected_users ids were checked against the owners of keys only: cannot list the members of workspace %s: %v\n", ws, err)
		}
		for _, m := range ms {
			users[m.UserID] = true
		}
	}
	for _, d := range defs {
		t := d.Definition.Target
		switch t.Kind {
		case policy.TargetSelectedKeys:
			for _, id := range t.KeyIDs {
				if !keys[id] && !strings.HasPrefix(id, budgetstate.TagMarkerPrefix) {
					fmt.Fprintf(w, "warning: policy %q: selected_keys id %q is no inference key of workspace %s; it matches no request\n", d.Name, id, ws)
				}
			}
		case policy.TargetSelectedUsers:
			for _, id := range t.UserIDs {
				if !users[id] {
					fmt.Fprintf(w, "warning: policy %q: selected_users id %q is no member of workspace %s nor the owner of one of its keys; it matches no request\n", d.Name, id, ws)
				}
			}
		}
	}
}

// specDefinitions are a policy file's definitions.
func specDefinitions(specs []policySpec) []namedDefinition {
	out := make([]namedDefinition, len(specs))
	for i, s := range specs {
		out[i] = namedDefinition{Name: s.Name, Definition: s.Definition}
	}
	return out
}

// policyDefinitions are the workspace's policies' definitions.
func policyDefinitions(ps []wire.Policy) []namedDefinition {
	out := make([]namedDefinition, len(ps))
	for i, p := range ps {
		out[i] = namedDefinition{Name: p.Name, Definition: policyDef(p)}
	}
	return out
}
