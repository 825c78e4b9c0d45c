package inferencekeys

import (
	"context"
	"fmt"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// resolveInferenceKey resolves an inference key by UUID, name or prefix.
func resolveInferenceKey(ctx context.Context, c *client.Client, org, ws, ref string) (string, error) {
	return cmdutil.ResolveRef(ctx, ref, "inference key", "in workspace "+ws, func(ctx context.Context) ([]cmdutil.RefCandidate, error) {
		ks, err := c.ListInferenceKeys(ctx, org, ws)
		return inferenceKeyCandidates(ks), err
	})
}

func inferenceKeyCandidates(ks []wire.InferenceKey) []cmdutil.RefCandidate {
	out := make([]cmdutil.RefCandidate, len(ks))
	for i, k := range ks {
		out[i] = cmdutil.RefCandidate{ID: k.ID, Names: []string{k.Name, k.Prefix}, Active: k.Status == "active",
			Desc: fmt.Sprintf("%s (%s…, %s, created %s)", k.Name, k.Prefix, k.Status, cmdutil.TimeCell(&k.CreatedAt))}
	}
	return out
}
