package catalog

import (
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
)

func TestCatalogFlags(t *testing.T) {
	cmdtest.RunFlagCases(t, NewCmdList, []cmdtest.FlagCase[ListOptions]{
		{Name: "providers at instance", Args: []string{"--scope", "instance", "--providers"}, Check: func(t *testing.T, o *ListOptions) {
			if o.Scope != "instance" || !o.Providers {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "bad scope", Args: []string{"--scope", "platform"}, WantErr: "--scope"},
		{Name: "bad output", Args: []string{"-o", "xml"}, WantErr: cmdtest.BadOutput},
	})
	cmdtest.RunFlagCases(t, NewCmdImport, []cmdtest.FlagCase[ImportOptions]{
		{Name: "file", Args: []string{"-f", "catalog.yaml", "--dry-run"}, Check: func(t *testing.T, o *ImportOptions) {
			if o.File != "catalog.yaml" || !o.DryRun {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "no file", WantErr: "--file"},
	})
	cmdtest.RunFlagCases(t, NewCmdRetire, []cmdtest.FlagCase[RetireOptions]{
		{Name: "model with slashes", Args: []string{"openai/gpt-4o-mini", "--yes"}, Check: func(t *testing.T, o *RetireOptions) {
			if o.Model != "openai/gpt-4o-mini" || o.Provider != "" || !o.Yes {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "provider", Args: []string{"--provider", "groq"}, Check: func(t *testing.T, o *RetireOptions) {
			if o.Provider != "groq" || o.Model != "" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "both", Args: []string{"openai/gpt-4o", "--provider", "groq"}, WantErr: "exactly one"},
		{Name: "neither", WantErr: "exactly one"},
	})
}
