package serviceaccounts

import (
	"strings"
	"testing"
	"time"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
)

func TestServiceAccountsFlags(t *testing.T) {
	cmdtest.RunFlagCases(t, NewCmdList, []cmdtest.FlagCase[ListOptions]{
		{Name: "bad output", Args: []string{"-o", "xml"}, WantErr: cmdtest.BadOutput},
	})
	cmdtest.RunFlagCases(t, NewCmdGet, []cmdtest.FlagCase[GetOptions]{
		{Name: "id", Args: []string{"sa-1", "-o", "json"}, Check: func(t *testing.T, o *GetOptions) {
			if o.ID != "sa-1" || o.Output.Format != cmdutil.OutputJSON {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "missing", WantErr: "accepts 1 arg"},
	})
	cmdtest.RunFlagCases(t, NewCmdCreate, []cmdtest.FlagCase[CreateOptions]{
		{Name: "label defaults to the name", Args: []string{"--name", "ci-bot", "--permissions", "organizations.read, members.read", "--expires-in", "30d"},
			Check: func(t *testing.T, o *CreateOptions) {
				if o.Name != "ci-bot" || o.Label != "ci-bot" || strings.Join(o.Permissions, ",") != "organizations.read,members.read" {
					t.Errorf("%+v", o)
				}
				if o.ExpiresAt == nil || time.Until(*o.ExpiresAt) < 29*24*time.Hour {
					t.Errorf("expires %v", o.ExpiresAt)
				}
			}},
		{Name: "repeated permissions flags", Args: []string{"--name", "x", "--permissions", "audit.read", "--permissions", "usage.read"},
			Check: func(t *testing.T, o *CreateOptions) {
				if len(o.Permissions) != 2 || o.ExpiresAt != nil {
					t.Errorf("%+v", o)
				}
			}},
		{Name: "no permissions", Args: []string{"--name", "x"}, WantErr: "--permissions"},
		{Name: "unknown permission", Args: []string{"--name", "x", "--permissions", "root.all"}, WantErr: "unknown permission"},
		{Name: "two expiries", Args: []string{"--name", "x", "--permissions", "audit.read", "--expires-in", "1h", "--expires-at", "2099-01-01T00:00:00Z"},
			WantErr: "cannot be used together"},
	})
	cmdtest.RunFlagCases(t, NewCmdDelete, []cmdtest.FlagCase[DeleteOptions]{
		{Name: "yes", Args: []string{"sa-1", "--yes"}, Check: func(t *testing.T, o *DeleteOptions) {
			if !o.Yes || o.ID != "sa-1" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "missing", WantErr: "accepts 1 arg"},
	})
}
