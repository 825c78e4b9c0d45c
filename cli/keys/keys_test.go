package keys

import (
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
)

func TestKeysFlags(t *testing.T) {
	cmdtest.RunFlagCases(t, NewCmdList, []cmdtest.FlagCase[ListOptions]{
		{Name: "org by default", Check: func(t *testing.T, o *ListOptions) {
			if o.Scope != "org" || o.User != "" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "instance filter", Args: []string{"--scope", "instance", "--user", "a@b.c"}, Check: func(t *testing.T, o *ListOptions) {
			if o.Scope != "instance" || o.User != "a@b.c" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "user needs instance", Args: []string{"--user", "a@b.c"}, WantErr: "--scope instance"},
		{Name: "bad scope", Args: []string{"--scope", "platform"}, WantErr: "--scope must be one of instance, org, workspace"},
		{Name: "bad output", Args: []string{"-o", "xml"}, WantErr: cmdtest.BadOutput},
	})
	cmdtest.RunFlagCases(t, NewCmdGet, []cmdtest.FlagCase[GetOptions]{
		{Name: "workspace", Args: []string{"k1", "--scope", "workspace"}, Check: func(t *testing.T, o *GetOptions) {
			if o.ID != "k1" || o.Scope != "workspace" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "missing", WantErr: "accepts 1 arg"},
	})
	cmdtest.RunFlagCases(t, NewCmdCreate, []cmdtest.FlagCase[CreateOptions]{
		{Name: "full", Args: []string{"--permissions", "workspaces.read", "--label", "ci", "--scope", "workspace", "--expires-at", "2099-01-01T00:00:00Z"},
			Check: func(t *testing.T, o *CreateOptions) {
				if o.Scope != "workspace" || o.Label != "ci" || o.ExpiresAt == nil || o.ExpiresAt.Year() != 2099 {
					t.Errorf("%+v", o)
				}
			}},
		{Name: "no label", Args: []string{"--permissions", "workspaces.read"}, WantErr: "--label"},
		{Name: "empty permissions", Args: []string{"--permissions", ",", "--label", "x"}, WantErr: "at least one permission"},
		{Name: "past expiry", Args: []string{"--permissions", "audit.read", "--label", "x", "--expires-at", "2001-01-01T00:00:00Z"}, WantErr: "not in the future"},
		{Name: "bad lifetime", Args: []string{"--permissions", "audit.read", "--label", "x", "--expires-in", "soon"}, WantErr: "--expires-in"},
		{Name: "bad output", Args: []string{"--permissions", "audit.read", "--label", "x", "-o", "xml"}, WantErr: cmdtest.BadOutput},
	})
	cmdtest.RunFlagCases(t, NewCmdRevoke, []cmdtest.FlagCase[RevokeOptions]{
		{Name: "instance", Args: []string{"k1", "--scope", "instance", "--yes"}, Check: func(t *testing.T, o *RevokeOptions) {
			if o.ID != "k1" || o.Scope != "instance" || !o.Yes {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "missing", WantErr: "accepts 1 arg"},
	})
}
