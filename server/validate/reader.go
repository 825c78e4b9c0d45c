package validate

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Object reads the members of one JSON object. Every accessor marks its member
// as known; Close reports the members nobody asked for as extra_forbidden, so
// strictness holds at every depth without a separate schema.
type Object struct {
	m    map[string]any
	loc  Loc
	errs *Errors
	used map[string]bool
}

// ReadObject starts reading v as an object at loc. When v is not an object it
// records a model_type issue and returns nil; callers skip the fields then.
func ReadObject(v any, loc Loc, errs *Errors) *Object {
	m, ok := v.(map[string]any)
	if !ok {
		errs.Add(loc, "model_type", "Input should be a valid dictionary or object to extract fields from", v, nil)
		return nil
	}
	return &Object{m: m, loc: loc, errs: errs, used: make(map[string]bool, len(m))}
}

// Loc is the object's own location.
func (o *Object) Loc() Loc { return o.loc }

// Errors is the collector the object reports to.
func (o *Object) Errors() *Errors { return o.errs }

// Raw returns a member's raw value, marking it known.
func (o *Object) Raw(name string) (any, bool) {
	o.used[name] = true
	v, ok := o.m[name]
	return v, ok
}

// Has reports whether the member is present (null counts as present).
func (o *Object) Has(name string) bool {
	_, ok := o.m[name]
	return ok
}

// Require fetches a member and reports it missing when absent.
func (o *Object) Require(name string) (any, bool) {
	v, ok := o.Raw(name)
	if !ok {
		o.errs.Add(o.loc.With(name), "missing", "Field required", nil, nil)
	}
	return v, ok
}

// Close reports members that no accessor asked for.
func (o *Object) Close() {
	if o == nil {
		return
	}
	var extra []string
	for k := range o.m {
		if !o.used[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		o.errs.Add(o.loc.With(k), "extra_forbidden", "Extra inputs are not permitted", o.m[k], nil)
	}
}

// StringRule bounds a string by its length in characters (not bytes) and,
// optionally, a pattern.
type StringRule struct {
	Min, Max int // Max 0 means unbounded
	Pattern  *regexp.Regexp
	// Secret keeps the value out of the issue's input: a 422 must not echo
	// a password or an API key back.
	Secret bool
	// NoControl refuses control characters (tabs, newlines, escapes):
	// names and labels are shown on one line, in tables and terminals,
	// where such characters hide or forge text.
	NoControl bool
}

// String checks that v is a string within the rule.
func String(v any, loc Loc, r StringRule, errs *Errors) (string, bool) {
	s, ok := v.(string)
	if !ok {
		errs.Add(loc, "string_type", "Input should be a valid string", v, nil)
		return "", false
	}
	n := utf8.RuneCountInString(s)
	input := any(s)
	if r.Secret {
		input = nil
	}
	// Names (and emails) refuse control characters, NUL included; other
	// strings from the API have passed RefuseNUL with their body.
	var ctl Errors
	if r.NoControl && !ControlIssue(s, loc, false, &ctl) {
		for _, is := range ctl.issues {
			if r.Secret {
				is.Input = nil
			}
			errs.issues = append(errs.issues, is)
		}
		return s, false
	}
	switch {
	case n < r.Min:
		errs.Add(loc, "string_too_short", fmt.Sprintf("String should have at least %d %s", r.Min, plural(r.Min, "character")), input,
			map[string]any{"min_length": r.Min})
		return s, false
	case r.Max > 0 && n > r.Max:
		errs.Add(loc, "string_too_long", fmt.Sprintf("String should have at most %d %s", r.Max, plural(r.Max, "character")), input,
			map[string]any{"max_length": r.Max})
		return s, false
	case r.Pattern != nil && !r.Pattern.MatchString(s):
		errs.Add(loc, "string_pattern_mismatch", fmt.Sprintf("String should match pattern '%s'", r.Pattern.String()), input,
			map[string]any{"pattern": r.Pattern.String()})
		return s, false
	}
	return s, true
}

// IntRule bounds an integer; nil bounds are open.
type IntRule struct {
	Min, Max *int64
}

// Bound is a helper for IntRule literals.
func Bound(n int64) *int64 { return &n }

// Int checks that v is a whole JSON number within the rule. The number is
// read exactly (as a rational), so 2.0 and 1e3 are whole while
// 2.0000000000000001 is not; strings and booleans are refused: the wire is
// JSON, and there is no lax mode.
func Int(v any, loc Loc, r IntRule, errs *Errors) (int64, bool) {
	num, ok := v.(json.Number)
	if !ok {
		errs.Add(loc, "int_type", "Input should be a valid integer", v, nil)
		return 0, false
	}
	n, err := num.Int64()
	if err != nil {
		rat, ok := new(big.Rat).SetString(num.String())
		switch {
		case !ok:
			errs.Add(loc, "int_parsing", "Input should be a valid integer, unable to parse string as an integer", num.String(), nil)
			return 0, false
		case !rat.IsInt():
			errs.Add(loc, "int_from_float", "Input should be a valid integer, got a number with a fractional part", numberInput(num), nil)
			return 0, false
		case !rat.Num().IsInt64():
			errs.Add(loc, "int_parsing_size", "Unable to parse input string as an integer, exceeded maximum size", numberInput(num), nil)
			return 0, false
		}
		n = rat.Num().Int64()
	}
	return n, checkIntBounds(n, loc, r, errs)
}

func checkIntBounds(n int64, loc Loc, r IntRule, errs *Errors) bool {
	if r.Min != nil && n < *r.Min {
		errs.Add(loc, "greater_than_equal", fmt.Sprintf("Input should be greater than or equal to %d", *r.Min), n,
			map[string]any{"ge": *r.Min})
		return false
	}
	if r.Max != nil && n > *r.Max {
		errs.Add(loc, "less_than_equal", fmt.Sprintf("Input should be less than or equal to %d", *r.Max), n,
			map[string]any{"le": *r.Max})
		return false
	}
	return true
}

// IntString parses a query-string integer (where everything is text) with
// the same bounds and issue types as Int.
func IntString(s string, loc Loc, r IntRule, errs *Errors) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		errs.Add(loc, "int_parsing", "Input should be a valid integer, unable to parse string as an integer", s, nil)
		return 0, false
	}
	return n, checkIntBounds(n, loc, r, errs)
}

func numberInput(n json.Number) any {
	if f, err := n.Float64(); err == nil {
		return f
	}
	return n.String()
}

// Bool checks that v is a JSON boolean.
func Bool(v any, loc Loc, errs *Errors) (bool, bool) {
	b, ok := v.(bool)
	if !ok {
		errs.Add(loc, "bool_type", "Input should be a valid boolean", v, nil)
	}
	return b, ok
}

// UUID checks that v is a string holding a UUID in its canonical form.
func UUID(v any, loc Loc, errs *Errors) (uuid.UUID, bool) {
	s, ok := v.(string)
	if !ok {
		errs.Add(loc, "uuid_type", "UUID input should be a string, bytes or UUID object", v, nil)
		return uuid.Nil, false
	}
	return UUIDString(s, loc, errs)
}

// UUIDString parses s (a path or query value, or a JSON string) as a UUID.
func UUIDString(s string, loc Loc, errs *Errors) (uuid.UUID, bool) {
	id, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		msg := "invalid length"
		if err != nil {
			msg = strings.TrimPrefix(err.Error(), "invalid UUID ")
		}
		errs.Add(loc, "uuid_parsing", "Input should be a valid UUID, "+msg, s, map[string]any{"error": msg})
		return uuid.Nil, false
	}
	return id, true
}

// DateTime checks that v is an RFC 3339 date-time string with a time zone,
// and returns it in UTC.
func DateTime(v any, loc Loc, errs *Errors) (time.Time, bool) {
	s, ok := v.(string)
	if !ok {
		errs.Add(loc, "datetime_type", "Input should be a valid datetime", v, nil)
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		if _, lerr := time.Parse("2006-01-02T15:04:05.999999999", s); lerr == nil {
			errs.Add(loc, "timezone_aware", "Input should have timezone info", s, nil)
			return time.Time{}, false
		}
		errs.Add(loc, "datetime_parsing", "Input should be a valid datetime, invalid format", s,
			map[string]any{"error": "invalid format"})
		return time.Time{}, false
	}
	return t.UTC(), true
}

// Literal checks that v is one of the allowed strings.
func Literal(v any, loc Loc, allowed []string, errs *Errors) (string, bool) {
	s, isStr := v.(string)
	if isStr {
		for _, a := range allowed {
			if s == a {
				return s, true
			}
		}
	}
	expected := QuoteList(allowed)
	errs.Add(loc, "literal_error", "Input should be "+expected, v, map[string]any{"expected": expected})
	return s, false
}

// QuoteList renders 'a', 'b' or 'c' the way pydantic's messages do.
func QuoteList(items []string) string {
	q := make([]string, len(items))
	for i, it := range items {
		q[i] = "'" + it + "'"
	}
	if len(q) <= 1 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// ListRule bounds the number of items in a list; Max 0 means unbounded.
type ListRule struct {
	Min, Max int
}

// List checks that v is an array within the rule and calls item for each
// element (even when the length is out of bounds, so every problem shows).
func List(v any, loc Loc, r ListRule, errs *Errors, item func(v any, loc Loc)) bool {
	arr, ok := v.([]any)
	if !ok {
		errs.Add(loc, "list_type", "Input should be a valid list", v, nil)
		return false
	}
	good := true
	switch n := len(arr); {
	case n < r.Min:
		errs.Add(loc, "too_short", fmt.Sprintf("List should have at least %d %s after validation, not %d", r.Min, plural(r.Min, "item"), n), arr,
			map[string]any{"field_type": "List", "min_length": r.Min, "actual_length": n})
		good = false
	case r.Max > 0 && n > r.Max:
		// The input is left out: echoing a 1001-item list back helps nobody.
		errs.Add(loc, "too_long", fmt.Sprintf("List should have at most %d %s after validation, not %d", r.Max, plural(r.Max, "item"), n), nil,
			map[string]any{"field_type": "List", "max_length": r.Max, "actual_length": n})
		good = false
	}
	for i, el := range arr {
		item(el, loc.With(i))
	}
	return good
}

// Discriminator reads the tag member of a tagged union and checks it against
// the known tags, reporting union_tag_not_found / union_tag_invalid.
func Discriminator(o *Object, tag string, tags []string) (string, bool) {
	v, ok := o.Raw(tag)
	s, isStr := v.(string)
	if !ok || !isStr {
		o.errs.Add(o.loc, "union_tag_not_found", fmt.Sprintf("Unable to extract tag using discriminator '%s'", tag), o.m,
			map[string]any{"discriminator": "'" + tag + "'"})
		return "", false
	}
	for _, t := range tags {
		if s == t {
			return s, true
		}
	}
	expected := strings.Join(quoteEach(tags), ", ")
	o.errs.Add(o.loc, "union_tag_invalid",
		fmt.Sprintf("Input tag '%s' found using '%s' does not match any of the expected tags: %s", s, tag, expected), o.m,
		map[string]any{"discriminator": "'" + tag + "'", "tag": s, "expected_tags": expected})
	return s, false
}

func quoteEach(items []string) []string {
	q := make([]string, len(items))
	for i, it := range items {
		q[i] = "'" + it + "'"
	}
	return q
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// Keys lists the object's member names, sorted, for objects whose members
// are data (a map) rather than a fixed set of fields. Read them with Raw.
func (o *Object) Keys() []string {
	keys := make([]string, 0, len(o.m))
	for k := range o.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
