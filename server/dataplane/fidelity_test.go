package dataplane_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// codexTools is Codex 0.169's additional_tools input item as it sends it
// for a model it does not know (captured from the real client): its shell
// behind a custom tool of a Lark grammar, functions and other namespaces.
const codexTools = `{"type":"additional_tools","id":"at_1","role":"developer","tools":[` +
	`{"type":"namespace","name":"functions","description":"","tools":[` +
	`{"type":"custom","name":"exec","description":"Run JavaScript code","format":{"type":"grammar","syntax":"lark","definition":"start: SOURCE\nSOURCE: /[\\s\\S]+/\n"}},` +
	`{"type":"function","name":"wait","strict":false,"parameters":{"type":"object","properties":{"cell_id":{"type":"string"}},"additionalProperties":false}}]},` +
	`{"type":"namespace","name":"clock","description":"Tools for time.","tools":[` +
	`{"type":"function","name":"sleep","strict":false,"parameters":{"type":"object","properties":{"duration_ms":{"type":"number"}},"required":["duration_ms"]}},` +
	`{"type":"web_search"}]}]}`

// Issue 35, first row: Codex's namespaced tools reach upstreams that
// cannot take namespaces as plain functions, its custom tool as a function
// of one string argument whose calls come back as custom_tool_call items;
// a tool that cannot be expressed (hosted) is named, never silently lost.
func TestCodexNamespacedTools(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		// An OpenAI-compatible upstream (Chat Completions only) and an
		// Anthropic one.
		e.credential(t, &e.org.ID, nil, "groq", e.openai.Key, e.openai.BaseURL())
		e.sync(t)
		const oss = "groq/openai/gpt-oss-120b"
		for _, model := range []string{haiku, oss} {
			var up upstreamFake = e.anthropic
			if model == oss {
				up = e.openai
			}
			call := providerstest.Reply{ToolCalls: []providerstest.ToolCall{{ID: "call_1", Name: "exec", Arguments: `{"input":"ls -la"}`}},
				Usage: providerstest.Usage{Input: 9, Output: 2}}
			req := `{"model":"` + model + `","input":[` + codexTools + `,{"role":"user","content":"list the files"}]}`
			up.Enqueue(call)
			resp := e.postTo(t, "/inf/v1/responses", req)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || resp.Header.Get("X-Gw-Translated-Tools") != "functions, clock, exec" ||
				resp.Header.Get("X-Gw-Dropped-Tools") != "web_search" {
				t.Fatalf("%s: %d translated %q dropped %q %s", model, resp.StatusCode, resp.Header.Get("X-Gw-Translated-Tools"),
					resp.Header.Get("X-Gw-Dropped-Tools"), b)
			}
			tools, _ := json.Marshal(up.Last(t).Body["tools"])
			for _, want := range []string{`"exec"`, `"wait"`, `"sleep"`, `"input"`, "lark grammar"} {
				if !strings.Contains(string(tools), want) {
					t.Fatalf("%s: tools sent lack %s: %s", model, want, tools)
				}
			}
			if strings.Contains(string(tools), "namespace") || strings.Contains(string(tools), "web_search") {
				t.Fatalf("%s: tools sent %s", model, tools)
			}
			var answer struct {
				Output []map[string]any `json:"output"`
			}
			if json.Unmarshal(b, &answer) != nil || len(answer.Output) != 1 || answer.Output[0]["type"] != "custom_tool_call" ||
				answer.Output[0]["input"] != "ls -la" || answer.Output[0]["name"] != "exec" || answer.Output[0]["call_id"] != "call_1" {
				t.Fatalf("%s: answer %s", model, b)
			}

			// The next turn carries the call and its output back.
			up.Enqueue(providerstest.Reply{Text: "two files", Usage: providerstest.Usage{Input: 20, Output: 2}})
			next := `{"model":"` + model + `","input":[` + codexTools + `,{"role":"user","content":"list the files"},` +
				`{"type":"custom_tool_call","call_id":"call_1","name":"exec","input":"ls -la"},` +
				`{"type":"custom_tool_call_output","call_id":"call_1","output":"a.txt b.txt"}]}`
			resp = e.postTo(t, "/inf/v1/responses", next)
			b, _ = io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || !strings.Contains(string(b), "two files") {
				t.Fatalf("%s: second turn %d %s", model, resp.StatusCode, b)
			}
			sent := string(up.Last(t).Raw)
			if !strings.Contains(sent, "a.txt b.txt") || !strings.Contains(sent, `ls -la`) || !strings.Contains(sent, "call_1") {
				t.Fatalf("%s: second turn sent %s", model, sent)
			}

			// Streamed: the call is a custom_tool_call with its input.
			up.Enqueue(call)
			resp = e.postTo(t, "/inf/v1/responses", strings.Replace(req, `"input":[`, `"stream":true,"input":[`, 1))
			events := strings.Join(readSSE(t, resp.Body), "\n")
			if !strings.Contains(events, `"type":"response.custom_tool_call_input.done"`) || !strings.Contains(events, `"input":"ls -la"`) ||
				strings.Contains(events, "function_call_arguments") {
				t.Fatalf("%s: stream %s", model, events)
			}
		}
	})
}

// upstreamFake is a fake upstream of any kind.
type upstreamFake interface {
	Enqueue(replies ...providerstest.Reply)
	Last(t testing.TB) providerstest.Request
}

// Issue 35, second row: output_config.format (where messages.parse sends
// the schema since 2026) reaches an OpenAI-kind model as a json_schema
// response_format, as the older output_format does.
func TestMessagesOutputConfigFormat(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.sync(t)
		schema := `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`
		for _, member := range []string{`"output_config":{"format":{"type":"json_schema","schema":` + schema + `}}`,
			`"output_format":{"type":"json_schema","schema":` + schema + `}`} {
			e.openai.Enqueue(providerstest.Reply{Text: `{"city":"Paris"}`, Usage: providerstest.Usage{Input: 9, Output: 5}})
			resp := e.postTo(t, "/inf/v1/messages", `{"model":"`+gptMini+`","max_tokens":100,"messages":[{"role":"user","content":"capital of France?"}],`+member+`}`)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || !strings.Contains(string(b), `{\"city\":\"Paris\"}`) {
				t.Fatalf("%s: %d %s", member, resp.StatusCode, b)
			}
			rf, _ := json.Marshal(e.openai.Last(t).Body["response_format"])
			if !strings.Contains(string(rf), `"type":"json_schema"`) || !strings.Contains(string(rf), `"city"`) {
				t.Fatalf("%s: response_format sent %s", member, rf)
			}
		}
	})
}

// Issue 35, third row: a reasoning effort of none or minimal on a model
// that does not reason is left out and named in x-gw-dropped-params, on
// Responses (forwarded natively) and Chat alike; a real effort is still
// refused, and so is every effort under strict_parameters.
func TestLowEffortOnModelWithoutReasoning(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.sync(t)
		ok := providerstest.Reply{Text: "done", Usage: providerstest.Usage{Input: 9, Output: 2}}
		type tc struct{ path, body, param, member string }
		cases := func(effort string) []tc {
			return []tc{
				{"/inf/v1/responses", `{"model":"` + gptMini + `","input":"hi","reasoning":{"effort":"` + effort + `"}}`, "reasoning", `"reasoning"`},
				{"/inf/v1/chat/completions", `{"model":"` + gptMini + `","messages":[{"role":"user","content":"hi"}],"reasoning_effort":"` + effort + `"}`, "reasoning_effort", `"reasoning_effort"`},
			}
		}
		for _, effort := range []string{"none", "minimal"} {
			for _, c := range cases(effort) {
				e.openai.Enqueue(ok)
				resp := e.postTo(t, c.path, c.body)
				b, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != 200 || resp.Header.Get("X-Gw-Dropped-Params") != c.param {
					t.Fatalf("%s %s: %d %q %s", c.path, effort, resp.StatusCode, resp.Header.Get("X-Gw-Dropped-Params"), b)
				}
				if sent := string(e.openai.Last(t).Raw); strings.Contains(sent, c.member) || !strings.Contains(sent, `"hi"`) {
					t.Fatalf("%s %s: sent %s", c.path, effort, sent)
				}
			}
		}
		for _, c := range cases("high") {
			resp := e.postTo(t, c.path, c.body)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 400 || !strings.Contains(string(b), "unsupported_capability") || resp.Header.Get("X-Gw-Dropped-Params") != "" {
				t.Fatalf("%s high: %d %s", c.path, resp.StatusCode, b)
			}
		}
		e.policy(t, rule(all, `{"kind":"strict_parameters"}`))
		e.sync(t)
		for _, c := range cases("none") {
			resp := e.postTo(t, c.path, c.body)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 400 || !strings.Contains(string(b), "unsupported_capability") {
				t.Fatalf("%s strict: %d %s", c.path, resp.StatusCode, b)
			}
		}
	})
}

// Issue 35, fourth row: errors in the caller's dialect everywhere. A
// request that speaks Anthropic (anthropic-version, or its key in
// x-api-key) gets Anthropic's error shape on a path no endpoint serves and
// on discovery, which both dialects share; an OpenAI caller keeps OpenAI's.
func TestErrorShapePerDialect(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.sync(t)
		type tc struct {
			method, path, keyHeader string
			version, anthropic      bool
		}
		for _, c := range []tc{
			{"POST", "/inf/v1/complete", "X-Api-Key", false, true},
			{"POST", "/inf/v1/complete", "X-Api-Key", true, true},
			{"GET", "/inf/v1/models/openai/no-such-model", "X-Api-Key", true, true},
			{"POST", "/inf/v1/models", "X-Api-Key", true, true},
			{"GET", "/inf/v1/models/openai/no-such-model", "Authorization", false, false},
			{"POST", "/inf/v1/complete", "Authorization", false, false},
		} {
			req, _ := http.NewRequest(c.method, e.srv.URL+c.path, nil)
			if c.keyHeader == "X-Api-Key" {
				req.Header.Set("X-Api-Key", e.token)
			} else {
				req.Header.Set("Authorization", "Bearer "+e.token)
			}
			if c.version {
				req.Header.Set("Anthropic-Version", "2023-06-01")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			isAnthropic := strings.HasPrefix(string(b), `{"type":"error","error":{"type":"`)
			if resp.StatusCode < 400 || isAnthropic != c.anthropic || (!c.anthropic && !strings.Contains(string(b), `"code":`)) {
				t.Fatalf("%+v: %d %s", c, resp.StatusCode, b)
			}
		}
	})
}

// Issue 35, seventh row: every answer says what it cost, the settled cost
// of its usage event: X-Gw-Cost-Usd on a whole answer, an SSE comment
// ": gw-cost-usd X" at a stream's end (before [DONE] on Chat Completions,
// after the last event on Responses and Messages), in every dialect.
func TestCostOnEveryAnswer(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.sync(t)
		type tc struct {
			path, body string
			up         upstreamFake
		}
		cases := []tc{
			{"/inf/v1/chat/completions", `{"model":"` + gptMini + `","messages":[{"role":"user","content":"hi"}]}`, e.openai},
			{"/inf/v1/responses", `{"model":"` + gptMini + `","input":"hi"}`, e.openai},
			{"/inf/v1/responses", `{"model":"` + haiku + `","input":"hi"}`, e.anthropic},
			{"/inf/v1/messages", `{"model":"` + haiku + `","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`, e.anthropic},
			{"/inf/v1/messages", `{"model":"` + gptMini + `","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`, e.openai},
		}
		for _, c := range cases {
			for _, stream := range []bool{false, true} {
				c.up.Enqueue(providerstest.Reply{Text: "hello", Usage: providerstest.Usage{Input: 1000, Output: 500}})
				body := c.body
				if stream {
					body = strings.Replace(body, `{`, `{"stream":true,`, 1)
				}
				resp := e.postTo(t, c.path, body)
				b, _ := io.ReadAll(resp.Body)
				ev := e.usage.last(t, len(e.usage.snapshot()))
				if resp.StatusCode != 200 || ev.CostUSD == "" || ev.CostUSD == "0" {
					t.Fatalf("%s stream %v: %d cost %q %s", c.body, stream, resp.StatusCode, ev.CostUSD, b)
				}
				if !stream {
					if got := resp.Header.Get("X-Gw-Cost-Usd"); got != ev.CostUSD {
						t.Fatalf("%s: X-Gw-Cost-Usd %q, event %q", c.body, got, ev.CostUSD)
					}
					continue
				}
				text := strings.TrimRight(string(b), "\n")
				comment := ": gw-cost-usd " + ev.CostUSD
				if strings.HasSuffix(text, "data: [DONE]") {
					text = strings.TrimRight(strings.TrimSuffix(text, "data: [DONE]"), "\n")
				}
				if !strings.HasSuffix(text, comment) || strings.Count(string(b), "gw-cost-usd") != 1 {
					t.Fatalf("%s stream: want %q at the end: %s", c.body, comment, b)
				}
			}
		}
	})
}
