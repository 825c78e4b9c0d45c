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
	var in responsesInput
	var err error
	arrayElements(raw, func(item []byte) {
		if err == nil {
			err = in.item(item, "input["+strconv.Itoa(in.n)+"]")
			in.n++
		}
	})
	if err != nil {
		return nil, err
	}
	in.flush()
	return in.out, nil
}

// responsesInput is input on its way to chat messages.
type responsesInput struct {
	out []rope
	// calls gathers consecutive function calls for one assistant message.
	calls []rope
	n     int
}

// responsesItemHead is an input item's small members.
type responsesItemHead struct {
	Type   string `json:"type"`
	Role   string `json:"role"`
	CallID string `json:"call_id"`
	Name   string `json:"name"`
}

func (in *responsesInput) flush() {
	if len(in.calls) > 0 {
		in.out = append(in.out, rawObject(`{"role":"assistant","content":null,"tool_calls":`, rawArray(in.calls), `}`))
		in.calls = nil
	}
}

func (in *responsesInput) item(item []byte, at string) error {
	var it responsesItemHead
	if valueKind(item) != "object" || json.Unmarshal(item, &it) != nil {
		return invalid("input", "invalid_type", "'input' must be a string or an array of input items.")
	}
	switch it.Type {
	case "", "message":
		return in.message(item, it, at)
	case "function_call":
		return in.functionCall(item, it, at)
	case "custom_tool_call":
		// A custom tool's call, as the call of its function
		// (customParameters): its input the one argument.
		var c struct {
			Input string `json:"input"`
		}
		if json.Unmarshal(item, &c) != nil {
			return invalid(at+".input", "invalid_type", "'%s.input' must be a string.", at)
		}
		head := `{"id":` + string(mustMarshal(it.CallID)) + `,"type":"function","function":{"name":` + string(mustMarshal(it.Name)) + `,"arguments":`
		args := mustMarshal(string(mustMarshal(map[string]string{"input": c.Input})))
		in.calls = append(in.calls, rawObject(head, rope{args}, `}}`))
	case "function_call_output", "custom_tool_call_output":
		text, err := outputTextRaw(bytes.TrimSpace(memberValue(item, "output")), at+".output")
		if err != nil {
			return err
		}
		in.flush()
		in.out = append(in.out, rawObject(`{"role":"tool","tool_call_id":`+string(mustMarshal(it.CallID))+`,"content":`, text, `}`))
	case "reasoning", "additional_tools":
		// The model's own reasoning cannot go to another model; the tools
		// Codex sends as an input item join the request's tools
		// (responsesToChat.tools).
	default:
		return invalid(at+".type", "unsupported_value", "Input item type %q can be sent to OpenAI models only.", it.Type)
	}
	return nil
}

// responsesRoles are the message roles Chat Completions shares.
var responsesRoles = map[string]bool{"user": true, "system": true, "developer": true, "assistant": true}

func (in *responsesInput) message(item []byte, it responsesItemHead, at string) error {
	content, err := responsesContentRaw(bytes.TrimSpace(memberValue(item, "content")), at+".content")
	if err != nil {
		return err
	}
	if !responsesRoles[it.Role] {
		return invalid(at+".role", "invalid_value", "Invalid value for '%s.role': %q.", at, it.Role)
	}
	in.flush()
	in.out = append(in.out, rawObject(`{"role":`+string(mustMarshal(it.Role))+`,"content":`, content, `}`))
	return nil
}

func (in *responsesInput) functionCall(item []byte, it responsesItemHead, at string) error {
	args := bytes.TrimSpace(memberValue(item, "arguments"))
	switch valueKind(args) {
	case "string":
	case "nothing", "null":
		args = []byte(`""`)
	default:
		return invalid(at+".arguments", "invalid_type", "'%s.arguments' must be a string.", at)
	}
	head := `{"id":` + string(mustMarshal(it.CallID)) + `,"type":"function","function":{"name":` + string(mustMarshal(it.Name)) + `,"arguments":`
	in.calls = append(in.calls, rawObject(head, rope{args}, `}}`))
	return nil
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
	var out []rope
	var err error
	j := 0
	arrayElements(raw, func(p []byte) {
		if err == nil {
			var part rope
			part, err = responsesPart(p, at, at+"["+strconv.Itoa(j)+"]")
			out = append(out, part)
			j++
		}
	})
	if err != nil {
		return nil, err
	}
	return rawArray(out), nil
}

// responsesPart is one content part as a chat content part.
func responsesPart(p []byte, at, pat string) (rope, error) {
	part, err := responsesPartOf(p, at, pat)
	if err == nil && marked(p, "prompt_cache_breakpoint") {
		// The breakpoint stays on the chat part, in the same form.
		part = withBreakpoint(part)
	}
	return part, err
}

func responsesPartOf(p []byte, at, pat string) (rope, error) {
	var h responsesPartHead
	if valueKind(p) != "object" || json.Unmarshal(p, &h) != nil {
		return nil, invalid(at, "invalid_type", "'%s' must be a string or an array of content parts.", at)
	}
	switch h.Type {
	case "input_text", "output_text", "refusal":
		name := "text"
		if h.Type == "refusal" {
			name = "refusal"
		}
		text, err := partString(p, pat, name)
		if err != nil {
			return nil, err
		}
		return rawObject(`{"type":"text","text":`, rope{jsonStringOr(text)}, `}`), nil
	case "input_image":
		u, err := partString(p, pat, "image_url")
		if err != nil {
			return nil, err
		}
		if len(u) <= 2 {
			return nil, invalid(pat+".image_url", "unsupported_value", "Images by file_id can be sent to OpenAI models only; send image_url.")
		}
		return rawObject(`{"type":"image_url","image_url":{"url":`, rope{u}, `}}`), nil
	case "input_file":
		return responsesFile(p, pat)
	}
	return nil, invalid(pat+".type", "invalid_value", "Invalid content part type %q at '%s'.", h.Type, pat)
}

// responsesFile is an input_file part with the members it has.
func responsesFile(p []byte, pat string) (rope, error) {
	file := rope{[]byte(`{`)}
	for _, name := range []string{"file_data", "file_id", "filename"} {
		v, err := partString(p, pat, name)
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
	return rawObject(`{"type":"file","file":`, append(file, []byte(`}`)), `}`), nil
}

// partString is a part's string member as JSON, nil when absent or null.
func partString(p []byte, pat, name string) ([]byte, error) {
	v := bytes.TrimSpace(memberValue(p, name))
	switch valueKind(v) {
	case "string":
		return v, nil
	case "nothing", "null":
		return nil, nil
	}
	return nil, invalid(pat+"."+name, "invalid_type", "'%s.%s' must be a string.", pat, name)
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
