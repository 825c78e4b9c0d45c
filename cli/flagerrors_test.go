package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// TestWithFlags: a 422's items on fields set by flags read as sentences
// about the flags; other items keep the server's words; other errors pass
// unchanged (issue 26, row 11).
func TestWithFlags(t *testing.T) {
	item := func(loc []any, typ, msg string, input any) wire.ValidationIssue {
		return wire.ValidationIssue{Loc: loc, Type: typ, Msg: msg, Input: input}
	}
	for _, c := range []struct {
		name   string
		issues []wire.ValidationIssue
		want   string // "" when the error passes unchanged
	}{
		{"pattern", []wire.ValidationIssue{item([]any{"body", "amount_usd"}, "string_pattern_mismatch", `String should match pattern '^\d+(?:\.\d+)?$'`, "-5")},
			`--amount must be a non-negative decimal number of USD, e.g. 12.50, not "-5"`},
		{"the server's words", []wire.ValidationIssue{item([]any{"body", "amount_usd"}, "value_error", "Value error, at most 9 decimals", "1.0000000001")},
			"--amount: at most 9 decimals"},
		{"schema phrasing", []wire.ValidationIssue{item([]any{"body", "name"}, "string_too_short", "String should have at least 1 character", "")},
			"--name must have at least 1 character"},
		{"below the field, quoted", []wire.ValidationIssue{item([]any{"body", "targets", float64(1), "model"}, "value_error", "Value error, not a model of the catalog in force", "openai/nope")},
			`MODEL "openai/nope": not a model of the catalog in force`},
		{"a member", []wire.ValidationIssue{item([]any{"body", "settings", "region"}, "value_error", "Should be an AWS region, such as us-east-1", "??")},
			"--setting region: Should be an AWS region, such as us-east-1"},
		{"mixed", []wire.ValidationIssue{
			item([]any{"body", "period"}, "literal_error", "Input should be 'day' or 'month'", "week"),
			item([]any{"body", "other"}, "missing", "Field required", nil)},
			"--period must be day or month, not \"week\"\nbody.other: Field required"},
		{"nothing of ours", []wire.ValidationIssue{item([]any{"body", "other"}, "missing", "Field required", nil)}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := &client.APIError{Status: 422, Detail: "validation failed", Issues: c.issues}
			fields := append(append([]cmdutil.FlagField{}, tagBudgetFields...), aliasFields...)
			// gw credentials' --setting, whose items name the setting.
			fields = append(fields, cmdutil.FlagField{Loc: "body.settings", Flag: "--setting", Member: true})
			err := cmdutil.WithFlags(in, fields...)
			if c.want == "" {
				if err != error(in) {
					t.Fatalf("changed: %v", err)
				}
				return
			}
			var ue cmdutil.UsageError
			if !errors.As(err, &ue) || err.Error() != c.want {
				t.Fatalf("got %T %q\nwant %q", err, err, c.want)
			}
		})
	}
	other := errors.New("boom")
	if cmdutil.WithFlags(other, tagBudgetFields...) != other {
		t.Fatal("a non-API error changed")
	}
}

// TestFlagMessages: the new commands name the flag in a sentence, from
// their own checks and from the server's items, and exit 2.
func TestFlagMessages(t *testing.T) {
	e := newResEnv(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		// body.amount_usd: String should match pattern '^\d+(?:\.\d+)?$' before.
		{[]string{"budgets", "create-for-tag", "team=x", "--amount", "-5", "--period", "month"}, `--amount must be a non-negative decimal number of USD, e.g. 12.50, not "-5"`},
		{[]string{"budgets", "create-for-tag", "Team=x", "--amount", "5", "--period", "month"}, `the tag's KEY "Team": a tag key is lowercase letters, digits, _ . and -`},
		{[]string{"aliases", "set", "a/b", "openai/gpt-4o"}, `NAME "a/b": an alias name is 1 to 128 letters`},
		{[]string{"aliases", "set", "x", "openai/gpt-4o=0"}, `target "openai/gpt-4o=0": the weight must be a whole number from 1 to 100`},
		{[]string{"aliases", "set", "x", "openai/nope"}, `MODEL "openai/nope": not a model of the catalog in force`},
		{[]string{"credentials", "create", "--provider", "openai", "--label", "b", "--secret-stdin", "--setting", "region=us-east-1"}, "--setting region: "},
		{[]string{"usage", "report", "--timezone", "Mars/Base"}, `--timezone "Mars/Base": unknown time zone; use an IANA name such as Europe/Paris`},
		{[]string{"usage", "export", "--owner", "bob"}, `--owner must be a user's UUID, not "bob"`},
		{[]string{"usage", "report", "--tag", "Team=x"}, `--tag "Team=x": a tag key is lowercase letters`},
		{[]string{"workspaces", "update", "--slug", "Bad Slug"}, `--slug must be lowercase letters, digits and -, starting and ending with a letter or digit, e.g. search-team, not "Bad Slug"`},
		{[]string{"workspaces", "update", "--name", ""}, "--name must have at least 1 character"},
	} {
		r := e.code(ExitUsage, "sk-abcdef0123456789abcdef", c.args...)
		mustContain(t, strings.Join(c.args, " "), r.errOut, "error: "+c.want)
		mustNotContain(t, strings.Join(c.args, " "), r.errOut, "body.", "query.", "pattern", "sk-abcdef")
	}
}

// The fields of gw budgets create-for-tag and gw aliases set, as their
// packages declare them.
var (
	tagBudgetFields = []cmdutil.FlagField{
		{Loc: "body.amount_usd", Flag: "--amount", Want: "a non-negative decimal number of USD, e.g. 12.50"},
		{Loc: "body.period", Flag: "--period", Want: "day or month"},
		{Loc: "body.name", Flag: "--name"},
		{Loc: "body.tag_key", Flag: "the tag's KEY", Input: true},
		{Loc: "body.tag_value", Flag: "the tag's VALUE", Input: true},
	}
	aliasFields = []cmdutil.FlagField{
		{Loc: "body.name", Flag: "NAME", Input: true},
		{Loc: "body.targets", Flag: "MODEL", Input: true},
	}
)
