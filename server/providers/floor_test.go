package providers

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server/tokens"
)

// TestFloor: reported counts are checked against what gw can prove was
// sent and relayed — a token a delta; with OpenAI's encodings the exact
// count of the prompt's content and of the text — and raised to it, with
// the upstream's figures kept; honest counts stand; a family whose
// tokenizer gw lacks has no input floor.
func TestFloor(t *testing.T) {
	prompt := strings.Repeat("The keeper lights the lamp and counts the waves. ", 5)
	call := func(model string) *Call {
		return &Call{UpstreamModel: model, Request: &ChatRequest{Members: Members{
			{Name: "model", Value: json.RawMessage(`"x"`)},
			{Name: "messages", Value: json.RawMessage(`[{"role":"user","content":` + string(mustMarshal(prompt)) + `}]`)},
		}}}
	}
	exact := tokens.ForModel("gpt-4o-mini")
	promptTokens := exact.Count(prompt)
	var deltas relayed
	for _, p := range strings.SplitAfter("The sea rolls in; the wind keeps count.", " ") {
		deltas.add(p, false)
	}
	reported := func(in, out int64) Usage {
		return Usage{InputTokens: in, OutputTokens: out, InputReported: true, OutputReported: true}
	}
	for _, c := range []struct {
		name      string
		model     string
		u         Usage
		out       delivered
		in, outTo int64 // the counts recorded; -1: at least the floor
		raised    bool
	}{
		{"honest counts stand", "gpt-4o-mini", reported(promptTokens+10, 20), &deltas, promptTokens + 10, 20, false},
		{"an under-reported output: a token a delta", "claude-haiku-4-5", reported(500, 1), &deltas, 500, int64(deltas.pieces), true},
		{"an under-reported input, OpenAI's encoding", "gpt-4o-mini", reported(3, 20), &deltas, -1, 20, true},
		{"an under-reported input, no tokenizer: no floor", "claude-haiku-4-5", reported(3, 20), &deltas, 3, 20, false},
		{"a non-streamed answer, exact", "gpt-4o-mini", reported(promptTokens, 1),
			answerTokens([]byte(`{"choices":[{"message":{"role":"assistant","content":"The sea rolls in; the wind keeps count of every wave."}}]}`)), promptTokens, -1, true},
		{"a non-streamed answer, no tokenizer", "gemini-2.5-flash", reported(40, 1), answerTokens([]byte(`{"text":"a long answer indeed"}`)), 40, 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := estimate(c.u, call(c.model), c.out)
			if c.in >= 0 && got.InputTokens != c.in || c.in < 0 && got.InputTokens < promptTokens-2 {
				t.Fatalf("input %d, want %d (prompt %d)", got.InputTokens, c.in, promptTokens)
			}
			if c.outTo >= 0 && got.OutputTokens != c.outTo || c.outTo < 0 && got.OutputTokens <= 1 {
				t.Fatalf("output %d, want %d", got.OutputTokens, c.outTo)
			}
			if got.Estimated != c.raised || (got.Upstream != nil) != c.raised {
				t.Fatalf("estimated %v, upstream %+v; raised %v", got.Estimated, got.Upstream, c.raised)
			}
			if c.raised && (got.Upstream.InputTokens != c.u.InputTokens || got.Upstream.OutputTokens != c.u.OutputTokens) {
				t.Fatalf("kept %+v, want the upstream's %+v", got.Upstream, c.u)
			}
		})
	}
	// The dataplane's count stands in for the adapter's.
	cl := call("gpt-4o-mini")
	floor := int64(1_000)
	cl.InputFloor = &floor
	if got := estimate(reported(3, 20), cl, &deltas); got.InputTokens != 1_000 {
		t.Fatalf("input %d, want the given floor", got.InputTokens)
	}
	// A request the upstream took and never answered: its input, counted.
	if u := Unanswered(call("gpt-4o-mini")); u.InputTokens < promptTokens || u.OutputTokens != 0 || !u.Estimated {
		t.Fatalf("unanswered %+v", u)
	}
}
