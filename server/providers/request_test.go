package providers_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/providers/providerstest"
)

func TestParseChatRequestRefusesMalformedRequests(t *testing.T) {
	for _, tc := range []struct{ body, param string }{
		{`[]`, ""},
		{`{"model":"m"`, ""},
		{`{"messages":[{"role":"user","content":"hi"}]}`, "model"},
		{`{"model":3,"messages":[{"role":"user","content":"hi"}]}`, "model"},
		{`{"model":"m"}`, "messages"},
		{`{"model":"m","messages":[]}`, "messages"},
		{`{"model":"m","messages":"hi"}`, "messages"},
		{`{"model":"m","messages":[{"content":"hi"}]}`, "messages[0].role"},
		{`{"model":"m","messages":[{"role":"robot","content":"hi"}]}`, "messages[0].role"},
		{`{"model":"m","messages":[{"role":"user","content":7}]}`, "messages[0].content"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"video"}]}]}`, "messages[0].content[0].type"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]}`, "messages[0].content[0].image_url.url"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":"yes"}`, "stream"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":0}`, "max_tokens"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":1.5}`, "max_completion_tokens"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"tool_choice":"sometimes"}`, "tool_choice"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"yaml"}}`, "response_format.type"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":[1]}`, "stop"},
	} {
		_, err := providers.ParseChatRequest([]byte(tc.body))
		var inv *providers.InvalidRequestError
		if !errors.As(err, &inv) || inv.Param != tc.param {
			t.Errorf("%s: got %v, want a refusal of %q", tc.body, err, tc.param)
		}
	}
}

func TestRequestFacts(t *testing.T) {
	r := parse(t, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":10,"max_completion_tokens":20,
		"reasoning_effort":"low","tools":[{"type":"function","function":{"name":"f"}}],"x_vendor":1,
		"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":{}}},
		"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"https://x/y.png"}},
			{"type":"file","file":{"file_data":"data:application/pdf;base64,AA=="}}]}]}`)
	if !r.Stream || !r.IncludeUsage || r.MaxTokens != 20 {
		t.Fatalf("request %+v", r)
	}
	want := []catalog.Capability{catalog.CapabilityStreaming, catalog.CapabilityTools, catalog.CapabilityReasoning, catalog.CapabilityStructuredOutput}
	if got := r.Capabilities(); !slices.Equal(got, want) {
		t.Fatalf("capabilities %v", got)
	}
	if got := r.Modalities(); !slices.Equal(got, []catalog.Modality{catalog.ModalityImage, catalog.ModalityPDF}) {
		t.Fatalf("modalities %v", got)
	}
	if got := r.UnknownMembers(); !slices.Equal(got, []string{"x_vendor"}) {
		t.Fatalf("unknown members %v", got)
	}
	plain := parse(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":null,"tools":null}`)
	if len(plain.Capabilities()) != 0 || len(plain.Modalities()) != 0 {
		t.Fatalf("plain request requires %v %v", plain.Capabilities(), plain.Modalities())
	}
}

// The OpenAI fake answers the official SDK, streaming included.
func TestOpenAIFakeSpeaksTheRealProtocol(t *testing.T) {
	f := providerstest.NewOpenAI(t, secret)
	reply := providerstest.Reply{Text: "Hello, world.", Usage: providerstest.Usage{Input: 10, Output: 3, CacheRead: 2}}
	f.Enqueue(reply, reply)
	c := openai.NewClient(option.WithBaseURL(f.BaseURL()+"/"), option.WithAPIKey(secret), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{Model: "gpt-test", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	got, err := c.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Message.Content != "Hello, world." || got.Usage.PromptTokens != 12 || got.Usage.PromptTokensDetails.CachedTokens != 2 {
		t.Fatalf("completion %+v", got)
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := c.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			t.Fatalf("chunk refused: %s", stream.Current().RawJSON())
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Choices[0].Message.Content != "Hello, world." || acc.Usage.CompletionTokens != 3 {
		t.Fatalf("accumulated %+v", acc.ChatCompletion)
	}
}
