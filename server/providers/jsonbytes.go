package providers

// A few helpers that walk valid JSON text without decoding it, so that a
// streamed chunk can be relayed with one member rewritten at the cost of a
// scan instead of a decode into a map and a re-encode (the stream's hot
// path). They assume text that json.Valid accepted.

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
		for i++; i < len(b); i++ {
			switch b[i] {
			case '\\':
				i++
			case '"':
				return i + 1
			}
		}
		return i
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

// choicesFinished reports whether any choice carries a finish_reason.
func choicesFinished(choices []byte) bool {
	finished := false
	var members []jsonMember
	arrayElements(choices, func(elem []byte) {
		members, _ = objectMembers(members[:0], elem)
		for _, m := range members {
			if isKey(m.key, "finish_reason") && string(m.value) != "null" && string(m.value) != `""` {
				finished = true
			}
		}
	})
	return finished
}
