package providers

// A few helpers that walk valid JSON text without decoding it, so that a
// streamed chunk can be relayed with one member rewritten at the cost of a
// scan instead of a decode into a map and a re-encode (the stream's hot
// path). They assume text that json.Valid accepted.

import (
	"bytes"
	"encoding/json"
	"slices"
)

// skipSpace returns the index of the first non-space byte at or after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the value starting at i.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		// The closing quote is the first one no backslash escapes: found
		// with IndexByte (vectorized), not a byte at a time, since a
		// prompt is kilobytes of string (issue 33, ninth round). q, the
		// next quote, is kept while the escapes are before it.
		i++
		q := -1
		for {
			if q < i {
				if q = bytes.IndexByte(b[i:], '"'); q < 0 {
					// Unterminated: never past the end (the helpers
					// assume valid JSON, but must not panic on other).
					return len(b)
				}
				q += i
			}
			p := bytes.IndexByte(b[i:q], '\\')
			if p < 0 {
				return q + 1
			}
			// The escape and the byte it escapes.
			if i += p + 2; i > len(b) {
				return len(b)
			}
		}
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipValue(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	default: // number, true, false, null
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\n' && b[i] != '\t' && b[i] != '\r' {
			i++
		}
		return i
	}
}

// jsonMember is one member of an object: its key as written (quotes
// included) and its value.
type jsonMember struct {
	key, value []byte
}

// objectMembers appends the members of the object b to dst; ok is false if
// b is not an object.
func objectMembers(dst []jsonMember, b []byte) ([]jsonMember, bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return dst, false
	}
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] != '}' {
		ks := i
		i = skipValue(b, i)
		key := b[ks:i]
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != ':' {
			return dst, false
		}
		vs := skipSpace(b, i+1)
		i = skipValue(b, vs)
		dst = append(dst, jsonMember{key: key, value: b[vs:i]})
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return dst, true
}

// arrayElements calls fn with each element of the array b.
func arrayElements(b []byte, fn func(elem []byte)) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return
	}
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] != ']' {
		s := i
		i = skipValue(b, i)
		fn(b[s:i])
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
}

// isKey reports whether a member's key, as written, is name. Keys gw
// looks for are plain ASCII; an escaped spelling of one is not recognized.
func isKey(key []byte, name string) bool {
	return len(key) == len(name)+2 && string(key[1:len(key)-1]) == name
}

// finishes reports whether a choice's member m is a finish_reason that
// says the choice is over.
func finishes(m jsonMember) bool {
	return isKey(m.key, "finish_reason") && string(m.value) != "null" && string(m.value) != `""`
}

// setMember returns the JSON object raw with its member name set to value
// (added if absent), encoded exactly as json.Marshal encodes the
// map[string]json.RawMessage that json.Unmarshal makes of raw with that
// member set: compact, <, > and & (and U+2028, U+2029) escaped, members
// sorted by name, the last of duplicate names kept. It also returns the
// members named in also (nil if absent), in that encoding, so that the
// answer's usage and service tier are found by the same walk. ok is false when
// raw is not a JSON object (invalid, or another value); plain is false
// when a member's name is not plain ASCII without escapes, whose decoded
// spelling differs from its bytes: the caller then takes the map's way.
//
// It exists because the map's way (a decode into a map, a reflective
// encode) was a non-streamed answer's largest cost in gw; this is one
// compacting scan, a walk and a sort of the top-level members.
func setMember(raw []byte, name string, value []byte, also [2]string) (out []byte, alsoValues [2][]byte, ok, plain bool) {
	valid, compact, html := scanJSON(raw)
	if !valid {
		return nil, [2][]byte{}, false, true
	}
	// Most upstreams write their answer compact already: then it is its
	// own compact form, and neither scanned again nor copied.
	b := raw
	if !compact {
		var buf bytes.Buffer
		buf.Grow(len(raw) + len(value))
		_ = json.Compact(&buf, raw) // valid: checked above
		b = buf.Bytes()
	}
	if html {
		var esc bytes.Buffer
		esc.Grow(len(b) + 16)
		json.HTMLEscape(&esc, b)
		b = esc.Bytes()
	}
	members, isObject := objectMembers(make([]jsonMember, 0, 16), b)
	if !isObject {
		return nil, [2][]byte{}, false, true
	}
	for _, m := range members {
		if !plainKey(m.key) {
			return nil, [2][]byte{}, true, false
		}
	}
	// By name as json.Marshal sorts a map's keys (the bytes between the
	// quotes); stable, so that among equal names the last written stays
	// last.
	slices.SortStableFunc(members, func(a, b jsonMember) int {
		return bytes.Compare(a.key[1:len(a.key)-1], b.key[1:len(b.key)-1])
	})
	out = make([]byte, 0, len(b)+len(value)+len(name)+4)
	out = append(out, '{')
	set := false
	for i, m := range members {
		if i+1 < len(members) && bytes.Equal(m.key, members[i+1].key) {
			continue // a later duplicate replaces it
		}
		k := string(m.key[1 : len(m.key)-1])
		if !set && k >= name {
			out, set = appendMember(out, name, value), true
			if k == name {
				continue
			}
		}
		for i, a := range also {
			if k == a {
				alsoValues[i] = m.value
			}
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(append(append(out, m.key...), ':'), m.value...)
	}
	if !set {
		out = appendMember(out, name, value)
	}
	return append(out, '}'), alsoValues, true, true
}

func appendMember(out []byte, name string, value []byte) []byte {
	if len(out) > 1 {
		out = append(out, ',')
	}
	return append(append(append(append(out, '"'), name...), '"', ':'), value...)
}

// isCompact reports whether valid JSON b has no whitespace outside its
// strings, so that json.Compact would return it unchanged.
func isCompact(b []byte) bool {
	in := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return true
}

// needsHTMLEscape reports whether compact JSON has a byte json.Marshal
// would escape in a json.RawMessage: <, > or &, or the lead byte of U+2028
// and U+2029 (a false alarm only costs the escaping pass).
func needsHTMLEscape(b []byte) bool {
	for _, c := range b {
		if c == '<' || c == '>' || c == '&' || c == 0xE2 {
			return true
		}
	}
	return false
}

// plainKey reports whether a member's name, as written with its quotes,
// is printable ASCII without escapes, so that its bytes are both its
// decoded name and json.Marshal's encoding of it.
func plainKey(key []byte) bool {
	for _, c := range key[1 : len(key)-1] {
		if c < 0x20 || c >= 0x80 || c == '\\' || c == '"' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// ModelIDJSON is a model id as a JSON string, what Call.UpstreamModelJSON
// and Call.ResponseModelJSON hold; clipped, so an append to it never
// writes into a copy shared by other requests.
func ModelIDJSON(id string) []byte { return slices.Clip([]byte(jsonString(id))) }

// modelJSON is a model id as a JSON string: made, the caller's copy
// (Call.UpstreamModelJSON, Call.ResponseModelJSON), else made now.
func modelJSON(made []byte, id string) []byte {
	if made != nil {
		return made
	}
	return jsonString(id)
}
