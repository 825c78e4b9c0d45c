package dataplane

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/gw-gateway/gw/server/guardrails"
	"github.com/gw-gateway/gw/server/providers"
)

// The guardrails' output stage on a streamed answer (issue 32). Every
// text a stream carries goes through a guardrails.Stream of its own (the
// hold-back window), keyed by where it sits in the answer; each event
// carries what may be sent now, and what a part still holds goes as one
// more delta before the event that closes it. Three shapes of stream:
//
//   - chat.completion.chunks (Chat Completions, and every translated
//     route whatever the caller's dialect: the dialect's writer turns
//     them into its events): each choice's content, refusal, reasoning
//     and each tool call's arguments;
//   - a native Messages stream (Anthropic's events): each content block's
//     text_delta, thinking_delta and input_json_delta;
//   - a native Responses stream: each output_text, refusal, reasoning and
//     function-call arguments delta. Its done events (…text.done,
//     content_part.done, output_item.done) and its last event
//     (response.completed, .incomplete, .failed) repeat the texts whole:
//     each repeat is replaced by what was sent for that part, so the
//     stream says one thing throughout; a text that only a done event
//     carries is checked whole there.
//
// A part no detector can read (audio, an image, an event of a kind gw does
// not know that carries a delta) marks the output stage skipped. A block
// ends the stream with the dialect's error event and the upstream call
// (errGuardBlocked).

// guardStreamMode is the shape of the events a guarded stream reads.
type guardStreamMode int

const (
	guardChatChunks guardStreamMode = iota
	guardMessagesEvents
	guardResponsesEvents
)

// guardStream decorates a stream's writer with the output stage when a
// guardrail of the key looks at output.
func (x *exchange) guardStream(out streamOut, rt *route) streamOut {
	set := x.key.guards.For(guardrails.StageOutput)
	if len(set) == 0 || x.guardOut != nil {
		return out
	}
	mode := guardChatChunks
	if rt.native {
		switch x.endpoint {
		case endpointMessages:
			mode = guardMessagesEvents
		case endpointResponses:
			mode = guardResponsesEvents
		default:
			x.guardStreamSkipped()
			return out
		}
	}
	x.guardOut = guardrails.NewRun(set, guardrails.StageOutput, guardHook{&x.admission})
	return &guardedStream{streamOut: out, x: x, mode: mode, model: rt.model.model.ID,
		parts: map[string]*guardPart{}, final: map[string]string{}}
}

type guardedStream struct {
	streamOut
	x     *exchange
	mode  guardStreamMode
	model string
	// parts are the texts being let go, by key; order keeps their keys in
	// the order they opened (the held rests go in that order at the end).
	parts map[string]*guardPart
	order []string
	// final is a closed part's text as sent whole (Responses: what its
	// done events repeat).
	final map[string]string
	// last is the last chunk, whose id, object, created and model a chunk
	// made up to carry the held text has when the stream ends without a
	// finishing chunk.
	last    []byte
	blocked bool
	// drained: the held text went (drainGuard), with drainErr.
	drained  bool
	drainErr error
}

// guardPart is one text of the answer being let go.
type guardPart struct {
	s    *guardrails.Stream
	sent strings.Builder
	// carry is the event that sends the part's held rest when it closes.
	carry func(rest string) map[string]any
}

// write lets a piece of a part's text through its hold-back stream: what
// may be sent now, or blocked.
func (g *guardedStream) write(key, piece string, carry func(string) map[string]any) (string, bool) {
	p := g.parts[key]
	if p == nil {
		p = &guardPart{s: guardrails.NewStream(g.x.r.Context(), g.x.guardOut, 0), carry: carry}
		g.parts[key] = p
		g.order = append(g.order, key)
	}
	p.carry = carry
	sent, blocked := p.s.Write(piece)
	p.sent.WriteString(sent)
	return sent, blocked
}

// close ends a part: the rest it held (checked), and the event that
// carries it (nil when nothing was held). A part never opened gives "".
func (g *guardedStream) close(key string) (map[string]any, bool) {
	p := g.parts[key]
	if p == nil {
		return nil, false
	}
	delete(g.parts, key)
	g.order = slices.DeleteFunc(g.order, func(k string) bool { return k == key })
	rest, blocked := p.s.Close()
	if blocked {
		return nil, true
	}
	p.sent.WriteString(rest)
	g.final[key] = p.sent.String()
	if rest == "" {
		return nil, false
	}
	return p.carry(rest), false
}

// whole is what a done event repeating a part's text must say: what was
// sent for the part (closing it first if it is open), or, for a text no
// delta carried, the text checked whole.
func (g *guardedStream) whole(key, text string) (string, []map[string]any, bool) {
	var carried []map[string]any
	if _, open := g.parts[key]; open {
		ev, blocked := g.close(key)
		if blocked {
			return "", nil, true
		}
		if ev != nil {
			carried = append(carried, ev)
		}
	}
	if sent, ok := g.final[key]; ok {
		return sent, carried, false
	}
	out, blocked := g.x.guardOut.Text(g.x.r.Context(), text)
	if blocked {
		return "", nil, true
	}
	g.final[key] = out
	return out, carried, false
}

func (g *guardedStream) chunk(data []byte, more bool) error {
	if g.blocked {
		return errGuardBlocked
	}
	switch g.mode {
	case guardChatChunks:
		return g.chatChunk(data, more)
	case guardMessagesEvents:
		if handled, err := g.messagesText(data, more); handled {
			return err
		}
	case guardResponsesEvents:
		if handled, err := g.responsesText(data, more); handled {
			return err
		}
	}
	var c map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if dec.Decode(&c) != nil {
		// Not an event gw can read: nothing was inspected in it.
		g.x.guardOut.Skip()
		return g.streamOut.chunk(data, more)
	}
	if g.mode == guardMessagesEvents {
		return g.messagesEvent(c, data, more)
	}
	return g.responsesEvent(c, data, more)
}

// emit writes an event made or changed here.
func (g *guardedStream) emit(ev map[string]any, more bool) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	return g.streamOut.chunk(b, more)
}

// chatTextFields are the text members of a chat chunk's delta; chatUnread
// the members that carry what the output stage does not read (audio, the
// legacy function_call), which mark it skipped.
var (
	chatTextFields = [...]string{"content", "refusal", "reasoning_content", "reasoning"}
	chatUnread     = [...]string{"audio", "function_call"}
)

func chatKey(choice any, field string) string { return fmt.Sprint("c", choice, "/", field) }

// chatChunk reads a chat.completion.chunk as raw members: only the texts
// of each choice's delta are decoded and encoded again, the rest of the
// chunk (usage, logprobs, ids) goes on as it came.
func (g *guardedStream) chatChunk(data []byte, more bool) error {
	g.last = append(g.last[:0], data...)
	if handled, err := g.chatText(data, more); handled {
		return err
	}
	var c map[string]json.RawMessage
	if json.Unmarshal(data, &c) != nil || c == nil {
		// Not a chunk gw can read: nothing was inspected in it.
		g.x.guardOut.Skip()
		return g.streamOut.chunk(data, more)
	}
	var choices []map[string]json.RawMessage
	if raw, ok := c["choices"]; !ok || json.Unmarshal(raw, &choices) != nil || len(choices) == 0 {
		return g.streamOut.chunk(data, more)
	}
	changed := false
	for _, choice := range choices {
		if choice == nil {
			continue
		}
		index := json.Number(bytes.TrimSpace(choice["index"]))
		var delta map[string]json.RawMessage
		if raw, ok := choice["delta"]; ok {
			_ = json.Unmarshal(raw, &delta)
		}
		deltaChanged := false
		for _, k := range chatUnread {
			if raw, ok := delta[k]; ok && string(bytes.TrimSpace(raw)) != "null" {
				// Audio, a legacy function call: not read here.
				g.x.guardOut.Skip()
			}
		}
		for _, f := range chatTextFields {
			raw, ok := delta[f]
			if !ok || len(raw) == 0 || raw[0] != '"' {
				continue
			}
			var text string
			if json.Unmarshal(raw, &text) != nil {
				continue
			}
			sent, blocked := g.write(chatKey(index, f), text, chatCarry(index, f))
			if blocked {
				return g.block()
			}
			delta[f], deltaChanged = mustJSON(sent), true
		}
		if raw, ok := delta["tool_calls"]; ok {
			var calls []map[string]any
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			if dec.Decode(&calls) == nil {
				for _, call := range calls {
					fn, _ := call["function"].(map[string]any)
					args, ok := fn["arguments"].(string)
					if !ok {
						continue
					}
					sent, blocked := g.write(chatKey(index, fmt.Sprint("tool", call["index"])), args, chatToolCarry(index, call["index"]))
					if blocked {
						return g.block()
					}
					fn["arguments"], deltaChanged = sent, true
				}
				if deltaChanged {
					delta["tool_calls"] = mustJSON(calls)
				}
			}
		}
		if fr := bytes.TrimSpace(choice["finish_reason"]); len(fr) > 0 && string(fr) != "null" {
			// The choice ends: what its parts hold goes in this chunk.
			var rests []map[string]any
			prefix := fmt.Sprint("c", index, "/")
			for _, key := range slices.Clone(g.order) {
				if !strings.HasPrefix(key, prefix) {
					continue
				}
				ev, blocked := g.close(key)
				if blocked {
					return g.block()
				}
				if ev != nil {
					rests = append(rests, ev)
				}
			}
			if len(rests) > 0 {
				d := map[string]any{}
				dec := json.NewDecoder(bytes.NewReader(mustJSON(delta)))
				dec.UseNumber()
				_ = dec.Decode(&d)
				if d == nil {
					d = map[string]any{}
				}
				for _, ev := range rests {
					mergeChatDelta(d, ev)
				}
				choice["delta"], changed = mustJSON(d), true
				continue
			}
		}
		if deltaChanged {
			choice["delta"], changed = mustJSON(delta), true
		}
	}
	if !changed {
		return g.streamOut.chunk(data, more)
	}
	c["choices"] = mustJSON(choices)
	return g.streamOut.chunk(mustJSON(c), more)
}

// The common chunk: one choice whose delta has one text member, content,
// and no finish (what most of a streamed answer is). Found by its bytes,
// only the content string is decoded, checked and, when the check changed
// it, encoded into the chunk in its place; the rest of the chunk is not
// parsed. The patterns are safe to look for in raw JSON: inside a string
// every quote is escaped, so `content":"` (a quote after a letter) and
// the others occur only as members.
var (
	fastChoices  = []byte(`"choices":[`)
	fastIndex    = []byte(`"index":`)
	fastContent  = []byte(`"content":"`)
	fastUnfinish = []byte(`"finish_reason":null`)
	fastOthers   = [...][]byte{[]byte(`"tool_calls"`), []byte(`"refusal":"`), []byte(`"reasoning`), []byte(`"finish_reason":"`),
		[]byte(`"audio"`), []byte(`"function_call"`)}
)

// chatText handles the common chunk (above); handled false leaves the
// chunk to the general reading.
func (g *guardedStream) chatText(data []byte, more bool) (bool, error) {
	if bytes.Count(data, fastChoices) != 1 || bytes.Count(data, fastContent) != 1 || bytes.Count(data, fastUnfinish) != 1 {
		return false, nil
	}
	for _, p := range fastOthers {
		if bytes.Contains(data, p) {
			return false, nil
		}
	}
	index, ok := numberAfter(data, fastIndex)
	if !ok {
		return false, nil
	}
	start := bytes.Index(data, fastContent) + len(fastContent) - 1
	return g.fastText(data, more, start, chatKey(index, "content"), chatCarry(index, "content"))
}

// The common events of native streams, found by their bytes like the
// common chat chunk: a Messages text or thinking delta, a Responses
// output_text delta.
var (
	fastBlockDelta   = []byte(`"type":"content_block_delta"`)
	fastTextDelta    = []byte(`"type":"text_delta"`)
	fastText         = []byte(`"text":"`)
	fastThinkDelta   = []byte(`"type":"thinking_delta"`)
	fastThinking     = []byte(`"thinking":"`)
	fastOutputDelta  = []byte(`"type":"response.output_text.delta"`)
	fastDelta        = []byte(`"delta":"`)
	fastOutputIndex  = []byte(`"output_index":`)
	fastContentIndex = []byte(`"content_index":`)
)

// messagesText handles a native Messages text or thinking delta by its
// bytes; handled false leaves the event to the general reading.
func (g *guardedStream) messagesText(data []byte, more bool) (bool, error) {
	if bytes.Count(data, fastBlockDelta) != 1 {
		return false, nil
	}
	dt, field, pattern := "text_delta", "text", fastText
	if bytes.Count(data, fastTextDelta) != 1 {
		if bytes.Count(data, fastThinkDelta) != 1 {
			return false, nil
		}
		dt, field, pattern = "thinking_delta", "thinking", fastThinking
	}
	index, ok := numberAfter(data, fastIndex)
	if !ok || bytes.Count(data, pattern) != 1 {
		return false, nil
	}
	start := bytes.Index(data, pattern) + len(pattern) - 1
	return g.fastText(data, more, start, fmt.Sprint("b", index), func(rest string) map[string]any {
		return map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": dt, field: rest}}
	})
}

// responsesText handles a native Responses output_text delta by its
// bytes; the event that carries a held rest is made from it when needed.
func (g *guardedStream) responsesText(data []byte, more bool) (bool, error) {
	if bytes.Count(data, fastOutputDelta) != 1 || bytes.Count(data, fastDelta) != 1 {
		return false, nil
	}
	oi, ok := numberAfter(data, fastOutputIndex)
	ci, ok2 := numberAfter(data, fastContentIndex)
	if !ok || !ok2 {
		return false, nil
	}
	event := slices.Clone(data)
	start := bytes.Index(data, fastDelta) + len(fastDelta) - 1
	return g.fastText(data, more, start, fmt.Sprint("o", oi, "/", ci), func(rest string) map[string]any {
		var ev map[string]any
		dec := json.NewDecoder(bytes.NewReader(event))
		dec.UseNumber()
		_ = dec.Decode(&ev)
		if ev == nil {
			ev = map[string]any{"type": "response.output_text.delta", "output_index": oi, "content_index": ci}
		}
		delete(ev, "obfuscation")
		ev["delta"] = rest
		return ev
	})
}

// numberAfter is the unsigned integer after the one occurrence of pattern.
func numberAfter(data, pattern []byte) (json.Number, bool) {
	if bytes.Count(data, pattern) != 1 {
		return "", false
	}
	at := bytes.Index(data, pattern) + len(pattern)
	end := at
	for end < len(data) && data[end] >= '0' && data[end] <= '9' {
		end++
	}
	if end == at {
		return "", false
	}
	return json.Number(data[at:end]), true
}

// fastText checks the JSON string that starts at data[start] (a quote) as
// the next piece of part key, and writes the event with what may be sent
// in its place (the event as it came when that is all of it).
func (g *guardedStream) fastText(data []byte, more bool, start int, key string, carry func(string) map[string]any) (bool, error) {
	stop := jsonStringEnd(data, start)
	if stop < 0 {
		return false, nil
	}
	var text string
	if json.Unmarshal(data[start:stop], &text) != nil {
		return false, nil
	}
	sent, blocked := g.write(key, text, carry)
	if blocked {
		return true, g.block()
	}
	if sent == text {
		return true, g.streamOut.chunk(data, more)
	}
	out := make([]byte, 0, len(data)-(stop-start)+len(sent)+2)
	out = append(out, data[:start]...)
	out = append(out, mustJSON(sent)...)
	out = append(out, data[stop:]...)
	return true, g.streamOut.chunk(out, more)
}

// jsonStringEnd is the offset just past the JSON string that starts at
// data[start] (a quote), or -1.
func jsonStringEnd(data []byte, start int) int {
	for i := start + 1; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// chatCarry and chatToolCarry make the delta that carries a held rest:
// the choice's delta member alone (the chunk around it is added where it
// is sent).
func chatCarry(index any, field string) func(string) map[string]any {
	return func(rest string) map[string]any { return map[string]any{"index": index, field: rest} }
}

func chatToolCarry(index, tool any) func(string) map[string]any {
	return func(rest string) map[string]any {
		return map[string]any{"index": index, "tool_calls": []any{map[string]any{"index": tool, "function": map[string]any{"arguments": rest}}}}
	}
}

// mergeChatDelta adds a carried rest to a choice's delta.
func mergeChatDelta(delta, carry map[string]any) {
	for k, v := range carry {
		switch k {
		case "index":
		case "tool_calls":
			calls, _ := delta["tool_calls"].([]any)
			add := v.([]any)[0].(map[string]any)
			merged := false
			for _, tc := range calls {
				call, _ := tc.(map[string]any)
				if fmt.Sprint(call["index"]) != fmt.Sprint(add["index"]) {
					continue
				}
				fn, _ := call["function"].(map[string]any)
				if fn == nil {
					fn = map[string]any{}
					call["function"] = fn
				}
				a, _ := fn["arguments"].(string)
				fn["arguments"] = a + add["function"].(map[string]any)["arguments"].(string)
				merged = true
			}
			if !merged {
				delta["tool_calls"] = append(calls, add)
			}
		default:
			s, _ := delta[k].(string)
			delta[k] = s + v.(string)
		}
	}
}

// messagesDeltaFields are the text members of a native Messages stream's
// content_block_delta, by delta type; signature_delta carries none.
var messagesDeltaFields = map[string]string{"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "partial_json"}

// messagesEvent reads a native Anthropic stream: each content block's
// deltas go through their own hold-back stream, and what a block still
// holds is sent as one more delta before its content_block_stop.
func (g *guardedStream) messagesEvent(c map[string]any, data []byte, more bool) error {
	typ, _ := c["type"].(string)
	key := fmt.Sprint("b", c["index"])
	switch typ {
	case "content_block_start":
		block, _ := c["content_block"].(map[string]any)
		switch bt, _ := block["type"].(string); bt {
		case "text", "thinking":
			// Its text is normally empty; if not, it is checked whole.
			field := map[string]string{"text": "text", "thinking": "thinking"}[bt]
			if text, _ := block[field].(string); text != "" {
				out, blocked := g.x.guardOut.Text(g.x.r.Context(), text)
				if blocked {
					return g.block()
				}
				if out != text {
					block[field] = out
					return g.emit(c, more)
				}
			}
		case "tool_use", "server_tool_use", "redacted_thinking":
			// Its input comes as input_json_deltas; a redacted thinking
			// block is the provider's sealed data, not text.
		default:
			g.x.guardOut.Skip()
		}
	case "content_block_delta":
		delta, _ := c["delta"].(map[string]any)
		dt, _ := delta["type"].(string)
		field, ok := messagesDeltaFields[dt]
		if !ok {
			if dt != "signature_delta" {
				g.x.guardOut.Skip()
			}
			return g.streamOut.chunk(data, more)
		}
		text, _ := delta[field].(string)
		index := c["index"]
		sent, blocked := g.write(key, text, func(rest string) map[string]any {
			return map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": dt, field: rest}}
		})
		if blocked {
			return g.block()
		}
		delta[field] = sent
		return g.emit(c, more)
	case "content_block_stop":
		ev, blocked := g.close(key)
		if blocked {
			return g.block()
		}
		if ev != nil {
			if err := g.emit(ev, true); err != nil {
				return err
			}
		}
	}
	return g.streamOut.chunk(data, more)
}

// responsesEvent reads a native Responses stream (see the top of the
// file): deltas through hold-back streams, repeats replaced by what was
// sent.
func (g *guardedStream) responsesEvent(c map[string]any, data []byte, more bool) error {
	typ, _ := c["type"].(string)
	oi, ci := c["output_index"], c["content_index"]
	var key, field string
	switch typ {
	case "response.output_text.delta", "response.output_text.done":
		key, field = fmt.Sprint("o", oi, "/", ci), "text"
	case "response.refusal.delta", "response.refusal.done":
		key, field = fmt.Sprint("o", oi, "/", ci), "refusal"
	case "response.reasoning_text.delta", "response.reasoning_text.done":
		key, field = fmt.Sprint("r", oi, "/", ci), "text"
	case "response.reasoning_summary_text.delta", "response.reasoning_summary_text.done":
		key, field = fmt.Sprint("s", oi, "/", c["summary_index"]), "text"
	case "response.function_call_arguments.delta", "response.function_call_arguments.done":
		key, field = fmt.Sprint("f", oi), "arguments"
	}
	switch {
	case key != "" && strings.HasSuffix(typ, ".delta"):
		text, _ := c["delta"].(string)
		carry := map[string]any{}
		for k, v := range c {
			if k != "delta" && k != "obfuscation" {
				carry[k] = v
			}
		}
		sent, blocked := g.write(key, text, func(rest string) map[string]any {
			ev := maps.Clone(carry)
			ev["delta"] = rest
			return ev
		})
		if blocked {
			return g.block()
		}
		c["delta"] = sent
		return g.emit(c, more)
	case key != "":
		// A part's done event: its held rest first, then the event with
		// the text as sent.
		text, _ := c[field].(string)
		sent, carried, blocked := g.whole(key, text)
		if blocked {
			return g.block()
		}
		for _, ev := range carried {
			if seq, ok := c["sequence_number"]; ok {
				ev["sequence_number"] = seq
			}
			if err := g.emit(ev, true); err != nil {
				return err
			}
		}
		c[field] = sent
		return g.emit(c, more)
	case strings.HasSuffix(typ, ".delta"), strings.HasPrefix(typ, "response.audio"), strings.Contains(typ, "partial_image"):
		// Audio, an image, or a delta of a kind gw does not read.
		g.x.guardOut.Skip()
		return g.streamOut.chunk(data, more)
	}
	changed := false
	var carried []map[string]any
	fix := func(item map[string]any, oi any) bool {
		evs, ok := g.responsesItem(item, oi)
		carried = append(carried, evs...)
		changed = true
		return ok
	}
	switch typ {
	case "response.content_part.added", "response.content_part.done":
		if part, _ := c["part"].(map[string]any); part != nil {
			changed = true
			if !g.responsesPart(part, fmt.Sprint("o", oi, "/", ci), &carried) {
				return g.block()
			}
		}
	case "response.output_item.added", "response.output_item.done":
		if item, _ := c["item"].(map[string]any); item != nil && !fix(item, oi) {
			return g.block()
		}
	default:
		if r, _ := c["response"].(map[string]any); r != nil {
			output, _ := r["output"].([]any)
			for i, it := range output {
				if item, _ := it.(map[string]any); item != nil && !fix(item, i) {
					return g.block()
				}
			}
		}
	}
	if !changed {
		return g.streamOut.chunk(data, more)
	}
	for _, ev := range carried {
		if seq, ok := c["sequence_number"]; ok {
			ev["sequence_number"] = seq
		}
		if err := g.emit(ev, true); err != nil {
			return err
		}
	}
	return g.emit(c, more)
}

// responsesItem replaces the texts of one output item (a message's
// output_text and refusal parts, a reasoning item's summary and content,
// a function call's arguments) with what was sent for them. It returns
// the events that carry rests held until now, and false on a block.
func (g *guardedStream) responsesItem(item map[string]any, oi any) ([]map[string]any, bool) {
	var carried []map[string]any
	ok := true
	switch typ, _ := item["type"].(string); typ {
	case "message":
		content, _ := item["content"].([]any)
		for j, p := range content {
			if part, _ := p.(map[string]any); part != nil {
				ok = ok && g.responsesPart(part, fmt.Sprint("o", oi, "/", j), &carried)
			}
		}
	case "reasoning":
		for _, list := range []struct{ member, prefix string }{{"summary", "s"}, {"content", "r"}} {
			parts, _ := item[list.member].([]any)
			for j, p := range parts {
				if part, _ := p.(map[string]any); part != nil {
					ok = ok && g.responsesPart(part, fmt.Sprint(list.prefix, oi, "/", j), &carried)
				}
			}
		}
	case "function_call":
		if args, isText := item["arguments"].(string); isText {
			sent, evs, blocked := g.whole(fmt.Sprint("f", oi), args)
			ok = !blocked
			item["arguments"], carried = sent, append(carried, evs...)
		}
	default:
		// Image generation, audio, computer calls and the like: nothing a
		// detector reads.
		if len(item) > 0 && typ != "" && !slices.Contains(responsesPlainItems, typ) {
			g.x.guardOut.Skip()
		}
	}
	return carried, ok
}

// responsesPlainItems carry no text of the answer (a search's call, a
// tool listing): nothing to inspect and nothing skipped.
var responsesPlainItems = []string{"web_search_call", "file_search_call", "mcp_list_tools", "mcp_approval_request"}

// responsesPart replaces one content part's text with what was sent for it.
func (g *guardedStream) responsesPart(part map[string]any, key string, carried *[]map[string]any) bool {
	field := ""
	switch part["type"] {
	case "output_text", "summary_text", "reasoning_text":
		field = "text"
	case "refusal":
		field = "refusal"
	default:
		g.x.guardOut.Skip()
		return true
	}
	text, isText := part[field].(string)
	if !isText {
		return true
	}
	if _, seen := g.final[key]; !seen && text == "" {
		if _, open := g.parts[key]; !open {
			// An empty part announced before its deltas.
			return true
		}
	}
	sent, evs, blocked := g.whole(key, text)
	if blocked {
		return false
	}
	part[field] = sent
	*carried = append(*carried, evs...)
	return true
}

// errGuardBlocked is what a guarded stream's chunk returns once a
// guardrail has blocked the answer and its error event is written: the
// relay ends the upstream call at once (stream) and meters what it
// generated, which is never less than what the caller read.
var errGuardBlocked = errors.New("a guardrail blocked the answer")

// block ends the stream with the dialect's error event; the rest of the
// upstream's answer is neither relayed nor generated: errGuardBlocked
// tells the relay to cancel the upstream call.
func (g *guardedStream) block() error {
	g.blocked = true
	b := g.x.guardOut.Blocked()
	if err := g.streamOut.fail(g.model, &providers.Error{Kind: providers.Rejected, Status: http.StatusBadRequest,
		Type: typeInvalidRequest, Code: reasonGuardrailBlocked, Message: b.Message()}); err != nil {
		return err
	}
	return errGuardBlocked
}

// flush sends what the parts still hold, in events of their own: a stream
// that ended without closing them (no finishing chunk, no stop event).
func (g *guardedStream) flush() error {
	var chat map[string]any
	for _, key := range slices.Clone(g.order) {
		ev, blocked := g.close(key)
		if blocked {
			return g.block()
		}
		if ev == nil {
			continue
		}
		if g.mode != guardChatChunks {
			if err := g.emit(ev, false); err != nil {
				return err
			}
			continue
		}
		if chat == nil {
			chat = map[string]any{}
		}
		idx := fmt.Sprint(ev["index"])
		d, _ := chat[idx].(map[string]any)
		if d == nil {
			d = map[string]any{}
			chat[idx] = d
		}
		d["index"] = ev["index"]
		mergeChatDelta(d, ev)
	}
	if chat == nil {
		return nil
	}
	keys := make([]string, 0, len(chat))
	for k := range chat {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var choices []any
	for _, k := range keys {
		d := chat[k].(map[string]any)
		index := d["index"]
		delete(d, "index")
		choices = append(choices, map[string]any{"index": index, "delta": d, "finish_reason": nil})
	}
	c := map[string]any{"choices": choices}
	var last map[string]json.RawMessage
	if json.Unmarshal(g.last, &last) == nil {
		for _, k := range [...]string{"id", "object", "created", "model"} {
			if v, ok := last[k]; ok {
				c[k] = v
			}
		}
	}
	return g.emit(c, false)
}

func (g *guardedStream) end(u providers.Usage) error {
	if g.blocked {
		return nil
	}
	err := g.drainErr
	if !g.drained {
		err = g.flush()
	}
	if err != nil || g.blocked {
		return err
	}
	return g.streamOut.end(u)
}

func (g *guardedStream) fail(model string, f *providers.Error) error {
	if g.blocked {
		return nil
	}
	return g.streamOut.fail(model, f)
}

// drainGuard sends what a guarded stream still holds (or blocks it), so
// the usage event recorded next says what its tail was.
func drainGuard(out streamOut) {
	for {
		switch o := out.(type) {
		case *guardedStream:
			if !o.blocked {
				o.drainErr = o.flush()
				o.drained = true
			}
			return
		case journaledStream:
			out = o.streamOut
		case costedStream:
			out = o.streamOut
		default:
			return
		}
	}
}
