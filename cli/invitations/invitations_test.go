package invitations

import (
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
)

func TestInvitationsFlags(t *testing.T) {
	cmdtest.RunFlagCases(t, NewCmdList, []cmdtest.FlagCase[ListOptions]{
		{Name: "bad output", Args: []string{"-o", "xml"}, WantErr: cmdtest.BadOutput},
		{Name: "json", Args: []string{"-o", "json"}, Check: func(t *testing.T, o *ListOptions) {
			if o.Output.Format != cmdutil.OutputJSON {
				t.Errorf("%+v", o)
			}
		}},
	})
	cmdtest.RunFlagCases(t, NewCmdCreate, []cmdtest.FlagCase[CreateOptions]{
		{Name: "default role", Args: []string{"--email", "a@b.c"}, Check: func(t *testing.T, o *CreateOptions) {
			if o.Email != "a@b.c" || o.Role != "member" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "no email", WantErr: "--email"},
		{Name: "bad role", Args: []string{"--email", "a@b.c", "--role", "guest"}, WantErr: "--role"},
	})
	cmdtest.RunFlagCases(t, NewCmdReissue, []cmdtest.FlagCase[ReissueOptions]{
		{Name: "id", Args: []string{"inv-1"}, Check: func(t *testing.T, o *ReissueOptions) {
			if o.ID != "inv-1" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "missing", WantErr: "accepts 1 arg"},
	})
	cmdtest.RunFlagCases(t, NewCmdRevoke, []cmdtest.FlagCase[RevokeOptions]{
		{Name: "yes", Args: []string{"inv-1", "--yes"}, Check: func(t *testing.T, o *RevokeOptions) {
			if o.ID != "inv-1" || !o.Yes {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "bad output", Args: []string{"inv-1", "-o", "toml"}, WantErr: cmdtest.BadOutput},
	})
	cmdtest.RunFlagCases(t, NewCmdAccept, []cmdtest.FlagCase[AcceptOptions]{
		{Name: "password from stdin", Args: []string{"inv_tok", "--password-stdin", "--name", "Bob"}, Check: func(t *testing.T, o *AcceptOptions) {
			if o.Token != "inv_tok" || !o.Password.Stdin || o.Name != "Bob" || o.NewAccount {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "two password sources", Args: []string{"inv_tok", "--password-stdin", "--password-file", "pw"}, WantErr: "cannot be used together"},
		{Name: "no token", WantErr: "accepts 1 arg"},
	})
}
