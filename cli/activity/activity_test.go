package activity

import (
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
)

func TestActivityFlags(t *testing.T) {
	cmdtest.RunFlagCases(t, NewCmdList, []cmdtest.FlagCase[ListOptions]{
		{Name: "defaults", Check: func(t *testing.T, o *ListOptions) {
			if o.Scope != "org" || o.Paging != (cmdutil.Paging{}) {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "instance all", Args: []string{"--scope", "instance", "--all", "--limit", "200"}, Check: func(t *testing.T, o *ListOptions) {
			if o.Scope != "instance" || !o.Paging.All || o.Paging.Limit != 200 {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "no workspace activity", Args: []string{"--scope", "workspace"}, WantErr: "--scope must be one of instance, org"},
		{Name: "bad output", Args: []string{"-o", "xml"}, WantErr: cmdtest.BadOutput},
	})
}
