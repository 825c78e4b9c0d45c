package providers

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/tokens"
)

// Usage counts a call's tokens in the catalog's disjoint categories:
// InputTokens excludes the input read from or written to a prompt cache.
// CacheWrite1hTokens is the part of CacheWriteTokens written with a
// one-hour TTL, ReasoningTokens the part of OutputTokens spent thinking.
//
// InputReported and OutputReported say which counts the upstream
// reported; Estimated, that gw counted some of them itself (estimate),
// because the upstream did not: no usage block, a stream cut or left
// before its last event, a usage block that could not be read.
type Usage struct {
	InputTokens        int64
	OutputTokens       int64
	CacheReadTokens    int64
	CacheWriteTokens   int64
	CacheWrite1hTokens int64
	ReasoningTokens    int64

	InputReported, OutputReported bool
	Estimated                     bool

	// ServiceTier is the service tier the answer says served it (OpenAI's
	// service_tier: "default", "priority", "flex", …), "" when it named
	// none or named it in a form gw does not keep (ServiceTierName).
	ServiceTier string

	// Upstream is what the upstream reported, when gw recorded more:
	// counts below the floor of what was sent and relayed (estimate).
	Upstream *Usage
}

// Tokens is the usage in the catalog's price classes.
func (u Usage) Tokens() catalog.Tokens {
	return catalog.Tokens{Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.CacheReadTokens,
		CacheWrite: u.CacheWriteTokens, CacheWrite1h: min(u.CacheWrite1hTokens, u.CacheWriteTokens)}
}

// reported marks both counts as the upstream's.
func (u Usage) reported() Usage {
	u.InputReported, u.OutputReported = true, true
	return u
}

// delivered is what an answer delivered, for counting its output: a
// count where the upstream reported none, and a floor gw can prove, which
// a reported count is checked against.
type delivered interface {
	// count counts the output (and the reasoning part of it), erring high
	// where the family's tokenizer is not gw's.
	count(tokens.Counter) (out, reasoning int64)
	// floor is never more than the upstream generated: a token for each
	// non-empty piece relayed, and the exact count of the text relayed
	// with the exact counters (tokens.FloorText).
	floor(tokens.Counter) int64
}

// estimate completes u where the upstream left it short, so that nothing
// delivered goes unbilled (DESIGN §8): the input counted from the request
// the call sent, the output from what was relayed (out counts it, as
// output and reasoning tokens). A count the upstream reported stands,
// except a zero input (no real request has none) and a count below the
// floor of what was sent and relayed (floored); an output not reported,
// or reported only in part (a stream's first event), is raised to what
// was relayed. The counter is the model family's tokenizer where gw has
// one, a deliberately high estimate elsewhere (package tokens).
func estimate(u Usage, call *Call, out delivered) Usage {
	if u.InputReported && u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens == 0 {
		u.InputReported = false
	}
	c := tokens.ForModel(call.UpstreamModel)
	if u.InputReported && u.OutputReported {
		return floored(u, call, c, out)
	}
	if !u.InputReported {
		u.InputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.CacheWrite1hTokens = requestTokens(c, call), 0, 0, 0
		u.Estimated = true
	}
	if !u.OutputReported {
		o, reasoning := out.count(c)
		if o > u.OutputTokens {
			u.OutputTokens, u.ReasoningTokens = clampCount(o), clampCount(reasoning)
			u.Estimated = true
		}
	}
	return floored(u, call, c, out)
}

// floored checks the counts the upstream reported against the floor of
// what gw sent and relayed — never against an estimate, so an honest
// upstream is never billed more than it reported: the input's is the
// exact count of the request's content with OpenAI's encodings (nothing
// elsewhere: gw lacks the tokenizer), the output's a token for each
// non-empty piece relayed and, with OpenAI's encodings, the exact count
// of the text. A count below its floor is raised to it (the input's
// shortfall as fresh input), the usage is marked estimated, and what the
// upstream reported is kept in Upstream.
func floored(u Usage, call *Call, c tokens.Counter, out delivered) Usage {
	reported := u
	raised := false
	if u.InputReported {
		if f, in := inputFloor(c, call), u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens; f > in {
			u.InputTokens += f - in
			raised = true
		}
	}
	if u.OutputReported {
		if f := out.floor(c); f > u.OutputTokens {
			u.OutputTokens = f
			raised = true
		}
	}
	if raised {
		reported.Upstream = nil
		u.Estimated, u.Upstream = true, &reported
	}
	return u
}

// inputFloor is the floor of the call's input: the dataplane's count when
// it made one, else the request's members counted (exact counters only).
func inputFloor(c tokens.Counter, call *Call) int64 {
	if !c.Exact() {
		return 0
	}
	if call.InputFloor != nil {
		return *call.InputFloor
	}
	var n int64
	for _, m := range callMembers(call) {
		n += tokens.FloorJSON(c, m.Name, m.Value, tokens.RequestKeys)
	}
	return n
}

// Unanswered is the usage of a call whose upstream took the request whole
// and then gave nothing gw could read — the caller left before the first
// byte of the answer, the call timed out or was ended, the answer broke
// off before its usage: its input counted from the request, as for an
// answer without usage (never below the provable floor), and no output.
func Unanswered(call *Call) Usage {
	return Usage{InputTokens: requestTokens(tokens.ForModel(call.UpstreamModel), call), Estimated: true}
}

// requestTokens counts the input of the call's request: its members as the
// client sent them (the native dialect's, or Chat Completions'), which
// carry the same text as the upstream request, whatever its shape.
func requestTokens(c tokens.Counter, call *Call) int64 {
	n := int64(0)
	for _, m := range callMembers(call) {
		switch m.Name {
		case "model", "stream", "stream_options", "max_tokens", "max_completion_tokens", "max_output_tokens":
			// Parameters, not content.
			continue
		}
		n += tokens.CountJSON(c, m.Value)
	}
	return n
}

// callMembers are the members of the call's request as the client sent
// them: the native dialect's, or Chat Completions'.
func callMembers(call *Call) Members {
	switch {
	case call.Native != nil:
		return call.Native.Members
	case call.Request != nil:
		return call.Request.Members
	}
	return nil
}

// answerTokens is a whole answer, delivered at once: counted whole (its
// text, with the JSON's framing) for an answer without usage, floored by
// the exact count of its generated text.
func answerTokens(body []byte) delivered { return wholeAnswer(body) }

type wholeAnswer []byte

func (a wholeAnswer) count(c tokens.Counter) (int64, int64) { return tokens.CountJSON(c, a), 0 }

func (a wholeAnswer) floor(c tokens.Counter) int64 {
	return tokens.FloorJSON(c, "", a, tokens.AnswerKeys)
}

// noOutput is the output of a call that has none (embeddings).
var noOutput delivered = none{}

type none struct{}

func (none) count(tokens.Counter) (int64, int64) { return 0, 0 }

func (none) floor(tokens.Counter) int64 { return 0 }

// relayedLimit bounds the text a stream keeps for counting; past it only
// the length is kept, and the count is extrapolated (tokens package).
const relayedLimit = 256 << 10

// relayed is the text a stream has relayed (content, tool arguments,
// reasoning), kept in case the upstream never reports the output.
type relayed struct {
	text      strings.Builder
	reasoning int // bytes of text that were reasoning
	rest      int // bytes past relayedLimit
	// scratch holds the member lists chatDelta reuses from chunk to
	// chunk of a stream.
	scratch deltaScratch
	// pieces is how many non-empty deltas were relayed. Each carries at
	// least one generated token, though the text's tokenizer may merge
	// them (ten "x" deltas are ten tokens billed, "xxxxxxxxxx" two).
	pieces int
}

// add keeps s; reasoning says it is the model's thinking.
func (r *relayed) add(s string, reasoning bool) {
	r.text.WriteString(s[:r.cut(len(s), func(i int) byte { return s[i] }, reasoning)])
}

// addBytes is add of text in bytes, kept without a string's copy.
func (r *relayed) addBytes(b []byte, reasoning bool) {
	r.text.Write(b[:r.cut(len(b), func(i int) byte { return b[i] }, reasoning)])
}

// cut counts a text of n bytes (at returns its i-th) and returns how
// much of it to keep: all of it up to relayedLimit, never half a rune.
func (r *relayed) cut(n int, at func(int) byte, reasoning bool) int {
	if n > 0 {
		r.pieces++
	}
	if reasoning {
		r.reasoning += n
	}
	cut := min(n, max(relayedLimit-r.text.Len(), 0))
	for cut > 0 && cut < n && !utf8.RuneStart(at(cut)) {
		cut--
	}
	r.rest += n - cut
	return cut
}

// addJSON keeps a JSON string value as written (quotes included),
// unescaped when it has escapes; anything else is ignored.
func (r *relayed) addJSON(raw []byte, reasoning bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '"' {
		return
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		r.addBytes(raw[1:len(raw)-1], reasoning)
		return
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		r.add(s, reasoning)
	}
}

// checked is a stream's usage with a reported output of zero taken for
// none when the stream relayed text: an upstream that reports honestly
// never bills nothing for an answer.
func (r *relayed) checked(u Usage) Usage {
	if u.OutputReported && u.OutputTokens == 0 && r.text.Len()+r.rest > 0 {
		u.OutputReported = false
	}
	return u
}

// floor is a token for each non-empty piece relayed, or the exact count of
// the text relayed when that is more (tokens.FloorText).
func (r *relayed) floor(c tokens.Counter) int64 {
	return max(int64(r.pieces), tokens.FloorText(c, r.text.String()))
}

// count counts the relayed text: all of it as output (and never fewer
// tokens than deltas relayed), the reasoning's share of it as reasoning
// tokens.
func (r *relayed) count(c tokens.Counter) (out, reasoning int64) {
	total := r.text.Len() + r.rest
	if total == 0 {
		return 0, 0
	}
	out = c.Count(r.text.String())
	if r.rest > 0 && r.text.Len() > 0 {
		out += int64(float64(r.rest)*float64(out)/float64(r.text.Len())*1.25) + 1
	}
	// Never fewer tokens than deltas delivered.
	out = max(out, int64(r.pieces))
	return out, out * int64(r.reasoning) / int64(total)
}

// chatDelta keeps the text of a chat.completion.chunk's choices: content,
// refusals, tool calls' names and arguments, and the reasoning text some
// servers stream (reasoning_content: DeepSeek, vLLM; reasoning: others).
// It reports whether a choice carries a finish_reason (the answer is
// whole even if [DONE] never comes), from the same walk.
func (r *relayed) chatDelta(choices []byte) (finished bool) {
	s := &r.scratch
	if s.choice == nil {
		// The first chunk: the lists start in the stream's own arrays.
		s.choice, s.delta = s.choiceBuf[:0], s.deltaBuf[:0]
	}
	arrayElements(choices, func(elem []byte) {
		s.choice, _ = objectMembers(s.choice[:0], elem)
		for _, c := range s.choice {
			switch {
			case isKey(c.key, "delta"):
				s.delta, _ = objectMembers(s.delta[:0], c.value)
				s.readDelta(r, s.delta)
			case finishes(c):
				finished = true
			}
		}
	})
	return finished
}

// deltaScratch holds the member lists reused while a stream's chunks'
// choices are read.
type deltaScratch struct {
	choice, delta, call, fn []jsonMember
	// choiceBuf and deltaBuf back choice and delta up to their usual
	// size, so that a stream's first chunk does not grow them.
	choiceBuf, deltaBuf [6]jsonMember
}

// chatDeltas is chatDelta of choices validChunk has read: the members of
// their deltas, in order.
func (r *relayed) chatDeltas(deltas []jsonMember) {
	r.scratch.readDelta(r, deltas)
}

// readDelta keeps a delta's text (its members): content and refusals,
// reasoning, and tool calls' names and arguments.
func (s *deltaScratch) readDelta(r *relayed, delta []jsonMember) {
	for _, d := range delta {
		switch {
		case isKey(d.key, "content"), isKey(d.key, "refusal"):
			r.addJSON(d.value, false)
		case isKey(d.key, "reasoning_content"), isKey(d.key, "reasoning"):
			r.addJSON(d.value, true)
		case isKey(d.key, "tool_calls"):
			arrayElements(d.value, func(tc []byte) { s.readToolCall(r, tc) })
		}
	}
}

func (s *deltaScratch) readToolCall(r *relayed, tc []byte) {
	s.call, _ = objectMembers(s.call[:0], tc)
	for _, m := range s.call {
		if !isKey(m.key, "function") {
			continue
		}
		s.fn, _ = objectMembers(s.fn[:0], m.value)
		for _, f := range s.fn {
			if isKey(f.key, "name") || isKey(f.key, "arguments") {
				r.addJSON(f.value, false)
			}
		}
	}
}

// ServiceTierName is a service tier's name as a request or an answer
// writes it (a JSON string), when it is a plain name gw keeps: 1 to 32
// lower-case letters, digits and "_", starting with a letter. Anything
// else is "": an event never carries free text.
func ServiceTierName(raw []byte) string {
	if len(raw) < 3 || len(raw) > 34 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return ""
	}
	name := raw[1 : len(raw)-1]
	if name[0] < 'a' || name[0] > 'z' {
		return ""
	}
	for _, c := range name {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return ""
		}
	}
	return string(name)
}
