package cli

import (
	"slices"
	"testing"

	"github.com/gw-gateway/gw/wire"
)

// TestWorkspaceRequiredTagsRun: set through gw workspaces update, shown by
// gw workspaces get.
func TestWorkspaceRequiredTagsRun(t *testing.T) {
	e := newResEnv(t)
	mustContain(t, "update", e.ok("workspaces", "update", "--require-tag", "team", "--require-tag", "feature"), "required_tags\tteam, feature")
	mustContain(t, "get", e.ok("workspaces", "get"), "required_tags\tteam, feature")
	w := decodeJSONOut[wire.Workspace](t, e.ok("workspaces", "get", "-o", "json"))
	if !slices.Equal(w.RequiredTags, []string{"team", "feature"}) {
		t.Fatalf("required_tags %v", w.RequiredTags)
	}
	// Other changes keep them.
	mustContain(t, "rename", e.ok("workspaces", "update", "--name", "Default 2"), "required_tags\tteam, feature")
	mustContain(t, "clear", e.ok("workspaces", "update", "--no-required-tags"), "required_tags\t-")
	if w := decodeJSONOut[wire.Workspace](t, e.ok("workspaces", "get", "-o", "json")); len(w.RequiredTags) != 0 {
		t.Fatalf("required_tags after clearing: %v", w.RequiredTags)
	}
}
