package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/wire"
)

// runGW runs the real command tree with args and returns the exit code,
// stdout and stderr.
func runWith(t *testing.T, f *Factory, args ...string) (int, string, string) {
	t.Helper()
	out, errOut := &strings.Builder{}, &strings.Builder{}
	f.IO = &IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut}
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
		code, out, errOut := runWith(t, &Factory{ConfigPath: t.TempDir() + "/config.yaml"}, c.args...)
		if code != ExitUsage || out != "" || !strings.Contains(errOut, "unknown command") || !strings.Contains(errOut, c.suggest) {
			t.Errorf("gw %v: exit %d, stdout %q, stderr %q", c.args, code, out, errOut)
		}
	}
	// The group alone still shows its help.
	if code, out, _ := runWith(t, &Factory{ConfigPath: t.TempDir() + "/config.yaml"}, "policies"); code != ExitOK || !strings.Contains(out, "apply") {
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
