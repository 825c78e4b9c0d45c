package cli

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/config"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/wire"
)

// complete runs cobra's hidden __complete command, as a shell does on
// <TAB>, and returns the candidates and the directive line.
func (e *resEnv) complete(args ...string) ([]string, string) {
	e.t.Helper()
	r := e.gw("", append([]string{"__complete"}, args...)...)
	if r.code != ExitOK {
		e.t.Fatalf("__complete %v: exit %d: %s", args, r.code, r.errOut)
	}
	lines := strings.Split(strings.TrimRight(r.out, "\n"), "\n")
	return lines[:len(lines)-1], lines[len(lines)-1]
}

// TestDynamicCompletion: positional names and the --org/--workspace flags
// complete from what the context's key can list on the real API; failures
// are quiet.
func TestDynamicCompletion(t *testing.T) {
	e := newResEnv(t)
	e.ok("workspaces", "create", "--name", "Research", "--slug", "research")
	e.ok("inference-keys", "create", "--name", "my-app")
	e.ok("keys", "create", "--permissions", "workspaces.read", "--label", "ci")
	e.ok("service-accounts", "create", "--name", "ci-bot", "--permissions", "organizations.read")
	policy := `{"name":"no-gpt4","definition":{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"all_requests"},"action":{"kind":"deny","message":"no"}}]}}`
	e.postAsOwner(t, "/api/v1/organizations/default/workspaces/default/policies", policy)

	const noFiles = ":4" // ShellCompDirectiveNoFileComp
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"orgs", "get", ""}, []string{"default\tDefault"}},
		{[]string{"workspaces", "delete", "re"}, []string{"research\tResearch"}},
		{[]string{"workspaces", "get", "--org", "default", ""}, []string{"default\tDefault", "research\tResearch"}},
		{[]string{"policies", "get", ""}, []string{"no-gpt4\tenabled"}},
		{[]string{"inference-keys", "revoke", "my"}, nil},
		{[]string{"keys", "get", "ci-"}, nil}, // the service account's first key, labelled after it
		{[]string{"service-accounts", "delete", ""}, nil},
		{[]string{"members", "list", "--org", ""}, []string{"default\tDefault"}},
		{[]string{"inference-keys", "list", "--workspace", "r"}, []string{"research\tResearch"}},
		{[]string{"usage", "report", "--workspace-filter", ""}, []string{"default\tDefault", "research\tResearch"}},
		{[]string{"login", "--org", "d"}, []string{"default\tDefault"}},
	} {
		got, directive := e.complete(c.args...)
		if directive != noFiles {
			t.Errorf("%v: directive %s, want %s (%q)", c.args, directive, noFiles, got)
		}
		if c.want != nil && !slices.Equal(got, c.want) {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
		if c.want == nil && len(got) != 1 {
			t.Errorf("%v: %q, want one candidate", c.args, got)
		}
	}
	got, _ := e.complete("inference-keys", "revoke", "my")
	if !strings.HasPrefix(got[0], "my-app\tsk-gw-") {
		t.Errorf("inference key candidate %q", got)
	}
	got, _ = e.complete("keys", "get", "c")
	if len(got) != 2 || !strings.HasPrefix(got[0], "ci\tsk-cp-") || !strings.HasPrefix(got[1], "ci-bot\tsk-cp-") {
		t.Errorf("management key candidates %q", got)
	}
	got, _ = e.complete("service-accounts", "delete", "")
	if !strings.HasPrefix(got[0], "ci-bot\t") {
		t.Errorf("service account candidate %q", got)
	}
	// One positional argument only.
	if got, _ := e.complete("orgs", "delete", "default", ""); len(got) != 0 {
		t.Errorf("second argument completed: %q", got)
	}

	// A key the server refuses: no candidates and the error directive; on
	// stderr (which shells discard) only cobra's own directive note.
	t.Setenv("GW_TOKEN", "sk-cp-not-a-key")
	r := e.gw("", "__complete", "orgs", "get", "")
	if r.code != ExitOK || !strings.HasSuffix(strings.TrimSpace(r.out), ":1") || strings.Contains(r.out, "default") ||
		strings.Contains(r.errOut, "401") || strings.Contains(r.errOut, "error:") {
		t.Fatalf("refused key: exit %d, stdout %q, stderr %q", r.code, r.out, r.errOut)
	}
}

// TestCompletionOfEnumerableValues: every flag and argument whose values
// are a known set completes to them through cobra's __complete (issue 26,
// row 10): breakdowns with the tag keys in use, periods, export formats,
// alias names, pending data planes, a provider kind's settings, scopes,
// roles, permissions, tag pairs, credentials, invitations, contexts.
func TestCompletionOfEnumerableValues(t *testing.T) {
	e := newResEnv(t)
	ctx := context.Background()
	e.ok("inference-keys", "create", "--name", "search-api", "--tag", "team=search", "--tag", "env=prod")
	e.postAsOwner(t, "/api/v1/organizations/default/model-aliases",
		`{"name":"claude-opus-4-8","targets":[{"model":"anthropic/claude-opus-4-5-20251101"}]}`)
	cred := decodeJSONOut[wire.ProviderCredential](t, e.gw(`{"access_key_id":"AKIAIOSFODNN7EXAMPLE","secret_access_key":"s3cr3t/K7MDENG"}`,
		"credentials", "create", "--provider", "bedrock", "--label", "prod", "--setting", "region=us-east-1", "--secret-stdin", "-o", "json").out)
	inv := decodeJSONOut[wire.Invitation](t, e.ok("invitations", "create", "--email", "ana@example.com", "-o", "json"))
	c, err := client.New(client.Options{Server: e.url, Token: e.boot.ManagementKey.Token})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"dp-waiting", "dp-serving"} {
		dp, err := secrets.GenerateDataPlaneKey()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.RequestEnrollment(ctx, wire.DataPlaneEnrollmentRequest{ID: id, PublicKey: dp.Public().String()}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Heartbeat(ctx, wire.Heartbeat{ID: id, Version: "v1", BundleVersions: map[string]int64{}}); err != nil {
			t.Fatal(err)
		}
	}
	e.ok("data-planes", "enroll", "dp-serving", "--org", "default")
	cfg, _ := config.Load(e.cfg)
	cfg.Contexts["admin"] = &config.Context{Server: e.url}
	if err := cfg.Save(); err != nil {
		t.Fatal(err)
	}

	values := func(got []string) []string {
		out := make([]string, len(got))
		for i, g := range got {
			out[i], _, _ = strings.Cut(g, "\t")
		}
		return out
	}
	const noFiles, noFilesNoSpace = ":4", ":6"
	for _, c := range []struct {
		args      []string
		want      []string // the values, in order
		directive string
	}{
		{[]string{"usage", "report", "--by", ""}, []string{"model", "requested_model", "provider", "owner", "inference_key", "workspace", "tool", "tag:env", "tag:team"}, noFiles},
		{[]string{"usage", "--by", "tag:"}, []string{"tag:env", "tag:team"}, noFiles},
		{[]string{"usage", "export", "--by", "w"}, []string{"workspace"}, noFiles},
		{[]string{"usage", "--period", ""}, []string{"today", "7d", "30d", "month_to_date"}, noFiles},
		{[]string{"usage", "report", "--period", ""}, []string{"today", "7d", "30d", "month_to_date", "custom"}, noFiles},
		{[]string{"usage", "export", "--format", ""}, []string{"csv", "focus"}, noFiles},
		{[]string{"usage", "--tag-key", ""}, []string{"env", "team"}, noFiles},
		{[]string{"usage", "report", "--tag", ""}, []string{"env=prod", "team=search"}, noFiles},
		{[]string{"budgets", "create-for-tag", "t"}, []string{"team=search"}, noFiles},
		{[]string{"budgets", "create-for-tag", "team=x", "--period", ""}, []string{"day", "month"}, noFiles},
		{[]string{"inference-keys", "update", "search-api", "--untag", ""}, []string{"env", "team"}, noFiles},
		{[]string{"aliases", "delete", ""}, []string{"claude-opus-4-8"}, noFiles},
		{[]string{"aliases", "set", "cl"}, []string{"claude-opus-4-8"}, noFiles},
		{[]string{"aliases", "set", "claude-opus-4-8", "openai/gpt-4o-m"}, []string{"openai/gpt-4o-mini"}, noFiles},
		{[]string{"policies", "explain", "--model", "claude-o"}, []string{"claude-opus-4-8"}, noFiles},
		{[]string{"policies", "explain", "--key", ""}, []string{"search-api"}, noFiles},
		{[]string{"policies", "explain", "--phase", ""}, []string{"inference", "discovery"}, noFiles},
		{[]string{"data-planes", "enroll", ""}, []string{"dp-waiting"}, noFiles},
		{[]string{"data-planes", "revoke", ""}, []string{"dp-serving"}, noFiles},
		{[]string{"data-planes", "get", ""}, []string{"dp-serving", "dp-waiting"}, noFiles},
		{[]string{"credentials", "create", "--provider", "bedrock", "--setting", ""}, []string{"region=", "batches=", "batch_s3_uri=", "batch_role_arn=", "batch_s3_endpoint="}, noFilesNoSpace},
		{[]string{"credentials", "create", "--provider", "vertex", "--setting", ""}, []string{"project=", "location=", "token_url="}, noFilesNoSpace},
		{[]string{"credentials", "create", "--provider", "openai", "--setting", ""}, []string{"batches="}, noFilesNoSpace},
		{[]string{"credentials", "update", cred.ID.String(), "--setting", ""}, []string{"region=", "batches=", "batch_s3_uri=", "batch_role_arn=", "batch_s3_endpoint="}, noFilesNoSpace},
		{[]string{"credentials", "get", ""}, []string{cred.ID.String()}, noFiles},
		{[]string{"credentials", "list", "--scope", ""}, []string{"platform", "org", "workspace"}, noFiles},
		{[]string{"keys", "list", "--scope", ""}, []string{"instance", "org", "workspace"}, noFiles},
		{[]string{"activity", "list", "--scope", ""}, []string{"instance", "org"}, noFiles},
		{[]string{"keys", "create", "--permissions", "usage.read,usage."}, []string{"usage.read,usage.ingest"}, noFilesNoSpace},
		{[]string{"members", "update", "owner@example.com", "--role", ""}, []string{"owner", "admin", "member", "viewer"}, noFiles},
		{[]string{"members", "update", ""}, []string{"owner@example.com"}, noFiles},
		{[]string{"workspaces", "members", "add", "x", "--role", ""}, []string{"admin", "member", "viewer"}, noFiles},
		{[]string{"invitations", "revoke", ""}, []string{inv.ID.String()}, noFiles},
		{[]string{"serve", "--role", ""}, []string{"all", "control-plane", "data-plane"}, noFiles},
		{[]string{"whoami", "--context", ""}, []string{"admin"}, noFiles},
		{[]string{"login", "--context", "a"}, []string{"admin"}, noFiles},
		{[]string{"inference-keys", "list", "-o", ""}, []string{"table", "wide", "json", "yaml"}, noFiles},
	} {
		got, directive := e.complete(c.args...)
		if directive != c.directive || !slices.Equal(values(got), c.want) {
			t.Errorf("%q: %q %s, want %q %s", c.args, values(got), directive, c.want, c.directive)
		}
	}
}

// Every flag of a kind whose values are a known set has a completion, in
// every command that has one: a new command's --scope or --period cannot
// be left out (issue 26, row 10).
func TestEnumerableFlagsComplete(t *testing.T) {
	enumerable := []string{"by", "capability", "context", "format", "log-format", "bundle-cache", "model", "org", "output", "period",
		"permissions", "phase", "provider", "role", "scope", "setting", "status", "tag", "tag-key", "untag", "user", "workspace", "workspace-filter"}
	root := NewRootCmd(&cmdutil.Factory{IO: &cmdutil.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalNonPersistentFlags().VisitAll(func(fl *pflag.Flag) {
			if fl.Value.Type() == "bool" || !slices.Contains(enumerable, fl.Name) {
				return
			}
			if _, ok := c.GetFlagCompletionFunc(fl.Name); !ok {
				t.Errorf("%s --%s completes nothing", c.CommandPath(), fl.Name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, global := range []string{"org", "workspace", "context"} {
		if _, ok := root.GetFlagCompletionFunc(global); !ok {
			t.Errorf("gw --%s completes nothing", global)
		}
	}
}
