package providers

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers/providerstest"
)

// pcUpstreams are fakes of each vendor, the adapters, and the call of a
// client's body in its dialect, as the data plane makes it: the chat hub
// (translated for Messages and Responses) and, for those, the native
// request.
type pcUpstreams struct {
	set *Set
	an  *providerstest.Anthropic
	oa  *providerstest.OpenAI
	br  *providerstest.Bedrock
	vx  *providerstest.Vertex
}

func newPCUpstreams(t *testing.T) *pcUpstreams {
	return &pcUpstreams{set: NewSet(nil), an: providerstest.NewAnthropic(t, "sk-ant"), oa: providerstest.NewOpenAI(t, "sk-oa"),
		br: providerstest.NewBedrock(t, "us-east-1"), vx: providerstest.NewVertex(t, "proj", "us-east5")}
}

// send sends body, in dialect ("chat", "messages", "responses"), to model
// of kind, and returns the upstream request's body.
func (u *pcUpstreams) send(t *testing.T, kind catalog.Kind, model, dialect, body string, inject *PromptCacheInjection) map[string]any {
	t.Helper()
	chat := []byte(body)
	var native *NativeRequest
	switch dialect {
	case "messages", "responses":
		var err error
		if dialect == "messages" {
			chat, err = MessagesToChat(chat)
		} else {
			chat, err = ResponsesToChat(chat)
		}
		if err != nil {
			t.Fatal(err)
		}
		members, err := ParseObject([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		native = &NativeRequest{Body: []byte(body), Members: members}
	}
	req, err := ParseChatRequest(chat)
	if err != nil {
		t.Fatalf("%s: %v", chat, err)
	}
	call := &Call{Request: req, UpstreamModel: model, ResponseModel: "gw/" + model, DefaultMaxTokens: 1000, PromptCache: inject,
		Translated: dialect != "chat"}
	var up interface {
		Requests() []providerstest.Request
	}
	switch kind {
	case catalog.KindAnthropic:
		call.BaseURL, call.Secret, up = u.an.BaseURL(), "sk-ant", u.an
	case catalog.KindOpenAI, catalog.KindOpenAICompatible:
		call.BaseURL, call.Secret, up = u.oa.BaseURL(), "sk-oa", u.oa
	case catalog.KindBedrock:
		call.BaseURL, call.Secret, call.Settings, up = u.br.BaseURL(), u.br.Secret(), Settings{Region: "us-east-1"}, u.br
	case catalog.KindVertex:
		call.BaseURL, call.Secret, call.Settings, up = u.vx.BaseURL(), u.vx.ServiceAccount(),
			Settings{Project: "proj", Location: "us-east5", TokenURL: u.vx.TokenURL()}, u.vx
	}
	a, ok := u.set.For(kind)
	if !ok {
		t.Fatalf("no adapter for %s", kind)
	}
	if dialect != "chat" {
		// The data plane's choice: an upstream speaking the client's
		// dialect gets its request as sent.
		if na, ok := u.set.Native(dialect, kind, model); ok {
			a, call.Native = na, native
		}
	}
	if err := a.Check(call, false); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Complete(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	reqs := up.Requests()
	return reqs[len(reqs)-1].Body
}

// at walks a decoded JSON value by member names and array indexes.
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: %v is not an object", path, v)
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) || k < -len(a) {
				t.Fatalf("at %v: %v has no element %d", path, v, k)
			}
			if k < 0 {
				k += len(a)
			}
			v = a[k]
		}
	}
	return v
}

func wantJSON(t *testing.T, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Fatalf("got  %s\nwant %s", g, want)
	}
}

// countMember counts the objects in v holding member name.
func countMember(v any, name string) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v[name]; ok {
			n++
		}
		for _, e := range v {
			n += countMember(e, name)
		}
	case []any:
		for _, e := range v {
			n += countMember(e, name)
		}
	}
	return n
}

const chatMarked = `{"model":"m","max_tokens":50,"messages":[
	{"role":"system","content":[{"type":"text","text":"You are a careful agent.","prompt_cache_breakpoint":{"mode":"explicit"}}]},
	{"role":"user","content":[{"type":"text","text":"Read the file.","prompt_cache_breakpoint":{"mode":"explicit"}}]},
	{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{}"}}]},
	{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"contents","prompt_cache_breakpoint":{"mode":"explicit"}}]},
	{"role":"user","content":"Now summarise."}],
	"tools":[{"type":"function","function":{"name":"read","parameters":{"type":"object"}}}],
	"prompt_cache_options":{"mode":"implicit","ttl":"30m"}}`

// OpenAI's breakpoints, sent by a Chat Completions client, become
// Anthropic's cache_control on the system block, the user block and the
// tool result they end, on Anthropic's API and on Claude at Vertex AI.
func TestPromptCacheChatToAnthropic(t *testing.T) {
	u := newPCUpstreams(t)
	for _, kind := range []catalog.Kind{catalog.KindAnthropic, catalog.KindVertex} {
		got := u.send(t, kind, "claude-sonnet-4-5", "chat", chatMarked, nil)
		wantJSON(t, at(t, got, "system"), `[{"type":"text","text":"You are a careful agent.","cache_control":{"type":"ephemeral"}}]`)
		wantJSON(t, at(t, got, "messages", 0, "content", 0), `{"type":"text","text":"Read the file.","cache_control":{"type":"ephemeral"}}`)
		wantJSON(t, at(t, got, "messages", 2, "content", 0),
			`{"type":"tool_result","tool_use_id":"c1","content":[{"type":"text","text":"contents"}],"cache_control":{"type":"ephemeral"}}`)
		if n := countMember(got, "cache_control"); n != 3 {
			t.Errorf("%s: %d cache_control markers, want 3", kind, n)
		}
		if _, ok := got["prompt_cache_options"]; ok {
			t.Errorf("%s: prompt_cache_options sent to Anthropic", kind)
		}
	}
}

// Six breakpoints reach Anthropic as its four, the last four: the longest
// prefixes.
func TestPromptCacheAnthropicKeepsTheLastFour(t *testing.T) {
	u := newPCUpstreams(t)
	var msgs []string
	for i := range 6 {
		msgs = append(msgs, `{"role":"user","content":[{"type":"text","text":"turn `+string(rune('a'+i))+`","prompt_cache_breakpoint":{"mode":"explicit"}}]}`,
			`{"role":"assistant","content":"ok"}`)
	}
	body := `{"model":"m","messages":[` + strings.Join(msgs, ",") + `,{"role":"user","content":"go"}]}`
	got := u.send(t, catalog.KindAnthropic, "claude-sonnet-4-5", "chat", body, nil)
	if n := countMember(got, "cache_control"); n != 4 {
		t.Fatalf("%d cache_control markers, want 4", n)
	}
	if at(t, got, "messages", 0, "content", 0, "cache_control") != nil || at(t, got, "messages", 2, "content", 0, "cache_control") != nil {
		t.Error("the first two breakpoints were kept, not the last four")
	}
	if at(t, got, "messages", 10, "content", 0, "cache_control") == nil {
		t.Error("the last breakpoint was dropped")
	}
}

// On Bedrock's Converse a breakpoint is a cachePoint block after what it
// closes, for the families that cache (Claude, Nova); another family gets
// none rather than a ValidationException.
func TestPromptCacheChatToConverse(t *testing.T) {
	u := newPCUpstreams(t)
	got := u.send(t, catalog.KindBedrock, "global.anthropic.claude-sonnet-4-5-20250929-v1:0", "chat", chatMarked, nil)
	wantJSON(t, at(t, got, "system"), `[{"text":"You are a careful agent."},{"cachePoint":{"type":"default"}}]`)
	wantJSON(t, at(t, got, "messages", 0, "content"), `[{"text":"Read the file."},{"cachePoint":{"type":"default"}}]`)
	wantJSON(t, at(t, got, "messages", 2, "content", 1), `{"cachePoint":{"type":"default"}}`)
	if n := countMember(got, "cachePoint"); n != 3 {
		t.Errorf("%d cache points, want 3", n)
	}
	got = u.send(t, catalog.KindBedrock, "meta.llama3-70b-instruct-v1:0", "chat", chatMarked, nil)
	if n := countMember(got, "cachePoint"); n != 0 {
		t.Errorf("Llama on Bedrock got %d cache points, want none", n)
	}
}

const messagesMarked = `{"model":"m","max_tokens":50,
	"system":[{"type":"text","text":"Rules."},{"type":"text","text":"Long stable prompt.","cache_control":{"type":"ephemeral","ttl":"1h"}}],
	"tools":[{"name":"read","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}],
	"messages":[
	{"role":"user","content":[{"type":"text","text":"Read it.","cache_control":{"type":"ephemeral"}}]},
	{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"read","input":{}}]},
	{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"data","cache_control":{"type":"ephemeral"}},{"type":"text","text":"Go on."}]}]}`

// Anthropic's cache_control, from a Messages client, becomes OpenAI's
// prompt_cache_breakpoint on the parts it ends, for a model of the GPT-5.6
// family; an older model and a look-alike server get none (they answer
// the member with a 400).
func TestPromptCacheMessagesToOpenAI(t *testing.T) {
	u := newPCUpstreams(t)
	got := u.send(t, catalog.KindOpenAI, "gpt-5.6", "messages", messagesMarked, nil)
	bp := `{"mode":"explicit"}`
	wantJSON(t, at(t, got, "messages", 0), `{"role":"system","content":[{"type":"text","text":"Rules."},
		{"type":"text","text":"Long stable prompt.","prompt_cache_breakpoint":`+bp+`}]}`)
	wantJSON(t, at(t, got, "messages", 1, "content", 0), `{"type":"text","text":"Read it.","prompt_cache_breakpoint":`+bp+`}`)
	wantJSON(t, at(t, got, "messages", 3), `{"role":"tool","tool_call_id":"t1","content":[{"type":"text","text":"data","prompt_cache_breakpoint":`+bp+`}]}`)
	if n := countMember(got, "prompt_cache_breakpoint"); n != 3 {
		t.Errorf("%d breakpoints, want 3 (the tool's has no OpenAI place)", n)
	}
	for _, c := range []struct {
		kind  catalog.Kind
		model string
	}{{catalog.KindOpenAI, "gpt-4o"}, {catalog.KindOpenAI, "gpt-5.5"}, {catalog.KindOpenAICompatible, "gpt-5.6"}} {
		got := u.send(t, c.kind, c.model, "messages", messagesMarked, nil)
		if n := countMember(got, "prompt_cache_breakpoint"); n != 0 {
			t.Errorf("%s %s: %d breakpoints sent, want none", c.kind, c.model, n)
		}
		if at(t, got, "messages", 1, "content", 0, "text") != "Read it." {
			t.Errorf("%s %s: the content was changed: %v", c.kind, c.model, got)
		}
	}
}

// A Responses client's breakpoints and prompt_cache_options travel on the
// hub: cache_control for Claude, cache points for Converse.
func TestPromptCacheResponsesToAnthropicAndConverse(t *testing.T) {
	u := newPCUpstreams(t)
	body := `{"model":"m","instructions":"Be exact.","max_output_tokens":50,"prompt_cache_options":{"mode":"explicit"},
		"input":[{"role":"user","content":[{"type":"input_text","text":"Long document.","prompt_cache_breakpoint":{"mode":"explicit"}},
		{"type":"input_text","text":"Question?"}]}]}`
	got := u.send(t, catalog.KindAnthropic, "claude-sonnet-4-5", "responses", body, nil)
	wantJSON(t, at(t, got, "messages", 0, "content"), `[{"type":"text","text":"Long document.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"Question?"}]`)
	got = u.send(t, catalog.KindBedrock, "us.amazon.nova-lite-v1:0", "responses", body, nil)
	wantJSON(t, at(t, got, "messages", 0, "content"), `[{"text":"Long document."},{"cachePoint":{"type":"default"}},{"text":"Question?"}]`)
}

// The workspace's injection marks the end of the tools and of the system
// prompt when the caller marked nothing and that prefix is long enough:
// translated for Anthropic and Converse, written over a Messages request
// forwarded as sent; never beside a caller's own marker, never on a short
// prefix.
func TestPromptCacheInjection(t *testing.T) {
	u := newPCUpstreams(t)
	long := strings.Repeat("Follow the house style in every answer. ", 60)
	inject := &PromptCacheInjection{MinPrefixTokens: 200}
	chat := `{"model":"m","max_tokens":50,"messages":[{"role":"system","content":"` + long + `"},{"role":"user","content":"hi"}],
		"tools":[{"type":"function","function":{"name":"a","parameters":{"type":"object"}}},{"type":"function","function":{"name":"b","parameters":{"type":"object"}}}]}`

	got := u.send(t, catalog.KindAnthropic, "claude-sonnet-4-5", "chat", chat, inject)
	wantJSON(t, at(t, got, "tools", 1, "cache_control"), `{"type":"ephemeral"}`)
	wantJSON(t, at(t, got, "system", -1, "cache_control"), `{"type":"ephemeral"}`)
	if n := countMember(got, "cache_control"); n != 2 {
		t.Errorf("%d markers injected, want 2", n)
	}

	got = u.send(t, catalog.KindBedrock, "global.anthropic.claude-sonnet-4-5-20250929-v1:0", "chat", chat, inject)
	wantJSON(t, at(t, got, "toolConfig", "tools", -1), `{"cachePoint":{"type":"default"}}`)
	wantJSON(t, at(t, got, "system", -1), `{"cachePoint":{"type":"default"}}`)

	messages := `{"model":"m","max_tokens":50,"system":"` + long + `","tools":[{"name":"a","input_schema":{"type":"object"}}],
		"messages":[{"role":"user","content":"hi"}]}`
	for _, kind := range []catalog.Kind{catalog.KindAnthropic, catalog.KindVertex} {
		got = u.send(t, kind, "claude-sonnet-4-5", "messages", messages, inject)
		wantJSON(t, at(t, got, "system"), `[{"type":"text","text":"`+long+`","cache_control":{"type":"ephemeral"}}]`)
		wantJSON(t, at(t, got, "tools", 0, "cache_control"), `{"type":"ephemeral"}`)
	}

	// Not on a short prefix, not beside the caller's own markers, not
	// without the setting.
	short := strings.Replace(chat, long, "Be brief.", 1)
	for name, c := range map[string]struct {
		body   string
		inject *PromptCacheInjection
		want   int
	}{"short": {short, inject, 0}, "off": {chat, nil, 0}, "caller's own": {chatMarked, inject, 3}} {
		got := u.send(t, catalog.KindAnthropic, "claude-sonnet-4-5", "chat", c.body, c.inject)
		if n := countMember(got, "cache_control"); n != c.want {
			t.Errorf("%s: %d markers, want %d", name, n, c.want)
		}
	}
	got = u.send(t, catalog.KindAnthropic, "claude-sonnet-4-5", "messages", messagesMarked, inject)
	if n := countMember(got, "cache_control"); n != 4 {
		t.Errorf("a Messages request with its own markers got %d, want its 4 as sent", n)
	}
}

func TestOpenAIBreakpointFamilies(t *testing.T) {
	for model, want := range map[string]bool{
		"gpt-5.6": true, "gpt-5.6-sol": true, "gpt-5.10": true, "gpt-6.1-sol": true, "gpt-6": true, "gpt-10": true,
		"gpt-5.5": false, "gpt-5": false, "gpt-5-mini": false, "gpt-4o": false, "o3": false, "gpt-": false,
	} {
		if got := openAIBreakpoints(DialectOpenAI, model); got != want {
			t.Errorf("%s: %v, want %v", model, got, want)
		}
	}
	if openAIBreakpoints(DialectCompatible, "gpt-5.6") {
		t.Error("a look-alike server was sent breakpoints")
	}
}
