package dataplane_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// The conformance matrix: every endpoint × upstream kind × stream or not ×
// feature (tools, structured output, image input), against fakes that
// speak each provider's wire format. Each cell checks that the answer is
// in the endpoint's dialect, that the feature reached the upstream in the
// upstream's own terms, and that the request left one usage event naming
// its endpoint and priced at its tokens.
func TestConformanceMatrix(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.withClouds(t)
		defaults, err := catalog.Default()
		if err != nil {
			t.Fatal(err)
		}
		const image = "data:image/png;base64,iVBORw0KGgo="
		schema := `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`
		bodies := map[string]map[string]string{
			"chat.completions": {
				"tools":      `"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`,
				"structured": `"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"o","strict":true,"schema":` + schema + `}}`,
				"image":      `"messages":[{"role":"user","content":[{"type":"text","text":"what?"},{"type":"image_url","image_url":{"url":"` + image + `"}}]}]`,
				"agent":      `"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]`,
			},
			"responses": {
				"tools":      `"input":"hi","tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]`,
				"structured": `"input":"hi","text":{"format":{"type":"json_schema","name":"o","strict":true,"schema":` + schema + `}}`,
				"image":      `"input":[{"role":"user","content":[{"type":"input_text","text":"what?"},{"type":"input_image","image_url":"` + image + `"}]}]`,
				// Codex: a hosted tool and a namespace beside its functions.
				"agent": `"instructions":"be brief","input":"hi","tools":[{"type":"function","name":"f","parameters":{"type":"object"}},` +
					`{"type":"web_search"},{"type":"namespace","name":"ns","tools":[]}]`,
			},
			"messages": {
				"tools":      `"max_tokens":100,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{"type":"object"}}]`,
				"structured": `"max_tokens":100,"messages":[{"role":"user","content":"hi"}],"output_format":{"type":"json_schema","schema":` + schema + `}`,
				"image":      `"max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"what?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]`,
				// Claude Code: a system turn among the messages.
				"agent": `"max_tokens":100,"messages":[{"role":"user","content":"hi"},{"role":"system","content":"be brief"},{"role":"user","content":"go on"}]`,
			},
		}
		paths := map[string]string{"chat.completions": "/inf/v1/chat/completions", "responses": "/inf/v1/responses", "messages": "/inf/v1/messages"}
		n := 0
		for _, endpoint := range []string{"chat.completions", "responses", "messages"} {
			for _, model := range []string{gptMini, haiku, bedrockClaude, bedrockNova, vertexGemini, vertexClaude, geminiFlash, azureMini} {
				for _, stream := range []bool{false, true} {
					for _, feature := range []string{"tools", "structured", "image", "agent"} {
						name := fmt.Sprintf("%s/%s/stream=%v/%s", endpoint, model, stream, feature)
						t.Run(name, func(t *testing.T) {
							reply := providerstest.Reply{Text: "Hello from the fake.", Usage: providerstest.Usage{Input: 1000, Output: 100}}
							if feature == "tools" {
								reply = providerstest.Reply{ToolCalls: []providerstest.ToolCall{{ID: "call_1", Name: "f", Arguments: `{"a":"b"}`}},
									Usage: providerstest.Usage{Input: 1000, Output: 100}}
							}
							e.upstreamOf(model).Enqueue(reply)
							body := `{"model":"` + model + `","stream":` + fmt.Sprint(stream) + `,` + bodies[endpoint][feature] + `}`
							req, _ := http.NewRequest(http.MethodPost, e.srv.URL+paths[endpoint], strings.NewReader(body))
							if endpoint == "messages" {
								req.Header.Set("X-Api-Key", e.token)
								req.Header.Set("Anthropic-Version", "2023-06-01")
							} else {
								req.Header.Set("Authorization", "Bearer "+e.token)
							}
							req.Header.Set("X-Request-Id", "req-"+fmt.Sprint(n))
							req.Header.Set("Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
							resp, err := http.DefaultClient.Do(req)
							if err != nil {
								t.Fatal(err)
							}
							defer resp.Body.Close()
							raw, _ := io.ReadAll(resp.Body)
							if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Request-Id") != "req-"+fmt.Sprint(n) {
								t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, raw)
							}
							checkDialect(t, endpoint, stream, feature, raw)
							n++
							ev := e.usage.last(t, n)
							if endpointOf(ev) != endpoint || ev.Status != "ok" || ev.InputTokens != 1000 || ev.OutputTokens != 100 ||
								ev.RequestID == nil || *ev.RequestID != "req-"+fmt.Sprint(n-1) {
								t.Fatalf("usage event %+v", ev)
							}
							// haiku: $1 in, $5 out per MTok; gpt-4o-mini: $0.15 and $0.60.
							if want := map[string]string{haiku: "0.0015", gptMini: "0.00021"}[model]; want != "" && ev.CostUSD != want {
								t.Fatalf("cost %s, want %s", ev.CostUSD, want)
							}
							m, _ := defaults.Model(model)
							if nano, _ := m.Pricing.CostNanoUSD(catalog.Tokens{Input: 1000, Output: 100}); ev.CostUSD != catalog.FormatNanoUSD(nano) {
								t.Fatalf("cost %s, want %s", ev.CostUSD, catalog.FormatNanoUSD(nano))
							}
							up := e.fakeOf(model).Last(t)
							if up.Header.Get("X-Request-Id") != "req-"+fmt.Sprint(n-1) || up.Header.Get("Traceparent") == "" {
								t.Fatalf("upstream headers %v", up.Header)
							}
							checkUpstream(t, upstreamFamily(model, endpoint), feature, up)
							if feature == "agent" && endpoint == "responses" {
								checkDroppedTools(t, resp.Header.Get("X-Gw-Dropped-Tools"), up)
							}
						})
					}
				}
			}
		}
	})
}

// checkDialect checks the answer is the endpoint's, with the feature's
// outcome (a tool call, or text).
func checkDialect(t *testing.T, endpoint string, stream bool, feature string, raw []byte) {
	t.Helper()
	text := string(raw)
	var want []string
	switch endpoint {
	case "chat.completions":
		want = []string{`"chat.completion`}
		if feature == "tools" {
			want = append(want, `"tool_calls"`)
		}
		if stream {
			want = append(want, "data: [DONE]")
		}
	case "responses":
		want = []string{`"object":"response"`}
		if feature == "tools" {
			want = append(want, `"function_call"`)
		}
		if stream {
			want = append(want, "event: response.created", "event: response.completed")
		}
	case "messages":
		want = []string{`"type":"message"`}
		if feature == "tools" {
			want = append(want, `"tool_use"`)
		}
		if stream {
			want = append(want, "event: message_start", "event: content_block_start", "event: message_delta", "event: message_stop")
		}
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Fatalf("answer lacks %s:\n%s", w, text)
		}
	}
	if stream {
		// Every event's data is JSON (or the [DONE] sentinel).
		sc := bufio.NewScanner(strings.NewReader(text))
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && d != "[DONE]" && !json.Valid([]byte(d)) {
				t.Fatalf("event data is not JSON: %s", d)
			}
		}
	}
}

// upstreamFamily is the protocol a request to model from endpoint reaches
// the upstream in.
func upstreamFamily(model, endpoint string) string {
	switch {
	case model == haiku || model == vertexClaude || model == bedrockClaude && endpoint == "messages":
		return "messages"
	case strings.HasPrefix(model, "bedrock/"):
		return "converse"
	case model == vertexGemini || model == geminiFlash:
		return "generateContent"
	}
	return "openai"
}

// checkUpstream checks the feature reached the upstream in its own terms.
func checkUpstream(t *testing.T, family, feature string, up providerstest.Request) {
	t.Helper()
	b := string(up.Raw)
	want := map[string]map[string]string{
		"messages":        {"tools": `"input_schema"`, "structured": `"output_format"`, "image": `"image"`, "agent": "be brief"},
		"converse":        {"tools": `"toolSpec"`, "structured": `"gw_structured_output"`, "image": `"image":{"format":"png"`, "agent": "be brief"},
		"generateContent": {"tools": `"functionDeclarations"`, "structured": `"responseJsonSchema"`, "image": `"inlineData"`, "agent": "be brief"},
		"openai":          {"tools": `"tools"`, "structured": `"response_format"`, "image": `iVBORw0KGgo=`, "agent": "be brief"},
	}[family][feature]
	if family == "openai" && feature == "structured" && strings.HasSuffix(up.Path, "/responses") {
		want = `"json_schema"`
	}
	if !strings.Contains(b, want) {
		t.Fatalf("upstream %s got no %s: %s", up.Path, want, b)
	}
	// The Messages API takes no system turns: they reach it folded into
	// system.
	if feature == "agent" && family == "messages" && strings.Contains(b, `"role":"system"`) {
		t.Fatalf("upstream %s got a system turn: %s", up.Path, b)
	}
}

// checkDroppedTools checks a Responses request's hosted and namespace
// tools: kept for OpenAI's own Responses API, left out and named for every
// other upstream.
func checkDroppedTools(t *testing.T, header string, up providerstest.Request) {
	t.Helper()
	native := strings.HasSuffix(up.Path, "/responses")
	kept := strings.Contains(string(up.Raw), "web_search")
	switch {
	case native && (!kept || header != ""):
		t.Fatalf("native Responses upstream: tools kept %v, header %q", kept, header)
	case !native && (kept || header != "web_search"):
		t.Fatalf("%s: tools kept %v, header %q", up.Path, kept, header)
	}
}
