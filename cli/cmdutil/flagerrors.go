package cmdutil

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// A command's flags become a request's fields; when the server refuses a
// field, the person should read which flag was wrong, in a sentence, not
// `body.amount_usd: String should match pattern '^\d+(?:\.\d+)?$'` (issue
// 26, row 11). Commands check what is cheap to check before sending;
// what only the server knows comes back as validation items, which
// WithFlags maps back to the flags through a table each command keeps
// beside its request.

// FlagField is a request field set by a flag or an argument.
type FlagField struct {
	// Loc is the field as validation items name it (body.amount_usd,
	// query.timezone); items below it (body.settings.region) match too.
	Loc string
	// Flag names what set it: "--amount", "the MODEL argument".
	Flag string
	// Want says what the flag takes, for items that say it in the
	// schema's terms (a pattern, a type): "--amount must be Want, not …".
	Want string
	// Member: the item's path below Loc names the setting, appended to
	// Flag (--setting region).
	Member bool
	// Input: the message quotes the value the server refused (never set
	// for a secret).
	Input bool
}

// shapeIssues are the item types that describe the value's form rather
// than say what is wrong in words; Want replaces them.
var shapeIssues = map[string]bool{
	"string_pattern_mismatch": true, "string_type": true, "int_parsing": true, "int_type": true, "int_from_float": true,
	"uuid_parsing": true, "uuid_type": true, "literal_error": true, "bool_type": true, "datetime_parsing": true,
}

// WithFlags turns a 422's items on fields of the table into sentences
// naming their flags, one a line, as a usage error (the command was
// called with a bad value, exit 2 as when it is caught here). Items on
// other fields keep the server's wording; other errors pass unchanged.
func WithFlags(err error, fields ...FlagField) error {
	var ae *client.APIError
	if !errors.As(err, &ae) || len(ae.Issues) == 0 {
		return err
	}
	lines := make([]string, 0, len(ae.Issues))
	mapped := false
	for _, is := range ae.Issues {
		loc := formatIssueLoc(is.Loc)
		line := loc + ": " + is.Msg
		for _, f := range fields {
			if rest, ok := underLoc(loc, f.Loc); ok {
				line, mapped = f.sentence(is, rest), true
				break
			}
		}
		lines = append(lines, line)
	}
	if !mapped {
		return err
	}
	return UsageError{errors.New(strings.Join(lines, "\n"))}
}

// underLoc reports whether loc is field or below it, and the rest.
func underLoc(loc, field string) (string, bool) {
	if loc == field {
		return "", true
	}
	rest, ok := strings.CutPrefix(loc, field)
	if ok && (strings.HasPrefix(rest, ".") || strings.HasPrefix(rest, "[")) {
		return rest, true
	}
	return "", false
}

// sentence says one item in the flag's terms.
func (f FlagField) sentence(is wire.ValidationIssue, rest string) string {
	flag := f.Flag
	if f.Member && rest != "" {
		flag += " " + strings.TrimPrefix(rest, ".")
	}
	input, hasInput := is.Input.(string)
	if n, ok := is.Input.(float64); ok {
		input, hasInput = fmt.Sprint(n), true
	}
	if f.Want != "" && shapeIssues[is.Type] {
		if hasInput {
			return fmt.Sprintf("%s must be %s, not %q", flag, f.Want, input)
		}
		return fmt.Sprintf("%s must be %s", flag, f.Want)
	}
	msg := strings.TrimPrefix(is.Msg, "Value error, ")
	if f.Input && hasInput && !strings.Contains(msg, input) {
		flag = fmt.Sprintf("%s %q", flag, input)
	}
	// The schema's own phrasing reads as a sentence about the flag:
	// "String should have at least 1 character" → "--name must have at
	// least 1 character".
	for _, p := range []struct{ schema, flag string }{{"String should ", " must "}, {"Input should ", " must "}} {
		if rest, ok := strings.CutPrefix(msg, p.schema); ok {
			return flag + p.flag + rest
		}
	}
	return flag + ": " + msg
}

// formatIssueLoc writes a location as the client's errors do:
// body.targets[0].model.
func formatIssueLoc(loc []any) string {
	var b strings.Builder
	for i, p := range loc {
		switch v := p.(type) {
		case float64:
			fmt.Fprintf(&b, "[%d]", int(v))
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
