// Package validate reads untrusted JSON into typed values and reports every
// problem at once, in the shape pydantic (and so FastAPI) uses: a location
// path, a message, a machine-readable type, the offending input and context.
//
// The spec fixes that error shape, and clients already parse it, so the words
// in Type follow pydantic's vocabulary exactly. The package is pure: no I/O,
// no clock, no globals.
package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
)

// Issue is one validation problem.
type Issue struct {
	Loc   []any          `json:"loc"`
	Msg   string         `json:"msg"`
	Type  string         `json:"type"`
	Input any            `json:"input,omitempty"`
	Ctx   map[string]any `json:"ctx,omitempty"`
}

// Error carries every issue found in one request. It is what handlers return
// for a 422.
type Error struct {
	Issues []Issue
}

func (e *Error) Error() string {
	parts := make([]string, 0, len(e.Issues))
	for _, is := range e.Issues {
		parts = append(parts, fmt.Sprintf("%s: %s", FormatLoc(is.Loc), is.Msg))
	}
	return "validation failed: " + strings.Join(parts, "; ")
}

// FormatLoc renders a location as a dotted path with list indexes in brackets,
// e.g. body.definition.rules[0].action.names — what a person reads on a
// terminal.
func FormatLoc(loc []any) string {
	var b strings.Builder
	for i, p := range loc {
		switch v := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", v)
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, v)
		}
	}
	return b.String()
}

// AsError reports whether err is (or wraps) a validation error.
func AsError(err error) (*Error, bool) {
	var ve *Error
	ok := errors.As(err, &ve)
	return ve, ok
}

// Loc is a location path. Extending it always copies, so sibling fields never
// share a backing array.
type Loc []any

// With returns loc extended by the given parts.
func (l Loc) With(parts ...any) Loc {
	out := make(Loc, 0, len(l)+len(parts))
	out = append(out, l...)
	return append(out, parts...)
}

// Errors collects issues while a value is read.
type Errors struct {
	issues []Issue
}

// Add records one issue.
func (e *Errors) Add(loc Loc, typ, msg string, input any, ctx map[string]any) {
	e.issues = append(e.issues, Issue{Loc: []any(loc.With()), Msg: msg, Type: typ, Input: input, Ctx: ctx})
}

// Len is the number of issues so far.
func (e *Errors) Len() int { return len(e.issues) }

// Issues returns the problems so far, in the order they were added.
func (e *Errors) Issues() []Issue { return e.issues }

// Err returns nil when nothing was reported, else an *Error with every issue.
func (e *Errors) Err() error {
	if len(e.issues) == 0 {
		return nil
	}
	return &Error{Issues: append([]Issue(nil), e.issues...)}
}

// Single builds an error with one issue.
func Single(loc Loc, typ, msg string, input any, ctx map[string]any) *Error {
	var errs Errors
	errs.Add(loc, typ, msg, input, ctx)
	return &Error{Issues: errs.issues}
}

// ParseJSON decodes a request body into a generic tree (objects as
// map[string]any, numbers as json.Number). An empty body is reported as a
// missing body; malformed JSON as json_invalid at the byte offset.
func ParseJSON(data []byte, root Loc) (any, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, Single(root, "missing", "Field required", nil, nil)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		offset := dec.InputOffset()
		if errors.Is(err, io.ErrUnexpectedEOF) {
			offset = int64(len(data)) // truncated: the problem is at the end
		}
		return nil, jsonInvalid(root, err, offset)
	}
	// Trailing data after the first value is malformed JSON too.
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			err = errors.New("extra data after the JSON value")
		}
		return nil, jsonInvalid(root, err, dec.InputOffset())
	}
	return v, nil
}

// RefuseNUL reports every string, and every member name, in a tree from
// ParseJSON that holds U+0000. No text column of PostgreSQL can hold one
// (a 500 otherwise) and no field of the API has a use for one, so the API
// refuses it in any request body, naming each place. The policy language
// itself (a pure parser, with its schema) leaves the question to its
// callers.
func RefuseNUL(v any, root Loc) error {
	var errs Errors
	refuseNUL(v, root, &errs)
	return errs.Err()
}

func refuseNUL(v any, loc Loc, errs *Errors) {
	switch t := v.(type) {
	case string:
		if strings.IndexByte(t, 0) >= 0 {
			errs.Add(loc, nulType, nulMsg, nil, nil)
		}
	case []any:
		for i, el := range t {
			refuseNUL(el, loc.With(i), errs)
		}
	case map[string]any:
		for k, el := range t {
			if strings.IndexByte(k, 0) >= 0 {
				// The name itself cannot be echoed into a location
				// safely; the object's location names the place.
				errs.Add(loc, nulType, "Value error, a member name must not contain the NUL character (\\u0000)", nil, nil)
				continue
			}
			refuseNUL(el, loc.With(k), errs)
		}
	}
}

const (
	nulType = "string_pattern_mismatch"
	nulMsg  = "String should not contain the NUL character (\\u0000)"
	ctlMsg  = "String should not contain control characters"
)

// ControlIssue checks a string from outside JSON (a path segment, a query
// value, a form field): NUL is never allowed, other control characters
// only where allowControl says so. It reports at loc and returns false on a
// problem.
func ControlIssue(s string, loc Loc, allowControl bool, errs *Errors) bool {
	for _, r := range s {
		switch {
		case r == 0:
			errs.Add(loc, nulType, nulMsg, nil, map[string]any{"pattern": "[^\\x00]"})
			return false
		case !allowControl && unicode.IsControl(r):
			errs.Add(loc, nulType, ctlMsg, s, map[string]any{"pattern": "[^\\p{Cc}]"})
			return false
		}
	}
	return true
}

func jsonInvalid(root Loc, err error, offset int64) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		offset = se.Offset
	}
	return Single(root.With(int(offset)), "json_invalid", "JSON decode error", nil,
		map[string]any{"error": err.Error()})
}
