package dataplane_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// anthropicClient is Anthropic's SDK pointed at {base}/inf, as Claude Code
// is: it appends /v1/messages itself and sends the key as x-api-key.
func (e *infEnv) anthropicClient() anthropic.Client {
	return anthropic.NewClient(anthropicoption.WithBaseURL(e.srv.URL+"/inf/"), anthropicoption.WithAPIKey(e.token), anthropicoption.WithMaxRetries(0))
}

// upstreamOf is the fake that serves model.
func (e *infEnv) upstreamOf(model string) interface{ Enqueue(...providerstest.Reply) } {
	return e.fakeOf(model)
}

func endpointOf(ev wire.UsageEventIn) string {
	if ev.Endpoint == nil {
		return ""
	}
	return *ev.Endpoint
}

// Anthropic's Go SDK, unchanged, against /inf/v1/messages: text, a stream
// and tool use, to an Anthropic model (forwarded as sent) and to an OpenAI
// model (translated); each request is one usage event of endpoint
// "messages".
func TestAnthropicSDKMessages(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		e := newInfEnv(t, db)
		e.sync(t)
		c := e.anthropicClient()
		n := 0
		for _, model := range []string{haiku, gptMini} {
			t.Run(model, func(t *testing.T) {
				reply := providerstest.Reply{Text: "Hello from the fake.", Usage: providerstest.Usage{Input: 12, Output: 5}}
				tools := providerstest.Reply{ToolCalls: []providerstest.ToolCall{{ID: "toolu_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}},
					Usage: providerstest.Usage{Input: 20, Output: 7}}
				fake := e.upstreamOf(model)
				fake.Enqueue(reply, reply, tools)
				params := anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 200,
					System:   []anthropic.TextBlockParam{{Text: "Be brief."}},
					Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}
				msg, err := c.Messages.New(ctx, params)
				if err != nil {
					t.Fatal(err)
				}
				if len(msg.Content) != 1 || msg.Content[0].Text != "Hello from the fake." || msg.StopReason != "end_turn" ||
					string(msg.Model) != model || msg.Usage.InputTokens != 12 || msg.Usage.OutputTokens != 5 {
					t.Fatalf("message %+v", msg)
				}
				n++
				ev := e.usage.last(t, n)
				if endpointOf(ev) != "messages" || ev.Model != model || ev.Status != "ok" || ev.InputTokens != 12 || ev.OutputTokens != 5 {
					t.Fatalf("usage event %+v", ev)
				}

				stream := c.Messages.NewStreaming(ctx, params)
				var acc anthropic.Message
				for stream.Next() {
					if err := acc.Accumulate(stream.Current()); err != nil {
						t.Fatal(err)
					}
				}
				if err := stream.Err(); err != nil {
					t.Fatal(err)
				}
				if len(acc.Content) != 1 || acc.Content[0].Text != "Hello from the fake." || acc.Usage.OutputTokens != 5 || acc.StopReason != "end_turn" {
					t.Fatalf("accumulated %+v", acc)
				}
				n++
				if ev := e.usage.last(t, n); endpointOf(ev) != "messages" || ev.OutputTokens != 5 || ev.Status != "ok" {
					t.Fatalf("stream usage event %+v", ev)
				}

				params.Tools = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather",
					InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}}}}
				msg, err = c.Messages.New(ctx, params)
				if err != nil {
					t.Fatal(err)
				}
				if len(msg.Content) != 1 || msg.StopReason != "tool_use" {
					t.Fatalf("tool use %+v", msg)
				}
				use := msg.Content[0].AsToolUse()
				if use.Name != "get_weather" || use.ID != "toolu_1" || !strings.Contains(string(use.Input), "Paris") {
					t.Fatalf("tool use block %+v", use)
				}
				n++
				e.usage.last(t, n)
				// The tool result goes back; either upstream sees it as its
				// own protocol has it.
				params.Messages = append(params.Messages, msg.ToParam(),
					anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_1", "18°C", false)))
				if _, err := c.Messages.New(ctx, params); err != nil {
					t.Fatal(err)
				}
				n++
				e.usage.last(t, n)
				if model == haiku {
					if body := e.anthropic.Last(t).Body; body["model"] != "claude-haiku-4-5-20251001" || len(body["messages"].([]any)) != 3 {
						t.Fatalf("forwarded %v", body)
					}
				} else {
					msgs := e.openai.Last(t).Body["messages"].([]any)
					if last := msgs[len(msgs)-1].(map[string]any); last["role"] != "tool" || last["tool_call_id"] != "toolu_1" {
						t.Fatalf("translated %v", msgs)
					}
				}
			})
		}

		// count_tokens: Anthropic counts; elsewhere gw estimates.
		e.anthropic.Enqueue(providerstest.Reply{Usage: providerstest.Usage{Input: 42}})
		count, err := c.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: haiku,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
		if err != nil || count.InputTokens != 42 {
			t.Fatalf("count_tokens: %v %+v", err, count)
		}
		count, err = c.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: gptMini,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello there"))}})
		if err != nil || count.InputTokens < 1 {
			t.Fatalf("count_tokens estimate: %v %+v", err, count)
		}

		// Errors come in Anthropic's shape, which the SDK reads.
		var apiErr *anthropic.Error
		_, err = c.Messages.New(ctx, anthropic.MessageNewParams{Model: "openai/gpt-4o-nonexistent", MaxTokens: 10,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || !strings.Contains(apiErr.RawJSON(), `"not_found_error"`) {
			t.Fatalf("unknown model: %v", err)
		}
		bad := anthropic.NewClient(anthropicoption.WithBaseURL(e.srv.URL+"/inf/"), anthropicoption.WithAPIKey("sk-gw-nope"), anthropicoption.WithMaxRetries(0))
		_, err = bad.Messages.New(ctx, anthropic.MessageNewParams{Model: haiku, MaxTokens: 10,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized || !strings.Contains(apiErr.RawJSON(), `"authentication_error"`) {
			t.Fatalf("bad key: %v", err)
		}
		e.usage.wait(t, n) // a model the key cannot see is not metered: no event for the 404
	})
}

// The OpenAI Go SDK's responses, unchanged: to an OpenAI model (forwarded
// to its /responses) and to an Anthropic model (translated), streamed and
// not; store and previous_response_id are refused with a 400.
func TestOpenAISDKResponses(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		e := newInfEnv(t, db)
		e.sync(t)
		c := e.client()
		n := 0
		for _, model := range []string{gptMini, haiku} {
			t.Run(model, func(t *testing.T) {
				params := responses.ResponseNewParams{Model: model, Instructions: openai.String("Be brief."),
					Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}
				r, err := c.Responses.New(ctx, params)
				if err != nil {
					t.Fatal(err)
				}
				if r.OutputText() != "Hello from the fake." || r.Model != model || r.Usage.InputTokens != 12 || r.Usage.OutputTokens != 5 {
					t.Fatalf("response %+v", r)
				}
				n++
				if ev := e.usage.last(t, n); endpointOf(ev) != "responses" || ev.Model != model || ev.OutputTokens != 5 {
					t.Fatalf("usage event %+v", ev)
				}
				stream := c.Responses.NewStreaming(ctx, params)
				var text strings.Builder
				var completed bool
				for stream.Next() {
					ev := stream.Current()
					switch ev.Type {
					case "response.output_text.delta":
						text.WriteString(ev.Delta)
					case "response.completed":
						completed = ev.Response.Usage.OutputTokens == 5
					}
				}
				if err := stream.Err(); err != nil || text.String() != "Hello from the fake." || !completed {
					t.Fatalf("stream: %v %q completed=%v", err, text.String(), completed)
				}
				n++
				e.usage.last(t, n)

				e.upstreamOf(model).Enqueue(providerstest.Reply{ToolCalls: []providerstest.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}})
				params.Tools = []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "get_weather", Strict: openai.Bool(true),
					Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}},
						"required": []string{"city"}, "additionalProperties": false}}}}
				r, err = c.Responses.New(ctx, params)
				if err != nil {
					t.Fatal(err)
				}
				if len(r.Output) != 1 || r.Output[0].Type != "function_call" || r.Output[0].Name != "get_weather" || r.Output[0].CallID != "call_1" {
					t.Fatalf("function call %+v", r.Output)
				}
				n++
				e.usage.last(t, n)
			})
		}
		if body := e.openai.Requests(); len(body) == 0 || body[0].Path != "/v1/responses" || body[0].Body["store"] != false {
			t.Fatalf("forwarded to OpenAI: %+v", body)
		}
		var apiErr *openai.Error
		for _, p := range []responses.ResponseNewParams{
			{Model: gptMini, Store: openai.Bool(true), Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}},
			{Model: gptMini, PreviousResponseID: openai.String("resp_1"), Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}},
		} {
			if _, err := c.Responses.New(ctx, p); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest ||
				(apiErr.Param != "store" && apiErr.Param != "previous_response_id") {
				t.Fatalf("stateful request: %v", err)
			}
		}
	})
}

// Embeddings with the OpenAI Go SDK: float and base64, priced by input
// tokens; chat and embedding models do not stand in for each other.
func TestOpenAISDKEmbeddings(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		e := newInfEnv(t, db)
		e.sync(t)
		c := e.client()
		const small = "openai/text-embedding-3-small"
		e.openai.Enqueue(providerstest.Reply{Usage: providerstest.Usage{Input: 1_000_000}})
		res, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: small, Dimensions: openai.Int(4),
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b"}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Data) != 2 || len(res.Data[1].Embedding) != 4 || res.Model != small || res.Usage.PromptTokens != 1_000_000 {
			t.Fatalf("embeddings %+v", res)
		}
		ev := e.usage.last(t, 1)
		if endpointOf(ev) != "embeddings" || ev.Model != small || ev.InputTokens != 1_000_000 || ev.CostUSD != "0.02" {
			t.Fatalf("usage event %+v", ev)
		}
		if got := e.openai.Last(t); got.Path != "/v1/embeddings" || got.Body["model"] != "text-embedding-3-small" || got.Body["dimensions"] != float64(4) {
			t.Fatalf("upstream got %+v", got)
		}
		res, err = c.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: small, EncodingFormat: openai.EmbeddingNewParamsEncodingFormatBase64,
			Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("a")}})
		if err != nil || len(res.Data) != 1 || len(res.Data[0].Embedding) != 3 {
			t.Fatalf("base64 embeddings: %v %+v", err, res)
		}
		var apiErr *openai.Error
		if _, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: gptMini,
			Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("a")}}); !errors.As(err, &apiErr) ||
			apiErr.StatusCode != http.StatusBadRequest || apiErr.Code != "unsupported_model" {
			t.Fatalf("chat model on embeddings: %v", err)
		}
		if _, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: small,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}); !errors.As(err, &apiErr) ||
			apiErr.StatusCode != http.StatusBadRequest || apiErr.Code != "unsupported_model" {
			t.Fatalf("embedding model on chat: %v", err)
		}
	})
}
