package cli

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/config"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/wire"
)

// runGW runs the real command tree with args and returns the exit code,
// stdout and stderr.
func runWith(t *testing.T, f *cmdutil.Factory, args ...string) (int, string, string) {
	t.Helper()
	out, errOut := &strings.Builder{}, &strings.Builder{}
	f.IO = &cmdutil.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut}
	code := Run(context.Background(), f, args)
	return code, out.String(), errOut.String()
}

// A misspelt subcommand of a group is a usage error with a suggestion, as
// at the top level (issue 22, row 4).
func TestUnknownSubcommandIsAUsageError(t *testing.T) {
	for _, c := range []struct {
		args    []string
		suggest string
	}{
		{[]string{"policies", "aply"}, "apply"},
		{[]string{"context", "lst"}, "list"},
		{[]string{"data-planes", "enrolments"}, "enrollments"},
		{[]string{"aply"}, ""},
	} {
		code, out, errOut := runWith(t, &cmdutil.Factory{ConfigPath: t.TempDir() + "/config.yaml"}, c.args...)
		if code != ExitUsage || out != "" || !strings.Contains(errOut, "unknown command") || !strings.Contains(errOut, c.suggest) {
			t.Errorf("gw %v: exit %d, stdout %q, stderr %q", c.args, code, out, errOut)
		}
	}
	// The group alone still shows its help.
	if code, out, _ := runWith(t, &cmdutil.Factory{ConfigPath: t.TempDir() + "/config.yaml"}, "policies"); code != ExitOK || !strings.Contains(out, "apply") {
		t.Errorf("gw policies: exit %d, %q", code, out)
	}
}

// --workspace on gw usage report reads that workspace's own report, never
// silently the organization's (issue 22, row 1); a workspace-scoped key
// reads its usage and its budgets' forecasts (row 3).
func TestUsageOfOneWorkspace(t *testing.T) {
	e := newResEnv(t)
	t.Setenv("GW_WORKSPACE", "")
	wsPath := "GET /api/v1/organizations/default/workspaces/default/reports/usage/breakdown"
	e.ok("usage", "report", "--workspace", "default", "--by", "model", "-o", "json")
	if e.hitCount(wsPath) != 1 {
		t.Fatalf("--workspace did not read the workspace's report: %v", e.hits)
	}
	r := e.code(ExitUsage, "", "usage", "report", "--workspace", "default", "--workspace-filter", "default")
	mustContain(t, "both workspace flags", r.errOut, "pass one")

	// A workspace-scoped key, as gw login --org default --workspace default makes.
	var key wire.ManagementKey
	if err := json.Unmarshal([]byte(e.ok("keys", "create", "--scope", "workspace", "--workspace", "default", "--label", "ws",
		"--permissions", "usage.read,policies.read,workspaces.read,inference-keys.read", "-o", "json")), &key); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GW_TOKEN", key.Token)
	t.Setenv("GW_WORKSPACE", "default")
	e.ok("usage", "report", "--by", "model")
	rep := decodeJSONOut[wire.UsageReport](t, e.ok("usage", "report", "--json"))
	if rep.Totals.CostUSD == "" {
		t.Fatalf("report %+v", rep)
	}
	b := e.gw("", "budgets")
	if b.code != ExitOK || strings.Contains(b.errOut, "usage.read") {
		t.Fatalf("gw budgets with a workspace key: exit %d %q", b.code, b.errOut)
	}
}

// A data plane whose enrollment is pending serves nothing: gw data-planes
// list says so and does not call it current; gw status fails on it
// (issue 22, row 6).
func TestDataPlanePendingEnrollment(t *testing.T) {
	e := newResEnv(t)
	ctx := context.Background()
	c, err := client.New(client.Options{Server: e.url, Token: e.boot.ManagementKey.Token})
	if err != nil {
		t.Fatal(err)
	}
	dp, err := secrets.GenerateDataPlaneKey()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RequestEnrollment(ctx, wire.DataPlaneEnrollmentRequest{ID: "dp-eu-1", PublicKey: dp.Public().String()}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Heartbeat(ctx, wire.Heartbeat{ID: "dp-eu-1", Version: "test", BundleVersions: map[string]int64{}}); err != nil {
		t.Fatal(err)
	}
	// Its status is pending, not the heartbeat's healthy (issue 26, row
	// 12); stderr says how to enroll it; -o wide shows the enrollment.
	r := e.code(ExitOK, "", "data-planes", "list", "-o", "table")
	if rows := strings.Fields(strings.Split(r.out, "\n")[1]); len(rows) < 2 || rows[0] != "dp-eu-1" || rows[1] != "pending" {
		t.Fatalf("data-planes list:\n%s", r.out)
	}
	mustContain(t, "data-planes list's stderr", r.errOut, "dp-eu-1 waits to be enrolled and serves nothing until then: gw data-planes enroll dp-eu-1 --org ORG")
	mustContain(t, "data-planes list -o wide", e.ok("data-planes", "list", "-o", "wide"), "ENROLLMENT", "pending (serves nothing: gw data-planes enroll)")
	mustContain(t, "data-planes get", e.ok("data-planes", "get", "dp-eu-1"), "status\tpending\n", "heartbeat\thealthy\n")
	views := decodeJSONOut[[]cmdutil.DataPlaneView](t, e.ok("data-planes", "list", "-o", "json"))
	if len(views) != 1 || views[0].Enrollment != "pending" || views[0].Current == nil || *views[0].Current {
		t.Fatalf("views %+v", views)
	}
	r = e.code(ExitError, "", "status")
	mustContain(t, "gw status", r.out, "1 not enrolled", "data plane dp-eu-1\tpending\t")
}

// Errors name the real cause (issue 22, rows 2 and 10): an organization
// that is none of the caller's is not found; an organization key asking
// for instance data says it is out of scope, not that a permission it
// holds is missing; a server that does not answer is named once, with a
// hint; a URL ending in /api/v1 is corrected.
func TestErrorsNameTheirCause(t *testing.T) {
	e := newResEnv(t)
	var key wire.ManagementKey
	if err := json.Unmarshal([]byte(e.ok("keys", "create", "--scope", "org", "--label", "org",
		"--permissions", "data-planes.read,bundles.read,workspaces.read", "-o", "json")), &key); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GW_TOKEN", key.Token) // as gw login gives
	r := e.code(ExitError, "", "--org", "nosuch", "workspaces", "list")
	mustContain(t, "--org nosuch", r.errOut, `organization "nosuch" not found among your organizations (default)`)

	st := e.gw("", "status")
	mustContain(t, "gw status with an organization key", st.out, "data planes are listed at instance scope", "gw login --instance")
	if strings.Contains(st.out, "may not list data planes") {
		t.Fatalf("gw status blames a permission the key holds:\n%s", st.out)
	}
	r = e.code(ExitError, "", "data-planes", "list")
	mustContain(t, "data-planes list with an organization key", r.errOut, "out of scope", "instance-scope key")

	// /api/v1 in the server URL is corrected, and said.
	t.Setenv("GW_SERVER", e.url+"/api/v1")
	r = e.code(ExitOK, "", "workspaces", "list")
	mustContain(t, "server URL with /api/v1", r.errOut, "note: using "+e.url+" as the server URL: gw adds /api/v1 itself")

	// Nothing listens: one clear sentence.
	t.Setenv("GW_SERVER", "http://127.0.0.1:1")
	r = e.code(ExitError, "", "whoami")
	if want := "error: cannot reach http://127.0.0.1:1: is `gw serve` running? (connection refused)\n"; r.errOut != want {
		t.Fatalf("whoami, server down: %q, want %q", r.errOut, want)
	}
}

// A server URL given with /api/v1 is the server's: its context's key goes
// along, and a context stored with one is found for the bare URL; whoami
// never asks to log in to .../api/v1 (issue 26, row 12).
func TestServerURLWithAPIPathFindsItsContext(t *testing.T) {
	e := newResEnv(t)
	cfg, err := config.Load(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Contexts["local"] = &config.Context{Server: e.url, Token: e.boot.ManagementKey.Token, Org: "default"}
	cfg.Contexts["other"] = &config.Context{Server: "http://127.0.0.1:1", Token: "sk-cp-other"}
	cfg.CurrentContext = "other"
	if err := cfg.Save(); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GW_TOKEN", "")
	t.Setenv("GW_SERVER", "")
	for _, server := range []string{e.url + "/api/v1", e.url + "/api/v1/", e.url + "/"} {
		r := e.code(ExitOK, "", "whoami", "--server", server)
		mustContain(t, "whoami --server "+server, r.out, "owner@example.com", "context\tlocal")
		if strings.Contains(r.errOut, "log") {
			t.Fatalf("whoami --server %s: %s", server, r.errOut)
		}
	}
	t.Setenv("GW_SERVER", e.url+"/api/v1")
	mustContain(t, "GW_SERVER with /api/v1", e.ok("whoami"), "owner@example.com")

	// A context stored with the API path serves the bare URL too.
	cfg.Contexts["local"].Server = e.url + "/api/v1"
	if err := cfg.Save(); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GW_SERVER", e.url)
	mustContain(t, "a context stored with /api/v1", e.ok("whoami"), "owner@example.com")

	// A server no context holds a key for is named without the path.
	t.Setenv("GW_SERVER", "http://127.0.0.1:2/api/v1")
	r := e.code(ExitAuth, "", "whoami")
	mustContain(t, "another server", r.errOut, "not logged in to http://127.0.0.1:2 (", "run gw login --server http://127.0.0.1:2 (")
}

// Creating a workspace whose derived slug is taken says which slug it got
// (issue 22, row 5); an explicit slug that is taken is refused.
func TestWorkspaceCreateSaysItsSlug(t *testing.T) {
	e := newResEnv(t)
	e.ok("workspaces", "create", "--name", "Search")
	r := e.code(ExitOK, "", "workspaces", "create", "--name", "Search")
	mustContain(t, "second create", r.errOut, `slug "search" is taken in this organization, so this workspace is "search-2"`)
	r = e.code(ExitError, "", "workspaces", "create", "--name", "Search", "--slug", "search")
	mustContain(t, "explicit slug taken", r.errOut, `slug "search" is already taken`)
}

// Providers, models and -o values complete too (issue 22, row 15).
func TestCompletionOfProvidersModelsAndOutput(t *testing.T) {
	e := newResEnv(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"credentials", "create", "--provider", "anth"}, "anthropic\tAnthropic"},
		{[]string{"usage", "report", "--model", "openai/gpt-4o-m"}, "openai/gpt-4o-mini\tGPT-4o mini"},
		{[]string{"models", "get", "openai/gpt-4o-m"}, "openai/gpt-4o-mini\tGPT-4o mini"},
		{[]string{"workspaces", "list", "-o", "y"}, "yaml"},
	} {
		got, _ := e.complete(c.args...)
		if !slices.Contains(got, c.want) {
			t.Errorf("%v: %q, want %q among them", c.args, got, c.want)
		}
	}
}

// gw inference-keys update takes the key's name, as get and revoke do
// (issue 22, row 15).
func TestInferenceKeysUpdateByName(t *testing.T) {
	e := newResEnv(t)
	e.ok("inference-keys", "create", "--name", "my-app")
	k := decodeJSONOut[wire.InferenceKey](t, e.ok("inference-keys", "update", "my-app", "--rpm", "60", "-o", "json"))
	if k.Name != "my-app" || k.RateLimits.RequestsPerMinute == nil || *k.RateLimits.RequestsPerMinute != 60 {
		t.Fatalf("updated key %+v", k)
	}
}

// Every command shows examples in --help, and each example line parses
// with the command's own flags (issue 22, row 15).
func TestEveryCommandHasExamples(t *testing.T) {
	root := NewRootCmd(&cmdutil.Factory{IO: &cmdutil.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.Hidden || c.HasSubCommands() || !c.Runnable() || c.Name() == "help" || c.HasParent() && c.Parent().Name() == "completion" {
			return
		}
		if c.Example == "" {
			t.Errorf("%s has no example", c.CommandPath())
			return
		}
		hit := false
		for _, cmd := range exampleCommands(t, root, c.CommandPath(), c.Example) {
			// A command that is another's alias (gw budgets list) may
			// show its parent's examples.
			hit = hit || cmd == c || cmd == c.Parent()
		}
		if !hit {
			t.Errorf("%s: no example runs it", c.CommandPath())
		}
	}
	walk(root)
}

// exampleCommands parses each gw of an example (each of a pipeline on its
// own) with its command's own flags, reporting the ones that do not parse,
// and returns the commands they run.
func exampleCommands(t *testing.T, root *cobra.Command, where, example string) []*cobra.Command {
	t.Helper()
	var cmds []*cobra.Command
	for _, line := range strings.Split(example, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		for _, seg := range strings.Split(line, "|") {
			i := strings.Index(seg, "gw ")
			if i < 0 {
				continue
			}
			var args []string
			quoted := false
			for _, w := range strings.Fields(seg[i+3:]) {
				// Quoted words ("Acme Inc") are one argument.
				if quoted {
					args[len(args)-1] += " " + w
				} else {
					args = append(args, w)
				}
				if strings.Count(w, `"`)%2 == 1 {
					quoted = !quoted
				}
			}
			cmd, rest, err := root.Find(args)
			if err == nil {
				err = cmd.ParseFlags(rest)
			}
			if err != nil {
				t.Errorf("%s: example %q: %v", where, strings.TrimSpace(seg), err)
			}
			cmds = append(cmds, cmd)
		}
	}
	return cmds
}

// gw --help starts a newcomer off: a "start here" line and examples from
// a server to the first report, each of which parses (issue 26, row 12).
func TestRootHelpStartsHere(t *testing.T) {
	code, out, _ := runGW(t, "--help")
	mustContain(t, "gw --help", out, "Start here:", "Examples:", "gw serve", "gw login --server", "gw inference-keys create")
	root := NewRootCmd(&cmdutil.Factory{IO: &cmdutil.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}})
	var ran []string
	for _, c := range exampleCommands(t, root, "gw", root.Example) {
		ran = append(ran, strings.TrimPrefix(c.CommandPath(), "gw "))
	}
	want := []string{"serve", "login", "whoami", "credentials create", "workspaces create", "inference-keys create", "models list", "usage report"}
	if code != ExitOK || !slices.Equal(ran, want) {
		t.Fatalf("exit %d; the examples run %q, want %q", code, ran, want)
	}
}

// gw keys list names scopes and owners (issue 22, row 15); -o json keeps
// the ids.
func TestKeysListNamesScopesAndOwners(t *testing.T) {
	e := newResEnv(t)
	e.ok("keys", "create", "--label", "ci", "--permissions", "workspaces.read")
	out := e.ok("keys", "list", "-o", "table")
	mustContain(t, "keys list", out, "LABEL", "organization Default", "owner@example.com")
	if strings.Contains(out, "organization:") {
		t.Fatalf("ids where names belong:\n%s", out)
	}
}
