package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// conformanceThroughGW is what each server scenario of
// @modelcontextprotocol/conformance (the version pinned in
// e2e/node/package.json) gives through gw in front of
// e2e/node/mcp-upstream.mjs's conformance server, which passes every one
// when called directly (the test checks that too). true: it passes
// through gw. docs/mcp.md's table says why each false one fails; keep
// both in step.
var conformanceThroughGW = map[string]bool{
	"server-initialize":             true,
	"ping":                          true,
	"tools-list":                    true,
	"tools-call-simple-text":        true,
	"tools-call-image":              true,
	"tools-call-audio":              true,
	"tools-call-embedded-resource":  true,
	"tools-call-mixed-content":      true,
	"tools-call-error":              true,
	"json-schema-2020-12":           true,
	"server-sse-polling":            true,
	"resources-list":                true,
	"prompts-list":                  true,
	"server-sse-multiple-streams":   false,
	"logging-set-level":             true,
	"completion-complete":           true,
	"tools-call-with-logging":       true,
	"tools-call-with-progress":      true,
	"tools-call-sampling":           true,
	"tools-call-elicitation":        true,
	"elicitation-sep1034-defaults":  true,
	"elicitation-sep1330-enums":     true,
	"resources-read-text":           true,
	"resources-read-binary":         true,
	"resources-templates-read":      true,
	"resources-subscribe":           true,
	"resources-unsubscribe":         true,
	"prompts-get-simple":            true,
	"prompts-get-with-args":         true,
	"prompts-get-embedded-resource": true,
	"prompts-get-with-image":        true,
	"dns-rebinding-protection":      false,
}

// conformanceDir is a scenario's results directory:
// server-<scenario>-<timestamp>.
var conformanceDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T[0-9-]+Z$`)

// conformanceCheck is one check of a scenario's checks.json.
type conformanceCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// runConformance runs every server scenario against target and returns,
// for each, "" when it passed or why it failed (its first failed check).
func runConformance(t *testing.T, node, dir, target string) map[string]string {
	t.Helper()
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js"),
		"server", "--url", target, "--suite", "all", "-o", out)
	cmd.Dir = dir
	log, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the conformance suite did not finish: %v\n%s", err, log)
	}
	// It exits 1 when any scenario fails: the checks say which.
	dirs, _ := os.ReadDir(out)
	results := map[string]string{}
	for _, d := range dirs {
		raw, err := os.ReadFile(filepath.Join(out, d.Name(), "checks.json"))
		if err != nil {
			continue
		}
		var checks []conformanceCheck
		if err := json.Unmarshal(raw, &checks); err != nil {
			t.Fatalf("%s: %v", d.Name(), err)
		}
		m := conformanceDir.FindStringSubmatch(d.Name())
		if m == nil {
			t.Fatalf("the conformance suite wrote %s", d.Name())
		}
		name := m[1]
		results[name] = ""
		for _, c := range checks {
			if c.Status == "FAILURE" {
				results[name] = c.ID + ": " + c.ErrorMessage
				break
			}
			if c.Status == "WARNING" {
				t.Logf("%s: warning %s: %s", name, c.ID, c.ErrorMessage)
			}
		}
	}
	if len(results) == 0 {
		t.Fatalf("the conformance suite wrote no results: %v\n%s", err, log)
	}
	return results
}

// TestMCPConformance runs the official MCP conformance suite's server
// scenarios (@modelcontextprotocol/conformance, in e2e/node) through gw
// serve's /inf/v1/mcp/{server}, in front of a conformant upstream built
// with the TypeScript SDK. The suite's client sends no credential, so a
// loopback proxy here adds the inference key and nothing else. It fails
// when a scenario that passes through gw today (conformanceThroughGW)
// fails, or when one listed as failing starts passing (update the list
// and docs/mcp.md's table).
func TestMCPConformance(t *testing.T) {
	node, dir := nodeWith(t, "@modelcontextprotocol/sdk", "@modelcontextprotocol/conformance")
	upstream := startMCPUpstream(t, node, dir, "conformance")
	// The upstream itself passes the whole suite: what fails through gw
	// is gw's doing.
	direct := runConformance(t, node, dir, upstream.URL)
	for name, why := range direct {
		if why != "" {
			t.Fatalf("the conformance upstream fails %s by itself: %s", name, why)
		}
	}
	eachDatabase(t, func(t *testing.T, env []string) { mcpConformance(t, node, dir, upstream, env) })
}

func mcpConformance(t *testing.T, node, dir string, upstream *mcpUpstream, env []string) {
	ctx := context.Background()
	srv := startServe(t, append(env, "GW_BOOTSTRAP_TOKEN=setup_mcp_conformance", "GW_MCP_TIMEOUT=5s")...)
	anon, _ := client.New(client.Options{Server: srv.URL})
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_mcp_conformance", Email: "ops@example.com", Password: "a long passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := client.New(client.Options{Server: srv.URL, Token: boot.ManagementKey.Token})
	if _, err := owner.CreateMCPServer(ctx, client.WorkspaceScope("default", "default"),
		wire.MCPServerCreate{Name: "everything", URL: upstream.URL}); err != nil {
		t.Fatal(err)
	}
	allowAllTools(t, owner)
	ik, err := owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "conformance"})
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(srv.URL)
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.URL.Path = "/inf/v1/mcp/everything"
		r.Out.Host = r.In.Host // as the suite sent it (its DNS rebinding scenario sends another)
		r.Out.Header.Set("Authorization", "Bearer "+ik.Token)
	}, FlushInterval: -1}
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)

	through := runConformance(t, node, dir, front.URL+"/mcp")
	names := make([]string, 0, len(through))
	for name := range through {
		names = append(names, name)
	}
	sort.Strings(names)
	var table strings.Builder
	for _, name := range names {
		mark := "pass"
		if through[name] != "" {
			mark = "FAIL " + through[name]
		}
		fmt.Fprintf(&table, "%-32s %s\n", name, mark)
	}
	t.Logf("through gw:\n%s", table.String())
	for _, name := range names {
		want, listed := conformanceThroughGW[name]
		passes := through[name] == ""
		switch {
		case !listed:
			t.Errorf("scenario %s is new: add it to conformanceThroughGW and docs/mcp.md (it %s)", name, map[bool]string{true: "passes", false: "fails: " + through[name]}[passes])
		case want && !passes:
			t.Errorf("scenario %s passed through gw and now fails: %s", name, through[name])
		case !want && passes:
			t.Errorf("scenario %s now passes through gw: mark it so in conformanceThroughGW and docs/mcp.md", name)
		}
	}
	for name := range conformanceThroughGW {
		if _, ran := through[name]; !ran {
			t.Errorf("scenario %s did not run", name)
		}
	}
	// The suite's tool calls were metered like any other.
	calls, _ := upstream.calls()
	if calls["test_simple_text"] < 2 {
		t.Fatalf("the upstream ran %v", calls)
	}
	waitFor(t, "the conformance calls' usage events", func() bool {
		for _, ev := range mcpUsage(t, srv.URL, boot.ManagementKey.Token) {
			if ev.Model == "mcp/everything/test_simple_text" && ev.Status == "ok" {
				return true
			}
		}
		return false
	})
}
