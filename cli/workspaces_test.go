package cli

import (
	"slices"
	"testing"

	"github.com/gw-gateway/gw/wire"
)

// TestWorkspaceRequiredTagsFlags: --require-tag (repeatable) replaces the
// workspace's required tag keys, --no-required-tags clears them, and a key
// the server would refuse is refused here, naming the flag (issue 26,
// row 6).
func TestWorkspaceRequiredTagsFlags(t *testing.T) {
	runFlagCases(t, NewCmdWorkspacesUpdate, []flagCase[WorkspacesUpdateOptions]{
		{name: "repeated", args: []string{"search", "--require-tag", "team", "--require-tag", "feature"}, check: func(t *testing.T, o *WorkspacesUpdateOptions) {
			if o.RequiredTags == nil || !slices.Equal(*o.RequiredTags, []string{"team", "feature"}) || o.Name != nil || !o.RateLimits.Empty() {
				t.Errorf("%+v", o)
			}
		}},
		{name: "comma-separated", args: []string{"--require-tag", "team,env"}, check: func(t *testing.T, o *WorkspacesUpdateOptions) {
			if o.RequiredTags == nil || !slices.Equal(*o.RequiredTags, []string{"team", "env"}) {
				t.Errorf("%+v", o)
			}
		}},
		{name: "clear", args: []string{"--no-required-tags"}, check: func(t *testing.T, o *WorkspacesUpdateOptions) {
			if o.RequiredTags == nil || len(*o.RequiredTags) != 0 {
				t.Errorf("%+v", o)
			}
		}},
		{name: "with a name", args: []string{"--require-tag", "team", "--name", "S"}, check: func(t *testing.T, o *WorkspacesUpdateOptions) {
			if o.RequiredTags == nil || o.Name == nil || *o.Name != "S" {
				t.Errorf("%+v", o)
			}
		}},
		{name: "both", args: []string{"--require-tag", "team", "--no-required-tags"}, wantErr: "--require-tag and --no-required-tags cannot be used together"},
		{name: "bad key", args: []string{"--require-tag", "Team"}, wantErr: `--require-tag "Team": a tag key is lowercase letters, digits, _ . and -`},
		{name: "twice", args: []string{"--require-tag", "team,team"}, wantErr: "--require-tag team is given twice"},
		{name: "nothing", wantErr: "nothing to change: pass --name, --slug, --rpm, --tpm, --no-rate-limits, --require-tag or --no-required-tags"},
	})
}

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
