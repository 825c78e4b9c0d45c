package providers

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"
)

// A request body is the largest thing an inference holds, and decoding
// multiplied it: a map of members copied every member, the messages were
// copied again as a list, each message again, and each content string once
// more, before the upstream body was marshalled through a growing buffer
// (about 6.5 times a body's size in all). The helpers here keep members as
// slices of the body itself, which is read once and never changed, and
// write an upstream body in one buffer of its final size.

// Member is one member of a JSON object: its name, decoded, and its
// value as written (a slice of the text it was read from).
type Member struct {
	Name  string
	Value json.RawMessage
}

// Members are a JSON object's members, each name once (a name written
// twice keeps its last value, as encoding/json fills a map), in the order
// the names were first written. A request has five to twenty: a look
// along them finds one sooner than a map would hash its name, and no map
// is made for each request (issue 33, "typed members, no map of
// members"). The values are shared: a change is made to a copy (Clone).
type Members []Member

// Get returns the value of the member name, and whether there is one.
func (m Members) Get(name string) (json.RawMessage, bool) {
	if i := m.index(name); i >= 0 {
		return m[i].Value, true
	}
	return nil, false
}

// Value is the value of the member name, nil when there is none.
func (m Members) Value(name string) json.RawMessage {
	v, _ := m.Get(name)
	return v
}

// Has reports whether there is a member name.
func (m Members) Has(name string) bool { return m.index(name) >= 0 }

func (m Members) index(name string) int {
	for i := range m {
		if m[i].Name == name {
			return i
		}
	}
	return -1
}

// Set gives the member name the value v, adding it last if there is none.
func (m *Members) Set(name string, v json.RawMessage) {
	if i := m.index(name); i >= 0 {
		(*m)[i].Value = v
		return
	}
	*m = append(*m, Member{Name: name, Value: v})
}

// Delete removes the member name, if there is one, into a new list: a
// list shared with another holder (a parse's, say) is left whole for it.
func (m *Members) Delete(name string) {
	if i := m.index(name); i >= 0 {
		*m = slices.Concat((*m)[:i], (*m)[i+1:])
	}
}

// Clone is a copy of m that a Set or Delete leaves m as it is.
func (m Members) Clone() Members { return slices.Clone(m) }

// MarshalJSON writes the members as the object they are, in name order,
// as encoding/json writes a map of them; nil is null.
func (m Members) MarshalJSON() ([]byte, error) {
	if m == nil {
		return []byte("null"), nil
	}
	return encodeMembers(m)
}

// UnmarshalJSON reads an object's members (null: none), as encoding/json
// fills a map.
func (m *Members) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*m = nil
		return nil
	}
	list, ok := objectMemberList(nil, bytes.Clone(b))
	if !ok {
		return errors.New("providers: members are not a JSON object")
	}
	*m = list
	return nil
}

// ParseObject returns the members of a JSON object body, each value a
// slice of body (no copy), with the last of duplicate names kept, as
// encoding/json fills a map. It fails with an *InvalidRequestError unless
// body is a valid JSON object.
func ParseObject(body []byte) (Members, error) {
	return parseObjectInto(nil, body)
}

// parseObjectInto is ParseObject appending to dst.
func parseObjectInto(dst Members, body []byte) (Members, error) {
	if !validJSON(body) {
		return nil, invalid("", "invalid_json", "The request body is not a JSON object.")
	}
	m, ok := objectMemberList(dst, body)
	if !ok {
		return nil, invalid("", "invalid_json", "The request body is not a JSON object.")
	}
	return m, nil
}

// objectMemberList is ParseObject on text json.Valid accepted, appending
// to dst (empty).
func objectMemberList(dst Members, b []byte) (Members, bool) {
	// A request's members, on the stack (from nil, the slice grew four
	// times for a chat completion's five).
	var stack [16]jsonMember
	members, ok := objectMembers(stack[:0], b)
	if !ok {
		return nil, false
	}
	m := dst
	if m == nil || cap(m) < len(members) {
		m = make(Members, 0, len(members))
	}
	// Past a few dozen members a repeated name is found by a map, so
	// that an object of very many members costs no more than the map
	// did; a request has far fewer.
	var seen map[string]int
	if len(members) > 32 {
		seen = make(map[string]int, len(members))
	}
	for _, mb := range members {
		name, ok := memberName(mb.key)
		if !ok {
			return nil, false
		}
		i := -1
		if seen != nil {
			if j, ok := seen[name]; ok {
				i = j
			} else {
				seen[name] = len(m)
			}
		} else {
			i = m.index(name)
		}
		if i >= 0 {
			m[i].Value = json.RawMessage(mb.value)
			continue
		}
		m = append(m, Member{Name: name, Value: json.RawMessage(mb.value)})
	}
	return m, true
}

// memberName decodes a member's key as written (quotes included), as
// encoding/json does: escapes decoded, and bytes that are not UTF-8 each
// read as U+FFFD (FuzzParseObject).
func memberName(key []byte) (string, bool) {
	if bytes.IndexByte(key, '\\') < 0 && utf8.Valid(key) {
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
func encodeMembers(m Members) ([]byte, error) {
	var stack [24]Member
	sorted := append(stack[:0], m...)
	size := 2
	for _, mb := range sorted {
		if !validJSON(mb.Value) {
			return nil, errors.New("member " + mb.Name + " is not valid JSON")
		}
		size += len(mb.Name) + len(mb.Value) + 8
	}
	slices.SortFunc(sorted, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	out := make([]byte, 0, size)
	out = append(out, '{')
	for i, mb := range sorted {
		if i > 0 {
			out = append(out, ',')
		}
		if plainName(mb.Name) {
			// json.Marshal's encoding of such a name is the name in quotes.
			out = append(append(append(out, '"'), mb.Name...), '"')
		} else {
			key, err := json.Marshal(mb.Name)
			if err != nil {
				return nil, err
			}
			out = append(out, key...)
		}
		out = append(append(out, ':'), mb.Value...)
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
