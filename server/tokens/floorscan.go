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
type floorScan struct {
	b []byte
	i int
	w requestWalker
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
		raw, escaped, err := s.str()
		if err != nil {
			s.cutKey, s.cutStart = key, start
			return err
		}
		if s.w.keys[string(key)] {
			// The key and a plain value are read in place: str only
			// counts them (the count memo keeps a copy of what it keeps).
			v := unsafe.String(unsafe.SliceData(raw), len(raw))
			// Escapes, and bytes that are not UTF-8 (read as U+FFFD), as
			// encoding/json reads them.
			if escaped || !utf8.Valid(raw) {
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
				return nil
			}
			s.i++
		}
		return io.ErrUnexpectedEOF
	}
}

func (s *floorScan) object(depth int) error {
	s.i++ // {
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
		name, escaped, err := s.str()
		if err != nil {
			return err
		}
		if escaped {
			var n string
			if json.Unmarshal(s.b[start:s.i], &n) != nil {
				return errSyntax
			}
			name = []byte(n)
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
func (s *floorScan) str() (raw []byte, escaped bool, err error) {
	start := s.i + 1
	for i := start; i < len(s.b); i++ {
		switch s.b[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			s.i = i + 1
			return s.b[start:i], escaped, nil
		}
	}
	return nil, false, io.ErrUnexpectedEOF
}
