package tokens

import (
	"encoding/json"
	"errors"
	"io"
	"unicode/utf8"
	"unsafe"
)

// errSyntax: the bytes are not JSON where the floor scan stands.
var errSyntax = errors.New("not JSON")

// floorScan walks a JSON document's bytes for a floor: it reads only the
// strings of the members its walker's keys name (unescaped only when
// they hold an escape) and skips the rest without decoding or copying it.
// A json.Decoder boxes every token it returns: walking one chat answer
// that way cost ≈ 200 allocations a request, on every request.
//
// With bound set (the walker not floorOnly) it is CountRequest's walk:
// every string, member name, number and literal counted as the
// json.Decoder walk counts them, and strict, so that what it accepts the
// decoder reads as the same values (a syntax error hands the document to
// the decoder's walk, which says what it makes of it).
type floorScan struct {
	b     []byte
	i     int
	w     requestWalker
	bound bool
	// cutKey and cutStart: the member and first byte of a string value
	// the document ended in (nil: none).
	cutKey   []byte
	cutStart int
}

func (s *floorScan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value scans one value, the value of member key.
func (s *floorScan) value(key []byte, depth int) error {
	if depth > maxDepth {
		return errTooDeep
	}
	s.ws()
	if s.i >= len(s.b) {
		return io.ErrUnexpectedEOF
	}
	switch s.b[s.i] {
	case '{':
		return s.object(depth)
	case '[':
		return s.array(key, depth)
	case '"':
		start := s.i + 1
		raw, escaped, ascii, err := s.str()
		if err != nil {
			s.cutKey, s.cutStart = key, start
			return err
		}
		if s.bound || s.w.keys[string(key)] {
			// The key and a plain value are read in place: str only
			// counts them (the count memo keeps a copy of what it keeps).
			v := unsafe.String(unsafe.SliceData(raw), len(raw))
			// Escapes, and bytes that are not UTF-8 (read as U+FFFD), as
			// encoding/json reads them. (ASCII, most strings, is UTF-8:
			// str saw no byte past 0x7f.)
			if escaped || !ascii && !utf8.Valid(raw) {
				var u string
				if json.Unmarshal(s.b[start-1:s.i], &u) != nil {
					return errSyntax
				}
				v = u
			}
			s.w.str(unsafe.String(unsafe.SliceData(key), len(key)), v)
		}
		return nil
	default:
		start := s.i
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', ']', '}', ' ', '\t', '\n', '\r':
				if s.i == start {
					return errSyntax
				}
				return s.scalar(s.b[start:s.i])
			}
			s.i++
		}
		if s.bound && depth == 0 && s.i > start {
			// A document that is one number or literal.
			return s.scalar(s.b[start:s.i])
		}
		return io.ErrUnexpectedEOF
	}
}

// scalar counts a number or literal toward the bound, as the decoder's
// walk does (a number's digits as a string, a literal as one token); it is
// checked only then (a floor skips it).
func (s *floorScan) scalar(v []byte) error {
	if !s.bound {
		return nil
	}
	switch string(v) {
	case "true", "false", "null":
		s.w.bound++
		return nil
	}
	if !isNumber(v) {
		return errSyntax
	}
	s.w.str("", unsafe.String(unsafe.SliceData(v), len(v)))
	return nil
}

// isNumber says whether v is a JSON number:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isNumber(v []byte) bool {
	i := 0
	if i < len(v) && v[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(v) && v[i] >= '0' && v[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(v) && v[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(v) && v[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(v) && (v[i] == 'e' || v[i] == 'E') {
		i++
		if i < len(v) && (v[i] == '+' || v[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(v)
}

func (s *floorScan) object(depth int) error {
	s.i++ // {
	if s.bound {
		s.w.objects++
	}
	for first := true; ; first = false {
		s.ws()
		if s.i >= len(s.b) {
			return io.ErrUnexpectedEOF
		}
		if s.b[s.i] == '}' {
			s.i++
			return nil
		}
		if !first {
			if s.b[s.i] != ',' {
				return errSyntax
			}
			s.i++
			s.ws()
		}
		if s.i >= len(s.b) {
			return io.ErrUnexpectedEOF
		}
		if s.b[s.i] != '"' {
			return errSyntax
		}
		start := s.i
		name, escaped, ascii, err := s.str()
		if err != nil {
			return err
		}
		if escaped {
			var n string
			if json.Unmarshal(s.b[start:s.i], &n) != nil {
				return errSyntax
			}
			name = []byte(n)
		} else if s.bound && !ascii && !utf8.Valid(name) {
			// Read as U+FFFD, as encoding/json reads it.
			var n string
			if json.Unmarshal(s.b[start:s.i], &n) != nil {
				return errSyntax
			}
			name = []byte(n)
		}
		if s.bound && s.w.names.Len() < exactLimit {
			s.w.names.Write(name)
			s.w.names.WriteByte(' ')
		}
		s.ws()
		if s.i >= len(s.b) {
			return io.ErrUnexpectedEOF
		}
		if s.b[s.i] != ':' {
			return errSyntax
		}
		s.i++
		if err := s.value(name, depth+1); err != nil {
			return err
		}
	}
}

// array scans an array; its elements are the member key's values.
func (s *floorScan) array(key []byte, depth int) error {
	s.i++ // [
	for first := true; ; first = false {
		s.ws()
		if s.i >= len(s.b) {
			return io.ErrUnexpectedEOF
		}
		if s.b[s.i] == ']' {
			s.i++
			return nil
		}
		if !first {
			if s.b[s.i] != ',' {
				return errSyntax
			}
			s.i++
		}
		if err := s.value(key, depth+1); err != nil {
			return err
		}
	}
}

// str reads a string at s.i (its opening quote): its bytes as written,
// and whether it holds an escape.
func (s *floorScan) str() (raw []byte, escaped, ascii bool, err error) {
	start := s.i + 1
	var high byte
	for i := start; i < len(s.b); i++ {
		switch c := s.b[i]; c {
		case '\\':
			escaped = true
			i++
		case '"':
			s.i = i + 1
			return s.b[start:i], escaped, high < utf8.RuneSelf, nil
		default:
			high |= c
			if s.bound && c < 0x20 {
				// Not allowed in a JSON string (the decoder refuses it).
				return nil, false, false, errSyntax
			}
		}
	}
	return nil, false, false, io.ErrUnexpectedEOF
}
