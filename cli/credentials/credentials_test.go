package credentials

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
)

func TestCredentialsFlags(t *testing.T) {
	cmdtest.RunFlagCases(t, NewCmdList, []cmdtest.FlagCase[ListOptions]{
		{Name: "platform", Args: []string{"--scope", "platform"}, Check: func(t *testing.T, o *ListOptions) {
			if o.Scope != "platform" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "instance is platform here", Args: []string{"--scope", "instance"}, WantErr: "--scope must be one of platform, org, workspace"},
		{Name: "bad output", Args: []string{"-o", "xml"}, WantErr: cmdtest.BadOutput},
	})
	cmdtest.RunFlagCases(t, NewCmdGet, []cmdtest.FlagCase[GetOptions]{
		{Name: "id", Args: []string{"c1"}, Check: func(t *testing.T, o *GetOptions) {
			if o.ID != "c1" || o.Scope != "org" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "missing", WantErr: "accepts 1 arg"},
	})
	cmdtest.RunFlagCases(t, NewCmdCreate, []cmdtest.FlagCase[CreateOptions]{
		{Name: "secret from a file", Args: []string{"--provider", "openai", "--label", "main", "--secret-file", "/run/secret"},
			Check: func(t *testing.T, o *CreateOptions) {
				if o.Provider != "openai" || o.Label != "main" || o.Secret != (cmdutil.SecretInput{File: "/run/secret"}) {
					t.Errorf("%+v", o)
				}
			}},
		{Name: "prompted later", Args: []string{"--provider", "openai", "--label", "main", "--scope", "workspace", "--base-url", "https://x.example/v1"},
			Check: func(t *testing.T, o *CreateOptions) {
				if o.Secret.Given() || o.Scope != "workspace" || o.BaseURL != "https://x.example/v1" {
					t.Errorf("%+v", o)
				}
			}},
		{Name: "never from a flag value", Args: []string{"--provider", "openai", "--label", "main", "--secret", "sk-123"}, WantErr: "unknown flag: --secret"},
		{Name: "two sources", Args: []string{"--provider", "openai", "--label", "m", "--secret-file", "f", "--secret-stdin"}, WantErr: "cannot be used together"},
		{Name: "no provider", Args: []string{"--label", "m"}, WantErr: "--provider"},
		{Name: "bedrock settings", Args: []string{"--provider", "bedrock", "--label", "prod", "--setting", "region=us-east-1", "--secret-file", "aws.json"},
			Check: func(t *testing.T, o *CreateOptions) {
				s, err := parseSettings(o.Settings)
				if err != nil || s == nil || s.Region != "us-east-1" {
					t.Errorf("%+v %+v %v", o, s, err)
				}
			}},
		{Name: "azure deployments", Args: []string{"--provider", "azure-openai", "--label", "a", "--setting", "deployments.gpt-4o=prod-4o",
			"--setting", "api_version=2025-04-01-preview"},
			Check: func(t *testing.T, o *CreateOptions) {
				s, err := parseSettings(o.Settings)
				if err != nil || s.Deployments["gpt-4o"] != "prod-4o" || s.APIVersion != "2025-04-01-preview" {
					t.Errorf("%+v %v", s, err)
				}
				if settingsCell(s) != "api_version=2025-04-01-preview deployments.gpt-4o=prod-4o" {
					t.Errorf("cell %q", settingsCell(s))
				}
			}},
	})
	cmdtest.RunFlagCases(t, NewCmdUpdate, []cmdtest.FlagCase[UpdateOptions]{
		{Name: "clear base url", Args: []string{"c1", "--clear-base-url"}, Check: func(t *testing.T, o *UpdateOptions) {
			if !o.ClearBaseURL || o.BaseURL != nil || o.NewSecret {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "rotate by prompt", Args: []string{"c1", "--prompt-secret"}, Check: func(t *testing.T, o *UpdateOptions) {
			if !o.NewSecret || o.Secret.Given() {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "rotate from stdin", Args: []string{"c1", "--secret-stdin", "--label", "new"}, Check: func(t *testing.T, o *UpdateOptions) {
			if !o.NewSecret || !o.Secret.Stdin || o.Label == nil || *o.Label != "new" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "base url both ways", Args: []string{"c1", "--base-url", "https://x", "--clear-base-url"}, WantErr: "cannot be used together"},
		{Name: "secret both ways", Args: []string{"c1", "--prompt-secret", "--secret-stdin"}, WantErr: "cannot be used together"},
		{Name: "nothing", Args: []string{"c1"}, WantErr: "nothing to change"},
		{Name: "settings", Args: []string{"c1", "--setting", "location=global"}, Check: func(t *testing.T, o *UpdateOptions) {
			if len(o.Settings) != 1 || o.ClearSettings {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "settings both ways", Args: []string{"c1", "--setting", "region=us-east-1", "--clear-settings"}, WantErr: "cannot be used together"},
	})
	cmdtest.RunFlagCases(t, NewCmdDelete, []cmdtest.FlagCase[DeleteOptions]{
		{Name: "platform yes", Args: []string{"c1", "--scope", "platform", "--yes"}, Check: func(t *testing.T, o *DeleteOptions) {
			if o.Scope != "platform" || !o.Yes {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "missing", WantErr: "accepts 1 arg"},
	})
}

// TestCredentialSecretHasNoFlag walks every credentials command: no flag
// can carry the secret itself, only where to read it from.
func TestCredentialSecretHasNoFlag(t *testing.T) {
	f, _, _ := cmdtest.Factory()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(fl *pflag.Flag) {
			name := strings.ToLower(fl.Name)
			if !strings.Contains(name, "secret") && !strings.Contains(name, "key") && !strings.Contains(name, "token") && !strings.Contains(name, "password") {
				return
			}
			switch fl.Name {
			case "secret-file":
				return
			case "secret-stdin", "prompt-secret":
				if fl.Value.Type() == "bool" {
					return
				}
			}
			t.Errorf("gw %s has a flag --%s (%s) that could carry a secret", c.CommandPath(), fl.Name, fl.Value.Type())
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewCmd(f))
}
