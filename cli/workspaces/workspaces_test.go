package workspaces

import (
	"slices"
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
)

func TestWorkspacesFlags(t *testing.T) {
	cmdtest.RunFlagCases(t, NewCmdList, []cmdtest.FlagCase[ListOptions]{
		{Name: "json", Args: []string{"--output", "json"}, Check: func(t *testing.T, o *ListOptions) {
			if o.Output.Format != cmdutil.OutputJSON {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "bad output", Args: []string{"-o", "xml"}, WantErr: cmdtest.BadOutput},
	})
	cmdtest.RunFlagCases(t, NewCmdGet, []cmdtest.FlagCase[GetOptions]{
		{Name: "named", Args: []string{"research"}, Check: func(t *testing.T, o *GetOptions) {
			if o.Workspace != "research" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "bad output", Args: []string{"-o", "xml"}, WantErr: cmdtest.BadOutput},
	})
	cmdtest.RunFlagCases(t, NewCmdCreate, []cmdtest.FlagCase[CreateOptions]{
		{Name: "name", Args: []string{"--name", "R&D"}, Check: func(t *testing.T, o *CreateOptions) {
			if o.Name != "R&D" || o.Slug != "" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "no name", WantErr: "--name"},
	})
	cmdtest.RunFlagCases(t, NewCmdUpdate, []cmdtest.FlagCase[UpdateOptions]{
		{Name: "slug", Args: []string{"research", "--slug", "rnd"}, Check: func(t *testing.T, o *UpdateOptions) {
			if o.Workspace != "research" || o.Slug == nil || *o.Slug != "rnd" || o.Name != nil {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "nothing", WantErr: "nothing to change"},
	})
	cmdtest.RunFlagCases(t, NewCmdDelete, []cmdtest.FlagCase[DeleteOptions]{
		{Name: "yes", Args: []string{"research", "-y"}, Check: func(t *testing.T, o *DeleteOptions) {
			if o.Workspace != "research" || !o.Yes {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "missing", WantErr: "accepts 1 arg"},
	})
}

func TestWorkspaceMembersFlags(t *testing.T) {
	cmdtest.RunFlagCases(t, NewCmdMembersList, []cmdtest.FlagCase[MembersListOptions]{
		{Name: "defaults", Check: func(t *testing.T, o *MembersListOptions) {
			if o.Output.Format != cmdutil.OutputTable {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "bad output", Args: []string{"-o", "xml"}, WantErr: cmdtest.BadOutput},
	})
	cmdtest.RunFlagCases(t, NewCmdMembersAdd, []cmdtest.FlagCase[MembersAddOptions]{
		{Name: "viewer", Args: []string{"bob", "--role", "viewer"}, Check: func(t *testing.T, o *MembersAddOptions) {
			if o.User != "bob" || o.Role != "viewer" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "no owner in workspaces", Args: []string{"bob", "--role", "owner"}, WantErr: "--role must be one of admin, member, viewer"},
	})
	cmdtest.RunFlagCases(t, NewCmdMembersUpdate, []cmdtest.FlagCase[MembersUpdateOptions]{
		{Name: "admin", Args: []string{"bob", "--role", "admin"}, Check: func(t *testing.T, o *MembersUpdateOptions) {
			if o.Role != "admin" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "role required", Args: []string{"bob"}, WantErr: "--role"},
	})
	cmdtest.RunFlagCases(t, NewCmdMembersRemove, []cmdtest.FlagCase[MembersRemoveOptions]{
		{Name: "yes", Args: []string{"bob", "-y"}, Check: func(t *testing.T, o *MembersRemoveOptions) {
			if !o.Yes {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "missing", WantErr: "accepts 1 arg"},
	})
}

// TestWorkspaceRequiredTagsFlags: --require-tag (repeatable) replaces the
// workspace's required tag keys, --no-required-tags clears them, and a key
// the server would refuse is refused here, naming the flag (issue 26,
// row 6).
func TestWorkspaceRequiredTagsFlags(t *testing.T) {
	cmdtest.RunFlagCases(t, NewCmdUpdate, []cmdtest.FlagCase[UpdateOptions]{
		{Name: "repeated", Args: []string{"search", "--require-tag", "team", "--require-tag", "feature"}, Check: func(t *testing.T, o *UpdateOptions) {
			if o.RequiredTags == nil || !slices.Equal(*o.RequiredTags, []string{"team", "feature"}) || o.Name != nil || !o.RateLimits.Empty() {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "comma-separated", Args: []string{"--require-tag", "team,env"}, Check: func(t *testing.T, o *UpdateOptions) {
			if o.RequiredTags == nil || !slices.Equal(*o.RequiredTags, []string{"team", "env"}) {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "clear", Args: []string{"--no-required-tags"}, Check: func(t *testing.T, o *UpdateOptions) {
			if o.RequiredTags == nil || len(*o.RequiredTags) != 0 {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "with a name", Args: []string{"--require-tag", "team", "--name", "S"}, Check: func(t *testing.T, o *UpdateOptions) {
			if o.RequiredTags == nil || o.Name == nil || *o.Name != "S" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "both", Args: []string{"--require-tag", "team", "--no-required-tags"}, WantErr: "--require-tag and --no-required-tags cannot be used together"},
		{Name: "bad key", Args: []string{"--require-tag", "Team"}, WantErr: `--require-tag "Team": a tag key is lowercase letters, digits, _ . and -`},
		{Name: "twice", Args: []string{"--require-tag", "team,team"}, WantErr: "--require-tag team is given twice"},
		{Name: "nothing", WantErr: "nothing to change: pass --name, --slug, --rpm, --tpm, --no-rate-limits, --require-tag, --no-required-tags, --response-cache, --no-response-cache, --prompt-cache-inject or --no-prompt-cache"},
	})
}

func TestWorkspaceRateLimitFlags(t *testing.T) {
	n := func(p *int64) int64 {
		if p == nil {
			return -1
		}
		return *p
	}
	cmdtest.RunFlagCases(t, NewCmdUpdate, []cmdtest.FlagCase[UpdateOptions]{
		{Name: "limits alone", Args: []string{"research", "--rpm", "100"}, Check: func(t *testing.T, o *UpdateOptions) {
			if o.Workspace != "research" || o.Name != nil || o.Slug != nil || n(o.RateLimits.RPM) != 100 {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "limits and name", Args: []string{"--tpm", "9", "--name", "R"}, Check: func(t *testing.T, o *UpdateOptions) {
			if o.Name == nil || n(o.RateLimits.TPM) != 9 {
				t.Errorf("%+v", o)
			}
		}},
	})
}
