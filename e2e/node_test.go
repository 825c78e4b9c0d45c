package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/wire"
)

// TestNodeClients runs e2e/node/clients.mjs, which drives gw serve with the
// openai and @anthropic-ai/sdk npm packages, unchanged: chat completions,
// responses and messages (each whole and streamed) and embeddings, against
// fake OpenAI and Anthropic upstreams. It needs node and the packages
// installed in e2e/node (npm ci there; .ci/run does it): without them it
// is skipped, unless GW_TEST_REQUIRE_NODE is set, as in CI.
func TestNodeClients(t *testing.T) {
	dir, err := filepath.Abs("node")
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	missing := ""
	switch {
	case err != nil:
		missing = "node is not installed"
	default:
		for _, pkg := range []string{"openai", "@anthropic-ai/sdk"} {
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

	ctx := context.Background()
	srv := startServe(t, "GW_DATA_DIR="+t.TempDir(), "GW_BOOTSTRAP_TOKEN=setup_node")
	anon, _ := client.New(client.Options{Server: srv.URL})
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_node", Email: "ops@example.com", Password: "a long passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := client.New(client.Options{Server: srv.URL, Token: boot.ManagementKey.Token})
	reply := providerstest.Reply{Text: "hello from upstream", Usage: providerstest.Usage{Input: 12, Output: 5}}
	oai := providerstest.NewOpenAI(t, "sk-upstream-node-openai")
	oai.SetDefault(reply)
	ant := providerstest.NewAnthropic(t, "sk-upstream-node-anthropic")
	ant.SetDefault(reply)
	for _, c := range []wire.ProviderCredentialCreate{
		{Provider: "openai", Label: "fake", Secret: oai.Key, BaseURL: structuredFake(t, oai, oai.BaseURL())},
		{Provider: "anthropic", Label: "fake", Secret: ant.Key, BaseURL: ant.BaseURL()},
	} {
		if _, err := owner.CreateCredential(ctx, client.WorkspaceScope("default", "default"), c); err != nil {
			t.Fatalf("credential %s: %v", c.Provider, err)
		}
	}
	ik, err := owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "node"})
	if err != nil {
		t.Fatal(err)
	}

	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, node, "clients.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GW_INF_BASE="+srv.URL+"/inf", "GW_INF_KEY="+ik.Token)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node clients.mjs: %v\n%s\ngw serve:\n%s", err, out, srv.logs)
	}
	if !strings.Contains(string(out), `{"ok":true`) {
		t.Fatalf("node clients.mjs printed no summary:\n%s", out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
	// Every request reached the usage report: 2 chat, 2 responses, 1
	// embeddings, 5 messages (one parsed); the two refused keys leave no
	// event.
	waitFor(t, "the Node clients' usage events", func() bool {
		r, err := owner.UsageReport(ctx, "default", client.UsageQuery{Period: "today"})
		return err == nil && r.Totals.Requests == 10
	})
}

// structuredFake stands in front of a providerstest fake and has it answer
// JSON to a request that asks for a json_schema response format, as a
// model told to would.
func structuredFake(t *testing.T, fake interface{ Enqueue(...providerstest.Reply) }, base string) string {
	t.Helper()
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	base = target.Path
	target.Path = ""
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"json_schema"`)) {
			fake.Enqueue(providerstest.Reply{Text: `{"city":"Paris"}`, Usage: providerstest.Usage{Input: 12, Output: 5}})
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + base
}

// TestNodeBudgetRefusalSentOnce runs e2e/node/refusals.mjs (issue 35): a
// request a budget refuses for the period is sent once by every client
// with its default retries — the openai and Anthropic SDKs, the AI SDK
// (Chat and Responses) and LangChain. Before, the refusal was a 429 with
// x-should-retry: false, which the AI SDK retried twice (6 s) whatever the
// header said; now it is a 402. gw records one denied event per request
// and no upstream is called.
func TestNodeBudgetRefusalSentOnce(t *testing.T) {
	_, dir := nodeWith(t, "openai", "@anthropic-ai/sdk", "ai", "@ai-sdk/openai", "@langchain/openai")
	ctx := context.Background()
	srv := startServe(t, "GW_DATA_DIR="+t.TempDir(), "GW_BOOTSTRAP_TOKEN=setup_refusals")
	anon, _ := client.New(client.Options{Server: srv.URL})
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_refusals", Email: "ops@example.com", Password: "a long passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := client.New(client.Options{Server: srv.URL, Token: boot.ManagementKey.Token})
	oai := providerstest.NewOpenAI(t, "sk-upstream-refusals-openai")
	ant := providerstest.NewAnthropic(t, "sk-upstream-refusals-anthropic")
	for _, c := range []wire.ProviderCredentialCreate{
		{Provider: "openai", Label: "fake", Secret: oai.Key, BaseURL: oai.BaseURL()},
		{Provider: "anthropic", Label: "fake", Secret: ant.Key, BaseURL: ant.BaseURL()},
	} {
		if _, err := owner.CreateCredential(ctx, client.WorkspaceScope("default", "default"), c); err != nil {
			t.Fatalf("credential %s: %v", c.Provider, err)
		}
	}
	// A budget of 0: every request is refused for the period.
	def := `{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"all_requests"},` +
		`"action":{"kind":"budget","amount_usd":"0","period":"day","aggregation":"shared"}}]}`
	if _, err := owner.CreatePolicy(ctx, "default", "default", wire.PolicyCreate{Name: "spent", Definition: wire.PolicyDefinition(def)}); err != nil {
		t.Fatal(err)
	}
	ik, err := owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "refused"})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, "node", "refusals.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GW_INF_BASE="+srv.URL+"/inf", "GW_INF_KEY="+ik.Token)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `{"ok":true`) {
		t.Fatalf("node refusals.mjs: %v\n%s\ngw serve:\n%s", err, out, srv.logs)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
	// gw saw each request once: five denied events, no upstream call.
	waitFor(t, "the refused requests' usage events", func() bool {
		r, err := owner.UsageReport(ctx, "default", client.UsageQuery{Period: "today"})
		return err == nil && r.Totals.Requests == 5
	})
	if n := len(oai.Requests()) + len(ant.Requests()); n != 0 {
		t.Fatalf("%d upstream calls for refused requests", n)
	}
}

// TestNodeResponsesWebSocket runs e2e/node/responses-ws.mjs (issue 35):
// the openai npm SDK's own Responses WebSocket client (ResponsesWS, with
// the ws package) against gw serve's GET /inf/v1/responses, two turns on
// one socket, the second chained to the first by previous_response_id.
// The fake upstream answers the second turn with the marker only if gw
// sent it the first turn's answer. gw records exactly one usage event per
// turn, each with the upstream's tokens (never 0, LiteLLM #38674).
func TestNodeResponsesWebSocket(t *testing.T) {
	_, dir := nodeWith(t, "openai", "ws")
	ctx := context.Background()
	srv := startServe(t, "GW_DATA_DIR="+t.TempDir(), "GW_BOOTSTRAP_TOKEN=setup_responses_ws")
	anon, _ := client.New(client.Options{Server: srv.URL})
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_responses_ws", Email: "ops@example.com", Password: "a long passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := client.New(client.Options{Server: srv.URL, Token: boot.ManagementKey.Token})
	oai := providerstest.NewOpenAI(t, "sk-upstream-responses-ws")
	target, err := url.Parse(oai.BaseURL())
	if err != nil {
		t.Fatal(err)
	}
	base := target.Path
	target.Path = ""
	proxy := httputil.NewSingleHostReverseProxy(target)
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		// Output counts above what gw would estimate for the text: gw
		// never records less than it relayed.
		reply := providerstest.Reply{Text: "no turn marker", Usage: providerstest.Usage{Input: 12, Output: 25}}
		switch text := string(body); {
		case strings.Contains(text, "SECOND_TURN") && strings.Contains(text, "the marker is ws-e2e-7"):
			reply = providerstest.Reply{Text: "it was ws-e2e-7", Usage: providerstest.Usage{Input: 30, Output: 20}}
		case strings.Contains(text, "SECOND_TURN"):
			reply.Text = "the first turn was not sent"
		case strings.Contains(text, "FIRST_TURN"):
			reply.Text = "the marker is ws-e2e-7"
		}
		oai.Enqueue(reply)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(fake.Close)
	if _, err := owner.CreateCredential(ctx, client.WorkspaceScope("default", "default"), wire.ProviderCredentialCreate{
		Provider: "openai", Label: "fake", Secret: oai.Key, BaseURL: fake.URL + base}); err != nil {
		t.Fatal(err)
	}
	ik, err := owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "responses-ws"})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, "node", "responses-ws.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GW_INF_BASE="+srv.URL+"/inf", "GW_INF_KEY="+ik.Token)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `{"ok":true`) {
		t.Fatalf("node responses-ws.mjs: %v\n%s\ngw serve:\n%s", err, out, srv.logs)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
	if n := len(oai.Requests()); n != 2 {
		t.Fatalf("%d upstream calls, want one per turn", n)
	}
	// One usage event per turn, each with the tokens the upstream counted.
	var events []wire.UsageEvent
	waitFor(t, "the two turns' usage events", func() bool {
		var page wire.Page[wire.UsageEvent]
		if err := getJSON(srv.URL, boot.ManagementKey.Token, "/api/v1/organizations/default/workspaces/default/usage-events?limit=200", &page); err != nil {
			t.Fatal(err)
		}
		events = page.Data
		return len(events) >= 2
	})
	if len(events) != 2 {
		t.Fatalf("%d usage events, want 2: %+v", len(events), events)
	}
	want := map[int64]int64{12: 25, 30: 20} // input → output tokens of each turn
	for _, ev := range events {
		if ev.Status != "ok" || ev.UsageSource != wire.UsageSourceUpstream || ev.Endpoint == nil || *ev.Endpoint != "responses" || ev.Model != "openai/gpt-4o-mini" ||
			ev.InputTokens == 0 || ev.OutputTokens == 0 || want[ev.InputTokens] != ev.OutputTokens {
			t.Fatalf("usage event %+v (endpoint %v); upstream requests: %s", ev, ev.Endpoint, upstreamBodies(oai.Requests()))
		}
		delete(want, ev.InputTokens)
	}
}

func upstreamBodies(reqs []providerstest.Request) string {
	var b strings.Builder
	for _, r := range reqs {
		b.WriteString(r.Path + " " + string(r.Raw) + "\n")
	}
	return b.String()
}
