package providers

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// A Messages request is translated to Chat Completions for routing (every
// request) and for non-Anthropic upstreams. Its text, images, documents and
// tool results may be most of a body of many megabytes, so the translation
// moves them as JSON, not as Go strings: a text's JSON string goes into the
// chat body as it is (both protocols escape text the same way), a base64
// payload is spliced into a data: URL. The chat body is a rope of pieces,
// most of them slices of the request body, copied once into a buffer of
// its size. Only the small members are decoded.

// rope is JSON text in pieces.
type rope [][]byte

func (r rope) len() int {
	n := 0
	for _, p := range r {
		n += len(p)
	}
	return n
}

// bytes copies the pieces into one buffer of their size.
func (r rope) bytes() []byte {
	out := make([]byte, 0, r.len())
	for _, p := range r {
		out = append(out, p...)
	}
	return out
}

// messagesTurnRaw turns one Messages turn (an element of messages, a
// slice of the body) into chat messages, each encoded: a user turn's
// tool_result blocks become tool messages (before the rest of the turn,
// since they answer the assistant turn before it); an assistant turn's
// tool_use blocks become its tool calls.
func messagesTurnRaw(turn []byte, param string) ([]rope, error) {
	var m struct {
		Role string `json:"role"`
	}
	if valueKind(turn) != "object" || json.Unmarshal(turn, &m) != nil {
		return nil, invalid(param, "invalid_type", "%s: Input should be an object with role and content", param)
	}
	if m.Role == "system" {
		return systemTurnRaw(bytes.TrimSpace(memberValue(turn, "content")), param)
	}
	t, err := readTurn(turn, param)
	if err != nil {
		return nil, err
	}
	switch m.Role {
	case "user":
		return t.user()
	case "assistant":
		return t.assistant()
	}
	return nil, invalid(param+".role", "invalid_value", "%s.role: Input should be 'user', 'assistant' or 'system'", param)
}

// messagesTurn is one turn's content: a string, or blocks (slices of the
// body) at param.
type messagesTurn struct {
	param   string
	content []byte
	// blocks holds one nil for string content.
	blocks [][]byte
}

// readTurn reads a user or assistant turn's content.
func readTurn(turn []byte, param string) (*messagesTurn, error) {
	t := &messagesTurn{param: param, content: bytes.TrimSpace(memberValue(turn, "content"))}
	switch valueKind(t.content) {
	case "string":
		t.blocks = [][]byte{nil}
	case "array":
		arrayElements(t.content, func(b []byte) { t.blocks = append(t.blocks, b) })
	default:
		return nil, invalid(param+".content", "invalid_type", "%s.content: Input should be a string or a list of content blocks", param)
	}
	return t, nil
}

// block reads block j's small members; its text, data, input and content
// stay in the body.
func (t *messagesTurn) block(j int) (messagesBlockHead, string, error) {
	raw, at := t.blocks[j], t.param+".content."+strconv.Itoa(j)
	if raw == nil {
		return messagesBlockHead{Type: "text", text: t.content}, at, nil
	}
	var h messagesBlockHead
	if valueKind(raw) != "object" || json.Unmarshal(raw, &h) != nil {
		return h, at, invalid(at, "invalid_type", "%s: Input should be a content block", at)
	}
	h.text = bytes.TrimSpace(memberValue(raw, "text"))
	h.input = bytes.TrimSpace(memberValue(raw, "input"))
	h.content = bytes.TrimSpace(memberValue(raw, "content"))
	if src := memberValue(raw, "source"); valueKind(src) == "object" {
		h.data = bytes.TrimSpace(memberValue(src, "data"))
	}
	if h.text != nil && valueKind(h.text) != "string" {
		return h, at, invalid(at+".text", "invalid_type", "%s.text: Input should be a valid string", at)
	}
	return h, at, nil
}

// user is a user turn: its tool results as tool messages, then the rest
// as one user message.
func (t *messagesTurn) user() ([]rope, error) {
	var out, parts []rope
	for j := range t.blocks {
		b, at, err := t.block(j)
		if err != nil {
			return nil, err
		}
		if b.Type == "tool_result" {
			text, images, err := toolResultRaw(b.content, at)
			if err != nil {
				return nil, err
			}
			if b.marked() {
				// The tool message as a text part, to carry the breakpoint.
				text = rawArray([]rope{withBreakpoint(rawObject(`{"type":"text","text":`, text, `}`))})
			}
			out = append(out, rawObject(`{"role":"tool","tool_call_id":`+string(mustMarshal(b.ToolUseID))+`,"content":`, text, `}`))
			// A chat tool message holds text only: its images follow in
			// the user message after the tool messages.
			parts = append(parts, images...)
			continue
		}
		part, err := b.userPart(at)
		if err != nil {
			return nil, err
		}
		if b.marked() {
			part = withBreakpoint(part)
		}
		parts = append(parts, part)
	}
	if len(parts) > 0 {
		out = append(out, rawObject(`{"role":"user","content":`, rawArray(parts), `}`))
	}
	return out, nil
}

// userPart is a user turn's text, image or document block as a chat
// content part.
func (b *messagesBlockHead) userPart(at string) (rope, error) {
	switch b.Type {
	case "text":
		return rawObject(`{"type":"text","text":`, rope{jsonStringOr(b.text)}, `}`), nil
	case "image":
		u, err := b.url(at)
		if err != nil {
			return nil, err
		}
		return rawObject(`{"type":"image_url","image_url":{"url":`, u, `}}`), nil
	case "document":
		if b.Source == nil || b.Source.Type != "base64" {
			return nil, invalid(at+".source", "unsupported_value", "%s: only base64 PDF documents can be sent to this model", at)
		}
		return rawObject(`{"type":"file","file":{"file_data":`, dataURL(b.Source.MediaType, b.data), `,"filename":"document.pdf"}}`), nil
	}
	return nil, invalid(at+".type", "unsupported_value", "%s: content block type %q cannot be sent to this model", at, b.Type)
}

// assistant is an assistant turn: its text, and its tool_use blocks as
// tool calls. Thinking blocks are the model's own; another model cannot
// take them back.
func (t *messagesTurn) assistant() ([]rope, error) {
	var texts [][]byte
	var calls []map[string]any
	for j := range t.blocks {
		b, _, err := t.block(j)
		if err != nil {
			return nil, err
		}
		switch b.Type {
		case "text":
			texts = append(texts, jsonStringOr(b.text))
		case "tool_use":
			args := "{}"
			if len(b.input) > 0 {
				args = compactJSON(b.input)
			}
			calls = append(calls, map[string]any{"id": b.ID, "type": "function",
				"function": map[string]any{"name": b.Name, "arguments": args}})
		}
	}
	head := `{"role":"assistant"`
	if len(calls) > 0 {
		head += `,"tool_calls":` + string(mustMarshal(calls))
	}
	if len(texts) > 0 || len(calls) == 0 {
		return []rope{rawObject(head+`,"content":`, joinJSONStrings(texts, ""), `}`)}, nil
	}
	return []rope{{[]byte(head + `}`)}}, nil
}

// messagesBlockHead is a content block's small members; the rest are
// slices of the body.
type messagesBlockHead struct {
	Type   string `json:"type"`
	Source *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		URL       string `json:"url"`
	} `json:"source"`
	ID        string `json:"id"`
	Name      string `json:"name"`
	ToolUseID string `json:"tool_use_id"`
	// CacheControl is the block's cache marker, which becomes OpenAI's
	// prompt_cache_breakpoint on its part (promptcache.go).
	CacheControl json.RawMessage `json:"cache_control"`

	text, data, input, content []byte
}

// url is an image block's URL as a JSON string: a data: URL of its base64
// payload, or its url.
func (b *messagesBlockHead) url(at string) (rope, error) {
	if b.Source == nil {
		return nil, invalid(at+".source", "missing_required_parameter", "%s.source: Field required", at)
	}
	switch b.Source.Type {
	case "base64":
		return dataURL(b.Source.MediaType, b.data), nil
	case "url":
		return rope{mustMarshal(b.Source.URL)}, nil
	}
	return nil, invalid(at+".source.type", "unsupported_value", "%s.source.type: %q cannot be sent to this model", at, b.Source.Type)
}

// toolResultRaw is a tool_result's content as one JSON string (a string as
// it is, text blocks joined by newlines) and its images as chat content
// parts.
func toolResultRaw(raw []byte, at string) (rope, []rope, error) {
	switch valueKind(raw) {
	case "nothing", "null":
		return rope{[]byte(`""`)}, nil, nil
	case "string":
		return rope{raw}, nil, nil
	case "array":
	default:
		return nil, nil, invalid(at+".content", "invalid_type", "%s.content: Input should be a string or a list of blocks", at)
	}
	var texts [][]byte
	var images []rope
	var bad error
	j := 0
	arrayElements(raw, func(b []byte) {
		if bad == nil {
			texts, images, bad = toolResultBlock(b, at+".content."+strconv.Itoa(j), texts, images)
		}
		j++
	})
	if bad != nil {
		return nil, nil, bad
	}
	return joinJSONStrings(texts, `\n`), images, nil
}

// toolResultBlock adds a tool_result's content block to its texts or its
// images.
func toolResultBlock(b []byte, at string, texts [][]byte, images []rope) ([][]byte, []rope, error) {
	var h messagesBlockHead
	if valueKind(b) != "object" || json.Unmarshal(b, &h) != nil {
		return nil, nil, invalid(at, "invalid_type", "%s: Input should be a content block", at)
	}
	switch h.Type {
	case "text":
		text := bytes.TrimSpace(memberValue(b, "text"))
		if text != nil && valueKind(text) != "string" {
			return nil, nil, invalid(at+".text", "invalid_type", "%s.text: Input should be a valid string", at)
		}
		return append(texts, jsonStringOr(text)), images, nil
	case "image":
		if src := memberValue(b, "source"); valueKind(src) == "object" {
			h.data = bytes.TrimSpace(memberValue(src, "data"))
		}
		u, err := h.url(at)
		if err != nil {
			return nil, nil, err
		}
		return texts, append(images, rawObject(`{"type":"image_url","image_url":{"url":`, u, `}}`)), nil
	}
	return nil, nil, invalid(at+".type", "unsupported_value", "%s: tool result blocks of type %q cannot be sent to this model", at, h.Type)
}

// dataURL is the JSON string "data:<media type>;base64,<payload>", the
// payload spliced from its JSON string without being decoded.
func dataURL(mediaType string, payload []byte) rope {
	prefix := mustMarshal("data:" + mediaType + ";base64,")
	return rope{prefix[:len(prefix)-1], jsonStringInner(payload), []byte(`"`)}
}

// joinJSONStrings joins JSON strings into one, with sep (already escaped)
// between them, without decoding any.
func joinJSONStrings(strs [][]byte, sep string) rope {
	out := rope{[]byte(`"`)}
	for i, s := range strs {
		if i > 0 {
			out = append(out, []byte(sep))
		}
		out = append(out, jsonStringInner(s))
	}
	return append(out, []byte(`"`))
}

// jsonStringInner is a JSON string's bytes between its quotes.
func jsonStringInner(s []byte) []byte {
	if len(s) < 2 {
		return nil
	}
	return s[1 : len(s)-1]
}

// jsonStringOr is a JSON string, or the empty string for a missing one.
func jsonStringOr(s []byte) []byte {
	if valueKind(s) != "string" {
		return []byte(`""`)
	}
	return s
}

// rawObject is head, value and tail.
func rawObject(head string, value rope, tail string) rope {
	out := make(rope, 0, len(value)+2)
	out = append(out, []byte(head))
	out = append(out, value...)
	return append(out, []byte(tail))
}

// rawArray is the JSON array of the items.
func rawArray(items []rope) rope {
	out := rope{[]byte(`[`)}
	for i, it := range items {
		if i > 0 {
			out = append(out, []byte(`,`))
		}
		out = append(out, it...)
	}
	return append(out, []byte(`]`))
}
