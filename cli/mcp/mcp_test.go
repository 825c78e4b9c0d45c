package mcp

import (
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
)

func TestMCPServersFlags(t *testing.T) {
	cmdtest.RunFlagCases(t, NewCmdList, []cmdtest.FlagCase[ListOptions]{
		{Name: "workspace", Args: []string{"--scope", "workspace"}, Check: func(t *testing.T, o *ListOptions) {
			if o.Scope != "workspace" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "no platform scope", Args: []string{"--scope", "platform"}, WantErr: "--scope must be one of org, workspace"},
	})
	cmdtest.RunFlagCases(t, NewCmdAdd, []cmdtest.FlagCase[AddOptions]{
		{Name: "header auth, secret from a file", Args: []string{"github", "--url", "https://mcp.example.com/mcp", "--auth", "header",
			"--header", "Authorization", "--secret-file", "/run/s", "--allow", "get_*", "--price", "get_*=0.002"},
			Check: func(t *testing.T, o *AddOptions) {
				p, err := parsePrices(o.Prices)
				if o.Name != "github" || o.Auth != "header" || o.Secret != (cmdutil.SecretInput{File: "/run/s"}) || o.Allow[0] != "get_*" ||
					err != nil || p["get_*"] != "0.002" {
					t.Errorf("%+v %v %v", o, p, err)
				}
			}},
		{Name: "no url", Args: []string{"x"}, WantErr: "--url"},
		{Name: "bad auth", Args: []string{"x", "--url", "https://x", "--auth", "basic"}, WantErr: "--auth must be one of"},
		{Name: "never a secret flag", Args: []string{"x", "--url", "https://x", "--secret", "s"}, WantErr: "unknown flag: --secret"},
	})
	cmdtest.RunFlagCases(t, NewCmdUpdate, []cmdtest.FlagCase[UpdateOptions]{
		{Name: "disable", Args: []string{"github", "--disable"}, Check: func(t *testing.T, o *UpdateOptions) {
			if o.Enabled == nil || *o.Enabled || o.Auth != "" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "nothing", Args: []string{"github"}, WantErr: "nothing to change"},
	})
	if _, err := parsePrices([]string{"nope"}); err == nil {
		t.Error("a price without = is refused")
	}
}
