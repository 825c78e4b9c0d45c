package guardrails

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
)

// textKeys are the members of a request body (any dialect: Chat
// Completions, Responses, Messages, embeddings) whose strings are what the
// caller says: message content and text parts, instructions and system
// prompts, embeddings input, tool results (a tool message's content, a
// tool_result block's, a function_call_output's output), the tool-call
// arguments a conversation carries, and an answer's refusal, reasoning and
// thinking. Other members (model, role, ids,
// names, parameters) are not text a caller sends to a model as content.
var textKeys = map[string]bool{
	"content": true, "text": true, "input": true, "instructions": true, "system": true,
	"prompt": true, "output": true, "arguments": true, "input_text": true,
	// An answer's refusal and reasoning (Chat Completions), and a thinking
	// block (Messages, in an answer or a conversation's history).
	"refusal": true, "reasoning_content": true, "thinking": true,
}

// unreadableTypes are the part types no detector can read (images, audio,
// files): a request carrying one is recorded skipped.
var unreadableTypes = []string{"image_url", "input_image", "image", "input_audio", "audio", "file", "input_file", "document"}

// GuardBody runs the input stage over a JSON request body: every text a
// caller sends is checked, a part no detector can read marks the run
// skipped. It returns the body as it may go on (re-encoded only when a
// guardrail redacted something) and whether it changed. A body that is not
// JSON is returned as it is (the dialect's parser refuses it after).
func GuardBody(ctx context.Context, run *Run, body []byte) ([]byte, bool) {
	return guardJSON(ctx, run, body, false)
}

// GuardArguments is GuardBody for a JSON document every string of which
// is text the caller sends (an MCP tools/call's arguments): whatever the
// member names, each string value is checked.
func GuardArguments(ctx context.Context, run *Run, body []byte) ([]byte, bool) {
	return guardJSON(ctx, run, body, true)
}

func guardJSON(ctx context.Context, run *Run, body []byte, all bool) ([]byte, bool) {
	if run.Empty() {
		return body, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return body, false
	}
	w := walker{ctx: ctx, run: run, all: all}
	v = w.value(v, all)
	if !w.changed || run.Blocked() != nil {
		return body, false
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return body, false
	}
	return bytes.TrimRight(out.Bytes(), "\n"), true
}

type walker struct {
	ctx     context.Context
	run     *Run
	changed bool
	all     bool
}

// value walks v; text says v sits under a text member, so its strings
// (and the strings of arrays under it) are checked.
func (w *walker) value(v any, text bool) any {
	if w.run.Blocked() != nil {
		return v
	}
	switch t := v.(type) {
	case string:
		if !text {
			return t
		}
		out, _ := w.run.Text(w.ctx, t)
		if out != t {
			w.changed = true
		}
		return out
	case json.Number:
		if text && !w.all {
			// Token ids (embeddings input as integers): nothing to read.
			w.run.Skip()
		}
		return t
	case []any:
		for i := range t {
			t[i] = w.value(t[i], text)
		}
		return t
	case map[string]any:
		if typ, ok := t["type"].(string); ok && slices.Contains(unreadableTypes, typ) {
			w.run.Skip()
		}
		for k, mv := range t {
			if k == "image_url" || k == "input_audio" || k == "source" && isMedia(mv) {
				w.run.Skip()
				continue
			}
			t[k] = w.value(mv, w.all || textKeys[k])
		}
		return t
	}
	return v
}

// isMedia reports whether a Messages source block is an image or document
// carried as data (base64 or a URL), not text.
func isMedia(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	typ, _ := m["type"].(string)
	return typ == "base64" || typ == "url" || typ == "file"
}
