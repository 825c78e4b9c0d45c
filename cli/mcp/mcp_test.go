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
	t.Setenv("GW_INFERENCE_KEY", "")
	cmdtest.RunFlagCases(t, NewCmdTools, []cmdtest.FlagCase[ToolsOptions]{
		{Name: "one server", Args: []string{"--server", "up", "--key", "sk-gw-x"}, Check: func(t *testing.T, o *ToolsOptions) {
			if o.Server != "up" || o.Target.Key != "sk-gw-x" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "no key", Args: nil, WantErr: "no inference key"},
	})
	cmdtest.RunFlagCases(t, NewCmdCall, []cmdtest.FlagCase[CallOptions]{
		{Name: "arguments", Args: []string{"up", "echo", "--arguments", `{"text":"hi"}`, "--key", "sk-gw-x"}, Check: func(t *testing.T, o *CallOptions) {
			if o.Server != "up" || o.Tool != "echo" || o.Arguments["text"] != "hi" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "arguments not an object", Args: []string{"up", "echo", "--arguments", `[1]`, "--key", "sk-gw-x"}, WantErr: "want a JSON object"},
		{Name: "no tool", Args: []string{"up", "--key", "sk-gw-x"}, WantErr: "accepts 2 arg"},
	})
	if _, err := parsePrices([]string{"nope"}); err == nil {
		t.Error("a price without = is refused")
	}
}
