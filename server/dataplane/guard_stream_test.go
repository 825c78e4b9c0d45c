package dataplane_test

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/guardrails"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// TestGuardResponsesStreamRepeats: a native Responses stream at output.
// Its deltas are redacted across pieces, and every event that repeats the
// text (output_text.done, content_part.done, output_item.done,
// response.completed) says exactly what the deltas said.
func TestGuardResponsesStreamRepeats(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.guardrail(t, false, guardrails.ActionRedact, guardrails.FailClosed, "", guardrails.DetectorSpec{Kind: guardrails.KindPII, Types: []string{"email"}})
		answer := "write to bob@example.org or alice@example.net; " + strings.Repeat("the rest of a long answer. ", 60) + "and carol@example.com at the end"
		e.openai.Enqueue(providerstest.Reply{Text: answer, ChunkSize: 5, Usage: providerstest.Usage{Input: 5, Output: 90}})
		e.usage.reset()
		resp := e.postTo(t, "/inf/v1/responses", `{"model":"`+gptMini+`","stream":true,"input":"who?"}`)
		b, _ := io.ReadAll(resp.Body)
		body := string(b)
		if resp.StatusCode != 200 || strings.Contains(body, "@example") {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		var deltas strings.Builder
		repeats := map[string]string{}
		for _, line := range strings.Split(body, "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			var ev struct {
				Type, Delta, Text string
				Part              struct{ Text string }
				Item              struct {
					Content []struct{ Text string }
				}
				Response struct {
					Output []struct {
						Content []struct{ Text string }
					}
				}
			}
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("%s: %v", data, err)
			}
			switch ev.Type {
			case "response.output_text.delta":
				deltas.WriteString(ev.Delta)
			case "response.output_text.done":
				repeats[ev.Type] = ev.Text
			case "response.content_part.done":
				repeats[ev.Type] = ev.Part.Text
			case "response.output_item.done":
				repeats[ev.Type] = ev.Item.Content[0].Text
			case "response.completed":
				repeats[ev.Type] = ev.Response.Output[0].Content[0].Text
			}
		}
		want := strings.NewReplacer("bob@example.org", "[REDACTED:email]", "alice@example.net", "[REDACTED:email]", "carol@example.com", "[REDACTED:email]").Replace(answer)
		if deltas.String() != want {
			t.Fatalf("deltas say %q", deltas.String())
		}
		// The fake sends no content_part events; the others must agree.
		for _, typ := range []string{"response.output_text.done", "response.output_item.done", "response.completed"} {
			if repeats[typ] != want {
				t.Fatalf("%s says %q", typ, repeats[typ])
			}
		}
		if ev := e.usage.snapshot(); len(ev) != 1 || ev[0].Guardrails[1].Stage != "output" || ev[0].Guardrails[1].Outcome != "redacted" {
			t.Fatalf("usage %+v", ev)
		}
	})
}

// TestGuardThinking: an Anthropic answer's thinking is inspected at
// output like its text, streamed (thinking_deltas, a key split across
// them) and not.
func TestGuardThinking(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.guardrail(t, false, guardrails.ActionRedact, guardrails.FailClosed, "", guardrails.DetectorSpec{Kind: guardrails.KindSecrets})
		for _, stream := range []bool{true, false} {
			e.anthropic.Enqueue(providerstest.Reply{Thinking: "the user's key is " + guardAWSKey + ", I should not repeat it", Text: "done",
				Usage: providerstest.Usage{Input: 5, Output: 20}})
			e.usage.reset()
			s := ""
			if stream {
				s = `"stream":true,`
			}
			resp := e.postTo(t, "/inf/v1/messages", `{"model":"`+haiku+`",`+s+`"max_tokens":500,"thinking":{"type":"enabled","budget_tokens":100},"messages":[{"role":"user","content":"hi"}]}`)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || strings.Contains(string(b), guardAWSKey[:8]) || !strings.Contains(string(b), "[REDACTED:aws_access_key]") ||
				!strings.Contains(string(b), "sig-fake") {
				t.Fatalf("stream %v: %d %s", stream, resp.StatusCode, b)
			}
			if stream && !strings.Contains(strings.Join(streamTexts(string(b)), ""), "the user's key is [REDACTED:aws_access_key], I should not repeat it") {
				t.Fatalf("thinking deltas: %q", streamTexts(string(b)))
			}
			if ev := e.usage.snapshot(); len(ev) != 1 || ev[0].Guardrails[1].Outcome != "redacted" {
				t.Fatalf("usage %+v", ev)
			}
		}
	})
}

// TestGuardStreamBlockEndsUpstream: a stream blocked at output ends the
// upstream call at once (the upstream holds its answer open after the
// first piece, so only the cancellation ends the request), and the usage
// event meters what was generated up to the block: never less than the
// caller read.
func TestGuardStreamBlockEndsUpstream(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.guardrail(t, false, guardrails.ActionBlock, guardrails.FailClosed, "", guardrails.DetectorSpec{Kind: guardrails.KindSecrets})
		never := make(chan struct{})
		for _, c := range []struct {
			name, path, model string
			anthropic         bool
		}{
			{"chat", "/inf/v1/chat/completions", gptMini, false},
			{"responses", "/inf/v1/responses", gptMini, false},
			{"messages", "/inf/v1/messages", haiku, true},
			{"messages→openai", "/inf/v1/messages", gptMini, false},
		} {
			// The first piece: 200 bytes of text the caller may read, the
			// key, and enough after it for the window to let the key go
			// to the check.
			first := strings.Repeat("harmless words ", 14) + guardAWSKey + strings.Repeat(" tail", 200)
			reply := providerstest.Reply{Text: first + " never sent", ChunkSize: len(first), Hold: never, Usage: providerstest.Usage{Input: 5, Output: 400}}
			if c.anthropic {
				e.anthropic.Enqueue(reply)
			} else {
				e.openai.Enqueue(reply)
			}
			e.usage.reset()
			started := time.Now()
			body := `{"model":"` + c.model + `","stream":true,"max_tokens":500,"messages":[{"role":"user","content":"hi"}]}`
			if c.name == "responses" {
				body = `{"model":"` + c.model + `","stream":true,"input":"hi"}`
			}
			resp := e.postTo(t, c.path, body)
			b, _ := io.ReadAll(resp.Body)
			if took := time.Since(started); took > 5*time.Second {
				t.Fatalf("%s: the blocked stream took %v", c.name, took)
			}
			if strings.Contains(string(b), guardAWSKey[:8]) || !strings.Contains(string(b), "blocked by guardrail") {
				t.Fatalf("%s: %s", c.name, b)
			}
			read := strings.Join(streamTexts(string(b)), "")
			ev := e.usage.snapshot()
			if len(ev) != 1 || ev[0].Guardrails[1].Outcome != "blocked" || ev[0].Status != "ok" {
				t.Fatalf("%s: usage %+v", c.name, ev)
			}
			// About four bytes a token: what was generated (the first
			// piece) is metered, and it is more than the caller read.
			if ev[0].OutputTokens < int64(len(read)/8) || ev[0].OutputTokens == 0 {
				t.Fatalf("%s: %d output tokens metered for %d bytes read", c.name, ev[0].OutputTokens, len(read))
			}
		}
	})
}

// TestGuardStreamSkipped: a part of a native stream no detector reads (a
// citation's delta in a Messages stream, audio in a Responses stream) is
// relayed, and the output stage says skipped, never passed; what the
// detectors could read is still inspected (a redaction outranks skipped).
func TestGuardStreamSkipped(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.guardrail(t, false, guardrails.ActionRedact, guardrails.FailClosed, "", guardrails.DetectorSpec{Kind: guardrails.KindSecrets})
		citation := map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "citations_delta",
			"citation": map[string]any{"type": "char_location", "cited_text": "from the document", "document_index": 0, "start_char_index": 0, "end_char_index": 17}}}
		audio := map[string]any{"type": "response.audio.delta", "response_id": "resp_fake", "delta": "UklGRg=="}
		for _, c := range []struct {
			name, path, body string
			anthropic        bool
			extra            map[string]any
		}{
			{"messages", "/inf/v1/messages", `{"model":"` + haiku + `","stream":true,"max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`, true, citation},
			{"responses", "/inf/v1/responses", `{"model":"` + gptMini + `","stream":true,"input":"hi"}`, false, audio},
		} {
			for _, text := range []string{"nothing to find here", "the key " + guardAWSKey + " again"} {
				reply := providerstest.Reply{Text: text, ExtraEvents: []map[string]any{c.extra}, Usage: providerstest.Usage{Input: 5, Output: 9}}
				if c.anthropic {
					e.anthropic.Enqueue(reply)
				} else {
					e.openai.Enqueue(reply)
				}
				e.usage.reset()
				resp := e.postTo(t, c.path, c.body)
				b, _ := io.ReadAll(resp.Body)
				want := "skipped"
				if strings.Contains(text, guardAWSKey) {
					want = "redacted"
				}
				if resp.StatusCode != 200 || strings.Contains(string(b), guardAWSKey) || !strings.Contains(string(b), c.extra["type"].(string)) {
					t.Fatalf("%s: %d %s", c.name, resp.StatusCode, b)
				}
				if ev := e.usage.snapshot(); len(ev) != 1 || ev[0].Guardrails[1].Stage != "output" || ev[0].Guardrails[1].Outcome != want {
					t.Fatalf("%s %q: usage %+v", c.name, text, ev)
				}
			}
		}
	})
}

// TestGuardChatStreamText: the chat chunks of a stream carry the text
// exactly, escapes included (quotes, backslashes, HTML characters, control
// characters), redacted where a detector matched, whether a chunk is read
// by its bytes (one choice, content only; a native Messages or Responses
// text delta) or whole (the finishing chunk, the translated Messages
// writer's).
func TestGuardChatStreamText(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.guardrail(t, false, guardrails.ActionRedact, guardrails.FailClosed, "", guardrails.DetectorSpec{Kind: guardrails.KindSecrets})
		text := "he said \"hi\" \\ C:\\dir <b>&amp;\ttab " + guardAWSKey + "\nnew line \u0001 \"end\""
		want := strings.Replace(text, guardAWSKey, "[REDACTED:aws_access_key]", 1)
		for _, c := range []struct {
			path, body string
			anthropic  bool
		}{
			{"/inf/v1/chat/completions", `{"model":"` + gptMini + `","stream":true,"messages":[{"role":"user","content":"hi"}]}`, false},
			{"/inf/v1/messages", `{"model":"` + gptMini + `","stream":true,"max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`, false},
			{"/inf/v1/messages", `{"model":"` + haiku + `","stream":true,"max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`, true},
			{"/inf/v1/responses", `{"model":"` + gptMini + `","stream":true,"input":"hi"}`, false},
		} {
			for _, size := range []int{1, 3, 7} {
				reply := providerstest.Reply{Text: text, ChunkSize: size, Usage: providerstest.Usage{Input: 5, Output: 9}}
				if c.anthropic {
					e.anthropic.Enqueue(reply)
				} else {
					e.openai.Enqueue(reply)
				}
				resp := e.postTo(t, c.path, c.body)
				b, _ := io.ReadAll(resp.Body)
				if got := strings.Join(streamTexts(string(b)), ""); resp.StatusCode != 200 || got != want {
					t.Fatalf("%s, pieces of %d: %d\n got %q\nwant %q", c.path, size, resp.StatusCode, got, want)
				}
			}
		}
	})
}

// TestGuardChatStreamParts: a chat stream's tool-call arguments are
// redacted across their pieces like its content, and a delta the output
// stage does not read (audio) marks it skipped.
func TestGuardChatStreamParts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.guardrail(t, false, guardrails.ActionRedact, guardrails.FailClosed, "", guardrails.DetectorSpec{Kind: guardrails.KindSecrets})
		body := `{"model":"` + gptMini + `","stream":true,"messages":[{"role":"user","content":"hi"}]}`
		e.openai.Enqueue(providerstest.Reply{Text: "calling", ToolCalls: []providerstest.ToolCall{{ID: "call_1", Name: "store",
			Arguments: `{"key":"` + guardAWSKey + `","note":"kept"}`}}, Usage: providerstest.Usage{Input: 5, Output: 9}})
		e.usage.reset()
		resp := e.postTo(t, "/inf/v1/chat/completions", body)
		b, _ := io.ReadAll(resp.Body)
		var args strings.Builder
		for _, line := range strings.Split(string(b), "\n") {
			var c struct {
				Choices []struct {
					Delta struct {
						ToolCalls []struct {
							Function struct{ Arguments string }
						} `json:"tool_calls"`
					}
				}
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(data), &c) == nil {
				for _, ch := range c.Choices {
					for _, tc := range ch.Delta.ToolCalls {
						args.WriteString(tc.Function.Arguments)
					}
				}
			}
		}
		if args.String() != `{"key":"[REDACTED:aws_access_key]","note":"kept"}` || strings.Contains(string(b), guardAWSKey) {
			t.Fatalf("arguments %q\n%s", args.String(), b)
		}
		if ev := e.usage.snapshot(); len(ev) != 1 || ev[0].Guardrails[1].Outcome != "redacted" {
			t.Fatalf("usage %+v", ev)
		}

		audio := map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini",
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"audio": map[string]any{"id": "audio_1", "data": "UklGRg=="}}, "finish_reason": nil}}}
		e.openai.Enqueue(providerstest.Reply{Text: "listen", ExtraEvents: []map[string]any{audio}, Usage: providerstest.Usage{Input: 5, Output: 9}})
		e.usage.reset()
		resp = e.postTo(t, "/inf/v1/chat/completions", body)
		b, _ = io.ReadAll(resp.Body)
		if !strings.Contains(string(b), "UklGRg==") {
			t.Fatalf("%s", b)
		}
		if ev := e.usage.snapshot(); len(ev) != 1 || ev[0].Guardrails[1].Outcome != "skipped" {
			t.Fatalf("usage %+v", ev)
		}
	})
}
