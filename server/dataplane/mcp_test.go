package dataplane_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/fixture"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/server/telemetry"
	"github.com/gw-gateway/gw/server/toolpolicy"
	"github.com/gw-gateway/gw/wire"
)

type mcpEchoIn struct {
	Text string `json:"text"`
}

// mcpUpstream is a Go SDK MCP server on 127.0.0.1 that wants a header.
func mcpUpstream(t *testing.T, header, secret string) *httptest.Server {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in mcpEchoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "fail"}, func(_ context.Context, _ *mcp.CallToolRequest, _ mcpEchoIn) (*mcp.CallToolResult, any, error) {
		return nil, nil, errors.New("broken")
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(header) != secret || strings.Contains(r.Header.Get("Authorization"), "sk-gw-") {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

type bearerRT struct{ token string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func mcpConnect(t *testing.T, url, token, version string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerRT{token}},
		DisableStandaloneSSE: true, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// addMCPServer stores an MCP server as the management API does, its
// secret sealed.
func (e *infEnv) addMCPServer(t *testing.T, ws *uuid.UUID, name, url, header, secret string, prices toolpolicy.Prices) {
	t.Helper()
	_, err := backend.CreateMCPServer(context.Background(), e.st, backend.Actor{Type: "system"}, backend.MCPServerCreate{
		Scope: store.MCPServerScope{OrgID: e.org.ID, WorkspaceID: ws}, Name: name, URL: url, Enabled: true,
		Auth: backend.MCPServerAuth{Kind: toolpolicy.AuthHeader, Header: header, Secret: secret}, Prices: prices,
		Seal: func(s []byte, id uuid.UUID) (string, error) { return e.kr.Seal(s, backend.MCPServerAAD(id)) }})
	if err != nil {
		t.Fatal(err)
	}
	e.secrets = append(e.secrets, secret)
}

func (e *infEnv) toolPolicy(t *testing.T, def string) {
	t.Helper()
	d, err := toolpolicy.ParseDefinitionJSON([]byte(def))
	if err != nil {
		t.Fatal(err)
	}
	ws, err := e.st.GetWorkspace(context.Background(), e.ws)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := backend.CreateToolPolicy(context.Background(), e.st, backend.Actor{Type: "system"}, backend.ToolPolicyCreate{Workspace: ws,
		Name: "t-" + uuid.NewString()[:8], Enabled: true, Definition: d}); err != nil {
		t.Fatal(err)
	}
}

// Through the real data plane, on both databases: the Go SDK client
// lists and calls tools with its inference key; each tools/call leaves
// one usage event (endpoint mcp, provider mcp, model mcp/<server>/<tool>,
// the tool's price, ok / error / denied), is charged to the budget rule
// matching all_requests and refused with a JSON-RPC error, nothing sent,
// once the budget has no room; deny by default; a key of another
// organization sees none of these servers; a request without a key gets
// 401 naming the protected resource metadata.
func TestMCPThroughThePlane(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		up := mcpUpstream(t, "X-Up-Key", "up-secret-0123456789")
		e.addMCPServer(t, nil, "up", up.URL, "X-Up-Key", "up-secret-0123456789", toolpolicy.Prices{"echo": "0.002"})
		e.policy(t, budgetRule("0.005", "day", "shared"))
		e.sync(t)
		srv := e.srv // its answers are checked against the OpenAPI document
		ctx := context.Background()

		// Deny by default: no tool policy yet.
		cs := mcpConnect(t, srv.URL+"/inf/v1/mcp", e.token, "2025-11-25")
		if list, err := cs.ListTools(ctx, nil); err != nil || len(list.Tools) != 0 {
			t.Fatalf("deny by default: %+v %v", list, err)
		}
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": "x"}}); err == nil {
			t.Fatal("a call no tool policy allows went through")
		}
		if evs := e.usage.wait(t, 1); evs[0].Status != "denied" || evs[0].Model != "mcp/up/echo" {
			t.Fatalf("denied event: %+v", evs[0])
		}
		e.usage.reset()

		e.toolPolicy(t, `{"target":{"kind":"workspace"},"rules":[{"match":{"servers":["up"]},"phase":"list","action":{"kind":"allow"}},
			{"match":{"servers":["up"]},"phase":"call","action":{"kind":"allow"}}]}`)
		e.sync(t)
		for _, version := range []string{"2025-06-18", "2026-07-28"} {
			cs := mcpConnect(t, srv.URL+"/inf/v1/mcp", e.token, version)
			list, err := cs.ListTools(ctx, nil)
			if err != nil || len(list.Tools) != 2 || list.Tools[0].Name != "up__echo" {
				t.Fatalf("%s list: %+v %v", version, list, err)
			}
		}
		cs = mcpConnect(t, srv.URL+"/inf/v1/mcp/up", e.token, "2026-07-28")
		for i := range 2 {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil || res.IsError {
				t.Fatalf("call %d: %+v %v", i, res, err)
			}
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fail", Arguments: map[string]any{"text": "x"}})
		if err != nil || !res.IsError {
			t.Fatalf("a failing tool: %+v %v", res, err)
		}
		// $0.004 spent of $0.005: a third $0.002 call has no room.
		_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		if err == nil || !strings.Contains(err.Error(), "budget") {
			t.Fatalf("the budget refuses: %v", err)
		}
		evs := e.usage.wait(t, 4)
		want := []struct{ status, cost, model string }{
			{"ok", "0.002", "mcp/up/echo"}, {"ok", "0.002", "mcp/up/echo"}, {"error", "0", "mcp/up/fail"}, {"denied", "0", "mcp/up/echo"}}
		for i, w := range want {
			ev := evs[i]
			if ev.Status != w.status || ev.CostUSD != w.cost || ev.Model != w.model || ev.Provider != "mcp" || ev.Endpoint == nil ||
				*ev.Endpoint != "mcp" || ev.UsageSource != "upstream" || ev.InferenceKeyID == nil || *ev.InferenceKeyID != e.keyID {
				t.Fatalf("event %d: %+v (endpoint %v), want %+v", i, ev, ev.Endpoint, w)
			}
		}

		// Another organization's key reaches none of these servers.
		other := fixture.NewOrg(t, e.st, e.kr, "other")
		ows := other.Workspace("w")
		otoken, _ := other.Key(ows, other.Member(auth.MembershipActive), nil)
		if err := e.refresh.RefreshAll(ctx); err != nil {
			t.Fatal(err)
		}
		ocs := mcpConnect(t, srv.URL+"/inf/v1/mcp", otoken, "2025-11-25")
		if list, err := ocs.ListTools(ctx, nil); err != nil || len(list.Tools) != 0 {
			t.Fatalf("another tenant's list: %+v %v", list, err)
		}
		if _, err := ocs.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": "x"}}); err == nil ||
			!strings.Contains(err.Error(), `no MCP server "up"`) {
			t.Fatalf("another tenant's call: %v", err)
		}
		resp, err := http.Post(srv.URL+"/inf/v1/mcp/up", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized ||
			resp.Header.Get("WWW-Authenticate") != `Bearer resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource/inf/v1/mcp"` {
			t.Fatalf("without a key: %d %v", resp.StatusCode, resp.Header)
		}
		resp, err = http.Get(srv.URL + "/.well-known/oauth-protected-resource/inf/v1/mcp")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("the resource metadata: %v %v", resp, err)
		}
		resp.Body.Close()
	})
}

// A tool call's usage event carries its arguments (for the audit row)
// only while the workspace's mcp_audit_arguments is true: none while it is
// off, the arguments and their size when on, only the size when they are
// larger than wire.MaxToolArgumentsBytes; a refused call's event too.
func TestMCPAuditArgumentsInTheEvent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		up := mcpUpstream(t, "X-Up-Key", "up-secret-0123456789")
		e.addMCPServer(t, nil, "up", up.URL, "X-Up-Key", "up-secret-0123456789", nil)
		e.toolPolicy(t, `{"target":{"kind":"workspace"},"rules":[{"match":{"servers":["up"]},"phase":"call","action":{"kind":"allow"}},
			{"match":{"servers":["up"],"arguments":{"/text":{"equals":"no"}}},"phase":"call","action":{"kind":"deny"}}]}`)
		e.sync(t)
		srv := e.srv // its answers are checked against the OpenAPI document
		ctx := context.Background()
		call := func(text string) wire.UsageEventIn {
			t.Helper()
			cs := mcpConnect(t, srv.URL+"/inf/v1/mcp/up", e.token, "2025-11-25")
			_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
			ev := e.usage.wait(t, 1)[0]
			e.usage.reset()
			return ev
		}
		if ev := call("hi"); ev.ToolArguments != nil || ev.ToolArgumentsBytes != 0 {
			t.Fatalf("setting off, the event carries arguments: %s %d", ev.ToolArguments, ev.ToolArgumentsBytes)
		}
		w, err := e.st.GetWorkspace(ctx, e.ws)
		if err != nil {
			t.Fatal(err)
		}
		on := true
		w.MCPAuditArguments = &on
		if err := e.st.UpdateWorkspace(ctx, w); err != nil {
			t.Fatal(err)
		}
		e.sync(t)
		if ev := call("hi"); string(ev.ToolArguments) != `{"text":"hi"}` || ev.ToolArgumentsBytes != 13 || ev.Status != "ok" {
			t.Fatalf("setting on: %s %d %s", ev.ToolArguments, ev.ToolArgumentsBytes, ev.Status)
		}
		if ev := call("no"); string(ev.ToolArguments) != `{"text":"no"}` || ev.Status != "denied" {
			t.Fatalf("refused call: %s %s", ev.ToolArguments, ev.Status)
		}
		big := strings.Repeat("x", wire.MaxToolArgumentsBytes)
		if ev := call(big); ev.ToolArguments != nil || ev.ToolArgumentsBytes != int64(len(big)+11) {
			t.Fatalf("too large: %d bytes carried, size %d", len(ev.ToolArguments), ev.ToolArgumentsBytes)
		}
	})
}

// Through the real data plane, on both databases: an upstream that speaks
// 2026-07-28 (a stateless Go SDK server) is reached statelessly by
// callers of every version (never sent initialize nor a session), and
// every answered request is timed in mcp_server_operation_duration_seconds
// by method: initialize, tools/list, server/discover and tools/call.
func TestMCPStatelessUpstreamAndOperationsThroughThePlane(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		m := telemetry.NewMetrics("test", "data-plane")
		e := newInfEnv(t, db, func(o *dataplane.Options) { o.Metrics = m })
		s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in mcpEchoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
		var sessioned, initialized atomic.Int32
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Up-Key") != "up-secret-0123456789" {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			if r.Header.Get("Mcp-Session-Id") != "" {
				sessioned.Add(1)
			}
			if r.Header.Get("Mcp-Method") == "" && r.Method == http.MethodPost {
				initialized.Add(1) // a request of the session-ful protocol
			}
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(up.Close)
		e.addMCPServer(t, nil, "up", up.URL, "X-Up-Key", "up-secret-0123456789", nil)
		e.toolPolicy(t, `{"target":{"kind":"workspace"},"rules":[{"match":{"servers":["up"]},"phase":"list","action":{"kind":"allow"}},
			{"match":{"servers":["up"]},"phase":"call","action":{"kind":"allow"}}]}`)
		e.sync(t)
		ctx := context.Background()
		for _, version := range []string{"2025-11-25", "2026-07-28"} {
			cs := mcpConnect(t, e.srv.URL+"/inf/v1/mcp", e.token, version)
			if list, err := cs.ListTools(ctx, nil); err != nil || len(list.Tools) != 1 || list.Tools[0].Name != "up__echo" {
				t.Fatalf("%s list: %+v %v", version, list, err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": version}})
			if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "echo: "+version {
				t.Fatalf("%s call: %+v %v", version, res, err)
			}
		}
		if sessioned.Load() != 0 || initialized.Load() != 0 {
			t.Fatalf("the stateless upstream was sent %d requests with a session, %d of the session-ful protocol", sessioned.Load(), initialized.Load())
		}
		mfs, err := m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]uint64{}
		for _, mf := range mfs {
			if mf.GetName() != "mcp_server_operation_duration_seconds" {
				continue
			}
			for _, mt := range mf.GetMetric() {
				l := map[string]string{}
				for _, lp := range mt.GetLabel() {
					l[lp.GetName()] = lp.GetValue()
				}
				counts[l["mcp_method_name"]+"|"+l["error_type"]] += mt.GetHistogram().GetSampleCount()
			}
		}
		want := map[string]uint64{"initialize|": 1, "server/discover|": 1, "tools/list|": 2, "tools/call|": 2}
		for k, n := range want {
			if counts[k] != n {
				t.Errorf("%s: %d observations, want %d (all: %v)", k, counts[k], n, counts)
			}
		}
	})
}

// Through the real data plane, on both databases: a key reaches a
// server's resources and prompts only when its tool policies show it one
// of the server's tools; each resources/read and prompts/get then leaves
// one $0 usage event (endpoint mcp, model mcp/<server>/<method>) through
// the same admission as a tools/call, and a refused read a denied one.
func TestMCPResourcesAndPromptsThroughThePlane(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
		mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in mcpEchoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
		s.AddResource(&mcp.Resource{URI: "mem://readme", Name: "readme"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "read me"}}}, nil
		})
		s.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello"}}}}, nil
		})
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Up-Key") != "up-secret-0123456789" {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(up.Close)
		e.addMCPServer(t, nil, "up", up.URL, "X-Up-Key", "up-secret-0123456789", nil)
		e.sync(t)
		ctx := context.Background()

		// Deny by default: no tool to see, no resource to read.
		cs := mcpConnect(t, e.srv.URL+"/inf/v1/mcp/up", e.token, "2025-11-25")
		if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mem://readme"}); err == nil || !strings.Contains(err.Error(), "not reachable") {
			t.Fatalf("deny by default: %v", err)
		}
		if evs := e.usage.wait(t, 1); evs[0].Status != "denied" || evs[0].Model != "mcp/up/resources/read" || evs[0].CostUSD != "0" {
			t.Fatalf("denied event: %+v", evs[0])
		}
		e.usage.reset()

		// A list rule showing one tool opens the server's resources and
		// prompts.
		e.toolPolicy(t, `{"target":{"kind":"workspace"},"rules":[{"match":{"servers":["up"],"tools":["echo"]},"phase":"list","action":{"kind":"allow"}}]}`)
		e.sync(t)
		cs = mcpConnect(t, e.srv.URL+"/inf/v1/mcp/up", e.token, "2025-11-25")
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mem://readme"})
		if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "read me" {
			t.Fatalf("resources/read: %+v %v", rr, err)
		}
		pg, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet"})
		if err != nil || len(pg.Messages) != 1 {
			t.Fatalf("prompts/get: %+v %v", pg, err)
		}
		agg := mcpConnect(t, e.srv.URL+"/inf/v1/mcp", e.token, "2025-11-25")
		if pl, err := agg.ListPrompts(ctx, nil); err != nil || len(pl.Prompts) != 1 || pl.Prompts[0].Name != "up__greet" {
			t.Fatalf("aggregated prompts/list: %+v %v", pl, err)
		}
		evs := e.usage.wait(t, 2)
		for i, model := range []string{"mcp/up/resources/read", "mcp/up/prompts/get"} {
			ev := evs[i]
			if ev.Status != "ok" || ev.CostUSD != "0" || ev.Model != model || ev.Provider != "mcp" || ev.Endpoint == nil || *ev.Endpoint != "mcp" ||
				ev.InferenceKeyID == nil || *ev.InferenceKeyID != e.keyID {
				t.Fatalf("event %d: %+v, want %s", i, ev, model)
			}
		}
	})
}

// The transport's other two methods, raw, as the OpenAPI document shows
// them: a session's GET opens its own event stream once gw holds an
// upstream session for it, and DELETE ends the session (204).
func TestMCPSessionStreamAndEnd(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		up := mcpUpstream(t, "X-Up-Key", "up-secret-0123456789")
		e.addMCPServer(t, nil, "up", up.URL, "X-Up-Key", "up-secret-0123456789", nil)
		e.toolPolicy(t, `{"target":{"kind":"workspace"},"rules":[{"match":{"servers":["up"]},"phase":"list","action":{"kind":"allow"}}]}`)
		e.sync(t)
		send := func(method, session, accept, body string) *http.Response {
			t.Helper()
			req, _ := http.NewRequest(method, e.srv.URL+"/inf/v1/mcp/up", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+e.token)
			req.Header.Set("Accept", accept)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
			if body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			if session != "" {
				req.Header.Set("Mcp-Session-Id", session)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		both := "application/json, text/event-stream"
		resp := send("POST", "", both, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		resp.Body.Close()
		session := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != http.StatusOK || session == "" {
			t.Fatalf("initialize: %d, session %q", resp.StatusCode, session)
		}
		resp = send("POST", session, both, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		resp.Body.Close()
		// A list reaches the upstream: gw now holds a session there.
		resp = send("POST", session, both, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("tools/list: %d", resp.StatusCode)
		}
		resp = send("GET", session, "text/event-stream", "")
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("the session's stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		resp.Body.Close() // the caller leaves; gw's listen ends with it
		resp = send("GET", session, "application/json", "")
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotAcceptable {
			t.Fatalf("a GET that takes no event stream: %d", resp.StatusCode)
		}
		// The aggregated endpoint's session opens its stream the same way.
		agg := func(method, session, accept, body string) *http.Response {
			t.Helper()
			req, _ := http.NewRequest(method, e.srv.URL+"/inf/v1/mcp", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+e.token)
			req.Header.Set("Accept", accept)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
			if body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			if session != "" {
				req.Header.Set("Mcp-Session-Id", session)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		resp = agg("POST", "", both, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		resp.Body.Close()
		aggSession := resp.Header.Get("Mcp-Session-Id")
		resp = agg("POST", aggSession, both, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		resp.Body.Close()
		resp = agg("GET", aggSession, "text/event-stream", "")
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the aggregated session's stream: %d", resp.StatusCode)
		}
		resp = send("DELETE", session, both, "")
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE: %d", resp.StatusCode)
		}
	})
}
