package members

import (
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
)

func TestMembersFlags(t *testing.T) {
	cmdtest.RunFlagCases(t, NewCmdList, []cmdtest.FlagCase[ListOptions]{
		{Name: "yaml", Args: []string{"-o", "yaml"}, Check: func(t *testing.T, o *ListOptions) {
			if o.Output.Format != cmdutil.OutputYAML {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "bad output", Args: []string{"-o", "xml"}, WantErr: cmdtest.BadOutput},
	})
	cmdtest.RunFlagCases(t, NewCmdAdd, []cmdtest.FlagCase[AddOptions]{
		{Name: "default role", Args: []string{"bob@example.com"}, Check: func(t *testing.T, o *AddOptions) {
			if o.User != "bob@example.com" || o.Role != "member" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "owner", Args: []string{"bob@example.com", "--role", "owner"}, Check: func(t *testing.T, o *AddOptions) {
			if o.Role != "owner" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "bad role", Args: []string{"bob@example.com", "--role", "boss"}, WantErr: "--role must be one of"},
		{Name: "no user", WantErr: "accepts 1 arg"},
	})
	cmdtest.RunFlagCases(t, NewCmdUpdate, []cmdtest.FlagCase[UpdateOptions]{
		{Name: "suspend", Args: []string{"bob@example.com", "--status", "suspended"}, Check: func(t *testing.T, o *UpdateOptions) {
			if o.Status == nil || *o.Status != "suspended" || o.Role != nil {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "bad status", Args: []string{"bob", "--status", "invited"}, WantErr: "--status must be one of active, suspended"},
		{Name: "nothing", Args: []string{"bob"}, WantErr: "nothing to change"},
	})
	cmdtest.RunFlagCases(t, NewCmdRemove, []cmdtest.FlagCase[RemoveOptions]{
		{Name: "yes", Args: []string{"bob", "--yes"}, Check: func(t *testing.T, o *RemoveOptions) {
			if o.User != "bob" || !o.Yes {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "bad output", Args: []string{"bob", "-o", "xml"}, WantErr: cmdtest.BadOutput},
	})
}
