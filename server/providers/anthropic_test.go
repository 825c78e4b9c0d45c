package providers_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"

	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/providers/providerstest"
)

func anthropicAdapter() *providers.Anthropic {
	return &providers.Anthropic{Client: providers.NewHTTPClient()}
}

// jsonOf re-encodes a decoded value for comparisons written as JSON.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sameJSON(t *testing.T, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want %s: %v", want, err)
	}
	if !reflect.DeepEqual(got, w) {
		t.Fatalf("got  %s\nwant %s", jsonOf(t, got), want)
	}
}

func TestAnthropicTranslatesTheConversation(t *testing.T) {
	f := providerstest.NewAnthropic(t, secret)
	body := `{
		"model": "anthropic/claude",
		"messages": [
			{"role": "system", "content": "Be brief."},
			{"role": "developer", "content": [{"type": "text", "text": "Use metric units."}]},
			{"role": "user", "content": [
				{"type": "text", "text": "What is in these?"},
				{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
				{"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
				{"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "a.pdf"}}
			]},
			{"role": "assistant", "content": null, "tool_calls": [
				{"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}},
				{"id": "call_2", "type": "function", "function": {"name": "time", "arguments": ""}}
			]},
			{"role": "tool", "tool_call_id": "call_1", "content": "3 C"},
			{"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "noon"}]},
			{"role": "user", "content": "Thanks"}
		],
		"tools": [{"type": "function", "function": {"name": "weather", "description": "Weather now", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
		          {"type": "function", "function": {"name": "time"}}],
		"tool_choice": "required",
		"parallel_tool_calls": false,
		"temperature": 0.5,
		"top_p": 0.9,
		"stop": "END",
		"user": "u-1",
		"seed": 7
	}`
	if _, err := anthropicAdapter().Complete(context.Background(), call(t, f.BaseURL(), body)); err != nil {
		t.Fatal(err)
	}
	got := f.Last(t)
	if got.Header.Get("X-Api-Key") != secret || got.Header.Get("Anthropic-Version") != "2023-06-01" || got.Header.Get("Authorization") != "" {
		t.Fatalf("headers %v", got.Header)
	}
	sameJSON(t, got.Body, `{
		"model": "up-model",
		"max_tokens": 1000,
		"system": [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Use metric units."}],
		"messages": [
			{"role": "user", "content": [
				{"type": "text", "text": "What is in these?"},
				{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
				{"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
				{"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}}
			]},
			{"role": "assistant", "content": [
				{"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Oslo"}},
				{"type": "tool_use", "id": "call_2", "name": "time", "input": {}}
			]},
			{"role": "user", "content": [
				{"type": "tool_result", "tool_use_id": "call_1", "content": "3 C"},
				{"type": "tool_result", "tool_use_id": "call_2", "content": [{"type": "text", "text": "noon"}]},
				{"type": "text", "text": "Thanks"}
			]}
		],
		"temperature": 0.5,
		"top_p": 0.9,
		"stop_sequences": ["END"],
		"tools": [
			{"name": "weather", "description": "Weather now", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}},
			{"name": "time", "input_schema": {"type": "object", "properties": {}}}
		],
		"tool_choice": {"type": "any", "disable_parallel_tool_use": true},
		"metadata": {"user_id": "u-1"}
	}`)
}

func TestAnthropicStructuredOutputAndReasoning(t *testing.T) {
	f := providerstest.NewAnthropic(t, secret)
	body := `{"model":"m","max_tokens":20000,"reasoning_effort":"medium","messages":[{"role":"user","content":"hi"}],
		"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"}}}}`
	if _, err := anthropicAdapter().Complete(context.Background(), call(t, f.BaseURL(), body)); err != nil {
		t.Fatal(err)
	}
	got := f.Last(t)
	if got.Header.Get("Anthropic-Beta") != "structured-outputs-2025-11-13" {
		t.Fatalf("beta header %q", got.Header.Get("Anthropic-Beta"))
	}
	sameJSON(t, got.Body["output_format"], `{"type":"json_schema","schema":{"type":"object"}}`)
	sameJSON(t, got.Body["thinking"], `{"type":"enabled","budget_tokens":8192}`)

	// The budget stays below max_tokens, and cannot go under 1024.
	c := call(t, f.BaseURL(), `{"model":"m","max_tokens":3000,"reasoning_effort":"high","messages":[{"role":"user","content":"hi"}]}`)
	if _, err := anthropicAdapter().Complete(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, f.Last(t).Body["thinking"], `{"type":"enabled","budget_tokens":2999}`)
	c = call(t, f.BaseURL(), `{"model":"m","max_tokens":1000,"reasoning_effort":"low","messages":[{"role":"user","content":"hi"}]}`)
	var inv *providers.InvalidRequestError
	if _, err := anthropicAdapter().Complete(context.Background(), c); !errors.As(err, &inv) || inv.Param != "max_tokens" {
		t.Fatalf("reasoning with max_tokens 1000: %v", err)
	}
}

func TestAnthropicCheck(t *testing.T) {
	a := anthropicAdapter()
	for _, tc := range []struct {
		body   string
		strict bool
		param  string // "" when the request is fine
	}{
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"seed":3}`, false, ""},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"seed":3}`, true, "seed"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"logprobs":false,"presence_penalty":0}`, true, ""},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"n":2}`, false, "n"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}}`, false, "response_format.type"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"x","format":"wav"}}]}]}`, false, "messages[0].content[0].type"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-1"}}]}]}`, false, "messages[0].content[0].file.file_id"},
		{`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`, false, "messages[0].tool_calls[0].function.arguments"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"functions":[{"name":"f"}]}`, false, "functions"},
	} {
		err := a.Check(&providers.Call{Request: parse(t, tc.body), DefaultMaxTokens: 4096}, tc.strict)
		var inv *providers.InvalidRequestError
		switch {
		case tc.param == "" && err != nil:
			t.Errorf("%s: %v", tc.body, err)
		case tc.param != "" && (!errors.As(err, &inv) || inv.Param != tc.param):
			t.Errorf("%s (strict %v): got %v, want a refusal of %s", tc.body, tc.strict, err, tc.param)
		}
	}
}

func TestAnthropicAnswersBecomeChatCompletions(t *testing.T) {
	f := providerstest.NewAnthropic(t, secret)
	f.Enqueue(providerstest.Reply{
		Text:      "Let me look.",
		ToolCalls: []providerstest.ToolCall{{ID: "toolu_1", Name: "weather", Arguments: `{"city": "Oslo"}`}},
		Usage:     providerstest.Usage{Input: 1234, Output: 567, CacheRead: 100, CacheWrite: 50},
	})
	got, err := anthropicAdapter().Complete(context.Background(), call(t, f.BaseURL(), `{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(got.Body, &out); err != nil {
		t.Fatal(err)
	}
	delete(out, "created")
	sameJSON(t, out, `{
		"id": "msg_fake", "object": "chat.completion", "model": "gw/model",
		"choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null, "message": {
			"role": "assistant", "content": "Let me look.", "refusal": null,
			"tool_calls": [{"id": "toolu_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}}]}}],
		"usage": {"prompt_tokens": 1384, "completion_tokens": 567, "total_tokens": 1951, "prompt_tokens_details": {"cached_tokens": 100},
			"completion_tokens_details": {"reasoning_tokens": 0}}
	}`)
	if want := (providers.Usage{InputTokens: 1234, OutputTokens: 567, CacheReadTokens: 100, CacheWriteTokens: 50, InputReported: true, OutputReported: true}); got.Usage != want {
		t.Fatalf("usage %+v", got.Usage)
	}
}

func TestAnthropicStreamBecomesChunks(t *testing.T) {
	f := providerstest.NewAnthropic(t, secret)
	for _, asked := range []bool{false, true} {
		f.Enqueue(providerstest.Reply{
			Text:      "Checking the weather.",
			ToolCalls: []providerstest.ToolCall{{ID: "toolu_1", Name: "weather", Arguments: `{"city":"Oslo"}`}, {ID: "toolu_2", Name: "time", Arguments: `{}`}},
			Usage:     providerstest.Usage{Input: 30, Output: 40, CacheRead: 5},
		})
		body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
		if asked {
			body = `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
		}
		s, err := anthropicAdapter().Stream(context.Background(), call(t, f.BaseURL(), body))
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := drain(t, s)
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		args := map[float64]string{}
		names := map[float64]string{}
		var finish any
		var usage any
		for _, c := range chunks {
			if c["id"] != "msg_fake" || c["object"] != "chat.completion.chunk" || c["model"] != "gw/model" {
				t.Fatalf("chunk %v", c)
			}
			usage = c["usage"]
			for _, ch := range c["choices"].([]any) {
				ch := ch.(map[string]any)
				d := ch["delta"].(map[string]any)
				if s, ok := d["content"].(string); ok {
					text.WriteString(s)
				}
				for _, tc := range asSlice(d["tool_calls"]) {
					tc := tc.(map[string]any)
					fn := tc["function"].(map[string]any)
					i := tc["index"].(float64)
					if n, ok := fn["name"].(string); ok {
						names[i] = n
					}
					args[i] += fn["arguments"].(string)
				}
				if ch["finish_reason"] != nil {
					finish = ch["finish_reason"]
				}
			}
		}
		if text.String() != "Checking the weather." || names[0] != "weather" || names[1] != "time" ||
			args[0] != `{"city":"Oslo"}` || args[1] != `{}` || finish != "tool_calls" {
			t.Fatalf("text %q, names %v, args %v, finish %v", text.String(), names, args, finish)
		}
		if asked {
			sameJSON(t, usage, `{"prompt_tokens":35,"completion_tokens":40,"total_tokens":75,"prompt_tokens_details":{"cached_tokens":5},`+
				`"completion_tokens_details":{"reasoning_tokens":0}}`)
		} else if usage != nil {
			t.Fatalf("usage chunk sent to a client that did not ask: %v", usage)
		}
		if want := (providers.Usage{InputTokens: 30, OutputTokens: 40, CacheReadTokens: 5, InputReported: true, OutputReported: true}); s.Usage() != want {
			t.Fatalf("usage %+v", s.Usage())
		}
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func TestAnthropicErrorsAreClassified(t *testing.T) {
	f := providerstest.NewAnthropic(t, secret)
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		status int
		kind   providers.ErrorKind
	}{
		{429, providers.RateLimited}, {529, providers.Unavailable}, {500, providers.Unavailable}, {400, providers.Rejected},
	} {
		f.Enqueue(providerstest.Reply{Status: tc.status, Message: "nope"})
		_, err := anthropicAdapter().Complete(context.Background(), call(t, f.BaseURL(), body))
		var e *providers.Error
		if !errors.As(err, &e) || e.Kind != tc.kind || e.Message != "nope" {
			t.Fatalf("status %d: %v", tc.status, err)
		}
	}
	c := call(t, f.BaseURL(), body)
	c.Secret = "sk-ant-wrong-key-0123456789"
	_, err := anthropicAdapter().Complete(context.Background(), c)
	var e *providers.Error
	if !errors.As(err, &e) || e.Kind != providers.Unauthorized || strings.Contains(err.Error(), c.Secret) {
		t.Fatalf("refused key: %v", err)
	}
	f.Enqueue(providerstest.Reply{Text: "some words here", BreakStream: true})
	s, err := anthropicAdapter().Stream(context.Background(), call(t, f.BaseURL(), `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drain(t, s); !errors.As(err, &e) || e.Kind != providers.Unavailable || e.Message != "Overloaded" {
		t.Fatalf("overloaded mid-stream: %v", err)
	}
}

// The fake speaks the Messages API as Anthropic's own SDK understands it,
// which is what makes the adapter tests against it mean something.
func TestAnthropicFakeSpeaksTheRealProtocol(t *testing.T) {
	f := providerstest.NewAnthropic(t, secret)
	client := anthropic.NewClient(anthropicoption.WithBaseURL(f.URL+"/"), anthropicoption.WithAPIKey(secret), anthropicoption.WithMaxRetries(0))
	params := anthropic.MessageNewParams{
		Model: "claude-test", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	}
	reply := providerstest.Reply{Text: "Hello, world.", Usage: providerstest.Usage{Input: 10, Output: 3, CacheRead: 2}}
	f.Enqueue(reply, reply)
	msg, err := client.Messages.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "Hello, world." || msg.Usage.InputTokens != 10 || msg.StopReason != "end_turn" {
		t.Fatalf("message %+v", msg)
	}
	stream := client.Messages.NewStreaming(context.Background(), params)
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Content) != 1 || acc.Content[0].Text != "Hello, world." || acc.Usage.OutputTokens != 3 || acc.Usage.CacheReadInputTokens != 2 {
		t.Fatalf("accumulated %+v", acc)
	}
}
