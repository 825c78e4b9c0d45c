package keys

import (
	"context"
	"fmt"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// resolveManagementKey resolves a management key of a scope by UUID, label
// or prefix.
func resolveManagementKey(ctx context.Context, c *client.Client, scope client.Scope, ref string) (string, error) {
	return cmdutil.ResolveRef(ctx, ref, "management key", scopeWhere(scope), func(ctx context.Context) ([]cmdutil.RefCandidate, error) {
		ks, err := c.ListManagementKeys(ctx, scope, "")
		out := make([]cmdutil.RefCandidate, len(ks))
		for i, k := range ks {
			out[i] = cmdutil.RefCandidate{ID: k.ID, Names: []string{k.Label, k.Prefix}, Active: k.Status == "active",
				Desc: fmt.Sprintf("%s (%s…, %s, %s)", k.Label, k.Prefix, k.Status, keyScopeCell(k))}
		}
		return out, err
	})
}

func scopeWhere(s client.Scope) string {
	switch {
	case s.Org == "":
		return "on the instance"
	case s.Workspace == "":
		return "in organization " + s.Org
	}
	return "in workspace " + s.Workspace + " of organization " + s.Org
}

// keyScopeCell is where a management key acts, for a table.
func keyScopeCell(k wire.ManagementKey) string {
	switch {
	case k.Scope.WorkspaceID != nil:
		return "workspace:" + k.Scope.WorkspaceID.String()
	case k.Scope.OrgID != nil:
		return "organization:" + k.Scope.OrgID.String()
	}
	return cmdutil.OrDash(k.Scope.Level)
}
