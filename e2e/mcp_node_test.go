package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// nodeWith is node and e2e/node, the packages given installed there;
// without them the test is skipped, unless GW_TEST_REQUIRE_NODE is set,
// as in CI.
func nodeWith(t *testing.T, pkgs ...string) (node, dir string) {
	t.Helper()
	dir, err := filepath.Abs("node")
	if err != nil {
		t.Fatal(err)
	}
	node, err = exec.LookPath("node")
	missing := ""
	if err != nil {
		missing = "node is not installed"
	} else {
		for _, pkg := range pkgs {
			if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
				missing = pkg + " is not installed in e2e/node (run npm ci there)"
			}
		}
	}
	if missing != "" {
		if os.Getenv("GW_TEST_REQUIRE_NODE") != "" {
			t.Fatal(missing + ", and GW_TEST_REQUIRE_NODE is set")
		}
		t.Skip(missing)
	}
	return node, dir
}

// eachDatabase runs fn as a subtest per database gw serve can be given
// (SQLite; PostgreSQL with GW_TEST_DATABASE_URL), with the environment
// naming a fresh one.
func eachDatabase(t *testing.T, fn func(t *testing.T, env []string)) {
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			env := []string{"GW_DATA_DIR=" + t.TempDir()}
			if d == storetest.Postgres {
				u, err := storetest.URL(t, d)
				if err != nil {
					t.Fatal(err)
				}
				env = append(env, "GW_DATABASE_URL="+u, "GW_SECRET_KEY="+strings.Repeat("ab", 32))
			}
			fn(t, env)
		})
	}
}

// mcpUpstream is an upstream MCP server of e2e/node/mcp-upstream.mjs,
// built with the TypeScript SDK, and what it printed.
type mcpUpstream struct {
	URL   string
	mu    sync.Mutex
	lines []map[string]any
}

// startMCPUpstream starts `node mcp-upstream.mjs kind` with env added and
// waits for its port; it is killed (by its own pid) when the test ends.
func startMCPUpstream(t *testing.T, node, dir, kind string, env ...string) *mcpUpstream {
	t.Helper()
	cmd := exec.Command(node, "mcp-upstream.mjs", kind)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	u := &mcpUpstream{}
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			if p, ok := m["port"].(float64); ok {
				port <- strconv.Itoa(int(p))
				continue
			}
			u.mu.Lock()
			u.lines = append(u.lines, m)
			u.mu.Unlock()
		}
	}()
	select {
	case p := <-port:
		u.URL = "http://127.0.0.1:" + p + "/mcp"
	case <-time.After(30 * time.Second):
		t.Fatalf("mcp-upstream.mjs %s printed no port", kind)
	}
	return u
}

// calls counts the tools/call the upstream ran, by tool; leaks counts the
// requests that carried a gw inference key.
func (u *mcpUpstream) calls() (calls map[string]int, leaks int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	calls = map[string]int{}
	for _, l := range u.lines {
		if name, ok := l["call"].(string); ok {
			calls[name]++
		}
		if _, ok := l["leak"]; ok {
			leaks++
		}
	}
	return calls, leaks
}

// oauthTokenEndpoint is a client-credentials token endpoint: it hands
// token to the client id and secret given, and counts the tokens issued.
func oauthTokenEndpoint(t *testing.T, id, secret, token string) (string, *atomic.Int64) {
	t.Helper()
	var issued atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		gotID, gotSecret, ok := r.BasicAuth()
		if !ok {
			gotID, gotSecret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		if r.Method != http.MethodPost || r.PostForm.Get("grant_type") != "client_credentials" || gotID != id || gotSecret != secret {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
			return
		}
		issued.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/token", &issued
}

// mcpUsage reads the workspace's usage events of the MCP endpoint.
func mcpUsage(t *testing.T, base, token string) []wire.UsageEvent {
	t.Helper()
	var out []wire.UsageEvent
	cursor := ""
	for range 20 {
		q := url.Values{"limit": {"200"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page wire.Page[wire.UsageEvent]
		if err := getJSON(base, token, "/api/v1/organizations/default/workspaces/default/usage-events?"+q.Encode(), &page); err != nil {
			t.Fatal(err)
		}
		for _, ev := range page.Data {
			if ev.Endpoint != nil && *ev.Endpoint == "mcp" {
				out = append(out, ev)
			}
		}
		if page.Page.NextCursor == nil || *page.Page.NextCursor == "" {
			break
		}
		cursor = *page.Page.NextCursor
	}
	return out
}

// mcpAudit reads the workspace's mcp.tool_called audit rows.
func mcpAudit(t *testing.T, owner *client.Client) []wire.AuditEvent {
	t.Helper()
	var out []wire.AuditEvent
	cursor := ""
	for range 20 {
		page, err := owner.ListActivity(context.Background(), client.WorkspaceScope("default", "default"), 200, cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range page.Data {
			if a.Action == "mcp.tool_called" {
				out = append(out, a)
			}
		}
		if page.Page.NextCursor == nil || *page.Page.NextCursor == "" {
			break
		}
		cursor = *page.Page.NextCursor
	}
	return out
}

// allowAllTools is a tool policy letting the workspace's keys list and
// call every tool (gw denies by default).
func allowAllTools(t *testing.T, owner *client.Client) {
	t.Helper()
	allow := wire.ToolAction{Kind: "allow"}
	if _, err := owner.CreateToolPolicy(context.Background(), "default", "default", wire.ToolPolicyCreate{Name: "all-tools",
		Definition: wire.ToolPolicyDefinition{Target: wire.ToolPolicyTarget{Kind: "workspace"},
			Rules: []wire.ToolRule{{Phase: "list", Action: allow}, {Phase: "call", Action: allow}}}}); err != nil {
		t.Fatal(err)
	}
}

// tsResult is what e2e/node/mcp-client.mjs printed.
type tsResult struct {
	SDKVersions     []string `json:"sdk_versions"`
	Offered         string   `json:"offered"`
	Unauthenticated struct {
		Status  int    `json:"status"`
		Message string `json:"message"`
	} `json:"unauthenticated"`
	Negotiated string `json:"negotiated"`
	Session    bool   `json:"session"`
	Server     struct {
		Name string `json:"name"`
	} `json:"server"`
	Tools       []string `json:"tools"`
	SingleTools []string `json:"single_tools"`
	Headers     []string `json:"headers"`
	Timing      struct {
		Calls     int     `json:"calls"`
		DirectMS  float64 `json:"direct_ms"`
		ThroughMS float64 `json:"through_gw_ms"`
	} `json:"timing"`
	SlowMS     int64  `json:"slow_ms"`
	Echo       tsCall `json:"echo"`
	Add        tsCall `json:"add"`
	Fail       tsCall `json:"fail"`
	Slow       tsCall `json:"slow"`
	Secured    tsCall `json:"secured"`
	OAuth      tsCall `json:"oauth"`
	Unknown    tsCall `json:"unknown"`
	SingleEcho tsCall `json:"single_echo"`
}

type tsCall struct {
	Result *struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent map[string]any `json:"structuredContent"`
		IsError           bool           `json:"isError"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (c tsCall) text() string {
	if c.Result == nil || len(c.Result.Content) == 0 {
		return ""
	}
	return c.Result.Content[0].Text
}

// TestMCPTypeScriptSDK runs the MCP TypeScript SDK's client
// (e2e/node/mcp-client.mjs) through gw serve on each protocol version it
// speaks, against three upstream MCP servers built with the same SDK
// (e2e/node/mcp-upstream.mjs): one with sessions and tools answering
// text, structured and error results and a slow tool, one without
// sessions needing a header, one needing an OAuth client-credentials
// token from a token endpoint here. Both endpoints; then the upstreams'
// own record of the calls, one usage event (cost = price) and one audit
// row per call.
func TestMCPTypeScriptSDK(t *testing.T) {
	node, dir := nodeWith(t, "@modelcontextprotocol/sdk")
	eachDatabase(t, func(t *testing.T, env []string) { mcpTypeScriptSDK(t, node, dir, env) })
}

func mcpTypeScriptSDK(t *testing.T, node, dir string, env []string) {
	ctx := context.Background()
	tools := startMCPUpstream(t, node, dir, "tools")
	secured := startMCPUpstream(t, node, dir, "tools", "MCP_STATELESS=1", "MCP_REQUIRE_HEADER=X-Api-Key: up-secret-e2e")
	oauth := startMCPUpstream(t, node, dir, "tools", "MCP_REQUIRE_HEADER=Authorization: Bearer tok-e2e-oauth")
	tokenURL, issued := oauthTokenEndpoint(t, "gw-client", "gw-client-secret", "tok-e2e-oauth")

	srv := startServe(t, append(env, "GW_BOOTSTRAP_TOKEN=setup_mcp_ts", "GW_MCP_TIMEOUT=3s")...)
	anon, _ := client.New(client.Options{Server: srv.URL})
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_mcp_ts", Email: "ops@example.com", Password: "a long passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := client.New(client.Options{Server: srv.URL, Token: boot.ManagementKey.Token})
	ws := client.WorkspaceScope("default", "default")
	for _, s := range []wire.MCPServerCreate{
		{Name: "tools", URL: tools.URL, Prices: map[string]string{"echo": "0.001", "add": "0.002", "fail": "0.0005", "slow": "0.003"}},
		{Name: "secured", URL: secured.URL, Auth: &wire.MCPAuth{Kind: "header", Header: "X-Api-Key", Secret: "up-secret-e2e"},
			Prices: map[string]string{"*": "0.01"}},
		{Name: "oauth", URL: oauth.URL, Auth: &wire.MCPAuth{Kind: "oauth_client_credentials", TokenURL: tokenURL,
			ClientID: "gw-client", ClientSecret: "gw-client-secret", Scopes: []string{"tools"}}},
	} {
		if _, err := owner.CreateMCPServer(ctx, ws, s); err != nil {
			t.Fatalf("MCP server %s: %v", s.Name, err)
		}
	}
	allowAllTools(t, owner)
	ik, err := owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "mcp-ts"})
	if err != nil {
		t.Fatal(err)
	}

	// The SDK offers 2025-11-25; a client offering 2025-06-18 gets it;
	// one offering 2025-03-26 (which the SDK also speaks, gw not) is
	// served 2025-11-25, which the SDK takes.
	versions := []struct{ offered, negotiated string }{
		{"2025-11-25", "2025-11-25"}, {"2025-06-18", "2025-06-18"}, {"2025-03-26", "2025-11-25"},
	}
	wantTools := []string{"oauth__add", "oauth__echo", "oauth__fail", "oauth__slow", "secured__add", "secured__echo",
		"secured__fail", "secured__slow", "tools__add", "tools__echo", "tools__fail", "tools__slow"}
	for _, v := range versions {
		t.Run(v.offered, func(t *testing.T) {
			runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(runCtx, node, "mcp-client.mjs")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GW_MCP_URL="+srv.URL+"/inf/v1/mcp", "GW_INF_KEY="+ik.Token, "MCP_VERSION="+v.offered)
			if v.offered == "2025-11-25" {
				cmd.Env = append(cmd.Env, "MCP_DIRECT_URL="+tools.URL)
			}
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("node mcp-client.mjs: %v\n%s\ngw serve:\n%s", err, out, srv.logs)
			}
			var r tsResult
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatalf("mcp-client.mjs printed %s: %v", out, err)
			}
			t.Logf("TS SDK speaks %v; offered %s, negotiated %s", r.SDKVersions, r.Offered, r.Negotiated)
			if r.Timing.Calls > 0 {
				t.Logf("tools/call from the TS SDK, median of %d interleaved: %.2f ms direct, %.2f ms through gw serve (%.2f×)",
					r.Timing.Calls, r.Timing.DirectMS, r.Timing.ThroughMS, r.Timing.ThroughMS/r.Timing.DirectMS)
			}
			if r.Negotiated != v.negotiated || !r.Session || r.Server.Name != "gw" || !slices.Equal(r.Headers, []string{v.negotiated}) {
				t.Fatalf("negotiation: %+v", r)
			}
			if r.Unauthenticated.Status != http.StatusUnauthorized || !strings.Contains(r.Unauthenticated.Message, "Invalid inference key") {
				t.Fatalf("a wrong key was not refused with 401: %+v", r.Unauthenticated)
			}
			if !slices.Equal(r.Tools, wantTools) || !slices.Equal(r.SingleTools, []string{"add", "echo", "fail", "slow"}) {
				t.Fatalf("tools: %v, at /inf/v1/mcp/tools: %v", r.Tools, r.SingleTools)
			}
			if r.Echo.text() != "echo: hello from the TS SDK" || r.SingleEcho.text() != "echo: one server" {
				t.Fatalf("text results: %+v %+v", r.Echo, r.SingleEcho)
			}
			if r.Add.Result == nil || r.Add.Result.StructuredContent["sum"] != float64(5) || r.Add.Result.IsError {
				t.Fatalf("structured result: %+v", r.Add)
			}
			if r.Fail.Result == nil || !r.Fail.Result.IsError || r.Fail.text() != "the tool failed on purpose" {
				t.Fatalf("error result: %+v", r.Fail)
			}
			if r.Slow.Error == nil || r.Slow.Error.Code != -32002 || !strings.Contains(r.Slow.Error.Message, "tools") || r.SlowMS > 15000 {
				t.Fatalf("slow tool, cut by gw's 3s timeout: %+v after %d ms", r.Slow.Error, r.SlowMS)
			}
			if r.Secured.text() != "echo: through a header" || r.OAuth.text() != "echo: through OAuth" {
				t.Fatalf("header / OAuth upstreams: %+v %+v", r.Secured, r.OAuth)
			}
			if r.Unknown.Error == nil || r.Unknown.Error.Code != -32602 {
				t.Fatalf("unknown server: %+v", r.Unknown)
			}
		})
	}

	// What reached the upstreams: each call once, never the caller's key.
	// The timing run made 51 echo calls each way on top.
	n := len(versions)
	const timed = 51
	for _, c := range []struct {
		u    *mcpUpstream
		want map[string]int
	}{
		{tools, map[string]int{"echo": 2*n + 2*timed, "add": n, "fail": n, "slow": n}},
		{secured, map[string]int{"echo": n}},
		{oauth, map[string]int{"echo": n}},
	} {
		got, leaks := c.u.calls()
		if leaks != 0 || len(got) != len(c.want) {
			t.Fatalf("upstream %s ran %v (%d requests carried the gw key), want %v", c.u.URL, got, leaks, c.want)
		}
		for k, w := range c.want {
			if got[k] != w {
				t.Fatalf("upstream %s ran %v, want %v", c.u.URL, got, c.want)
			}
		}
	}
	if got := issued.Load(); got < 1 || got > 2 {
		t.Fatalf("the OAuth token endpoint issued %d tokens: gw should fetch one and reuse it", got)
	}

	// One usage event per call: model mcp/<server>/<tool>, cost = price
	// (nothing for the call the upstream never answered), and one audit
	// row per event, without the arguments.
	type key struct{ model, status, cost string }
	want := map[key]int{
		{"mcp/tools/echo", "ok", "0.001"}:     2*n + timed,
		{"mcp/tools/add", "ok", "0.002"}:      n,
		{"mcp/tools/fail", "error", "0.0005"}: n,
		{"mcp/tools/slow", "error", "0"}:      n,
		{"mcp/secured/echo", "ok", "0.01"}:    n,
		{"mcp/oauth/echo", "ok", "0"}:         n,
	}
	total := 0
	for _, c := range want {
		total += c
	}
	var events []wire.UsageEvent
	waitFor(t, "the MCP usage events", func() bool {
		events = mcpUsage(t, srv.URL, boot.ManagementKey.Token)
		return len(events) >= total
	})
	got := map[key]int{}
	for _, ev := range events {
		nano, err := catalog.ParseNanoUSD(ev.CostUSD)
		if err != nil {
			t.Fatal(err)
		}
		cost := strings.TrimRight(strings.TrimRight(catalog.FormatNanoUSD(nano), "0"), ".")
		if cost == "" {
			cost = "0"
		}
		if ev.Provider != "mcp" || ev.UsageSource != "upstream" || ev.InferenceKeyID == nil || ev.InferenceKeyID.String() != ik.ID.String() {
			t.Fatalf("event: %+v", ev)
		}
		got[key{ev.Model, ev.Status, cost}]++
	}
	if len(events) != total || len(got) != len(want) {
		t.Fatalf("usage events %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Fatalf("usage events %v, want %v", got, want)
		}
	}
	var rows []wire.AuditEvent
	waitFor(t, "the MCP audit rows", func() bool {
		rows = mcpAudit(t, owner)
		return len(rows) >= total
	})
	byTarget := map[string]int{}
	for _, a := range rows {
		if a.Target.Type != "mcp_tool" || a.Details["status"] == nil || a.Details["duration_ms"] == nil {
			t.Fatalf("audit row: %+v", a)
		}
		if _, ok := a.Details["arguments"]; ok {
			t.Fatalf("audit row with arguments while mcp_audit_arguments is off: %+v", a)
		}
		byTarget[a.Target.ID]++
	}
	if len(rows) != total || byTarget["tools/echo"] != 2*n+timed || byTarget["tools/slow"] != n || byTarget["oauth/echo"] != n {
		t.Fatalf("audit rows by target %v (%d), want %d", byTarget, len(rows), total)
	}
}
