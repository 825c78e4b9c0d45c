package dataplane_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/server/usage"
	"github.com/gw-gateway/gw/wire"
)

const all = `{"kind":"all_requests"}`

func rule(match, action string) string { return `{"match":` + match + `,"action":` + action + `}` }

// The official OpenAI Go SDK, unchanged, against {base_url}/inf/v1: plain
// and streamed completions, through an OpenAI upstream and through an
// Anthropic one, with tool calls, reading gw's model ids and usage.
func TestOpenAISDKChatCompletions(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.sync(t)
		ctx := context.Background()
		c := e.client()
		for _, tc := range []struct {
			model string
			fake  interface {
				Enqueue(...providerstest.Reply)
				Last(testing.TB) providerstest.Request
			}
			upstreamModel string
		}{
			{gptMini, e.openai, "gpt-4o-mini"},
			{haiku, e.anthropic, "claude-haiku-4-5-20251001"},
		} {
			t.Run(tc.model, func(t *testing.T) {
				reply := providerstest.Reply{
					Text:      "It is sunny in Oslo.",
					ToolCalls: []providerstest.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}},
					Usage:     providerstest.Usage{Input: 42, Output: 17},
				}
				tc.fake.Enqueue(reply, reply)
				params := openai.ChatCompletionNewParams{
					Model:    tc.model,
					Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Weather in Oslo?")},
					Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
						Name: "get_weather", Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
					})},
					MaxTokens: openai.Int(200),
				}
				got, err := c.Chat.Completions.New(ctx, params)
				if err != nil {
					t.Fatal(err)
				}
				if got.Model != tc.model || got.Choices[0].Message.Content != reply.Text ||
					len(got.Choices[0].Message.ToolCalls) != 1 || got.Choices[0].Message.ToolCalls[0].Function.Arguments != `{"city":"Oslo"}` ||
					got.Choices[0].FinishReason != "tool_calls" || got.Usage.PromptTokens != 42 || got.Usage.CompletionTokens != 17 {
					t.Fatalf("completion %+v", got)
				}
				if sent := tc.fake.Last(t).Body; sent["model"] != tc.upstreamModel {
					t.Fatalf("upstream was asked for %v", sent["model"])
				}

				params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
				stream := c.Chat.Completions.NewStreaming(ctx, params)
				var acc openai.ChatCompletionAccumulator
				chunks := 0
				for stream.Next() {
					chunks++
					if !acc.AddChunk(stream.Current()) {
						t.Fatalf("the accumulator refused chunk %s", stream.Current().RawJSON())
					}
				}
				if err := stream.Err(); err != nil {
					t.Fatal(err)
				}
				msg := acc.Choices[0].Message
				if chunks < 4 || acc.Model != tc.model || msg.Content != reply.Text || len(msg.ToolCalls) != 1 ||
					msg.ToolCalls[0].Function.Name != "get_weather" || msg.ToolCalls[0].Function.Arguments != `{"city":"Oslo"}` ||
					acc.Choices[0].FinishReason != "tool_calls" || acc.Usage.PromptTokens != 42 || acc.Usage.CompletionTokens != 17 {
					t.Fatalf("%d chunks accumulated to %+v", chunks, acc.ChatCompletion)
				}
				if sent := tc.fake.Last(t).Body; sent["stream"] != true {
					t.Fatalf("upstream was not asked to stream: %v", sent)
				}
			})
		}
		for i, ev := range e.usage.wait(t, 4) {
			if ev.Status != "ok" || ev.InputTokens != 42 || ev.OutputTokens != 17 || ev.ProviderCredentialID == nil ||
				*ev.InferenceKeyID != e.keyID || *ev.OwnerID != e.owner || ev.WorkspaceID != e.ws || ev.OrgID != e.org.ID {
				t.Fatalf("event %d: %+v", i, ev)
			}
		}
	})
}

// Every answer names its usage event, in the header the OpenAI SDKs read
// into their errors and responses.
func TestAnswersCarryTheUsageEventID(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.sync(t)
		resp := e.post(t, `{"model":"`+gptMini+`","messages":[{"role":"user","content":"hi"}]}`)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
		}
		if ev := e.usage.last(t, 1); resp.Header.Get("X-Request-Id") != ev.ID.String() {
			t.Fatalf("X-Request-Id %q, event %s", resp.Header.Get("X-Request-Id"), ev.ID)
		}
	})
}

func TestPolicyDenyAnswers403WithItsMessage(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.policy(t, rule(`{"kind":"request","models":[],"stream":true,"capabilities":[]}`, `{"kind":"deny","message":"Streaming is switched off here."}`))
		e.sync(t)
		got := e.postError(t, `{"model":"`+gptMini+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`, http.StatusForbidden)
		if got.Error.Message != "Streaming is switched off here." || code(got) != "policy_denied" {
			t.Fatalf("error %+v", got)
		}
		ev := e.usage.last(t, 1)
		if ev.Status != "denied" || ev.Model != gptMini || ev.CostUSD != "0" || ev.ProviderCredentialID != nil {
			t.Fatalf("event %+v", ev)
		}
		if n := len(e.openai.Requests()); n != 0 {
			t.Fatalf("a denied request reached the upstream %d times", n)
		}
		// The same request without streaming is allowed.
		if resp := e.post(t, `{"model":"`+gptMini+`","messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != http.StatusOK {
			t.Fatalf("non-streaming: %d", resp.StatusCode)
		}

		// Through the SDK, the error reads as OpenAI's own.
		_, err := e.sdk().Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: gptMini, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		}, withStream())
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusForbidden || apiErr.Code != "policy_denied" {
			t.Fatalf("SDK error %v", err)
		}
	})
}

// withStream makes a plain New call send stream: true, so a policy on
// streaming applies while the SDK still reads a JSON error.
func withStream() option.RequestOption { return option.WithJSONSet("stream", true) }

// A model the key may not see answers exactly as discovery does for it,
// which is exactly as for a model that does not exist.
func TestModelsOutsideTheAllowlistAre404(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.policy(t, rule(all, `{"kind":"models","names":["`+gptMini+`"]}`))
		e.sync(t)
		var bodies []string
		for _, model := range []string{haiku, "openai/no-such-model"} {
			resp := e.post(t, `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusNotFound {
				t.Fatalf("%s: %d %s", model, resp.StatusCode, b)
			}
			bodies = append(bodies, strings.ReplaceAll(string(b), model, "MODEL"))
			discovery := httpGet(t, e, "/inf/v1/models/"+model)
			if discovery != string(b) {
				t.Fatalf("%s: chat completion says %s, discovery %s", model, b, discovery)
			}
		}
		if bodies[0] != bodies[1] {
			t.Fatalf("hidden and unknown models answer differently:\n%s\n%s", bodies[0], bodies[1])
		}
		if len(e.anthropic.Requests()) != 0 {
			t.Fatal("a hidden model was called")
		}
	})
}

func httpGet(t *testing.T, e *infEnv, path string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestStrictParameters(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.sync(t)
		// Without the policy, a member gw does not know goes through to
		// an OpenAI-shaped upstream, and members Anthropic lacks are left
		// out.
		if resp := e.post(t, `{"model":"`+gptMini+`","messages":[{"role":"user","content":"hi"}],"top_k":5}`); resp.StatusCode != http.StatusOK {
			t.Fatalf("lenient: %d", resp.StatusCode)
		}
		if e.openai.Last(t).Body["top_k"] != 5.0 {
			t.Fatal("top_k did not reach the upstream")
		}
		if resp := e.post(t, `{"model":"`+haiku+`","messages":[{"role":"user","content":"hi"}],"seed":5}`); resp.StatusCode != http.StatusOK {
			t.Fatalf("lenient anthropic: %d", resp.StatusCode)
		}
		if _, sent := e.anthropic.Last(t).Body["seed"]; sent {
			t.Fatal("seed reached the Messages API")
		}

		e.policy(t, rule(all, `{"kind":"strict_parameters"}`))
		e.sync(t)
		got := e.postError(t, `{"model":"`+gptMini+`","messages":[{"role":"user","content":"hi"}],"top_k":5}`, http.StatusBadRequest)
		if code(got) != "unknown_parameter" || param(got) != "top_k" {
			t.Fatalf("unknown member: %+v", got)
		}
		got = e.postError(t, `{"model":"`+haiku+`","messages":[{"role":"user","content":"hi"}],"seed":5}`, http.StatusBadRequest)
		if code(got) != "unsupported_parameter" || param(got) != "seed" {
			t.Fatalf("dropped member: %+v", got)
		}
		// Known members the upstream honours still pass.
		if resp := e.post(t, `{"model":"`+haiku+`","messages":[{"role":"user","content":"hi"}],"temperature":0.1,"logprobs":false}`); resp.StatusCode != http.StatusOK {
			t.Fatalf("strict, known members: %d", resp.StatusCode)
		}
		events := e.usage.wait(t, 5)
		if events[2].Status != "denied" || events[3].Status != "denied" || events[4].Status != "ok" {
			t.Fatalf("statuses %s %s %s", events[2].Status, events[3].Status, events[4].Status)
		}
	})
}

// request_limits lowers the output limit a request asks for, or sets it
// when the request has none; under strict_parameters a request asking for
// more is refused instead of silently changed.
func TestRequestLimits(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.policy(t, rule(all, `{"kind":"request_limits","max_output_tokens":100}`),
			rule(all, `{"kind":"request_limits","max_output_tokens":300}`))
		e.sync(t)
		for _, tc := range []struct {
			limit string
			want  float64
		}{{``, 100}, {`,"max_tokens":500`, 100}, {`,"max_completion_tokens":50`, 50}} {
			if resp := e.post(t, `{"model":"`+gptMini+`","messages":[{"role":"user","content":"hi"}]`+tc.limit+`}`); resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d", tc.limit, resp.StatusCode)
			}
			if got := e.openai.Last(t).Body["max_completion_tokens"]; got != tc.want {
				t.Fatalf("%s: upstream limit %v, want %v", tc.limit, got, tc.want)
			}
			// The Messages API always gets one; without a request value,
			// the policy's.
			if resp := e.post(t, `{"model":"`+haiku+`","messages":[{"role":"user","content":"hi"}]`+tc.limit+`}`); resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d", tc.limit, resp.StatusCode)
			}
			if got := e.anthropic.Last(t).Body["max_tokens"]; got != tc.want {
				t.Fatalf("%s: anthropic limit %v, want %v", tc.limit, got, tc.want)
			}
		}

		e.policy(t, rule(all, `{"kind":"strict_parameters"}`))
		e.sync(t)
		got := e.postError(t, `{"model":"`+gptMini+`","messages":[{"role":"user","content":"hi"}],"max_tokens":500}`, http.StatusBadRequest)
		if code(got) != "max_tokens_exceeded" || param(got) != "max_tokens" {
			t.Fatalf("strict: %+v", got)
		}
	})
}

// A route lacking a capability or modality the request needs is refused
// (spec 2.8), before any upstream sees it; capability-conditioned policy
// rules apply at inference.
func TestCapabilitiesAndModalities(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.policy(t, rule(`{"kind":"request","models":[],"stream":null,"capabilities":["structured_output"]}`, `{"kind":"deny","message":"No structured output, please."}`))
		e.sync(t)
		got := e.postError(t, `{"model":"`+gptMini+`","reasoning_effort":"low","messages":[{"role":"user","content":"hi"}]}`, http.StatusBadRequest)
		if code(got) != "unsupported_capability" || param(got) != "reasoning_effort" || !strings.Contains(got.Error.Message, "reasoning") {
			t.Fatalf("reasoning on gpt-4o-mini: %+v", got)
		}
		got = e.postError(t, `{"model":"openai/o3-mini","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}`, http.StatusBadRequest)
		if code(got) != "unsupported_modality" {
			t.Fatalf("image to o3-mini: %+v", got)
		}
		got = e.postError(t, `{"model":"`+gptMini+`","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"}}}}`, http.StatusForbidden)
		if got.Error.Message != "No structured output, please." {
			t.Fatalf("capability-conditioned deny: %+v", got)
		}
		if n := len(e.openai.Requests()); n != 0 {
			t.Fatalf("%d refused requests reached the upstream", n)
		}
		// A model with the capability, and images where it takes them.
		if resp := e.post(t, `{"model":"`+haiku+`","reasoning_effort":"low","max_tokens":5000,"messages":[{"role":"user","content":[{"type":"text","text":"what is it?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]}`); resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("reasoning with an image on haiku: %d %s", resp.StatusCode, b)
		}
	})
}

// A fallback rule moves a rate-limited request to the next model, which
// is checked as if it had been asked for; the answer names the model that
// gave it, and so does the usage event.
func TestFallbackOnRateLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.policy(t, rule(all, `{"kind":"fallback","models":["openai/gpt-4o","`+haiku+`"],"on":["rate_limited","timeout"],"max_attempts":3,"timeout_ms":300}`),
			// gpt-4o is hidden from the key, so the fallback skips it.
			rule(`{"kind":"request","models":["openai/gpt-4o"],"stream":null,"capabilities":[]}`, `{"kind":"deny","message":"too dear"}`))
		e.sync(t)
		ctx := context.Background()
		params := openai.ChatCompletionNewParams{Model: gptMini, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}

		e.openai.Enqueue(providerstest.Reply{Status: http.StatusTooManyRequests, Message: "Rate limit reached", RetryAfter: "2"})
		e.anthropic.Enqueue(providerstest.Reply{Text: "from claude", Usage: providerstest.Usage{Input: 10, Output: 2}})
		got, err := e.sdk().Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if got.Model != haiku || got.Choices[0].Message.Content != "from claude" {
			t.Fatalf("fallback answer %+v", got)
		}
		if ev := e.usage.last(t, 1); ev.Model != haiku || ev.Provider != "anthropic" || ev.Status != "ok" || ev.InputTokens != 10 {
			t.Fatalf("event %+v", ev)
		}

		// A timeout too, streaming.
		e.openai.Enqueue(providerstest.Reply{Delay: 2 * time.Second})
		e.anthropic.Enqueue(providerstest.Reply{Text: "streamed from claude"})
		stream := e.sdk().Chat.Completions.NewStreaming(ctx, params)
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil || acc.Model != haiku || acc.Choices[0].Message.Content != "streamed from claude" {
			t.Fatalf("streamed fallback: %v %+v", err, acc.ChatCompletion)
		}

		// Both rate limited: the caller gets the last failure, as a 429
		// with the upstream's Retry-After, and no upstream words.
		e.openai.Enqueue(providerstest.Reply{Status: http.StatusTooManyRequests, Message: "openai says slow down"})
		e.anthropic.Enqueue(providerstest.Reply{Status: http.StatusTooManyRequests, Message: "anthropic says slow down", RetryAfter: "9"})
		resp := e.post(t, `{"model":"`+gptMini+`","messages":[{"role":"user","content":"hi"}]}`)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "9" || strings.Contains(string(b), "says") {
			t.Fatalf("both limited: %d %v %s", resp.StatusCode, resp.Header, b)
		}
		if ev := e.usage.last(t, 3); ev.Status != "error" || ev.Model != haiku {
			t.Fatalf("event %+v", ev)
		}

		// A failure the rule does not name goes straight to the caller.
		e.openai.Enqueue(providerstest.Reply{Status: http.StatusInternalServerError, Message: "boom"})
		got5 := e.postError(t, `{"model":"`+gptMini+`","messages":[{"role":"user","content":"hi"}]}`, http.StatusBadGateway)
		if code(got5) != "upstream_unavailable" {
			t.Fatalf("500: %+v", got5)
		}
		// And so does a request the upstream rejects, in its own words.
		e.openai.Enqueue(providerstest.Reply{Status: http.StatusBadRequest, Message: "temperature is out of range"})
		got4 := e.postError(t, `{"model":"`+gptMini+`","messages":[{"role":"user","content":"hi"}]}`, http.StatusBadRequest)
		if got4.Error.Message != "temperature is out of range" {
			t.Fatalf("400: %+v", got4)
		}
		if n := len(e.anthropic.Requests()); n != 3 {
			t.Fatalf("anthropic called %d times, want 3", n)
		}
	})
}

// Without a fallback rule an upstream failure is the answer: 429 for a
// rate limit, 502 for an outage (503 for an overload), 504 for a timeout.
func TestUpstreamFailuresWithoutFallback(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, func(o *dataplane.Options) { o.UpstreamTimeout = 200 * time.Millisecond })
		e.sync(t)
		body := `{"model":"` + haiku + `","messages":[{"role":"user","content":"hi"}]}`
		for _, tc := range []struct {
			reply  providerstest.Reply
			status int
			code   string
		}{
			{providerstest.Reply{Status: 429}, http.StatusTooManyRequests, "upstream_rate_limited"},
			// An Anthropic 529 is an outage too, answered 503 (issue 19).
			{providerstest.Reply{Status: 529, Message: "Overloaded"}, http.StatusServiceUnavailable, "upstream_overloaded"},
			{providerstest.Reply{Delay: 2 * time.Second}, http.StatusGatewayTimeout, "upstream_timeout"},
		} {
			e.anthropic.Enqueue(tc.reply)
			if got := e.postError(t, body, tc.status); code(got) != tc.code {
				t.Fatalf("%+v: %+v", tc.reply, got)
			}
		}
		for _, ev := range e.usage.wait(t, 3) {
			if ev.Status != "error" {
				t.Fatalf("event %+v", ev)
			}
		}
	})
}

// A stream that breaks after it started ends with an error event, which
// the SDK reports; the event records what the stream had used.
func TestBrokenStreamEndsWithAnError(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.sync(t)
		for i, model := range []string{gptMini, haiku} {
			reply := providerstest.Reply{Text: "the start of an answer", BreakStream: true}
			e.openai.Enqueue(reply)
			e.anthropic.Enqueue(reply)
			stream := e.sdk().Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
				Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
			})
			n := 0
			for stream.Next() {
				n++
			}
			if err := stream.Err(); err == nil || n == 0 || !strings.Contains(err.Error(), "unavailable") {
				t.Fatalf("%s: %d chunks, error %v", model, n, err)
			}
			if ev := e.usage.last(t, i+1); ev.Status != "error" || ev.Model != model {
				t.Fatalf("event %+v", ev)
			}
		}
	})
}

// The workspace's own credential is used before the organization's, and
// credential_access policies can narrow that choice.
func TestCredentialChoice(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		own := providerstest.NewOpenAI(t, "sk-workspace-openai-0123456789")
		wsCred := e.credential(t, &e.org.ID, &e.ws, "openai", own.Key, own.BaseURL())
		e.sync(t)
		body := `{"model":"` + gptMini + `","messages":[{"role":"user","content":"hi"}]}`
		if resp := e.post(t, body); resp.StatusCode != http.StatusOK {
			t.Fatalf("%d", resp.StatusCode)
		}
		if len(own.Requests()) != 1 || len(e.openai.Requests()) != 0 {
			t.Fatal("the workspace credential was not preferred")
		}
		if ev := e.usage.last(t, 1); *ev.ProviderCredentialID != wsCred {
			t.Fatalf("event credential %v", ev.ProviderCredentialID)
		}

		e.policy(t, rule(all, `{"kind":"credential_access","scopes":["org","platform"]}`))
		e.sync(t)
		if resp := e.post(t, body); resp.StatusCode != http.StatusOK {
			t.Fatalf("%d", resp.StatusCode)
		}
		if len(e.openai.Requests()) != 1 {
			t.Fatal("credential_access did not move the request to the organization's credential")
		}
		if ev := e.usage.last(t, 2); *ev.ProviderCredentialID != e.openaiCred {
			t.Fatalf("event credential %v", ev.ProviderCredentialID)
		}
	})
}

// A provider's answer about gw's credential, which quotes the secret, is
// neither passed on nor logged.
func TestSecretsStayOutOfAnswersAndLogs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		// Same URL as the working credential, but a secret the fake
		// refuses and quotes back.
		wrong := "sk-wrong-0123456789abcdef"
		e.credential(t, &e.org.ID, &e.ws, "openai", wrong, e.openai.BaseURL())
		e.sync(t)
		got := e.postError(t, `{"model":"`+gptMini+`","messages":[{"role":"user","content":"hi"}]}`, http.StatusBadGateway)
		if code(got) != "upstream_auth_failed" {
			t.Fatalf("refused credential: %+v", got)
		}
		if !strings.Contains(e.log.String(), "unauthorized") {
			t.Fatalf("the refusal was not logged:\n%s", e.log.String())
		}
		// infEnv's cleanup checks the log for every secret, this one too.
	})
}

// Chat completions read the admitted bundle and memory only: with the
// database closed they work as before; the usage sink buffers.
func TestChatCompletionsWithTheDatabaseClosed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.policy(t, rule(all, `{"kind":"request_limits","max_output_tokens":64}`),
			rule(all, `{"kind":"fallback","models":["`+haiku+`"],"on":["upstream_unavailable"],"max_attempts":2,"timeout_ms":5000}`))
		e.sync(t)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		e.openai.Enqueue(providerstest.Reply{Status: http.StatusServiceUnavailable})
		got, err := e.sdk().Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: gptMini, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		})
		if err != nil || got.Model != haiku {
			t.Fatalf("with the database closed: %v %+v", err, got)
		}
		if e.anthropic.Last(t).Body["max_tokens"] != 64.0 {
			t.Fatal("limit not applied")
		}
		if ev := e.usage.last(t, 1); ev.Status != "ok" {
			t.Fatalf("event %+v", ev)
		}
	})
}

func TestChatCompletionsRefusals(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.sync(t)
		req := func(method, token, body string) *http.Response {
			r, _ := http.NewRequest(method, e.srv.URL+"/inf/v1/chat/completions", strings.NewReader(body))
			if token != "" {
				r.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp
		}
		ok := `{"model":"` + gptMini + `","messages":[{"role":"user","content":"hi"}]}`
		if resp := req(http.MethodPost, "", ok); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("no key: %d", resp.StatusCode)
		}
		if resp := req(http.MethodPost, "sk-gw-unknown", ok); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("unknown key: %d", resp.StatusCode)
		}
		if resp := req(http.MethodGet, e.token, ""); resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
			t.Fatalf("GET: %d", resp.StatusCode)
		}
		got := e.postError(t, `{"model":`, http.StatusBadRequest)
		if code(got) != "invalid_json" {
			t.Fatalf("bad JSON: %+v", got)
		}
		got = e.postError(t, `{"model":"`+gptMini+`","messages":[{"role":"wizard","content":"hi"}]}`, http.StatusBadRequest)
		if param(got) != "messages[0].role" {
			t.Fatalf("bad role: %+v", got)
		}
		// None of these got as far as a model: no usage.
		if resp := e.post(t, ok); resp.StatusCode != http.StatusOK {
			t.Fatalf("ok: %d", resp.StatusCode)
		}
		e.usage.wait(t, 1)

		// A plane without a keyring or a usage sink serves discovery only.
		signer, err := publish.SigningKey(context.Background(), e.st, e.kr)
		if err != nil {
			t.Fatal(err)
		}
		bare := dataplane.NewPlane(signer.Public().(ed25519.PublicKey), dataplane.Options{})
		refresh := &publish.Refresher{Compiler: &publish.Compiler{Store: e.st, Signer: signer}, Plane: bare, Store: e.st}
		if err := refresh.RefreshAll(context.Background()); err != nil {
			t.Fatal(err)
		}
		r := httptestRequest(http.MethodPost, "/inf/v1/chat/completions", e.token, ok)
		if w := serveRecorded(bare, r); w.Code != http.StatusServiceUnavailable {
			t.Fatalf("bare plane: %d", w.Code)
		}
		if w := serveRecorded(bare, httptestRequest(http.MethodGet, "/inf/v1/models/"+gptMini, e.token, "")); w.Code != http.StatusOK {
			t.Fatalf("bare plane discovery: %d", w.Code)
		}
	})
}

// Usage is priced exactly from the catalog: 1234 input and 567 output
// tokens (plus cache reads and writes) at the model's prices, as a decimal
// with no rounding beyond the nano-dollar. The in-process sink stores it.
func TestUsageCostIsExact(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		sink := usage.NewStoreSink(e.st, usage.StoreSinkOptions{FlushInterval: time.Hour})
		e.usage.forward = sink
		e.sync(t)
		for _, tc := range []struct {
			model string
			usage providerstest.Usage
			// gpt-4o-mini: 0.15 in, 0.60 out, 0.075 cache read per MTok.
			// claude-haiku-4-5: 1 in, 5 out, 0.10 read, 1.25 write.
			cost string
		}{
			{gptMini, providerstest.Usage{Input: 1234, Output: 567}, "0.0005253"},
			{gptMini, providerstest.Usage{Input: 1234, Output: 567, CacheRead: 100}, "0.0005328"},
			{haiku, providerstest.Usage{Input: 1234, Output: 567, CacheRead: 100, CacheWrite: 50}, "0.0041415"},
			// One cached token at 0.075/MTok: 75 nano-dollars.
			{gptMini, providerstest.Usage{CacheRead: 1}, "0.000000075"},
			{gptMini, providerstest.Usage{Input: 3, Output: 0}, "0.00000045"},
		} {
			if tc.model == haiku {
				e.anthropic.Enqueue(providerstest.Reply{Text: "x", Usage: tc.usage})
			} else {
				e.openai.Enqueue(providerstest.Reply{Text: "x", Usage: tc.usage})
			}
			before := len(e.usage.snapshot())
			if resp := e.post(t, `{"model":"`+tc.model+`","messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != http.StatusOK {
				t.Fatalf("%d", resp.StatusCode)
			}
			ev := e.usage.last(t, before+1)
			if ev.CostUSD != tc.cost || ev.InputTokens != tc.usage.Input || ev.OutputTokens != tc.usage.Output ||
				ev.CacheReadTokens != tc.usage.CacheRead || ev.CacheWriteTokens != tc.usage.CacheWrite {
				t.Fatalf("%s %+v: event %+v, want cost %s", tc.model, tc.usage, ev, tc.cost)
			}
		}
		if err := sink.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		rows, _, err := e.st.ListUsageEvents(context.Background(), store.UsageFilter{OrgID: e.org.ID}, pageOf(100))
		if err != nil {
			t.Fatal(err)
		}
		var costs []int64
		for _, r := range rows {
			costs = append(costs, r.CostNanoUSD)
		}
		slices.Sort(costs)
		if want := []int64{75, 450, 525300, 532800, 4141500}; !slices.Equal(costs, want) {
			t.Fatalf("stored costs %v, want %v", costs, want)
		}
	})
}

// The sink batches: nothing reaches the database until the interval, a
// full batch or Close.
func TestStoreSinkBatches(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.sync(t)
		sink := usage.NewStoreSink(e.st, usage.StoreSinkOptions{FlushInterval: time.Hour, BatchSize: 3})
		ev := usageEvent(e)
		count := func() int {
			rows, _, err := e.st.ListUsageEvents(context.Background(), store.UsageFilter{OrgID: e.org.ID}, pageOf(100))
			if err != nil {
				t.Fatal(err)
			}
			return len(rows)
		}
		sink.Record(ev())
		sink.Record(ev())
		if n := count(); n != 0 {
			t.Fatalf("%d events stored before a batch was full", n)
		}
		sink.Record(ev())
		deadline := time.Now().Add(5 * time.Second)
		for count() != 3 {
			if time.Now().After(deadline) {
				t.Fatal("a full batch was not written")
			}
			time.Sleep(10 * time.Millisecond)
		}
		sink.Record(ev())
		if err := sink.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := count(); n != 4 {
			t.Fatalf("%d events after Close, want 4", n)
		}
	})
}

func pageOf(n int) store.PageQuery { return store.PageQuery{Limit: n} }

// usageEvent returns a maker of valid events of e's key.
func usageEvent(e *infEnv) func() wire.UsageEventIn {
	return func() wire.UsageEventIn {
		return wire.UsageEventIn{ID: uuid.New(), OrgID: e.org.ID, WorkspaceID: e.ws, InferenceKeyID: &e.keyID, OwnerID: &e.owner,
			Model: gptMini, Provider: "openai", InputTokens: 1, CostUSD: "0.00000015", Status: "ok", OccurredAt: time.Now().UTC()}
	}
}

func httptestRequest(method, path, token, body string) *http.Request {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+token)
	return r
}

func serveRecorded(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}
