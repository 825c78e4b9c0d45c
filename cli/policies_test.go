package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// policyAPI is the real API on a fresh SQLite database, bootstrapped (an
// instance owner, organization and workspace "default"), with the CLI's
// environment pointing at it. It records every request the CLI sends, so
// tests can tell that a command changed nothing or never called at all.
type policyAPI struct {
	t     *testing.T
	dir   string
	token string
	c     *client.Client

	mu       sync.Mutex
	requests []string
}

func newPolicyAPI(t *testing.T) *policyAPI {
	t.Helper()
	ctx := context.Background()
	st := store.New(storetest.Open(t, storetest.SQLite))
	s, err := api.New(ctx, st, api.Options{})
	if err != nil {
		t.Fatal(err)
	}
	booted, err := backend.Bootstrap(ctx, st, backend.System("test"), backend.BootstrapInput{Email: "owner@example.com", Password: "correct horse battery"}, nil)
	boot := wire.BootstrapResult{}
	if err == nil {
		boot = api.BootstrapResult(booted)
	}
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	e := &policyAPI{t: t, dir: t.TempDir(), token: boot.ManagementKey.Token}
	t.Setenv("GW_SERVER", srv.URL)
	t.Setenv("GW_TOKEN", e.token)
	t.Setenv("GW_ORG", "default")
	t.Setenv("GW_WORKSPACE", "default")
	t.Setenv("GW_CONTEXT", "")
	if e.c, err = client.New(client.Options{Server: srv.URL, Token: e.token}); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *policyAPI) RoundTrip(r *http.Request) (*http.Response, error) {
	e.mu.Lock()
	e.requests = append(e.requests, r.Method+" "+r.URL.Path)
	e.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// run runs gw with args and returns the exit code and both outputs.
func (e *policyAPI) run(stdin string, args ...string) (int, string, string) {
	e.t.Helper()
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	f := &cmdutil.Factory{
		IO:         &cmdutil.IOStreams{In: strings.NewReader(stdin), Out: out, ErrOut: errOut},
		ConfigPath: filepath.Join(e.dir, "config.yaml"),
		HTTPClient: &http.Client{Transport: e},
	}
	code := Run(context.Background(), f, args)
	return code, out.String(), errOut.String()
}

// mustRun runs gw and fails unless it exits with want.
func (e *policyAPI) mustRun(want int, stdin string, args ...string) (string, string) {
	e.t.Helper()
	code, out, errOut := e.run(stdin, args...)
	if code != want {
		e.t.Fatalf("gw %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
	}
	return out, errOut
}

// take returns the requests recorded since the last take.
func (e *policyAPI) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.requests
	e.requests = nil
	return out
}

// mutations returns the requests since the last take that were not reads.
func (e *policyAPI) mutations() []string {
	var out []string
	for _, r := range e.take() {
		if !strings.HasPrefix(r, "GET ") {
			out = append(out, r)
		}
	}
	return out
}

func (e *policyAPI) write(name, content string) string {
	e.t.Helper()
	path := filepath.Join(e.dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return path
}

// policies returns the workspace's policies by name, straight from the API.
func (e *policyAPI) policies() map[string]wire.Policy {
	e.t.Helper()
	ps, err := e.c.ListPolicies(context.Background(), "default", "default")
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]wire.Policy{}
	for _, p := range ps {
		out[p.Name] = p
	}
	return out
}

func wantContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

const twoPolicies = `# two policies, one disabled
- name: allow-cheap
  definition:
    target: {kind: workspace}
    rules:
      - match: {kind: all_requests}
        action:
          kind: models
          names: [openai/gpt-4o-mini, openai/gpt-4.1-nano]
- name: cap-costs
  enabled: false
  definition:
    target: {kind: workspace}
    rules:
      - match: {kind: all_requests}
        action: {kind: price_limit, max_input_price_per_mtok: "1.00", max_output_price_per_mtok: "4.00"}
`

func TestPoliciesApply(t *testing.T) {
	e := newPolicyAPI(t)
	file := e.write("policies.yaml", twoPolicies)

	// First apply: both are created, as declared.
	out, _ := e.mustRun(0, "", "policies", "apply", "-f", file)
	wantContains(t, "first apply", out,
		`+ create policy "allow-cheap" (enabled)`, `+ create policy "cap-costs" (disabled)`,
		"    +       kind: price_limit\n    +       max_input_price_per_mtok: \"1.00\"\n",
		`plan: 2 to create, 0 to update, 0 to enable or disable, 0 to delete; 0 unchanged`,
		`created policy "allow-cheap"`, `created policy "cap-costs"`)
	if m := e.mutations(); len(m) != 2 || !strings.HasPrefix(m[0], "POST ") || !strings.HasPrefix(m[1], "POST ") {
		t.Fatalf("first apply sent %v", m)
	}
	before := e.policies()
	if len(before) != 2 || !before["allow-cheap"].Enabled || before["cap-costs"].Enabled {
		t.Fatalf("after first apply: %+v", before)
	}

	// Second apply of the same file: nothing to do, nothing sent but reads.
	out, _ = e.mustRun(0, "", "policies", "apply", "-f", file)
	wantContains(t, "second apply", out, "no changes: the workspace matches "+file+" (2 policies)")
	if m := e.mutations(); len(m) != 0 {
		t.Fatalf("second apply mutated: %v", m)
	}
	for name, p := range e.policies() {
		if !p.UpdatedAt.Equal(before[name].UpdatedAt) {
			t.Errorf("%s updated_at moved: %v -> %v", name, before[name].UpdatedAt, p.UpdatedAt)
		}
	}
	e.mustRun(0, "", "policies", "diff", "-f", file)

	// The same policies as JSON on stdin are the same policies.
	var asJSON []map[string]any
	for _, p := range before {
		asJSON = append(asJSON, map[string]any{"name": p.Name, "enabled": p.Enabled, "definition": p.Definition})
	}
	raw, _ := json.Marshal(asJSON)
	out, _ = e.mustRun(0, string(raw), "policies", "apply", "-f", "-")
	wantContains(t, "stdin apply", out, "no changes: the workspace matches <stdin>")

	// An edit: one more model, and cap-costs enabled.
	edited := strings.Replace(twoPolicies, "openai/gpt-4.1-nano]", "openai/gpt-4.1-nano, openai/o3-mini]", 1)
	edited = strings.Replace(edited, "  enabled: false\n", "", 1)
	file = e.write("policies.yaml", edited)
	out, errOut := e.mustRun(ExitDiffers, "", "policies", "diff", "-f", file)
	if strings.TrimSpace(errOut) != "the workspace differs from "+file+": 2 changes" {
		t.Errorf("diff stderr %q", errOut)
	}
	wantContains(t, "diff of the edit", out,
		`~ update policy "allow-cheap" (`+before["allow-cheap"].ID.String()+`): definition`,
		"    --- workspace\n    +++ "+file+"\n    @@ ",
		"           - openai/gpt-4.1-nano\n    +        - openai/o3-mini\n",
		`~ enable policy "cap-costs"`,
		`plan: 0 to create, 1 to update, 1 to enable or disable, 0 to delete; 0 unchanged`)

	// --dry-run shows the same and changes nothing.
	dry, errOut := e.mustRun(0, "", "policies", "apply", "-f", file, "--dry-run")
	if dry != out {
		t.Errorf("dry run plan differs from diff:\n%s\nvs\n%s", dry, out)
	}
	wantContains(t, "dry run stderr", errOut, "dry run: nothing was changed")
	if m := e.mutations(); len(m) != 0 {
		t.Fatalf("dry run mutated: %v", m)
	}
	if p := e.policies(); p["cap-costs"].Enabled || len(definitionOf(p["allow-cheap"]).Rules[0].Action.Names) != 2 {
		t.Fatalf("dry run changed the policies: %+v", p)
	}

	out, _ = e.mustRun(0, "", "policies", "apply", "-f", file)
	wantContains(t, "apply of the edit", out, `updated policy "allow-cheap"`, `enabled policy "cap-costs"`)
	if m := e.mutations(); len(m) != 2 || !strings.HasPrefix(m[0], "PATCH ") || !strings.HasSuffix(m[1], "/enable") {
		t.Fatalf("apply of the edit sent %v", m)
	}
	after := e.policies()
	if !after["cap-costs"].Enabled || strings.Join(definitionOf(after["allow-cheap"]).Rules[0].Action.Names, ",") != "openai/gpt-4o-mini,openai/gpt-4.1-nano,openai/o3-mini" {
		t.Fatalf("after the edit: %+v", after)
	}
	out, _ = e.mustRun(0, "", "policies", "apply", "-f", file)
	wantContains(t, "re-apply of the edit", out, "no changes")
	e.mustRun(0, "", "policies", "diff", "-f", file)

	// A file without cap-costs leaves it alone unless --prune.
	onlyFirst := e.write("first.yaml", edited[:strings.Index(edited, "- name: cap-costs")])
	out, _ = e.mustRun(0, "", "policies", "apply", "-f", onlyFirst)
	wantContains(t, "apply without prune", out, "no changes", `note: 1 workspace policy not in `+onlyFirst+` is kept (--prune deletes them): "cap-costs"`)
	out, _ = e.mustRun(ExitDiffers, "", "policies", "diff", "-f", onlyFirst, "--prune")
	wantContains(t, "diff --prune", out, `- delete policy "cap-costs" (`+after["cap-costs"].ID.String()+`): not in `+onlyFirst, "    -       kind: price_limit\n")
	_, errOut = e.mustRun(ExitUsage, "", "policies", "apply", "-f", onlyFirst, "--prune")
	wantContains(t, "prune without a terminal", errOut, "pass --yes")
	if m := e.mutations(); len(m) != 0 {
		t.Fatalf("unconfirmed prune mutated: %v", m)
	}
	out, _ = e.mustRun(0, "", "policies", "apply", "-f", onlyFirst, "--prune", "--yes")
	wantContains(t, "apply --prune --yes", out, `deleted policy "cap-costs"`)
	if m := e.mutations(); len(m) != 1 || !strings.HasPrefix(m[0], "DELETE ") {
		t.Fatalf("prune sent %v", m)
	}
	if p := e.policies(); len(p) != 1 {
		t.Fatalf("after prune: %+v", p)
	}
}

func TestPoliciesFileErrors(t *testing.T) {
	e := newPolicyAPI(t)
	cases := []struct {
		name, content string
		want          []string
	}{
		{name: "empty allowlist", content: strings.Replace(twoPolicies, "kind: price_limit, max_input_price_per_mtok: \"1.00\", max_output_price_per_mtok: \"4.00\"", "kind: models, names: []", 1),
			want: []string{`FILE:16: policy "cap-costs" (#2): definition.rules[0].action.names: List should have at least 1 item after validation, not 0`}},
		{name: "every problem at once", content: `
- definition: {target: {kind: everyone}, rules: []}
- name: x
  enabled: "yes"
  definition: {target: {kind: workspace}, rules: [{match: {kind: all_requests}, action: {kind: deny, message: no}}]}
  labels: {team: a}
`, want: []string{
			"FILE is not valid (5 problems):",
			"FILE:2: policy #1: name: Field required",
			"FILE:2: policy #1: definition.target: Input tag 'everyone' found using 'kind' does not match any of the expected tags: 'workspace', 'selected_users', 'selected_keys'",
			"FILE:2: policy #1: definition.rules: List should have at least 1 item after validation, not 0",
			`FILE:4: policy "x" (#2): enabled: Input should be a valid boolean`,
			`FILE:6: policy "x" (#2): labels: Extra inputs are not permitted`,
		}},
		{name: "duplicate names", content: `
- {name: a, definition: {target: {kind: workspace}, rules: [{match: {kind: all_requests}, action: {kind: strict_parameters}}]}}
- {name: b, definition: {target: {kind: workspace}, rules: [{match: {kind: all_requests}, action: {kind: strict_parameters}}]}}
- {name: a, definition: {target: {kind: workspace}, rules: [{match: {kind: all_requests}, action: {kind: strict_parameters}}]}}
`, want: []string{`FILE: policy "a" (#3): name: duplicate of policy #1`}},
		{name: "unquoted price", content: strings.Replace(twoPolicies, `"1.00"`, `1.50`, 1),
			want: []string{`FILE:16: policy "cap-costs" (#2): definition.rules[0].action.max_input_price_per_mtok: Input should be a valid string (quote it: "1.50")`}},
		{name: "not a policy", content: "just text\n", want: []string{"FILE: expected a policy (a mapping with name and definition) or a list of policies, not a string"}},
		{name: "empty", content: "# nothing yet\n", want: []string{"FILE: no policies: the file is empty"}},
		{name: "yaml syntax", content: "- name: a\n  definition: [\n", want: []string{"FILE: line 2: not valid YAML: did not find expected node content"}},
		// Issue 22, row 8: the line named is the misindented one, not
		// where its list starts.
		{name: "misindented action", content: "- name: p\n  definition:\n    target: {kind: workspace}\n    rules:\n      - match: {kind: all_requests}\n      action: {kind: deny, message: no}\n",
			want: []string{"FILE: line 6: not valid YAML: did not find expected '-' indicator (in the block that starts on line 4); check this line's indentation"}},
		{name: "field on its line", content: "- name: p\n  definition:\n    target: {kind: workspace}\n    rules:\n      - match: {kind: all_requests}\n        action: {kind: deny, mesage: no}\n",
			want: []string{`FILE:6: policy "p" (#1): definition.rules[0].action.mesage: Extra inputs are not permitted`}},
		{name: "duplicate key", content: "name: a\nname: b\n", want: []string{"FILE: line 2: key \"name\" appears twice"}},
		{name: "two documents", content: "name: a\n---\nname: b\n", want: []string{"FILE: line 2: a second YAML document; put every policy in one list instead"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := e.write("bad.yaml", c.content)
			for _, verb := range []string{"apply", "diff"} {
				out, errOut := e.mustRun(ExitUsage, "", "policies", verb, "-f", file)
				if out != "" {
					t.Errorf("%s printed a plan for a bad file:\n%s", verb, out)
				}
				for _, w := range c.want {
					wantContains(t, verb+" stderr", errOut, strings.ReplaceAll(w, "FILE", file))
				}
			}
			if r := e.take(); len(r) != 0 {
				t.Fatalf("a bad file cost requests: %v", r)
			}
		})
	}
	_, errOut := e.mustRun(ExitUsage, "", "policies", "apply", "-f", filepath.Join(e.dir, "missing.yaml"))
	wantContains(t, "missing file", errOut, "read policy file")
	if p := e.policies(); len(p) != 0 {
		t.Fatalf("bad files created policies: %+v", p)
	}
}

func TestPoliciesListGetDelete(t *testing.T) {
	e := newPolicyAPI(t)
	e.mustRun(0, "", "policies", "apply", "-f", e.write("p.yaml", twoPolicies))
	ps := e.policies()

	out, _ := e.mustRun(0, "", "policies", "list")
	wantContains(t, "list", out, "allow-cheap\t"+ps["allow-cheap"].ID.String()+"\ttrue\tworkspace\t1\t", "cap-costs\t"+ps["cap-costs"].ID.String()+"\tfalse\t")
	out, _ = e.mustRun(0, "", "policies", "list", "-o", "json")
	var listed []wire.Policy
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed) != 2 || listed[0].Name != "allow-cheap" {
		t.Fatalf("list -o json: %v %s", err, out)
	}

	out, _ = e.mustRun(0, "", "policies", "get", "cap-costs")
	wantContains(t, "get", out, "name:       cap-costs\n", "enabled:    false\n", "definition:\n  target:\n    kind: workspace\n", `max_output_price_per_mtok: "4.00"`)
	out, _ = e.mustRun(0, "", "policies", "get", ps["allow-cheap"].ID.String(), "-o", "yaml")
	wantContains(t, "get -o yaml", out, "name: allow-cheap\n", "id: "+ps["allow-cheap"].ID.String())
	_, errOut := e.mustRun(ExitError, "", "policies", "get", "nope")
	wantContains(t, "get unknown", errOut, `no policy named "nope"`)

	_, errOut = e.mustRun(ExitUsage, "", "policies", "delete", "cap-costs")
	wantContains(t, "delete without a terminal", errOut, "pass --yes")
	out, _ = e.mustRun(0, "", "policies", "delete", "cap-costs", "--yes")
	wantContains(t, "delete", out, `deleted policy "cap-costs"`)
	if p := e.policies(); len(p) != 1 {
		t.Fatalf("after delete: %+v", p)
	}
}

func TestPoliciesExplain(t *testing.T) {
	e := newPolicyAPI(t)
	ctx := context.Background()
	key, err := e.c.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.CreateCredential(ctx, client.WorkspaceScope("default", "default"),
		wire.ProviderCredentialCreate{Provider: "openai", Label: "main", Secret: "sk-test-0123456789abcdef"}); err != nil {
		t.Fatal(err)
	}
	e.mustRun(0, "", "policies", "apply", "-f", e.write("p.yaml", `
- name: allow-openai
  definition:
    target: {kind: workspace}
    rules:
      - match: {kind: all_requests}
        action: {kind: models, names: [openai/gpt-4o-mini, openai/gpt-4o]}
- name: reserve-gpt-4o
  definition:
    target: {kind: selected_keys, key_ids: [`+key.ID.String()+`]}
    rules:
      - match: {kind: request, models: [openai/gpt-4o], stream: null}
        action: {kind: deny, message: gpt-4o is reserved for production keys}
- name: cap-costs
  definition:
    target: {kind: workspace}
    rules:
      - match: {kind: all_requests}
        action: {kind: price_limit, max_input_price_per_mtok: "1.00", max_output_price_per_mtok: "4.00"}
      - match: {kind: request, stream: true}
        action: {kind: request_limits, max_output_tokens: 1000}
- name: other-team
  definition:
    target: {kind: selected_users, user_ids: [00000000-0000-4000-8000-000000000001]}
    rules:
      - match: {kind: all_requests}
        action: {kind: deny, message: not for you}
- name: paused
  enabled: false
  definition:
    target: {kind: workspace}
    rules:
      - match: {kind: all_requests}
        action: {kind: deny, message: paused}
`))
	k := key.ID.String()

	// An allowlist admits, the price ceiling admits and narrows.
	out, _ := e.mustRun(0, "", "policies", "explain", "--key", k, "--model", "openai/gpt-4o-mini")
	wantContains(t, "explain admit", out,
		"request:     model openai/gpt-4o-mini (provider openai; 0.15 in / 0.60 out per MTok)",
		"phase:       inference, stream false, capabilities none",
		"key:         "+k+` "ci" (active)`,
		"credentials: workspace\n",
		`model "openai/gpt-4o-mini" is on the models allowlist`,
		"prices 0.15 in / 0.6 out per MTok are within the ceilings 1.00 / 4.00",
		"reserve-gpt-4o: its target covers this key, but none of its rules matches this request",
		"other-team: selected_users target does not include the key's owner",
		"paused: disabled",
		"verdict: allowed\n  price ceilings: 1.00 in / 4.00 out per MTok\n")
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "allow-openai ") && !strings.Contains(line, " admit ") {
			t.Errorf("allowlist line: %q", line)
		}
	}

	// A key can be named instead; the name must pick out one key.
	byName, _ := e.mustRun(0, "", "policies", "explain", "--key", "ci", "--model", "openai/gpt-4o-mini")
	if byName != out {
		t.Errorf("--key by name explains differently:\n%s\nvs\n%s", byName, out)
	}
	_, errOut := e.mustRun(ExitError, "", "policies", "explain", "--key", "nobody", "--model", "openai/gpt-4o-mini")
	wantContains(t, "explain unknown key name", errOut, `no inference key named "nobody"`)
	if _, err := e.c.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "ci"}); err != nil {
		t.Fatal(err)
	}
	_, errOut = e.mustRun(ExitUsage, "", "policies", "explain", "--key", "ci", "--model", "openai/gpt-4o-mini")
	wantContains(t, "explain ambiguous key name", errOut, `2 inference keys are named "ci"; pass one of their ids: `)

	// Streaming adds the token limit: a narrowing rule.
	out, _ = e.mustRun(0, "", "policies", "explain", "--key", k, "--model", "openai/gpt-4o-mini", "--stream", "--capability", "tools")
	wantContains(t, "explain narrow", out, "phase:       inference, stream true, capabilities tools", "narrow", "max_output_tokens at most 1000",
		"verdict: allowed", "  max output tokens: 1000\n")

	// A deny rule denies with its message; the price ceiling refuses too.
	out, _ = e.mustRun(0, "", "policies", "explain", "--key", k, "--model", "openai/gpt-4o")
	wantContains(t, "explain deny", out, `denied: "gpt-4o is reserved for production keys"`,
		"prices 2.5 in / 10 out per MTok exceed the ceilings 1.00 / 4.00",
		"verdict: denied: gpt-4o is reserved for production keys\n")

	out, _ = e.mustRun(0, "", "policies", "explain", "--key", k, "--model", "openai/gpt-4o", "-o", "json")
	var d map[string]any
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("explain -o json: %v\n%s", err, out)
	}
	if d["allowed"] != false || d["deny_message"] != "gpt-4o is reserved for production keys" || d["max_input_price_per_mtok"] != "1.00" {
		t.Fatalf("decision: %s", out)
	}
	if reasons, _ := d["reasons"].([]any); len(reasons) != 3 {
		t.Fatalf("reasons: %s", out)
	}

	// Discovery ignores the stream-only rule.
	out, _ = e.mustRun(0, "", "policies", "explain", "--key", k, "--model", "openai/gpt-4o-mini", "--phase", "discovery")
	wantContains(t, "explain discovery", out, "phase:       discovery", "verdict: allowed")
	if strings.Contains(out, "max_output_tokens") {
		t.Errorf("discovery applied an inference-only rule:\n%s", out)
	}

	// A provider without a credential cannot serve, whatever the policies.
	out, _ = e.mustRun(0, "", "policies", "explain", "--key", k, "--model", "anthropic/claude-haiku-4-5-20251001")
	wantContains(t, "explain no credential", out, "credentials: none", "verdict: denied: model \"anthropic/claude-haiku-4-5-20251001\" is not allowed by policy")

	_, errOut = e.mustRun(ExitError, "", "policies", "explain", "--key", k, "--model", "openai/no-such-model")
	wantContains(t, "explain unknown model", errOut, `model "openai/no-such-model" is neither in the workspace's catalog`,
		"nor an alias in force there (gw aliases list --workspace default)")

	// An alias: each target explained, judged as if asked for by its id,
	// as the data plane does; "not in the workspace's catalog" before
	// (issue 26, row 8). The workspace's alias overrides the
	// organization's of the same name.
	three := 3
	for _, a := range []struct {
		ws      string
		name    string
		targets []wire.ModelAliasTargetIn
	}{
		{"", "claude-opus-4-8", []wire.ModelAliasTargetIn{{Model: "openai/gpt-4o-mini"}}},
		{"default", "claude-opus-4-8", []wire.ModelAliasTargetIn{{Model: "openai/gpt-4o", Weight: &three}, {Model: "openai/gpt-4o-mini"}}},
		{"", "gpt-5.1-codex", []wire.ModelAliasTargetIn{{Model: "openai/gpt-4o"}}},
	} {
		if _, err := e.c.CreateModelAlias(ctx, "default", a.ws, wire.ModelAliasCreate{Name: a.name, Targets: a.targets}); err != nil {
			t.Fatal(err)
		}
	}
	out, _ = e.mustRun(0, "", "policies", "explain", "--key", k, "--model", "claude-opus-4-8")
	wantContains(t, "explain alias", out,
		"alias:       claude-opus-4-8, of workspace default: openai/gpt-4o=3, openai/gpt-4o-mini=1\n",
		"== target 1 of 2: openai/gpt-4o (weight 3)\nrequest:     model openai/gpt-4o (provider openai;",
		"verdict: denied: gpt-4o is reserved for production keys\n",
		"== target 2 of 2: openai/gpt-4o-mini (weight 1)\nrequest:     model openai/gpt-4o-mini",
		"verdict: allowed\n",
		"alias verdict: allowed: served by openai/gpt-4o-mini (weight 1)\n")
	out, _ = e.mustRun(0, "", "policies", "explain", "--key", k, "--model", "gpt-5.1-codex")
	wantContains(t, "explain org alias", out, "alias:       gpt-5.1-codex, of organization default: openai/gpt-4o=1",
		"alias verdict: denied: no target of gpt-5.1-codex is allowed to this request")
	out, _ = e.mustRun(0, "", "policies", "explain", "--key", k, "--model", "claude-opus-4-8", "-o", "json")
	var ax struct {
		DefinedBy string `json:"defined_by"`
		Allowed   bool
		Targets   []struct {
			Model    string
			Decision struct{ Allowed bool }
		}
	}
	if err := json.Unmarshal([]byte(out), &ax); err != nil {
		t.Fatalf("explain alias -o json: %v\n%s", err, out)
	}
	if !ax.Allowed || ax.DefinedBy != "workspace default" || len(ax.Targets) != 2 || ax.Targets[0].Decision.Allowed || !ax.Targets[1].Decision.Allowed {
		t.Fatalf("alias decision: %s", out)
	}

	// A key that cannot read instance credentials gets the platform scope
	// assumed, and is told so.
	orgKey, err := e.c.CreateOrgKey(ctx, "default", wire.ManagementKeyCreate{Label: "explainer",
		Permissions: []string{"policies.read", "catalog.read", "inference-keys.read", "provider-credentials.read"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GW_TOKEN", orgKey.Token)
	out, _ = e.mustRun(0, "", "policies", "explain", "--key", k, "--model", "openai/gpt-4o-mini")
	wantContains(t, "explain with assumed scopes", out, "credentials: platform, workspace\n",
		"(platform credentials are not readable with this key; a platform credential is assumed)")
}

// diff's "there are changes" (3) is told apart from "the comparison
// failed" (1), a bad file (2) and a refused key (4).
func TestPoliciesDiffExitCodes(t *testing.T) {
	e := newPolicyAPI(t)
	file := e.write("policies.yaml", twoPolicies)
	out, errOut := e.mustRun(ExitDiffers, "", "policies", "diff", "-f", file)
	wantContains(t, "diff of a new file", out, `+ create policy "allow-cheap"`)
	if strings.Contains(errOut, "error") {
		t.Errorf("differences reported as an error: %q", errOut)
	}
	e.mustRun(ExitOK, "", "policies", "apply", "-f", file)
	e.mustRun(ExitOK, "", "policies", "diff", "-f", file)

	t.Setenv("GW_WORKSPACE", "no-such-workspace")
	_, errOut = e.mustRun(ExitError, "", "policies", "diff", "-f", file)
	wantContains(t, "diff in a missing workspace", errOut, "error:")
	t.Setenv("GW_WORKSPACE", "default")

	e.mustRun(ExitUsage, "", "policies", "diff", "-f", e.write("bad.yaml", "just text\n"))

	t.Setenv("GW_TOKEN", "gw_mk_not-a-real-key")
	e.mustRun(ExitAuth, "", "policies", "diff", "-f", file)

	// A server that is not there is a failure, not a difference.
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	t.Setenv("GW_TOKEN", e.token)
	t.Setenv("GW_SERVER", down.URL)
	_, errOut = e.mustRun(ExitError, "", "policies", "diff", "-f", file)
	wantContains(t, "diff without a server", errOut, "error:")
}

// definitionOf is a policy's definition as the API stores it.
func definitionOf(p wire.Policy) policy.Definition {
	var d policy.Definition
	_ = json.Unmarshal(p.Definition, &d)
	return d
}
