package providers

import "encoding/json"

// validJSON is json.Valid, several times faster: encoding/json's scanner
// calls a step function through a pointer for every byte, and every
// streamed chunk, every answer's usage and every request body is checked
// (a streamed chunk's check was 7 % of gw's CPU a streamed request, issue
// 33). Like json.Valid it accepts any bytes in a string but control
// characters (no UTF-8 check); documents nested deeper than
// validMaxDepth are handed to json.Valid, whose depth limit is its own.
// TestValidJSONIsJSONValid and FuzzValidJSON hold it to json.Valid.
func validJSON(b []byte) bool {
	ok, _, _ := scanJSON(b)
	return ok
}

// scanJSON is validJSON that also tells, of a valid document, whether it
// is compact (no whitespace outside its strings, so json.Compact would
// return it unchanged) and whether it holds a byte json.Marshal escapes in
// a json.RawMessage (<, > or &, or the lead byte of U+2028 and U+2029; a
// false alarm only costs an escaping pass). Both are learnt in the one
// pass: whitespace outside strings is only ever skipped by space, and
// those bytes only appear inside strings (setMember read the answer three
// times for them, issue 33's thirteenth round).
func scanJSON(b []byte) (ok, compact, html bool) {
	v := jsonValidator{b: b}
	v.space()
	ok = v.value(0)
	if v.deep {
		if !json.Valid(b) {
			return false, false, false
		}
		return true, isCompact(b), needsHTMLEscape(b)
	}
	v.space()
	return ok && v.i == len(b), !v.spaced, v.html
}

// validMaxDepth: deeper documents are json.Valid's to judge.
const validMaxDepth = 512

type jsonValidator struct {
	b    []byte
	i    int
	deep bool
	// spaced: space skipped some whitespace; html: a string held a byte
	// of strHTML (scanJSON).
	spaced, html bool
}

func (v *jsonValidator) space() {
	for v.i < len(v.b) {
		switch v.b[v.i] {
		case ' ', '\t', '\n', '\r':
			v.i++
			v.spaced = true
		default:
			return
		}
	}
}

// value checks the value at v.i (whitespace before it skipped).
func (v *jsonValidator) value(depth int) bool {
	if v.i >= len(v.b) {
		return false
	}
	switch c := v.b[v.i]; {
	case c == '{':
		if depth >= validMaxDepth {
			v.deep = true
			return false
		}
		return v.object(depth + 1)
	case c == '[':
		if depth >= validMaxDepth {
			v.deep = true
			return false
		}
		return v.array(depth + 1)
	case c == '"':
		return v.str()
	case c == 't':
		return v.literal("true")
	case c == 'f':
		return v.literal("false")
	case c == 'n':
		return v.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return v.number()
	}
	return false
}

func (v *jsonValidator) object(depth int) bool {
	v.i++ // {
	v.space()
	if v.i < len(v.b) && v.b[v.i] == '}' {
		v.i++
		return true
	}
	for {
		if v.i >= len(v.b) || v.b[v.i] != '"' || !v.str() {
			return false
		}
		v.space()
		if v.i >= len(v.b) || v.b[v.i] != ':' {
			return false
		}
		v.i++
		v.space()
		if !v.value(depth) {
			return false
		}
		if more, ok := v.next('}'); !more {
			return ok
		}
	}
}

func (v *jsonValidator) array(depth int) bool {
	v.i++ // [
	v.space()
	if v.i < len(v.b) && v.b[v.i] == ']' {
		v.i++
		return true
	}
	for {
		if !v.value(depth) {
			return false
		}
		if more, ok := v.next(']'); !more {
			return ok
		}
	}
}

// next reads what follows an object's member or an array's element: a
// comma (more, and the space after it) or the closing byte (ok, no more);
// anything else is not valid JSON (neither).
func (v *jsonValidator) next(closing byte) (more, ok bool) {
	v.space()
	if v.i >= len(v.b) {
		return false, false
	}
	switch v.b[v.i] {
	case ',':
		v.i++
		v.space()
		return true, true
	case closing:
		v.i++
		return false, true
	}
	return false, false
}

// The classes of a string's bytes (strBytes); most are strPlain.
const (
	strPlain = iota
	strQuote
	strControl
	strEscape
	strHTML
)

// strBytes classes every byte for str, so that a plain byte, nearly all
// of them, costs one load and one comparison.
var strBytes = func() (t [256]uint8) {
	for c := range 0x20 {
		t[c] = strControl
	}
	t['"'], t['\\'] = strQuote, strEscape
	for _, c := range []byte{'<', '>', '&', 0xE2} {
		t[c] = strHTML
	}
	return t
}()

// str checks the string at v.i (its opening quote).
func (v *jsonValidator) str() bool {
	b := v.b
	for i := v.i + 1; i < len(b); i++ {
		cls := strBytes[b[i]]
		if cls == strPlain {
			continue
		}
		switch cls {
		case strQuote:
			v.i = i + 1
			return true
		case strControl:
			return false
		case strHTML:
			v.html = true
		case strEscape:
			i++
			if i >= len(b) {
				return false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return false
				}
				for _, h := range b[i+1 : i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return false
					}
				}
				i += 4
			default:
				return false
			}
		}
	}
	return false
}

func (v *jsonValidator) literal(word string) bool {
	if len(v.b)-v.i < len(word) || string(v.b[v.i:v.i+len(word)]) != word {
		return false
	}
	v.i += len(word)
	return true
}

// number checks -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at v.i.
func (v *jsonValidator) number() bool {
	b := v.b
	digits := func() int {
		n := 0
		for v.i < len(b) && b[v.i] >= '0' && b[v.i] <= '9' {
			v.i++
			n++
		}
		return n
	}
	if b[v.i] == '-' {
		v.i++
	}
	switch {
	case v.i < len(b) && b[v.i] == '0':
		v.i++
	case digits() == 0:
		return false
	}
	if v.i < len(b) && b[v.i] == '.' {
		v.i++
		if digits() == 0 {
			return false
		}
	}
	if v.i < len(b) && (b[v.i] == 'e' || b[v.i] == 'E') {
		v.i++
		if v.i < len(b) && (b[v.i] == '+' || b[v.i] == '-') {
			v.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}
