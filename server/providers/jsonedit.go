package providers

import (
	"bytes"
	"io"
	"net"
	"slices"
	"unicode/utf8"
)

// A request forwarded to an upstream of its own dialect differs from what
// the caller sent in a few top-level members only (the model, the output
// limit, stream, store), yet decoding it into a map and encoding the map
// again held the body three more times (issue 27: a 30 MiB Responses
// request cost about 5.7 bytes per byte). The editor here writes those
// members over the body's bytes instead: the result is pieces, nearly all
// of them slices of the body itself, which the HTTP request reads in turn.

// Edit is a top-level member to write over a JSON object. Value, JSON text
// in pieces, replaces the member's value, or is added when the object has
// no such member; a nil Value removes the member.
type Edit struct {
	Name  string
	Value rope
}

// setTo is an Edit setting name to one piece of JSON text.
func setTo(name string, value []byte) Edit { return Edit{Name: name, Value: rope{value}} }

// removed is an Edit removing name.
func removed(name string) Edit { return Edit{Name: name} }

var (
	openBrace  = []byte("{")
	closeBrace = []byte("}")
	comma      = []byte(",")
	colon      = []byte(":")
)

// editObject applies edits to the JSON object body, text that json.Valid
// accepted, without copying it. Member names are compared as ParseObject
// reads them (decoded), and every member of an edited name takes the
// edit, duplicates included, so no earlier duplicate survives for an
// upstream that keeps the first. The members not edited stay as written,
// in their order; an edit whose name the object lacks comes last. Of two
// edits of one name, the later wins. ok is false when body is not an
// object.
//
// It allocates the result alone (for plain member names): gw's edits are
// a few (the model, the limit, stream and its options), so an edit is
// found by a scan rather than through a map, and the result is sized for
// every piece it can hold. Two maps, a temporary slice an edit and the
// result's growth were half its cost (issue 33, thirteenth round).
func editObject(body []byte, edits []Edit) (out rope, ok bool) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, false
	}
	// The braces; a run of members left as written before, between and
	// after the edited ones, each with its comma; a set member's comma,
	// key, colon and value.
	size := 2 + 2*(len(edits)+1)
	for _, e := range edits {
		if e.Value != nil {
			size += 3 + len(e.Value)
		}
	}
	out = append(make(rope, 0, size), openBrace)
	// applied[j]: the object had the name of edits[j], its name's last.
	var appliedBuf [8]bool
	applied := appliedBuf[:0]
	if len(edits) <= len(appliedBuf) {
		applied = appliedBuf[:len(edits)]
	} else {
		applied = make([]bool, len(edits))
	}
	wrote := false
	member := func(key []byte, value rope) {
		if wrote {
			out = append(out, comma)
		}
		out, wrote = append(append(out, key, colon), value...), true
	}
	// run is a stretch of members left as they are, written as one slice
	// of body (the commas between them included).
	runStart, runEnd := -1, -1
	flush := func() {
		if runStart >= 0 {
			if wrote {
				out = append(out, comma)
			}
			out, wrote = append(out, body[runStart:runEnd]), true
			runStart = -1
		}
	}
	for i = skipSpace(body, i+1); i < len(body) && body[i] != '}'; {
		ks := i
		i = skipValue(body, i)
		key := body[ks:i]
		i = skipSpace(body, i)
		if i >= len(body) || body[i] != ':' {
			return nil, false
		}
		i = skipValue(body, skipSpace(body, i+1))
		j := -1
		if name, plain := memberName(key); plain {
			j = lastEdit(edits, name)
		}
		if j >= 0 {
			flush()
			applied[j] = true
			if v := edits[j].Value; v != nil {
				member(key, v)
			}
		} else {
			if runStart < 0 {
				runStart = ks
			}
			runEnd = i
		}
		i = skipSpace(body, i)
		if i < len(body) && body[i] == ',' {
			i = skipSpace(body, i+1)
		}
	}
	if i >= len(body) {
		return nil, false
	}
	flush()
	for j, e := range edits {
		if !applied[j] && e.Value != nil && lastEdit(edits, e.Name) == j {
			member(jsonString(e.Name), e.Value)
		}
	}
	return append(out, closeBrace), true
}

// lastEdit is the index of the last of edits named name, or -1.
func lastEdit(edits []Edit, name string) int {
	for j := len(edits) - 1; j >= 0; j-- {
		if edits[j].Name == name {
			return j
		}
	}
	return -1
}

// reader reads the pieces in turn.
func (r rope) reader() io.Reader {
	b := net.Buffers(slices.Clone(r))
	return &b
}

// outlineKeep is how much of a long string an outline keeps: more than
// any value routing reads whole (a model id, a role, a part's type, a
// media type, the head of a data: URL) is ever long.
const outlineKeep = 256

// Outline returns the JSON text body with every string value longer than
// outlineKeep bytes cut to its first ones (at a character's or an
// escape's start, so it stays valid JSON); object keys stay whole. A
// request's outline has the shape of the request, which is all routing
// reads of it (the model, what it requires of a model, its limits), at the
// size of its structure rather than of its text: a request forwarded to an
// upstream of its own dialect is routed as the translation of its outline
// and never translated whole. body itself is returned when no string is
// that long. body must be valid JSON.
func Outline(body []byte) []byte {
	var out []byte
	done := 0 // body[:done] is in out
	for i := 0; i < len(body); {
		q := bytes.IndexByte(body[i:], '"')
		if q < 0 {
			break
		}
		start := i + q
		end := skipValue(body, start)
		i = end
		if end-start-2 <= outlineKeep {
			continue
		}
		if next := skipSpace(body, end); next < len(body) && body[next] == ':' {
			continue // a key
		}
		if out == nil {
			out = make([]byte, 0, len(body)/8)
		}
		out = append(append(out, body[done:cutAt(body, start+1, start+1+outlineKeep)]...), '"')
		done = end
	}
	if out == nil {
		return body
	}
	return append(out, body[done:]...)
}

// cutAt is the last place at or before limit where the string whose text
// starts at i may end: not inside an escape or a UTF-8 sequence.
func cutAt(b []byte, i, limit int) int {
	for i < limit {
		n := 1
		switch {
		case b[i] == '\\' && b[i+1] == 'u':
			n = 6
		case b[i] == '\\':
			n = 2
		case b[i] >= utf8.RuneSelf:
			_, n = utf8.DecodeRune(b[i:])
		}
		if i+n > limit {
			break
		}
		i += n
	}
	return i
}

// WithMember returns a copy of the JSON object body (which ParseObject
// accepted) with its member name set to value.
func WithMember(body []byte, name string, value []byte) []byte {
	out, ok := editObject(body, []Edit{setTo(name, value)})
	if !ok {
		return nil
	}
	return out.bytes()
}

// WithoutMember returns a copy of the JSON object body (which ParseObject
// accepted) without its member name (every one of that name).
func WithoutMember(body []byte, name string) []byte {
	out, ok := editObject(body, []Edit{removed(name)})
	if !ok {
		return nil
	}
	return out.bytes()
}
