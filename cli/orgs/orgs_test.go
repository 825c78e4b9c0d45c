package orgs

import (
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
)

func TestOrgsFlags(t *testing.T) {
	cmdtest.RunFlagCases(t, NewCmdList, []cmdtest.FlagCase[ListOptions]{
		{Name: "defaults", Check: func(t *testing.T, o *ListOptions) {
			if o.Output.Format != cmdutil.OutputTable || o.Paging != (cmdutil.Paging{}) {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "paging", Args: []string{"--limit", "20", "--all", "--cursor", "c1", "-o", "json"}, Check: func(t *testing.T, o *ListOptions) {
			if o.Output.Format != cmdutil.OutputJSON || o.Paging != (cmdutil.Paging{Limit: 20, All: true, Cursor: "c1"}) {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "limit too large", Args: []string{"--limit", "201"}, WantErr: "--limit must be between 1 and 200"},
		{Name: "limit zero given", Args: []string{"--limit", "-1"}, WantErr: "--limit"},
		{Name: "bad output", Args: []string{"-o", "xml"}, WantErr: cmdtest.BadOutput},
		{Name: "positional", Args: []string{"x"}, WantErr: "unknown command"},
	})
	cmdtest.RunFlagCases(t, NewCmdGet, []cmdtest.FlagCase[GetOptions]{
		{Name: "current", Check: func(t *testing.T, o *GetOptions) {
			if o.Org != "" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "named", Args: []string{"acme", "-o", "yaml"}, Check: func(t *testing.T, o *GetOptions) {
			if o.Org != "acme" || o.Output.Format != cmdutil.OutputYAML {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "two", Args: []string{"a", "b"}, WantErr: "accepts at most 1 arg"},
		{Name: "bad output", Args: []string{"-o", "csv"}, WantErr: cmdtest.BadOutput},
	})
	cmdtest.RunFlagCases(t, NewCmdCreate, []cmdtest.FlagCase[CreateOptions]{
		{Name: "name and slug", Args: []string{"--name", "Acme Inc", "--slug", "acme"}, Check: func(t *testing.T, o *CreateOptions) {
			if o.Name != "Acme Inc" || o.Slug != "acme" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "no name", Args: []string{"--slug", "acme"}, WantErr: "required flag(s) --name"},
		{Name: "bad output", Args: []string{"--name", "x", "-o", "xml"}, WantErr: cmdtest.BadOutput},
	})
	cmdtest.RunFlagCases(t, NewCmdUpdate, []cmdtest.FlagCase[UpdateOptions]{
		{Name: "name only", Args: []string{"acme", "--name", "New"}, Check: func(t *testing.T, o *UpdateOptions) {
			if o.Org != "acme" || o.Name == nil || *o.Name != "New" || o.Slug != nil {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "empty slug is a change", Args: []string{"--slug", ""}, Check: func(t *testing.T, o *UpdateOptions) {
			if o.Slug == nil || *o.Slug != "" || o.Name != nil {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "nothing", Args: []string{"acme"}, WantErr: "nothing to change"},
	})
	cmdtest.RunFlagCases(t, NewCmdDelete, []cmdtest.FlagCase[DeleteOptions]{
		{Name: "yes", Args: []string{"acme", "--yes"}, Check: func(t *testing.T, o *DeleteOptions) {
			if o.Org != "acme" || !o.Yes {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "no confirmation flag", Args: []string{"acme"}, Check: func(t *testing.T, o *DeleteOptions) {
			if o.Yes {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "never the current org", Args: []string{}, WantErr: "accepts 1 arg"},
		{Name: "bad output", Args: []string{"acme", "-o", "xml"}, WantErr: cmdtest.BadOutput},
	})
}
