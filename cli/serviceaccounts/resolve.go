package serviceaccounts

import (
	"context"
	"fmt"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
)

// resolveServiceAccount resolves a service account by UUID, name or email.
func resolveServiceAccount(ctx context.Context, c *client.Client, org, ref string) (string, error) {
	return cmdutil.ResolveRef(ctx, ref, "service account", "in organization "+org, func(ctx context.Context) ([]cmdutil.RefCandidate, error) {
		us, err := c.ListServiceAccounts(ctx, org)
		out := make([]cmdutil.RefCandidate, len(us))
		for i, u := range us {
			out[i] = cmdutil.RefCandidate{ID: u.ID, Names: []string{u.Name, u.Email}, Active: true,
				Desc: fmt.Sprintf("%s (%s)", u.Name, u.Email)}
		}
		return out, err
	})
}
