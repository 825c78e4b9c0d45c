package cli

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/spf13/cobra"
)

// flagCase is one invocation of a resource command through its runF:
// either the options it parsed are checked, or it fails with a usage
// error (exit 2) containing wantErr before runF is reached.
type flagCase[O any] struct {
	name    string
	args    []string
	env     map[string]string
	wantErr string
	check   func(t *testing.T, o *O)
}

func runFlagCases[O any](t *testing.T, build func(*cmdutil.Factory, func(context.Context, *O) error) *cobra.Command, cases []flagCase[O]) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			f, _, _ := testFactory()
			var got *O
			cmd := build(f, func(_ context.Context, o *O) error { got = o; return nil })
			cmd.SetArgs(c.args)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			err := cmd.Execute()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				if cmdutil.ExitCode(err) != ExitUsage {
					t.Fatalf("%v is not a usage error (exit 2)", err)
				}
				if got != nil {
					t.Fatal("runF ran despite the error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got == nil {
				t.Fatal("runF was not called")
			}
			if c.check != nil {
				c.check(t, got)
			}
		})
	}
}

const badOutput = "--output must be table, wide, json or yaml"

// TestResourceCommandsExitCodes runs bad invocations through the whole
// tree: every one is a usage error, exit 2, before any network.
func TestResourceCommandsExitCodes(t *testing.T) {
	t.Setenv("GW_SERVER", "http://127.0.0.1:1")
	t.Setenv("GW_TOKEN", "sk-cp-x")
	for _, args := range [][]string{
		{"orgs", "list", "-o", "xml"},
		{"orgs", "get", "-o", "xml"},
		{"workspaces", "members", "list", "-o", "xml"},
		{"keys", "list", "--scope", "galaxy"},
		{"credentials", "create", "--provider", "openai"},
		{"credentials", "create", "--provider", "openai", "--label", "x", "--secret", "leak"},
		{"catalog", "retire"},
		{"activity", "list", "--limit", "0", "--all", "--cursor", "x", "--scope", "org", "--output", "html"},
		{"models", "get"},
		{"invitations", "accept"},
	} {
		f, _, errOut := testFactory()
		f.ConfigPath = t.TempDir() + "/config.yaml"
		if code := Run(context.Background(), f, args); code != ExitUsage {
			t.Errorf("gw %s: exit %d, want %d (%s)", strings.Join(args, " "), code, ExitUsage, errOut)
		}
	}
}
