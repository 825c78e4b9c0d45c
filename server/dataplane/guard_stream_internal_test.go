package dataplane

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server/guardrails"
	"github.com/gw-gateway/gw/server/providers"
)

// captureOut keeps what a stream writer was given.
type captureOut struct{ chunks [][]byte }

func (c *captureOut) chunk(data []byte, _ bool) error {
	c.chunks = append(c.chunks, append([]byte(nil), data...))
	return nil
}
func (c *captureOut) end(providers.Usage) error           { return nil }
func (c *captureOut) fail(string, *providers.Error) error { return nil }

// FuzzGuardedChunks: whatever the text and however it is cut into
// events, the guarded stream of each shape (chat chunks, read by their
// bytes or whole; native Messages and Responses deltas) carries exactly
// what guardrails.Stream lets go for the same pieces: the reading of the
// events adds, drops and changes nothing.
func FuzzGuardedChunks(f *testing.F) {
	f.Add("he said \"hi\" \\ <b>&amp; AKIAIOSFODNN7EXAMPLE \n\u2028 end", 3)
	f.Add("mail bob@example.org\t\"q\"", 1)
	f.Add("\xff\xfe broken utf-8 AKIAIOSFODNN7EXAMPLE", 5)
	spec := guardrails.Spec{ID: "g", Name: "g", Stages: []guardrails.Stage{guardrails.StageOutput}, Action: guardrails.ActionRedact,
		OnError: guardrails.FailOpen, Detectors: []guardrails.DetectorSpec{{Kind: guardrails.KindSecrets}, {Kind: guardrails.KindPII, Types: []string{"email"}}}}
	g, err := guardrails.Compile(spec)
	if err != nil {
		f.Fatal(err)
	}
	set := guardrails.Set{g}
	f.Fuzz(func(t *testing.T, text string, size int) {
		if size <= 0 || size > 64 || len(text) > 4096 {
			return
		}
		var pieces []string
		for rest := text; rest != ""; {
			n := min(size, len(rest))
			pieces = append(pieces, rest[:n])
			rest = rest[n:]
		}
		// What the core lets go for these pieces, as JSON carries it
		// (invalid UTF-8 becomes U+FFFD on the way).
		want := func() string {
			st := guardrails.NewStream(context.Background(), guardrails.NewRun(set, guardrails.StageOutput, nil), 0)
			var b strings.Builder
			for _, p := range pieces {
				var q string
				_ = json.Unmarshal(mustJSON(p), &q)
				out, _ := st.Write(q)
				b.WriteString(out)
			}
			out, _ := st.Close()
			b.WriteString(out)
			return b.String()
		}()
		for _, shape := range []struct {
			mode  guardStreamMode
			event func(piece string) any
			text  func(ev map[string]any) string
		}{
			{guardChatChunks, func(p string) any {
				return map[string]any{"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
					"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": p}, "finish_reason": nil}}, "usage": nil}
			}, func(ev map[string]any) string {
				var b strings.Builder
				for _, ch := range ev["choices"].([]any) {
					d, _ := ch.(map[string]any)["delta"].(map[string]any)
					s, _ := d["content"].(string)
					b.WriteString(s)
				}
				return b.String()
			}},
			{guardMessagesEvents, func(p string) any {
				return map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": p}}
			}, func(ev map[string]any) string {
				d, _ := ev["delta"].(map[string]any)
				s, _ := d["text"].(string)
				return s
			}},
			{guardResponsesEvents, func(p string) any {
				return map[string]any{"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "content_index": 0, "delta": p, "sequence_number": 3}
			}, func(ev map[string]any) string {
				if ev["type"] != "response.output_text.delta" {
					return ""
				}
				s, _ := ev["delta"].(string)
				return s
			}},
		} {
			out := &captureOut{}
			x := &exchange{}
			x.r = httptest.NewRequest("POST", "/", nil)
			x.guardOut = guardrails.NewRun(set, guardrails.StageOutput, nil)
			gs := &guardedStream{streamOut: out, x: x, mode: shape.mode, parts: map[string]*guardPart{}, final: map[string]string{}}
			for _, p := range pieces {
				if err := gs.chunk(mustJSON(shape.event(p)), false); err != nil {
					t.Fatal(err)
				}
			}
			if err := gs.flush(); err != nil {
				t.Fatal(err)
			}
			var got strings.Builder
			for _, c := range out.chunks {
				var ev map[string]any
				if err := json.Unmarshal(c, &ev); err != nil {
					t.Fatalf("mode %d wrote %q: %v", shape.mode, c, err)
				}
				got.WriteString(shape.text(ev))
			}
			if got.String() != want {
				t.Fatalf("mode %d, pieces of %d:\n got %q\nwant %q", shape.mode, size, got.String(), want)
			}
		}
	})
}
