package providers

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
)

// A request body is the largest thing an inference holds, and decoding
// multiplied it: a map of members copied every member, the messages were
// copied again as a list, each message again, and each content string once
// more, before the upstream body was marshalled through a growing buffer
// (about 6.5 times a body's size in all). The helpers here keep members as
// slices of the body itself, which is read once and never changed, and
// write an upstream body in one buffer of its final size.

// ParseObject returns the members of a JSON object body, each value a
// slice of body (no copy), with the last of duplicate names kept, as
// encoding/json fills a map. It fails with an *InvalidRequestError unless
// body is a valid JSON object.
func ParseObject(body []byte) (map[string]json.RawMessage, error) {
	if !validJSON(body) {
		return nil, invalid("", "invalid_json", "The request body is not a JSON object.")
	}
	m, ok := objectMemberMap(body)
	if !ok {
		return nil, invalid("", "invalid_json", "The request body is not a JSON object.")
	}
	return m, nil
}

// objectMemberMap is ParseObject on text json.Valid accepted.
func objectMemberMap(b []byte) (map[string]json.RawMessage, bool) {
	// A request's members, on the stack (from nil, the slice grew four
	// times for a chat completion's five).
	var stack [16]jsonMember
	members, ok := objectMembers(stack[:0], b)
	if !ok {
		return nil, false
	}
	m := make(map[string]json.RawMessage, len(members))
	for _, mb := range members {
		name, ok := memberName(mb.key)
		if !ok {
			return nil, false
		}
		m[name] = json.RawMessage(mb.value)
	}
	return m, true
}

// memberName decodes a member's key as written (quotes included).
func memberName(key []byte) (string, bool) {
	if bytes.IndexByte(key, '\\') < 0 {
		return knownName(key[1 : len(key)-1]), true
	}
	var s string
	return s, json.Unmarshal(key, &s) == nil
}

// memberValue returns the value of the member name of the object b as a
// slice of b (the last, if the name repeats), or nil.
func memberValue(b []byte, name string) []byte {
	var stack [16]jsonMember
	members, _ := objectMembers(stack[:0], b)
	var v []byte
	for _, m := range members {
		if n, ok := memberName(m.key); ok && n == name {
			v = m.value
		}
	}
	return v
}

// encodeMembers writes the object with members m, in name order (as
// json.Marshal orders a map), into one buffer of its final size. The
// values are written as they are, whitespace included; each must be valid
// JSON.
func encodeMembers(m map[string]json.RawMessage) ([]byte, error) {
	var stack [24]string
	names := stack[:0]
	size := 2
	for name, v := range m {
		if !validJSON(v) {
			return nil, errors.New("member " + name + " is not valid JSON")
		}
		names = append(names, name)
		size += len(name) + len(v) + 8
	}
	slices.Sort(names)
	out := make([]byte, 0, size)
	out = append(out, '{')
	for i, name := range names {
		if i > 0 {
			out = append(out, ',')
		}
		if plainName(name) {
			// json.Marshal's encoding of such a name is the name in quotes.
			out = append(append(append(out, '"'), name...), '"')
		} else {
			key, err := json.Marshal(name)
			if err != nil {
				return nil, err
			}
			out = append(out, key...)
		}
		out = append(append(out, ':'), m[name]...)
	}
	return append(out, '}'), nil
}

// plainName reports whether json.Marshal writes name as it is, in quotes:
// printable ASCII that it neither escapes nor HTML-escapes.
func plainName(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// valueKind names the JSON kind of a valid value, as a type error says it.
func valueKind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

// stringShape checks a member that must be a string, without keeping
// it: a content part's text or base64 data may be most of a body.
type stringShape struct {
	// given: a non-empty string.
	given bool
}

func (s *stringShape) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || b[0] == 'n':
		return nil
	case b[0] != '"':
		return &json.UnmarshalTypeError{Value: valueKind(b), Type: reflect.TypeFor[string]()}
	}
	s.given = len(b) > 2
	return nil
}

// knownName is the name b spells: for the members every request carries,
// the constant (no allocation), else a copy.
func knownName(b []byte) string {
	switch string(b) {
	case "model":
		return "model"
	case "messages":
		return "messages"
	case "stream":
		return "stream"
	case "stream_options":
		return "stream_options"
	case "temperature":
		return "temperature"
	case "max_tokens":
		return "max_tokens"
	case "max_completion_tokens":
		return "max_completion_tokens"
	case "tools":
		return "tools"
	case "tool_choice":
		return "tool_choice"
	case "top_p":
		return "top_p"
	case "user":
		return "user"
	case "metadata":
		return "metadata"
	case "response_format":
		return "response_format"
	case "include_usage":
		return "include_usage"
	case "role":
		return "role"
	case "content":
		return "content"
	}
	return string(b)
}
