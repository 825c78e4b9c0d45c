package mcpgw_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gw-gateway/gw/server/mcpgw"
)

// wireLog counts what an upstream was sent: requests by method, those
// carrying a session, stateless ones (the 2026-07-28 headers and _meta).
type wireLog struct {
	mu        sync.Mutex
	methods   map[string]int
	sessioned int
	stateless int
}

func (l *wireLog) note(r *http.Request, body []byte) {
	var m struct {
		Method string `json:"method"`
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &m)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.methods == nil {
		l.methods = map[string]int{}
	}
	if r.Method == http.MethodPost {
		l.methods[m.Method]++
	} else {
		l.methods[r.Method]++
	}
	if r.Header.Get("Mcp-Session-Id") != "" {
		l.sessioned++
	}
	if r.Header.Get("MCP-Protocol-Version") == mcpgw.V20260728 && r.Header.Get("Mcp-Method") == m.Method &&
		m.Params.Meta["io.modelcontextprotocol/protocolVersion"] == mcpgw.V20260728 {
		l.stateless++
	}
}

func (l *wireLog) count(method string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.methods[method]
}

func (l *wireLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.methods, l.sessioned, l.stateless = nil, 0, 0
}

// logged wraps h so every request is noted in l first.
func logged(l *wireLog, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		l.note(r, body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		h.ServeHTTP(w, r)
	})
}

// statelessUpstream is a minimal MCP server that speaks only 2026-07-28,
// as that revision's Streamable HTTP transport says: no initialize (a
// request without the version in _meta is refused with
// UnsupportedProtocolVersionError, -32022, naming the versions it takes),
// no session (a request with an Mcp-Session-Id is a 400), every request
// carrying the MCP-Protocol-Version header, Mcp-Method (and Mcp-Name for
// tools/call) matching the body, and _meta's protocolVersion and
// clientCapabilities; server/discover; results with resultType. One tool,
// echo.
func statelessUpstream(t *testing.T, l *wireLog) *httptest.Server {
	t.Helper()
	h := func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Meta      map[string]json.RawMessage `json:"_meta"`
				Name      string                     `json:"name"`
				Arguments map[string]any             `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &m) != nil {
			http.Error(w, "not JSON", http.StatusBadRequest)
			return
		}
		answer := func(v any) {
			w.Header().Set("Content-Type", "application/json")
			b, _ := json.Marshal(v)
			_, _ = w.Write(b)
		}
		fail := func(code int, msg string, data any) {
			e := map[string]any{"code": code, "message": msg}
			if data != nil {
				e["data"] = data
			}
			answer(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": e})
		}
		if len(m.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var version string
		_ = json.Unmarshal(m.Params.Meta["io.modelcontextprotocol/protocolVersion"], &version)
		if version != mcpgw.V20260728 {
			fail(-32022, "unsupported protocol version", map[string]any{"supported": []string{mcpgw.V20260728}, "requested": version})
			return
		}
		switch {
		case r.Header.Get("Mcp-Session-Id") != "":
			http.Error(w, "sessions are not part of 2026-07-28", http.StatusBadRequest)
			return
		case r.Header.Get("MCP-Protocol-Version") != version:
			http.Error(w, "MCP-Protocol-Version header missing or not _meta's", http.StatusBadRequest)
			return
		case r.Header.Get("Mcp-Method") != m.Method:
			http.Error(w, "Mcp-Method header mismatch", http.StatusBadRequest)
			return
		case m.Method == "tools/call" && r.Header.Get("Mcp-Name") != m.Params.Name:
			http.Error(w, "Mcp-Name header mismatch", http.StatusBadRequest)
			return
		case len(m.Params.Meta["io.modelcontextprotocol/clientCapabilities"]) == 0:
			fail(-32602, "missing _meta clientCapabilities", nil)
			return
		}
		switch m.Method {
		case "server/discover":
			answer(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"resultType": "complete",
				"supportedVersions": []string{mcpgw.V20260728}, "capabilities": map[string]any{"tools": map[string]any{}},
				"_meta": map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "stateless", "version": "1"}}}})
		case "tools/list":
			answer(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"resultType": "complete",
				"tools": []any{map[string]any{"name": "echo", "inputSchema": map[string]any{"type": "object"}}}}})
		case "tools/call":
			if m.Params.Name != "echo" {
				fail(-32602, "unknown tool", nil)
				return
			}
			answer(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"resultType": "complete",
				"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("stateless echo: %v", m.Params.Arguments["text"])}}}})
		default:
			fail(-32601, "method not found: "+m.Method, nil)
		}
	}
	srv := httptest.NewServer(logged(l, http.HandlerFunc(h)))
	t.Cleanup(srv.Close)
	return srv
}

// sdkUpstream is a Go SDK server speaking the given versions (all the
// SDK's when none), its handler replaceable (a restart that forgets every
// session). The SDK serves 2026-07-28 only with a stateless handler.
type sdkUpstream struct {
	*httptest.Server
	log     wireLog
	mu      sync.Mutex
	handler http.Handler
	restart func()
}

func newSDKUpstream(t *testing.T, stateless bool, versions ...string) *sdkUpstream {
	t.Helper()
	u := &sdkUpstream{}
	u.restart = func() {
		s := mcp.NewServer(&mcp.Implementation{Name: "sdk", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: versions})
		mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
		u.mu.Lock()
		u.handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: stateless})
		u.mu.Unlock()
	}
	u.restart()
	u.Server = httptest.NewServer(logged(&u.log, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		h := u.handler
		u.mu.Unlock()
		h.ServeHTTP(w, r)
	})))
	t.Cleanup(u.Close)
	return u
}

// multiKeyGateway serves g to any of the bearers (the data plane's check).
func multiKeyGateway(t *testing.T, g *guard, bearers ...string) *httptest.Server {
	t.Helper()
	gw := mcpgw.New(mcpgw.Options{HTTP: &http.Client{}, Timeout: 5 * time.Second})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		for _, b := range bearers {
			if token == b {
				single := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/mcp"), "/")
				gw.Serve(w, r, nil, g, single, token)
				return
			}
		}
		mcpgw.WriteError(w, http.StatusUnauthorized, mcpgw.CodeInvalidRequest, "missing key")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func connectAs(t *testing.T, url, token, version string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearerTransport{token}}, DisableStandaloneSSE: true, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s with %s: %v", url, version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// A caller on any version is served whatever its upstreams speak: gw
// asks each upstream once (server/discover) and speaks 2026-07-28
// statelessly to those that take it — the minimal stateless-only server,
// a Go SDK server restricted to 2026-07-28, a Go SDK server of every
// version — and opens sessions only with those that do not (a Go SDK
// server restricted to 2025-11-25 and 2025-06-18).
func TestGatewayUpstreamVersions(t *testing.T) {
	var minimal wireLog
	stateless := statelessUpstream(t, &minimal)
	only2026 := newSDKUpstream(t, true, mcpgw.V20260728)
	every := newSDKUpstream(t, true)
	legacy := newSDKUpstream(t, false, mcpgw.V20251125, mcpgw.V20250618)
	g := &guard{servers: []*mcpgw.Upstream{
		{ID: "1", Name: "minimal", URL: stateless.URL},
		{ID: "2", Name: "only2026", URL: only2026.URL},
		{ID: "3", Name: "every", URL: every.URL},
		{ID: "4", Name: "legacy", URL: legacy.URL},
	}, policies: allowAll(t, "")}
	srv := multiKeyGateway(t, g, bearer)
	ctx := context.Background()
	for _, version := range []string{mcpgw.V20250618, mcpgw.V20251125, mcpgw.V20260728} {
		t.Run(version, func(t *testing.T) {
			cs := connectAs(t, srv.URL+"/mcp", bearer, version)
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
			if strings.Join(names, " ") != "every__echo legacy__echo minimal__echo only2026__echo" {
				t.Fatalf("tools: %v", names)
			}
			for _, s := range []string{"minimal", "only2026", "every", "legacy"} {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: s + "__echo", Arguments: map[string]any{"text": "hi"}})
				want := "echo: hi"
				if s == "minimal" {
					want = "stateless echo: hi"
				}
				if err != nil || res.IsError || text(res) != want {
					t.Fatalf("%s: %+v %v", s, res, err)
				}
			}
		})
	}
	// Each upstream was asked what it speaks once (the answer is kept),
	// the stateless ones were never sent an initialize nor a session, and
	// every request to them was stateless.
	for _, c := range []struct {
		name string
		log  *wireLog
	}{{"minimal", &minimal}, {"only2026", &only2026.log}, {"every", &every.log}} {
		c.log.mu.Lock()
		methods, sessioned, st := c.log.methods, c.log.sessioned, c.log.stateless
		c.log.mu.Unlock()
		total := 0
		for _, n := range methods {
			total += n
		}
		if methods["server/discover"] != 1 || methods["initialize"] != 0 || sessioned != 0 || st != total ||
			methods["tools/list"] != 3 || methods["tools/call"] != 3 {
			t.Errorf("%s was sent %v, %d with a session, %d of %d stateless", c.name, methods, sessioned, st, total)
		}
	}
	// The session-ful upstream: asked once, then a session per legacy
	// caller (sealed in its Mcp-Session-Id) and one kept for the key,
	// which served the 2026-07-28 caller (no initialize per request).
	if d, i := legacy.log.count("server/discover"), legacy.log.count("initialize"); d != 1 || i != 3 {
		t.Errorf("the legacy upstream: %d discover, %d initialize (want 1 and 3: two callers' sessions, one kept for the key)", d, i)
	}
}

// A 2026-07-28 caller of a session-ful upstream reuses one upstream
// session per key (no initialize per request): many requests, one
// initialize; another key gets a session of its own, never the first
// key's; when the upstream forgets its sessions (a restart) the kept one
// is replaced at the next request, which succeeds.
func TestGatewayStatelessCallerKeepsUpstreamSession(t *testing.T) {
	legacy := newSDKUpstream(t, false, mcpgw.V20251125)
	g := &guard{servers: []*mcpgw.Upstream{{ID: "1", Name: "legacy", URL: legacy.URL}}, policies: allowAll(t, "")}
	other := "sk-gw-other-0123456789"
	srv := multiKeyGateway(t, g, bearer, other)
	ctx := context.Background()
	call := func(cs *mcp.ClientSession, n int) {
		t.Helper()
		for i := range n {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": fmt.Sprint(i)}})
			if err != nil || text(res) != fmt.Sprintf("echo: %d", i) {
				t.Fatalf("call %d: %+v %v", i, res, err)
			}
		}
	}
	a := connectAs(t, srv.URL+"/mcp/legacy", bearer, mcpgw.V20260728)
	if _, err := a.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	call(a, 10)
	if i := legacy.log.count("initialize"); i != 1 {
		t.Fatalf("11 stateless requests of one key opened %d upstream sessions", i)
	}
	b := connectAs(t, srv.URL+"/mcp/legacy", other, mcpgw.V20260728)
	call(b, 3)
	if i := legacy.log.count("initialize"); i != 2 {
		t.Fatalf("a second key: %d upstream sessions in all, want 2", i)
	}
	call(a, 2)
	if i := legacy.log.count("initialize"); i != 2 {
		t.Fatalf("the first key again: %d upstream sessions in all, want 2", i)
	}
	legacy.restart()
	call(a, 2)
	if i := legacy.log.count("initialize"); i != 3 {
		t.Fatalf("after the upstream's restart: %d upstream sessions in all, want 3", i)
	}
}

// A stateless upstream that stops taking 2026-07-28 (redeployed as an
// older server) answers -32022; gw asks it again what it speaks and goes
// on with a session, the call succeeding.
func TestGatewayUpstreamDowngrade(t *testing.T) {
	up := newSDKUpstream(t, true)
	g := &guard{servers: []*mcpgw.Upstream{{ID: "1", Name: "up", URL: up.URL}}, policies: allowAll(t, "")}
	srv := multiKeyGateway(t, g, bearer)
	ctx := context.Background()
	cs := connectAs(t, srv.URL+"/mcp/up", bearer, mcpgw.V20260728)
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "a"}}); err != nil || text(res) != "echo: a" {
		t.Fatalf("before: %+v %v", res, err)
	}
	if up.log.count("initialize") != 0 {
		t.Fatal("a stateless upstream was initialized")
	}
	older := newSDKUpstream(t, false, mcpgw.V20251125)
	up.mu.Lock()
	up.handler = older.Config.Handler
	up.mu.Unlock()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "b"}}); err != nil || text(res) != "echo: b" {
		t.Fatalf("after the downgrade: %+v %v", res, err)
	}
	if older.log.count("server/discover") != 1 || older.log.count("initialize") != 1 || older.log.count("tools/call") != 2 {
		t.Fatalf("the downgraded upstream was sent %v", older.log.methods)
	}
}
