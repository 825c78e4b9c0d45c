package providers

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// A Responses request's input is translated as a Messages request's is
// (translate_messages_raw.go): texts, image URLs, file data and function
// arguments and outputs go into the chat body as the JSON the client sent,
// in a rope copied once.

// responsesInputRaw reads input: a string (one user message) or items.
// Consecutive function calls become one assistant message's tool calls,
// as Chat Completions wants them.
func responsesInputRaw(raw []byte) ([]rope, error) {
	raw = bytes.TrimSpace(raw)
	switch valueKind(raw) {
	case "nothing", "null":
		return nil, nil
	case "string":
		return []rope{rawObject(`{"role":"user","content":`, rope{raw}, `}`)}, nil
	case "array":
	default:
		return nil, invalid("input", "invalid_type", "'input' must be a string or an array of input items.")
	}
	var items [][]byte
	arrayElements(raw, func(it []byte) { items = append(items, it) })
	var out []rope
	// calls gathers consecutive function calls for one assistant message.
	var calls []rope
	flush := func() {
		if len(calls) > 0 {
			out = append(out, rawObject(`{"role":"assistant","content":null,"tool_calls":`, rawArray(calls), `}`))
			calls = nil
		}
	}
	for i, item := range items {
		at := "input[" + strconv.Itoa(i) + "]"
		var it struct {
			Type   string `json:"type"`
			Role   string `json:"role"`
			CallID string `json:"call_id"`
			Name   string `json:"name"`
		}
		if valueKind(item) != "object" || json.Unmarshal(item, &it) != nil {
			return nil, invalid("input", "invalid_type", "'input' must be a string or an array of input items.")
		}
		switch it.Type {
		case "", "message":
			content, err := responsesContentRaw(bytes.TrimSpace(memberValue(item, "content")), at+".content")
			if err != nil {
				return nil, err
			}
			switch it.Role {
			case "user", "system", "developer", "assistant":
			default:
				return nil, invalid(at+".role", "invalid_value", "Invalid value for '%s.role': %q.", at, it.Role)
			}
			flush()
			out = append(out, rawObject(`{"role":`+string(mustMarshal(it.Role))+`,"content":`, content, `}`))
		case "function_call":
			args := bytes.TrimSpace(memberValue(item, "arguments"))
			if valueKind(args) != "string" {
				if valueKind(args) != "nothing" && valueKind(args) != "null" {
					return nil, invalid(at+".arguments", "invalid_type", "'%s.arguments' must be a string.", at)
				}
				args = []byte(`""`)
			}
			head := `{"id":` + string(mustMarshal(it.CallID)) + `,"type":"function","function":{"name":` + string(mustMarshal(it.Name)) + `,"arguments":`
			calls = append(calls, rawObject(head, rope{args}, `}}`))
		case "function_call_output":
			text, err := outputTextRaw(bytes.TrimSpace(memberValue(item, "output")), at+".output")
			if err != nil {
				return nil, err
			}
			flush()
			out = append(out, rawObject(`{"role":"tool","tool_call_id":`+string(mustMarshal(it.CallID))+`,"content":`, text, `}`))
		case "reasoning", "additional_tools":
			// The model's own reasoning cannot go to another model; the
			// tools Codex sends as an input item are namespaces, left out
			// and named (ResponsesDroppedTools).
		default:
			return nil, invalid(at+".type", "unsupported_value", "Input item type %q can be sent to OpenAI models only.", it.Type)
		}
	}
	flush()
	return out, nil
}

// responsesPartHead is a content part's small members; its text, URL and
// data stay in the body.
type responsesPartHead struct {
	Type string `json:"type"`
}

// responsesContentRaw converts a message's content: a string, or input and
// output parts.
func responsesContentRaw(raw []byte, at string) (rope, error) {
	switch valueKind(raw) {
	case "string":
		return rope{raw}, nil
	case "null":
		return rope{[]byte(`""`)}, nil
	case "array":
	default:
		return nil, invalid(at, "invalid_type", "'%s' must be a string or an array of content parts.", at)
	}
	var parts [][]byte
	arrayElements(raw, func(p []byte) { parts = append(parts, p) })
	var out []rope
	for j, p := range parts {
		pat := at + "[" + strconv.Itoa(j) + "]"
		var h responsesPartHead
		if valueKind(p) != "object" || json.Unmarshal(p, &h) != nil {
			return nil, invalid(at, "invalid_type", "'%s' must be a string or an array of content parts.", at)
		}
		str := func(name string) ([]byte, error) {
			v := bytes.TrimSpace(memberValue(p, name))
			switch valueKind(v) {
			case "string":
				return v, nil
			case "nothing", "null":
				return nil, nil
			}
			return nil, invalid(pat+"."+name, "invalid_type", "'%s.%s' must be a string.", pat, name)
		}
		switch h.Type {
		case "input_text", "output_text", "refusal":
			name := "text"
			if h.Type == "refusal" {
				name = "refusal"
			}
			text, err := str(name)
			if err != nil {
				return nil, err
			}
			out = append(out, rawObject(`{"type":"text","text":`, rope{jsonStringOr(text)}, `}`))
		case "input_image":
			u, err := str("image_url")
			if err != nil {
				return nil, err
			}
			if len(u) <= 2 {
				return nil, invalid(pat+".image_url", "unsupported_value", "Images by file_id can be sent to OpenAI models only; send image_url.")
			}
			out = append(out, rawObject(`{"type":"image_url","image_url":{"url":`, rope{u}, `}}`))
		case "input_file":
			file := rope{[]byte(`{`)}
			for _, name := range []string{"file_data", "file_id", "filename"} {
				v, err := str(name)
				if err != nil {
					return nil, err
				}
				if len(v) <= 2 {
					continue
				}
				if len(file) > 1 {
					file = append(file, []byte(`,`))
				}
				file = append(file, []byte(`"`+name+`":`), v)
			}
			out = append(out, rawObject(`{"type":"file","file":`, append(file, []byte(`}`)), `}`))
		default:
			return nil, invalid(pat+".type", "invalid_value", "Invalid content part type %q at '%s'.", h.Type, pat)
		}
	}
	return rawArray(out), nil
}

// outputTextRaw is a function call's output as one JSON string: a string
// as it is, parts' texts joined.
func outputTextRaw(raw []byte, at string) (rope, error) {
	switch valueKind(raw) {
	case "string":
		return rope{raw}, nil
	case "null":
		return rope{[]byte(`""`)}, nil
	case "array":
	default:
		return nil, invalid(at, "invalid_type", "'%s' must be a string or an array of content parts.", at)
	}
	var texts [][]byte
	var bad error
	arrayElements(raw, func(p []byte) {
		text := bytes.TrimSpace(memberValue(p, "text"))
		switch {
		case bad != nil:
		case valueKind(p) != "object" || (text != nil && valueKind(text) != "string" && valueKind(text) != "null"):
			bad = invalid(at, "invalid_type", "'%s' must be a string or an array of content parts.", at)
		default:
			texts = append(texts, jsonStringOr(text))
		}
	})
	if bad != nil {
		return nil, bad
	}
	return joinJSONStrings(texts, ""), nil
}
