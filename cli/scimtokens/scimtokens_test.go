package scimtokens

import (
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
)

func TestSCIMTokensFlags(t *testing.T) {
	cmdtest.RunFlagCases(t, NewCmdList, []cmdtest.FlagCase[ListOptions]{
		{Name: "bad output", Args: []string{"-o", "xml"}, WantErr: cmdtest.BadOutput},
	})
	cmdtest.RunFlagCases(t, NewCmdCreate, []cmdtest.FlagCase[CreateOptions]{
		{Name: "label", Args: []string{"--label", "okta", "-o", "json"}, Check: func(t *testing.T, o *CreateOptions) {
			if o.Label != "okta" || o.Output.Format != cmdutil.OutputJSON {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "no label", WantErr: "--label"},
		{Name: "an argument", Args: []string{"okta"}, WantErr: "unknown command"},
	})
	cmdtest.RunFlagCases(t, NewCmdDelete, []cmdtest.FlagCase[DeleteOptions]{
		{Name: "yes", Args: []string{"0b9c5f5e-1111-4222-8333-444455556666", "--yes"}, Check: func(t *testing.T, o *DeleteOptions) {
			if !o.Yes || o.ID != "0b9c5f5e-1111-4222-8333-444455556666" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "missing", WantErr: "accepts 1 arg"},
	})
}
