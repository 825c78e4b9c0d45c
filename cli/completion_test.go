package cli

import (
	"slices"
	"strings"
	"testing"
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
