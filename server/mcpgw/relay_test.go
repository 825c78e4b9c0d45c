package mcpgw_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gw-gateway/gw/server/mcpgw"
)

// richUpstream is a Go SDK server of the session-ful versions with what
// a faithful proxy passes through: a tool that reports progress and logs,
// tools that ask the client (sampling, elicitation, roots) in the call's
// stream, a resource, a resource template, a prompt and completions.
func richUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "rich", Version: "1"}, &mcp.ServerOptions{
		SupportedProtocolVersions: []string{mcpgw.V20251125, mcpgw.V20250618},
		SubscribeHandler:          func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler:        func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		CompletionHandler: func(_ context.Context, r *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{r.Params.Argument.Value + "-done"}}}, nil
		}})
	mcp.AddTool(s, &mcp.Tool{Name: "work"}, func(ctx context.Context, r *mcp.CallToolRequest, _ echoIn) (*mcp.CallToolResult, any, error) {
		for _, p := range []float64{1, 2} {
			if err := r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: r.Params.GetProgressToken(), Progress: p, Total: 2}); err != nil {
				return nil, nil, err
			}
		}
		if err := r.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "rich", Data: "working"}); err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "worked"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "ask"}, func(ctx context.Context, r *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		res, err := r.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Text}}}})
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sampled: " + res.Content.(*mcp.TextContent).Text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "elicit"}, func(ctx context.Context, r *mcp.CallToolRequest, _ echoIn) (*mcp.CallToolResult, any, error) {
		res, err := r.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{"type": "object",
			"properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("elicited: %s %v", res.Action, res.Content["name"])}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "roots"}, func(ctx context.Context, r *mcp.CallToolRequest, _ echoIn) (*mcp.CallToolResult, any, error) {
		res, err := r.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "roots: " + res.Roots[0].URI}}}, nil, nil
	})
	s.AddResource(&mcp.Resource{URI: "mem://readme", Name: "readme", MIMEType: "text/plain"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/plain", Text: "read me"}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "mem://notes/{id}", Name: "note"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "note " + r.Params.URI}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + r.Params.Arguments["who"]}}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// caller is a Go SDK client with every client feature: it records the
// progress and log notifications it gets and answers sampling,
// elicitation and roots.
type caller struct {
	mu       sync.Mutex
	progress []string
	logs     []string
}

func (c *caller) connect(t *testing.T, url, version string, features bool) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			c.mu.Lock()
			c.progress = append(c.progress, fmt.Sprintf("%v:%v/%v", r.Params.ProgressToken, r.Params.Progress, r.Params.Total))
			c.mu.Unlock()
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			c.mu.Lock()
			c.logs = append(c.logs, fmt.Sprintf("%s %s %v", r.Params.Level, r.Params.Logger, r.Params.Data))
			c.mu.Unlock()
		},
	}
	if features {
		opts.CreateMessageHandler = func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant",
				Content: &mcp.TextContent{Text: "an answer to " + r.Params.Messages[0].Content.(*mcp.TextContent).Text}}, nil
		}
		opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		}
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "caller", Version: "1"}, opts)
	if features {
		cl.AddRoots(&mcp.Root{URI: "file:///work", Name: "work"})
	}
	cs, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearerTransport{bearer}}, DisableStandaloneSSE: true, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// An upstream's progress and log notifications in a call's stream reach
// the caller (gw's answer becomes an event stream), logging/setLevel is
// forwarded (the Go SDK server logs nothing until a level is set), and
// the call is still recorded once.
func TestGatewayRelaysNotifications(t *testing.T) {
	up := richUpstream(t)
	g := &guard{servers: []*mcpgw.Upstream{{ID: "1", Name: "rich", URL: up.URL}}, policies: allowAll(t, "")}
	gw := gateway(t, g, 10*time.Second)
	// A 2026-07-28 caller (stateless, its calls on the key's kept
	// upstream session, whose level nobody set) gets the progress.
	for _, ep := range []struct{ path, tool, version string }{{"/mcp/rich", "work", mcpgw.V20251125}, {"/mcp", "rich__work", mcpgw.V20250618},
		{"/mcp/rich", "work", mcpgw.V20260728}} {
		c := &caller{}
		cs := c.connect(t, gw.URL+ep.path, ep.version, false)
		wantLogs := []string{"info rich working"}
		if ep.version == mcpgw.V20260728 {
			wantLogs = nil
		} else if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Fatalf("%s: setLevel: %v", ep.path, err)
		}
		params := &mcp.CallToolParams{Name: ep.tool, Arguments: map[string]any{"text": "x"}}
		params.SetProgressToken("tok-1")
		res, err := cs.CallTool(context.Background(), params)
		if err != nil || res.IsError || text(res) != "worked" {
			t.Fatalf("%s: %v %+v %q", ep.path, err, res, text(res))
		}
		// The client handles notifications on its own goroutines: they
		// may land just after the result.
		var progress, logs []string
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			c.mu.Lock()
			progress, logs = c.progress, c.logs
			c.mu.Unlock()
			if len(progress) == 2 && len(logs) == len(wantLogs) {
				break
			}
		}
		slices.Sort(progress)
		if !slices.Equal(progress, []string{"tok-1:1/2", "tok-1:2/2"}) || !slices.Equal(logs, wantLogs) {
			t.Fatalf("%s: progress %q, logs %q", ep.path, progress, logs)
		}
		if got := g.taken(); !slices.Equal(got, []string{"rich/work:ok:0"}) {
			t.Fatalf("%s: recorded %q", ep.path, got)
		}
	}
}

// Sampling, elicitation and roots requests an upstream sends in a call's
// stream reach a caller that declared the capabilities, and the caller's
// answers go back to the upstream session that asked, with its own id,
// even when they reach another replica (a second Gateway: no state is
// shared, the relayed id carries it). A caller without the capabilities
// gets the upstream's failure at once.
func TestGatewayRelaysServerRequests(t *testing.T) {
	up := richUpstream(t)
	g := &guard{servers: []*mcpgw.Upstream{{ID: "1", Name: "rich", URL: up.URL}}, policies: allowAll(t, "")}
	gwA := mcpgw.New(mcpgw.Options{HTTP: &http.Client{}, Timeout: 10 * time.Second})
	gwB := mcpgw.New(mcpgw.Options{HTTP: &http.Client{}, Timeout: 10 * time.Second})
	var toB sync.WaitGroup
	var answersAtB int
	var mu sync.Mutex
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		single := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/mcp"), "/")
		// Responses (no method) go to replica B, everything else to A.
		if !bytes.Contains(body, []byte(`"method"`)) {
			toB.Add(1)
			defer toB.Done()
			mu.Lock()
			answersAtB++
			mu.Unlock()
			gwB.Serve(w, r, body, g, single, bearer)
			return
		}
		gwA.Serve(w, r, body, g, single, bearer)
	}))
	t.Cleanup(front.Close)
	for _, ep := range []struct{ path, prefix string }{{"/mcp/rich", ""}, {"/mcp", "rich__"}} {
		cs := (&caller{}).connect(t, front.URL+ep.path, mcpgw.V20251125, true)
		for tool, want := range map[string]string{"ask": "sampled: an answer to hi", "elicit": "elicited: accept Ada", "roots": "roots: file:///work"} {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: ep.prefix + tool, Arguments: map[string]any{"text": "hi"}})
			if err != nil || res.IsError || text(res) != want {
				t.Fatalf("%s %s: %v %q", ep.path, tool, err, text(res))
			}
		}
		if got := g.taken(); len(got) != 3 {
			t.Fatalf("%s: recorded %q", ep.path, got)
		}
	}
	toB.Wait()
	if answersAtB != 6 {
		t.Fatalf("replica B relayed %d answers, want 6", answersAtB)
	}
	// Without the capabilities: refused at once, the call ends.
	cs := (&caller{}).connect(t, front.URL+"/mcp/rich", mcpgw.V20251125, false)
	start := time.Now()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"text": "hi"}})
	if err == nil && !res.IsError || time.Since(start) > 5*time.Second {
		t.Fatalf("a caller without sampling got %v %+v after %s", err, res, time.Since(start))
	}
	// An answer whose id gw did not seal for this key is refused.
	req, _ := http.NewRequest(http.MethodPost, front.URL+"/mcp/rich",
		strings.NewReader(`{"jsonrpc":"2.0","id":"gwmcpr1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","result":{}}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: bearerTransport{bearer}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a forged relayed id: HTTP %d", resp.StatusCode)
	}
}

// Resources, prompts and completion on /mcp/{server}, prompts on the
// aggregated endpoint as <server>__<prompt>; each read, get and
// completion recorded as a $0 call; a key that may see none of the
// server's tools reaches none of them; subscriptions are not served.
func TestGatewayResourcesPromptsCompletion(t *testing.T) {
	up := richUpstream(t)
	g := &guard{servers: []*mcpgw.Upstream{{ID: "1", Name: "rich", URL: up.URL}}, policies: allowAll(t, "")}
	gw := gateway(t, g, 10*time.Second)
	ctx := context.Background()
	cs := connect(t, gw.URL+"/mcp/rich", mcpgw.V20251125)
	if init := cs.InitializeResult(); init.Capabilities.Resources == nil || init.Capabilities.Prompts == nil ||
		init.Capabilities.Completions == nil || init.Capabilities.Logging == nil || !init.Capabilities.Resources.Subscribe {
		t.Fatalf("capabilities %+v", init.Capabilities)
	}
	rl, err := cs.ListResources(ctx, nil)
	if err != nil || len(rl.Resources) != 1 || rl.Resources[0].URI != "mem://readme" {
		t.Fatalf("resources/list: %v %+v", err, rl)
	}
	tl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tl.ResourceTemplates) != 1 || tl.ResourceTemplates[0].URITemplate != "mem://notes/{id}" {
		t.Fatalf("resources/templates/list: %v %+v", err, tl)
	}
	for uri, want := range map[string]string{"mem://readme": "read me", "mem://notes/7": "note mem://notes/7"} {
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != want {
			t.Fatalf("resources/read %s: %v %+v", uri, err, rr)
		}
	}
	pl, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(pl.Prompts) != 1 || pl.Prompts[0].Name != "greet" {
		t.Fatalf("prompts/list: %v %+v", err, pl)
	}
	pg, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "Ada"}})
	if err != nil || pg.Messages[0].Content.(*mcp.TextContent).Text != "hello Ada" {
		t.Fatalf("prompts/get: %v %+v", err, pg)
	}
	cr, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"},
		Argument: mcp.CompleteParamsArgument{Name: "who", Value: "A"}})
	if err != nil || !slices.Equal(cr.Completion.Values, []string{"A-done"}) {
		t.Fatalf("completion/complete: %v %+v", err, cr)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://readme"}); err != nil {
		t.Fatalf("resources/subscribe: %v", err)
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "mem://readme"}); err != nil {
		t.Fatalf("resources/unsubscribe: %v", err)
	}
	want := []string{"rich/resources/read:ok:0", "rich/resources/read:ok:0", "rich/prompts/get:ok:0", "rich/completion/complete:ok:0"}
	if got := g.taken(); !slices.Equal(got, want) {
		t.Fatalf("recorded %q, want %q", got, want)
	}

	// The aggregated endpoint: prompts named <server>__<prompt>, no
	// resources.
	agg := connect(t, gw.URL+"/mcp", mcpgw.V20251125)
	pl, err = agg.ListPrompts(ctx, nil)
	if err != nil || len(pl.Prompts) != 1 || pl.Prompts[0].Name != "rich__greet" {
		t.Fatalf("aggregated prompts/list: %v %+v", err, pl)
	}
	pg, err = agg.GetPrompt(ctx, &mcp.GetPromptParams{Name: "rich__greet", Arguments: map[string]string{"who": "Bo"}})
	if err != nil || pg.Messages[0].Content.(*mcp.TextContent).Text != "hello Bo" {
		t.Fatalf("aggregated prompts/get: %v %+v", err, pg)
	}
	cr, err = agg.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "rich__greet"},
		Argument: mcp.CompleteParamsArgument{Name: "who", Value: "B"}})
	if err != nil || !slices.Equal(cr.Completion.Values, []string{"B-done"}) {
		t.Fatalf("aggregated completion/complete: %v %+v", err, cr)
	}
	if rl, err := agg.ListResources(ctx, nil); err != nil || len(rl.Resources) != 0 {
		t.Fatalf("aggregated resources/list: %v %+v", err, rl)
	}
	if _, err := agg.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mem://readme"}); err == nil {
		t.Fatal("aggregated resources/read answered")
	}
	if got := g.taken(); !slices.Equal(got, []string{"rich/prompts/get:ok:0", "rich/completion/complete:ok:0"}) {
		t.Fatalf("aggregated: recorded %q", got)
	}

	// A key whose policies show it none of the server's tools reaches
	// none of its resources or prompts; a read is recorded denied.
	g.policies = nil
	denied := connect(t, gw.URL+"/mcp/rich", mcpgw.V20251125)
	if _, err := denied.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mem://readme"}); err == nil || !strings.Contains(err.Error(), "not reachable") {
		t.Fatalf("denied resources/read: %v", err)
	}
	if _, err := denied.ListPrompts(ctx, nil); err == nil {
		t.Fatal("denied prompts/list answered")
	}
	if pl, err := (connect(t, gw.URL+"/mcp", mcpgw.V20251125)).ListPrompts(ctx, nil); err != nil || len(pl.Prompts) != 0 {
		t.Fatalf("denied aggregated prompts/list: %v %+v", err, pl)
	}
	if got := g.taken(); !slices.Equal(got, []string{"rich/resources/read:denied:0"}) {
		t.Fatalf("denied: recorded %q", got)
	}
}

// Inside a session any session-ful version gw serves is taken in the
// MCP-Protocol-Version header; one gw does not serve is 400.
func TestGatewaySessionVersionHeader(t *testing.T) {
	up := richUpstream(t)
	g := &guard{servers: []*mcpgw.Upstream{{ID: "1", Name: "rich", URL: up.URL}}, policies: allowAll(t, "")}
	gw := gateway(t, g, 10*time.Second)
	post := func(sid, version, body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, gw.URL+"/mcp/rich", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		if version != "" {
			req.Header.Set("MCP-Protocol-Version", version)
		}
		resp, err := (&http.Client{Transport: bearerTransport{bearer}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	init := post("", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	sid := init.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("no session")
	}
	for version, want := range map[string]int{"": 200, mcpgw.V20251125: 200, mcpgw.V20250618: 200, "2025-03-26": 400, "garbage": 400} {
		if got := post(sid, version, `{"jsonrpc":"2.0","id":2,"method":"ping"}`).StatusCode; got != want {
			t.Errorf("MCP-Protocol-Version %q in a 2025-11-25 session: HTTP %d, want %d", version, got, want)
		}
	}
}

// A session-ful caller's own stream (its GET) carries what the upstream
// sends outside any call on the upstream session the caller's session
// holds: an elicitation request (answered by the caller, the answer
// relayed back) and a subscribed resource's update. A stateless caller
// gets 405, a GET without a session 400.
func TestGatewayCallerStream(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "pushy", Version: "1"}, &mcp.ServerOptions{
		SupportedProtocolVersions: []string{mcpgw.V20251125},
		SubscribeHandler:          func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler:        func(context.Context, *mcp.UnsubscribeRequest) error { return nil }})
	elicited := make(chan string, 1)
	mcp.AddTool(s, &mcp.Tool{Name: "later"}, func(_ context.Context, r *mcp.CallToolRequest, _ echoIn) (*mcp.CallToolResult, any, error) {
		// Asked after the call, outside it: on the session's own stream.
		go func() {
			time.Sleep(50 * time.Millisecond)
			res, err := r.Session.Elicit(context.Background(), &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{"type": "object",
				"properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				elicited <- "error: " + err.Error()
				return
			}
			elicited <- fmt.Sprintf("%s %v", res.Action, res.Content["name"])
		}()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "later"}}}, nil, nil
	})
	s.AddResource(&mcp.Resource{URI: "mem://clock", Name: "clock"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "now"}}}, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	g := &guard{servers: []*mcpgw.Upstream{{ID: "1", Name: "pushy", URL: up.URL}}, policies: allowAll(t, "")}
	gw := gateway(t, g, 10*time.Second)

	updated := make(chan string, 64)
	cl := mcp.NewClient(&mcp.Implementation{Name: "caller", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
	})
	ctx := context.Background()
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.URL + "/mcp/pushy",
		HTTPClient: &http.Client{Transport: bearerTransport{bearer}}, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: mcpgw.V20251125})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://clock"}); err != nil {
		t.Fatal(err)
	}
	// The caller's GET opens on its own: push until the upstream has the
	// session's stream.
	deadline := time.Now().Add(5 * time.Second)
	for got := false; !got; {
		if err := s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "mem://clock"}); err != nil {
			t.Fatal(err)
		}
		select {
		case uri := <-updated:
			if uri != "mem://clock" {
				t.Fatalf("updated %q", uri)
			}
			got = true
		case <-time.After(100 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("no resource update reached the caller")
			}
		}
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "later", Arguments: map[string]any{"text": "x"}}); err != nil || text(res) != "later" {
		t.Fatalf("later: %v %+v", err, res)
	}
	select {
	case got := <-elicited:
		if got != "accept Ada" {
			t.Fatalf("elicited %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the elicitation outside the call was not answered")
	}

	get := func(path, version string) int {
		req, _ := http.NewRequest(http.MethodGet, gw.URL+path, nil)
		req.Header.Set("Accept", "text/event-stream")
		if version != "" {
			req.Header.Set("MCP-Protocol-Version", version)
		}
		resp, err := (&http.Client{Transport: bearerTransport{bearer}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := get("/mcp/pushy", mcpgw.V20260728); got != http.StatusMethodNotAllowed {
		t.Fatalf("a stateless GET: HTTP %d", got)
	}
	if got := get("/mcp/pushy", ""); got != http.StatusBadRequest {
		t.Fatalf("a GET without a session: HTTP %d", got)
	}
}

// Calls of one caller's session run at once on the one upstream session
// its session holds: each of gw's upstream requests has an id of its own
// (a server refuses an id already in flight).
func TestGatewayConcurrentCallsOnOneSession(t *testing.T) {
	up := upstream(t, nil)
	g := &guard{servers: []*mcpgw.Upstream{{ID: "1", Name: "up", URL: up.URL}}, policies: allowAll(t, "")}
	gw := gateway(t, g, 10*time.Second)
	cs := connect(t, gw.URL+"/mcp/up", mcpgw.V20251125)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": fmt.Sprint(i)}})
			if err == nil && text(res) != fmt.Sprintf("echo: %d", i) {
				err = fmt.Errorf("call %d answered %q", i, text(res))
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
