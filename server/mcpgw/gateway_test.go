package mcpgw_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gw-gateway/gw/server/mcpgw"
	"github.com/gw-gateway/gw/server/toolpolicy"
)

type echoIn struct {
	Text string `json:"text"`
}

type sumOut struct {
	Sum int `json:"sum"`
}

type sumIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

// upstream is a real MCP server built with the Go SDK, on 127.0.0.1:
// a text tool, a structured one, one that fails, a slow one, and a
// secret tool; check, when set, vets every request (its auth).
func upstream(t testing.TB, check func(r *http.Request) bool) *httptest.Server {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echoes"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sum"}, func(_ context.Context, _ *mcp.CallToolRequest, in sumIn) (*mcp.CallToolResult, sumOut, error) {
		return nil, sumOut{Sum: in.A + in.B}, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "fail"}, func(_ context.Context, _ *mcp.CallToolRequest, _ echoIn) (*mcp.CallToolResult, any, error) {
		return nil, nil, errors.New("the disk is on fire")
	})
	mcp.AddTool(s, &mcp.Tool{Name: "slow"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ echoIn) (*mcp.CallToolResult, any, error) {
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "secret_tool"}, func(_ context.Context, _ *mcp.CallToolRequest, _ echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "secret"}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Caller-Leak") != "" || strings.Contains(r.Header.Get("Authorization"), "sk-gw-") {
			t.Errorf("the caller's credential reached the upstream")
		}
		if check != nil && !check(r) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// guard is a data plane of its own: servers, tool policies and a record
// of every admitted, finished and refused call.
type guard struct {
	servers  []*mcpgw.Upstream
	policies []toolpolicy.Policy
	allow    bool
	refuse   string

	mu       sync.Mutex
	outcomes []string
	ops      []mcpgw.Operation
}

func (g *guard) Servers() []*mcpgw.Upstream { return g.servers }
func (g *guard) Decide(phase, server, tool string, args any) toolpolicy.Decision {
	return toolpolicy.Decide(g.policies, toolpolicy.Request{KeyID: "k", Phase: phase, Server: server, Tool: tool, Arguments: args}, g.allow)
}
func (g *guard) Admit(_ context.Context, c mcpgw.Call) (func(mcpgw.Outcome), error) {
	if g.refuse != "" {
		g.record(c, "denied:budget", 0)
		return nil, errors.New(g.refuse)
	}
	return func(o mcpgw.Outcome) {
		price := int64(0)
		if o.Delivered {
			price = c.PriceNano
		}
		g.record(c, o.Status, price)
	}, nil
}
func (g *guard) Refused(_ context.Context, c mcpgw.Call, o mcpgw.Outcome) { g.record(c, "denied", 0) }
func (g *guard) Observe(op mcpgw.Operation) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ops = append(g.ops, op)
}
func (g *guard) record(c mcpgw.Call, status string, price int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.outcomes = append(g.outcomes, fmt.Sprintf("%s/%s:%s:%d", c.Server, c.Tool, status, price))
}
func (g *guard) taken() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.outcomes
	g.outcomes = nil
	return out
}

const bearer = "sk-gw-test-0123456789"

// gateway serves g behind /mcp and /mcp/{server}, with the bearer check
// a data plane makes.
func gateway(t testing.TB, g *guard, timeout time.Duration) *httptest.Server {
	t.Helper()
	gw := mcpgw.New(mcpgw.Options{HTTP: &http.Client{}, Timeout: timeout})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+bearer {
			mcpgw.WriteError(w, http.StatusUnauthorized, mcpgw.CodeInvalidRequest, "missing key")
			return
		}
		single := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/mcp"), "/")
		gw.Serve(w, r, nil, g, single, bearer)
	}))
	t.Cleanup(srv.Close)
	return srv
}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	r.Header.Set("X-Caller-Leak", "")
	return http.DefaultTransport.RoundTrip(r)
}

func connect(t *testing.T, url, version string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearerTransport{bearer}}, DisableStandaloneSSE: true, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s with %s: %v", url, version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func allowAll(t *testing.T, extra string) []toolpolicy.Policy {
	t.Helper()
	d, err := toolpolicy.ParseDefinitionJSON([]byte(`{"target":{"kind":"workspace"},"rules":[
		{"match":{},"phase":"list","action":{"kind":"allow"}},
		{"match":{},"phase":"call","action":{"kind":"allow"}}` + extra + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	return []toolpolicy.Policy{{Name: "all", Definition: d}}
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// The Go SDK's client, on every protocol version it speaks, through gw to
// Go SDK servers: one with no auth, one needing a header, one needing
// OAuth client credentials from a token endpoint; tools listed as
// <server>__<tool> (or as they are on /mcp/{server}), text, structured and
// error results, a slow tool cut at the timeout, list and call rules with
// arguments, a budget refusal, and each call's outcome recorded once.
func TestGatewayWithGoSDK(t *testing.T) {
	plain := upstream(t, nil)
	header := upstream(t, func(r *http.Request) bool { return r.Header.Get("X-Api-Key") == "up-secret" })
	var tokensIssued atomic.Int32
	tokenEndpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if r.Form.Get("grant_type") != "client_credentials" || r.Form.Get("client_id") != "gw" || r.Form.Get("client_secret") != "cs" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		tokensIssued.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"tok-1","token_type":"Bearer","expires_in":3600}`))
	}))
	t.Cleanup(tokenEndpoint.Close)
	oauth := upstream(t, func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer tok-1" })

	g := &guard{servers: []*mcpgw.Upstream{
		{ID: "1", Name: "plain", URL: plain.URL, Prices: toolpolicy.Prices{"echo": "0.002", "*": "0.001"}},
		{ID: "2", Name: "header", URL: header.URL, Auth: mcpgw.Auth{Kind: toolpolicy.AuthHeader, Header: "X-Api-Key", Secret: "up-secret"},
			Filter: toolpolicy.Filter{Deny: []string{"secret_*"}}},
		{ID: "3", Name: "oauth", URL: oauth.URL, Auth: mcpgw.Auth{Kind: toolpolicy.AuthOAuthClientCreds, TokenURL: tokenEndpoint.URL,
			ClientID: "gw", ClientSecret: "cs"}},
	}, policies: allowAll(t, `,
		{"match":{"servers":["plain"],"tools":["secret_tool"]},"phase":"list","action":{"kind":"deny"}},
		{"match":{"tools":["echo"],"arguments":{"/text":{"prefix":"rm "}}},"phase":"call","action":{"kind":"deny","message":"no rm"}}`)}
	srv := gateway(t, g, 2*time.Second)
	ctx := context.Background()

	for _, version := range []string{mcpgw.V20250618, mcpgw.V20251125, mcpgw.V20260728} {
		t.Run(version, func(t *testing.T) {
			cs := connect(t, srv.URL+"/mcp", version)
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Fatalf("negotiated %s", got)
			}
			list, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range list.Tools {
				names = append(names, tl.Name)
			}
			want := "header__echo header__fail header__slow header__sum oauth__echo oauth__fail oauth__secret_tool oauth__slow oauth__sum plain__echo plain__fail plain__slow plain__sum"
			if strings.Join(names, " ") != want {
				t.Fatalf("tools: %v", names)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "plain__echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil || res.IsError || text(res) != "echo: hi" {
				t.Fatalf("echo: %+v %v", res, err)
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "header__sum", Arguments: map[string]any{"a": 2, "b": 3}})
			if err != nil || res.IsError {
				t.Fatalf("sum: %+v %v", res, err)
			}
			if b, _ := json.Marshal(res.StructuredContent); string(b) != `{"sum":5}` {
				t.Fatalf("structured: %s", b)
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "oauth__fail", Arguments: map[string]any{"text": "x"}})
			if err != nil || !res.IsError || !strings.Contains(text(res), "the disk is on fire") {
				t.Fatalf("fail: %q %v", text(res), err)
			}
			_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "plain__echo", Arguments: map[string]any{"text": "rm -rf /"}})
			if err == nil || !strings.Contains(err.Error(), "no rm") {
				t.Fatalf("a denied call: %v", err)
			}
			_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "header__secret_tool", Arguments: map[string]any{"text": "x"}})
			if err == nil || !strings.Contains(err.Error(), "tool filter") {
				t.Fatalf("a filtered tool: %v", err)
			}
			_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "plain__slow", Arguments: map[string]any{"text": "x"}})
			if err == nil || !strings.Contains(err.Error(), "did not answer in time") {
				t.Fatalf("a slow tool: %v", err)
			}
			got := strings.Join(g.taken(), " ")
			wantOutcomes := "plain/echo:ok:2000000 header/sum:ok:0 oauth/fail:error:0 plain/echo:denied:0 header/secret_tool:denied:0 plain/slow:error:0"
			if got != wantOutcomes {
				t.Fatalf("outcomes:\n got %s\nwant %s", got, wantOutcomes)
			}
		})
	}
	if n := tokensIssued.Load(); n != 1 {
		t.Fatalf("the client-credentials token is cached: %d issued", n)
	}

	// One server's endpoint: the upstream's own names.
	cs := connect(t, srv.URL+"/mcp/plain", mcpgw.V20251125)
	list, err := cs.ListTools(ctx, nil)
	if err != nil || len(list.Tools) != 4 || list.Tools[0].Name != "echo" {
		t.Fatalf("single-server list: %+v %v", list, err)
	}
	g.refuse = "budget \"tools\" has no room"
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	if err == nil || !strings.Contains(err.Error(), "has no room") {
		t.Fatalf("a budget refusal: %v", err)
	}
	g.refuse = ""
}

// Deny by default: with no tool policy a key sees and calls nothing;
// mcp_default "allow" opens every tool.
func TestGatewayDenyByDefault(t *testing.T) {
	plain := upstream(t, nil)
	g := &guard{servers: []*mcpgw.Upstream{{ID: "1", Name: "plain", URL: plain.URL}}}
	srv := gateway(t, g, 5*time.Second)
	ctx := context.Background()
	cs := connect(t, srv.URL+"/mcp", mcpgw.V20251125)
	list, err := cs.ListTools(ctx, nil)
	if err != nil || len(list.Tools) != 0 {
		t.Fatalf("deny by default lists nothing: %+v %v", list, err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "plain__echo", Arguments: map[string]any{"text": "x"}}); err == nil ||
		!strings.Contains(err.Error(), "no tool policy allows") {
		t.Fatalf("deny by default calls nothing: %v", err)
	}
	g.allow = true
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "plain__echo", Arguments: map[string]any{"text": "x"}}); err != nil || text(res) != "echo: x" {
		t.Fatalf("mcp_default allow: %+v %v", res, err)
	}
}

// Malformed messages are JSON-RPC errors naming the problem; a session
// sealed for one key does not open for another; an oversized body is
// refused before it is read whole.
func TestGatewayRefusals(t *testing.T) {
	g := &guard{}
	srv := gateway(t, g, time.Second)
	post := func(body string, hdr map[string]string) (int, string) {
		req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+bearer)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, b.String()
	}
	cases := []struct {
		body   string
		hdr    map[string]string
		status int
		want   string
	}{
		{`{not json`, nil, 400, `"code":-32700`},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, nil, 400, "batches are not supported"},
		{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, nil, 400, `jsonrpc member must be`},
		{`{"jsonrpc":"2.0","id":{},"method":"ping"}`, nil, 400, "id must be a string or a number"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil, 400, "no Mcp-Session-Id"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, map[string]string{"Mcp-Session-Id": "gwmcp1.forged"}, 404, "initialize again"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}, 400, "Mcp-Method header"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b"}}`, map[string]string{"MCP-Protocol-Version": "2026-07-28",
			"Mcp-Method": "tools/call", "Mcp-Name": "x__y"}, 400, "Mcp-Name header"},
		{`{"jsonrpc":"2.0","id":1,"method":"nope"}`, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "nope"}, 200, `"code":-32601`},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", mcpgw.DefaultMaxMessage) + `"}}`, nil, 413, "larger than"},
	}
	for _, c := range cases {
		status, body := post(c.body, c.hdr)
		if status != c.status || !strings.Contains(body, c.want) {
			t.Errorf("%.60s: %d %s, want %d ~%q", c.body, status, body, c.status, c.want)
		}
	}
}

// Every answered request but a tools/call (which Admit and Refused
// record) is reported to the guard for telemetry: its method (_OTHER for
// one gw does not serve), the server of /mcp/{server}, the version in
// force, the session (the one initialize answered, for initialize) and
// the JSON-RPC error code when the answer is an error.
func TestGatewayObservesOperations(t *testing.T) {
	up := upstream(t, nil)
	g := &guard{servers: []*mcpgw.Upstream{{ID: "1", Name: "up", URL: up.URL}}, policies: allowAll(t, "")}
	srv := gateway(t, g, 2*time.Second)
	ctx := context.Background()
	cs := connect(t, srv.URL+"/mcp", mcpgw.V20251125)
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": "x"}}); err != nil {
		t.Fatal(err)
	}
	sid := cs.ID()
	post := func(path string, hdr map[string]string, body string) {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+bearer)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	post("/mcp/up", map[string]string{"MCP-Protocol-Version": mcpgw.V20260728, "Mcp-Method": "server/discover"},
		`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	post("/mcp", map[string]string{"Mcp-Session-Id": "gwmcp1.forged"}, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	post("/mcp", map[string]string{"MCP-Protocol-Version": mcpgw.V20260728, "Mcp-Method": "sampling/whatever"},
		`{"jsonrpc":"2.0","id":3,"method":"sampling/whatever","params":{}}`)
	g.mu.Lock()
	ops := g.ops
	g.mu.Unlock()
	var got []string
	for _, op := range ops {
		if op.Duration <= 0 {
			t.Errorf("%s: no duration", op.Method)
		}
		session := "-"
		if op.SessionID == sid {
			session = "session"
		} else if op.SessionID != "" {
			session = "other"
		}
		got = append(got, fmt.Sprintf("%s|%s|%s|%s|%d", op.Method, op.Server, op.Version, session, op.ErrorCode))
	}
	want := []string{"initialize||2025-11-25|session|0", "tools/list||2025-11-25|session|0",
		"server/discover|up|2026-07-28|-|0", "tools/list|||other|-32000", "_OTHER||2026-07-28|-|-32601"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("operations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
