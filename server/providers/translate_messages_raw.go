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
	content := bytes.TrimSpace(memberValue(turn, "content"))
	if m.Role == "system" {
		return systemTurnRaw(content, param)
	}
	var blocks [][]byte
	switch valueKind(content) {
	case "string":
		blocks = [][]byte{nil}
	case "array":
		arrayElements(content, func(b []byte) { blocks = append(blocks, b) })
	default:
		return nil, invalid(param+".content", "invalid_type", "%s.content: Input should be a string or a list of content blocks", param)
	}
	// blockOf reads a block's small members; its text, data, input and
	// content stay in the body.
	blockOf := func(raw []byte, at string) (messagesBlockHead, error) {
		if raw == nil {
			return messagesBlockHead{Type: "text", text: content}, nil
		}
		var h messagesBlockHead
		if valueKind(raw) != "object" || json.Unmarshal(raw, &h) != nil {
			return h, invalid(at, "invalid_type", "%s: Input should be a content block", at)
		}
		h.text = bytes.TrimSpace(memberValue(raw, "text"))
		h.input = bytes.TrimSpace(memberValue(raw, "input"))
		h.content = bytes.TrimSpace(memberValue(raw, "content"))
		if src := memberValue(raw, "source"); valueKind(src) == "object" {
			h.data = bytes.TrimSpace(memberValue(src, "data"))
		}
		if h.text != nil && valueKind(h.text) != "string" {
			return h, invalid(at+".text", "invalid_type", "%s.text: Input should be a valid string", at)
		}
		return h, nil
	}
	switch m.Role {
	case "user":
		var out, parts []rope
		for j, raw := range blocks {
			at := param + ".content." + strconv.Itoa(j)
			b, err := blockOf(raw, at)
			if err != nil {
				return nil, err
			}
			switch b.Type {
			case "text":
				parts = append(parts, rawObject(`{"type":"text","text":`, rope{jsonStringOr(b.text)}, `}`))
			case "image":
				u, err := b.url(at)
				if err != nil {
					return nil, err
				}
				parts = append(parts, rawObject(`{"type":"image_url","image_url":{"url":`, u, `}}`))
			case "document":
				if b.Source == nil || b.Source.Type != "base64" {
					return nil, invalid(at+".source", "unsupported_value", "%s: only base64 PDF documents can be sent to this model", at)
				}
				parts = append(parts, rawObject(`{"type":"file","file":{"file_data":`, dataURL(b.Source.MediaType, b.data), `,"filename":"document.pdf"}}`))
			case "tool_result":
				text, images, err := toolResultRaw(b.content, at)
				if err != nil {
					return nil, err
				}
				out = append(out, rawObject(`{"role":"tool","tool_call_id":`+string(mustMarshal(b.ToolUseID))+`,"content":`, text, `}`))
				// A chat tool message holds text only: its images follow
				// in the user message after the tool messages.
				parts = append(parts, images...)
			default:
				return nil, invalid(at+".type", "unsupported_value", "%s: content block type %q cannot be sent to this model", at, b.Type)
			}
		}
		if len(parts) > 0 {
			out = append(out, rawObject(`{"role":"user","content":`, rawArray(parts), `}`))
		}
		return out, nil
	case "assistant":
		var texts [][]byte
		var calls []map[string]any
		for j, raw := range blocks {
			b, err := blockOf(raw, param+".content."+strconv.Itoa(j))
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
			// Thinking blocks are the model's own; another model cannot
			// take them back.
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
	return nil, invalid(param+".role", "invalid_value", "%s.role: Input should be 'user', 'assistant' or 'system'", param)
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
