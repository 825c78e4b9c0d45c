package dataplane_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// constrain gives a stored catalog model request constraints, as an
// import writes them, and publishes the bundles.
func (e *infEnv) constrain(t *testing.T, model, constraints string) {
	t.Helper()
	if _, err := e.db.NewUpdate().Table("catalog_models").Set("constraints = ?", constraints).
		Where("id = ?", model).Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.sync(t)
}

// postWith sends a raw request to an inference path with the key and the
// headers given (name, value, …).
func (e *infEnv) postWith(t *testing.T, path, body string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Api-Key", e.token)
	req.Header.Set("Authorization", "Bearer "+e.token)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

const fable = `{"sampling_params":false,"forced_tool_choice":false,"anthropic_version":"2026-10-21"}`

// Issue 35, part 2: a model whose catalog entry refuses sampling
// parameters and forced tool choice gets the request without them (named
// in x-gw-dropped-params) and its own anthropic-version, in every dialect;
// a fallback adapts to the model it reaches, not to the one asked for;
// strict_parameters refuses instead.
func TestModelConstraints(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.constrain(t, haiku, fable)
		ok := providerstest.Reply{Text: "done", Usage: providerstest.Usage{Input: 9, Output: 2}}
		tools := `"tools":[{"name":"f","description":"d","input_schema":{"type":"object"}}]`

		// Messages, forwarded as sent: the refused members are edited out
		// of the body, nothing else.
		e.anthropic.Enqueue(ok)
		resp, b := e.postWith(t, "/inf/v1/messages", `{"model":"`+haiku+`","max_tokens":50,"temperature":0.2,"top_k":5,`+
			tools+`,"tool_choice":{"type":"any","disable_parallel_tool_use":true},"messages":[{"role":"user","content":"hi"}]}`)
		if resp.StatusCode != 200 || resp.Header.Get("X-Gw-Dropped-Params") != "temperature, top_k, tool_choice" {
			t.Fatalf("messages: %d %q %s", resp.StatusCode, resp.Header.Get("X-Gw-Dropped-Params"), b)
		}
		got := e.anthropic.Last(t)
		sent := string(got.Raw)
		if strings.Contains(sent, "temperature") || strings.Contains(sent, "top_k") ||
			!strings.Contains(sent, `"tool_choice":{"disable_parallel_tool_use":true,"type":"auto"}`) || !strings.Contains(sent, `"input_schema"`) {
			t.Fatalf("messages sent %s", sent)
		}
		if v := got.Header.Get("Anthropic-Version"); v != "2026-10-21" {
			t.Fatalf("anthropic-version %q", v)
		}

		// Chat Completions, translated: the same for the chat members.
		chatTools := `"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`
		e.anthropic.Enqueue(ok)
		resp, b = e.postWith(t, "/inf/v1/chat/completions", `{"model":"`+haiku+`","temperature":0.2,"top_p":0.9,`+chatTools+
			`,"tool_choice":"required","messages":[{"role":"user","content":"hi"}]}`)
		if resp.StatusCode != 200 || resp.Header.Get("X-Gw-Dropped-Params") != "temperature, top_p, tool_choice" {
			t.Fatalf("chat: %d %q %s", resp.StatusCode, resp.Header.Get("X-Gw-Dropped-Params"), b)
		}
		got = e.anthropic.Last(t)
		if sent := string(got.Raw); strings.Contains(sent, "temperature") || strings.Contains(sent, "top_p") ||
			!strings.Contains(sent, `"tool_choice":{"type":"auto"`) || got.Header.Get("Anthropic-Version") != "2026-10-21" {
			t.Fatalf("chat sent %s (version %q)", sent, got.Header.Get("Anthropic-Version"))
		}

		// An unconstrained model takes the request as it is.
		e.openai.Enqueue(ok)
		resp, b = e.postWith(t, "/inf/v1/chat/completions", `{"model":"`+gptMini+`","temperature":0.2,`+chatTools+
			`,"tool_choice":"required","messages":[{"role":"user","content":"hi"}]}`)
		if resp.StatusCode != 200 || resp.Header.Get("X-Gw-Dropped-Params") != "" {
			t.Fatalf("unconstrained: %d %q %s", resp.StatusCode, resp.Header.Get("X-Gw-Dropped-Params"), b)
		}
		if sent := string(e.openai.Last(t).Raw); !strings.Contains(sent, `"temperature":0.2`) || !strings.Contains(sent, `"tool_choice":"required"`) {
			t.Fatalf("unconstrained sent %s", sent)
		}

		// Both adaptations named together: a low effort left out for a
		// model that does not reason, and the sampling it refuses.
		e.constrain(t, "openai/gpt-4o", `{"sampling_params":false}`)
		e.openai.Enqueue(ok)
		resp, b = e.postWith(t, "/inf/v1/chat/completions", `{"model":"openai/gpt-4o","reasoning_effort":"none","temperature":0,"top_p":1,`+
			`"messages":[{"role":"user","content":"hi"}]}`)
		if resp.StatusCode != 200 || resp.Header.Get("X-Gw-Dropped-Params") != "reasoning_effort, temperature, top_p" {
			t.Fatalf("both: %d %q %s", resp.StatusCode, resp.Header.Get("X-Gw-Dropped-Params"), b)
		}
		if sent := string(e.openai.Last(t).Raw); strings.Contains(sent, "temperature") || strings.Contains(sent, "top_p") || strings.Contains(sent, "reasoning_effort") {
			t.Fatalf("both sent %s", sent)
		}

		// A fallback adapts to the model it reaches: gpt-4o-mini fails,
		// the constrained model answers without the sampling parameter.
		e.policy(t, rule(all, `{"kind":"fallback","models":["`+haiku+`"],"on":["upstream_unavailable"],"max_attempts":2,"timeout_ms":30000}`))
		e.sync(t)
		e.openai.Enqueue(providerstest.Reply{Status: 503, Message: "down"})
		e.anthropic.Enqueue(ok)
		resp, b = e.postWith(t, "/inf/v1/chat/completions", `{"model":"`+gptMini+`","temperature":0.7,"messages":[{"role":"user","content":"hi"}]}`)
		if resp.StatusCode != 200 || resp.Header.Get("X-Gw-Dropped-Params") != "temperature" {
			t.Fatalf("fallback: %d %q %s", resp.StatusCode, resp.Header.Get("X-Gw-Dropped-Params"), b)
		}
		if first, last := string(e.openai.Last(t).Raw), string(e.anthropic.Last(t).Raw); !strings.Contains(first, `"temperature":0.7`) || strings.Contains(last, "temperature") {
			t.Fatalf("fallback sent %s then %s", first, last)
		}

		// strict_parameters: refused, naming the member, nothing sent.
		e.policy(t, rule(all, `{"kind":"strict_parameters"}`))
		e.sync(t)
		before := len(e.anthropic.Requests())
		resp, b = e.postWith(t, "/inf/v1/messages", `{"model":"`+haiku+`","max_tokens":50,"top_p":0.5,"messages":[{"role":"user","content":"hi"}]}`)
		if resp.StatusCode != 400 || !strings.Contains(b, "top_p") || !strings.Contains(b, "strict_parameters") || len(e.anthropic.Requests()) != before {
			t.Fatalf("strict: %d %s", resp.StatusCode, b)
		}
	})
}

// thinkingTurns is a conversation whose assistant turn holds a thinking
// block and a redacted one, their signature and data written with escapes
// JSON allows (\u002b for +, \/ for /): an upstream checks them byte for
// byte, so a proxy that decodes and re-encodes them breaks the next turn.
const thinkingTurns = `"messages":[{"role":"user","content":"add"},{"role":"assistant","content":[` +
	`{"type":"thinking","thinking":"2 \u003c 3, so","signature":"EqQB\u002bCkYIBhgCKkB\/x+y/z=="},` +
	`{"type":"redacted_thinking","data":"RWQ\u002bZ\/Rh/+=="},` +
	`{"type":"text","text":"It is 5."}]},{"role":"user","content":"again"}]`

// Issue 35, part 2: thinking blocks and their signatures reach an
// Anthropic upstream byte for byte, and come back so, whole or streamed
// (signature_delta); across a fallback to another vendor they are left
// out whole, and the rest of the conversation goes on.
func TestThinkingSignaturesByteFaithful(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.sync(t)
		thinkingBlock := `{"type":"thinking","thinking":"2 \u003c 3, so","signature":"EqQB\u002bCkYIBhgCKkB\/x+y/z=="}`
		redacted := `{"type":"redacted_thinking","data":"RWQ\u002bZ\/Rh/+=="}`

		// To Anthropic, forwarded: the blocks as the client wrote them.
		e.anthropic.Enqueue(providerstest.Reply{Text: "5", Usage: providerstest.Usage{Input: 9, Output: 2}})
		resp, b := e.postWith(t, "/inf/v1/messages", `{"model":"`+haiku+`","max_tokens":50,`+thinkingTurns+`}`)
		if resp.StatusCode != 200 {
			t.Fatalf("anthropic: %d %s", resp.StatusCode, b)
		}
		if sent := string(e.anthropic.Last(t).Raw); !strings.Contains(sent, thinkingBlock) || !strings.Contains(sent, redacted) {
			t.Fatalf("anthropic got %s", sent)
		}

		// Across a fallback to OpenAI: the thinking blocks are dropped
		// whole (no signature, no half block), the text is kept.
		e.policy(t, rule(all, `{"kind":"fallback","models":["`+gptMini+`"],"on":["upstream_unavailable"],"max_attempts":2,"timeout_ms":30000}`))
		e.sync(t)
		e.anthropic.Enqueue(providerstest.Reply{Status: 529, Message: "overloaded"})
		e.openai.Enqueue(providerstest.Reply{Text: "5", Usage: providerstest.Usage{Input: 9, Output: 2}})
		resp, b = e.postWith(t, "/inf/v1/messages", `{"model":"`+haiku+`","max_tokens":50,`+thinkingTurns+`}`)
		if resp.StatusCode != 200 {
			t.Fatalf("fallback: %d %s", resp.StatusCode, b)
		}
		if sent := string(e.anthropic.Last(t).Raw); !strings.Contains(sent, thinkingBlock) {
			t.Fatalf("the first attempt got %s", sent)
		}
		sent := string(e.openai.Last(t).Raw)
		for _, gone := range []string{"signature", "thinking", "EqQB", "RWQ", "redacted"} {
			if strings.Contains(sent, gone) {
				t.Fatalf("across vendors %q was sent: %s", gone, sent)
			}
		}
		if !strings.Contains(sent, "It is 5.") || !strings.Contains(sent, "again") {
			t.Fatalf("across vendors the conversation was lost: %s", sent)
		}

		// From Anthropic: an upstream answering with escaped signatures,
		// whole and streamed; the caller reads the bytes it wrote.
		const answer = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001","content":[` +
			`{"type":"thinking","thinking":"a < b & c","signature":"Sig\u002bA\/B+C/D=="},{"type":"text","text":"ok"}],` +
			`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":2}}`
		const delta = `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"Sig\u002bA\/B+C/D=="}}`
		events := []string{
			`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001","content":[],"stop_reason":null,"usage":{"input_tokens":9,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"a \u003c b"}}`,
			delta,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}`,
			`{"type":"message_stop"}`,
		}
		var mu sync.Mutex
		var received []string
		raw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			received = append(received, string(body))
			mu.Unlock()
			if !strings.Contains(string(body), `"stream":true`) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, answer)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			for _, ev := range events {
				_, _ = io.WriteString(w, "event: x\ndata: "+ev+"\n\n")
			}
		}))
		t.Cleanup(raw.Close)
		e.credential(t, &e.org.ID, &e.ws, "anthropic", "sk-ant-raw-0000", raw.URL+"/v1")
		e.sync(t)
		resp, b = e.postWith(t, "/inf/v1/messages", `{"model":"`+haiku+`","max_tokens":50,`+thinkingTurns+`}`)
		if resp.StatusCode != 200 || !strings.Contains(b, `{"type":"thinking","thinking":"a < b & c","signature":"Sig\u002bA\/B+C/D=="}`) ||
			!strings.Contains(b, `"model":"`+haiku+`"`) {
			t.Fatalf("answer: %d %s", resp.StatusCode, b)
		}
		resp, b = e.postWith(t, "/inf/v1/messages", `{"model":"`+haiku+`","max_tokens":50,"stream":true,`+thinkingTurns+`}`)
		if resp.StatusCode != 200 || !strings.Contains(b, delta) {
			t.Fatalf("stream: %d %s", resp.StatusCode, b)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, body := range received {
			if !strings.Contains(body, thinkingBlock) || !strings.Contains(body, redacted) {
				t.Fatalf("the raw upstream got %s", body)
			}
		}
	})
}

// Issue 35, part 2: the caller's anthropic-beta flags reach Anthropic's
// API, whatever the dialect, and openai-beta OpenAI's; neither reaches
// another vendor.
func TestVendorBetaHeaders(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.credential(t, &e.org.ID, nil, "groq", e.openai.Key, e.openai.BaseURL())
		e.sync(t)
		ok := providerstest.Reply{Text: "done", Usage: providerstest.Usage{Input: 9, Output: 2}}
		const ab, ob = "interleaved-thinking-2025-05-14,context-1m-2025-08-07", "responses_websockets=2026-02-06"
		betas := []string{"Anthropic-Beta", ab, "Openai-Beta", ob}
		msgs := `"messages":[{"role":"user","content":"hi"}]`
		for _, tc := range []struct {
			name, path, body string
			up               interface {
				Enqueue(...providerstest.Reply)
				Last(testing.TB) providerstest.Request
			}
			anthropicBeta, openaiBeta string
		}{
			{"messages to anthropic", "/inf/v1/messages", `{"model":"` + haiku + `","max_tokens":50,` + msgs + `}`, e.anthropic, ab, ""},
			{"chat to anthropic", "/inf/v1/chat/completions", `{"model":"` + haiku + `",` + msgs + `}`, e.anthropic, ab, ""},
			{"responses to openai", "/inf/v1/responses", `{"model":"` + gptMini + `","input":"hi"}`, e.openai, "", ob},
			{"chat to openai", "/inf/v1/chat/completions", `{"model":"` + gptMini + `",` + msgs + `}`, e.openai, "", ob},
			{"messages to openai", "/inf/v1/messages", `{"model":"` + gptMini + `","max_tokens":50,` + msgs + `}`, e.openai, "", ob},
			{"chat to an openai-compatible server", "/inf/v1/chat/completions", `{"model":"groq/openai/gpt-oss-120b",` + msgs + `}`, e.openai, "", ""},
		} {
			tc.up.Enqueue(ok)
			resp, b := e.postWith(t, tc.path, tc.body, betas...)
			if resp.StatusCode != 200 {
				t.Fatalf("%s: %d %s", tc.name, resp.StatusCode, b)
			}
			h := tc.up.Last(t).Header
			if got := strings.Join(h.Values("Anthropic-Beta"), ","); got != tc.anthropicBeta {
				t.Fatalf("%s: anthropic-beta %q, want %q", tc.name, got, tc.anthropicBeta)
			}
			if got := strings.Join(h.Values("Openai-Beta"), ","); got != tc.openaiBeta {
				t.Fatalf("%s: openai-beta %q, want %q", tc.name, got, tc.openaiBeta)
			}
		}
	})
}

// Issue 35, part 2, the Responses side: a reasoning item's
// encrypted_content reaches OpenAI as the client wrote it; across a
// fallback to Anthropic the item is left out whole, the turns kept.
func TestReasoningItemsAcrossVendors(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.policy(t, rule(all, `{"kind":"fallback","models":["`+haiku+`"],"on":["upstream_unavailable"],"max_attempts":2,"timeout_ms":30000}`))
		e.sync(t)
		item := `{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAA\u002bBn\/x+y/=="}`
		body := `{"model":"` + gptMini + `","input":[{"role":"user","content":"add"},` + item +
			`,{"role":"assistant","content":[{"type":"output_text","text":"It is 5."}]},{"role":"user","content":"again"}]}`
		ok := providerstest.Reply{Text: "5", Usage: providerstest.Usage{Input: 9, Output: 2}}
		e.openai.Enqueue(ok)
		if resp, b := e.postWith(t, "/inf/v1/responses", body); resp.StatusCode != 200 {
			t.Fatalf("openai: %d %s", resp.StatusCode, b)
		}
		if sent := string(e.openai.Last(t).Raw); !strings.Contains(sent, item) {
			t.Fatalf("openai got %s", sent)
		}
		e.openai.Enqueue(providerstest.Reply{Status: 503, Message: "down"})
		e.anthropic.Enqueue(ok)
		if resp, b := e.postWith(t, "/inf/v1/responses", body); resp.StatusCode != 200 {
			t.Fatalf("fallback: %d %s", resp.StatusCode, b)
		}
		sent := string(e.anthropic.Last(t).Raw)
		if strings.Contains(sent, "encrypted_content") || strings.Contains(sent, "gAAAA") || strings.Contains(sent, "rs_1") ||
			!strings.Contains(sent, "It is 5.") || !strings.Contains(sent, "again") {
			t.Fatalf("anthropic got %s", sent)
		}
	})
}

// The response cache keys on the model's constraints too: once they
// change what the model is sent, an answer kept from before is not
// served for the request as it goes now.
func TestConstraintsInTheCacheKey(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.cacheOn(t, e.ws, 300, 1<<20)
		e.openai.SetDefault(providerstest.Reply{Text: "cached", Usage: providerstest.Usage{Input: 9, Output: 2}})
		body := `{"model":"` + gptMini + `","temperature":0,"messages":[{"role":"user","content":"same"}]}`
		for i, want := range []string{"miss", "hit"} {
			if st, hdr, b := e.ask(t, e.token, body); st != 200 || hdr != want {
				t.Fatalf("ask %d: %d %q %s", i, st, hdr, b)
			}
		}
		e.constrain(t, gptMini, `{"sampling_params":false}`)
		if st, hdr, b := e.ask(t, e.token, body); st != 200 || hdr != "miss" {
			t.Fatalf("after the constraint: %d %q %s", st, hdr, b)
		}
		if sent := string(e.openai.Last(t).Raw); strings.Contains(sent, "temperature") {
			t.Fatalf("sent %s", sent)
		}
	})
}
