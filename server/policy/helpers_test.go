package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server/validate"
)

// JSON builders for definitions, so boundary tables read as the one member
// they change.

func defJSON(target string, rules ...string) string {
	return `{"target":` + target + `,"rules":[` + strings.Join(rules, ",") + `]}`
}

func wsDef(rules ...string) string { return defJSON(`{"kind":"workspace"}`, rules...) }

// ruleJSON is a rule matching every request with the given action.
func ruleJSON(action string) string {
	return `{"match":{"kind":"all_requests"},"action":` + action + `}`
}

func matchRule(match string) string {
	return `{"match":` + match + `,"action":{"kind":"strict_parameters"}}`
}

const (
	denyRule     = `{"match":{"kind":"all_requests"},"action":{"kind":"deny","message":"no"}}`
	strictRule   = `{"match":{"kind":"all_requests"},"action":{"kind":"strict_parameters"}}`
	fallbackRule = `{"match":{"kind":"all_requests"},"action":{"kind":"fallback","models":["a/b"],"on":["timeout"],"max_attempts":2,"timeout_ms":100}}`
)

func repeatRule(rule string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = rule
	}
	return out
}

// strs renders a JSON array of n distinct strings, each exactly length
// characters long (length >= 4 keeps them distinct up to 10^4 items).
func strs(n, length int) string {
	items := make([]string, n)
	for i := range items {
		s := fmt.Sprintf("%04d", i%10000)
		if length < len(s) {
			s = s[:length]
		} else {
			s += strings.Repeat("x", length-len(s))
		}
		items[i] = s
	}
	b, _ := json.Marshal(items)
	return string(b)
}

// uuids renders a JSON array of n distinct UUIDs.
func uuids(n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
	}
	b, _ := json.Marshal(items)
	return string(b)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// issueKey is an issue reduced to where and what, the part tables pin.
type issueKey struct{ Loc, Type string }

func (k issueKey) String() string { return k.Loc + " " + k.Type }

func issueKeys(t *testing.T, err error) []issueKey {
	t.Helper()
	if err == nil {
		return nil
	}
	ve, ok := validate.AsError(err)
	if !ok {
		t.Fatalf("error is not a validation error: %v", err)
	}
	keys := make([]issueKey, len(ve.Issues))
	for i, is := range ve.Issues {
		keys[i] = issueKey{validate.FormatLoc(is.Loc), is.Type}
	}
	return keys
}

func mustParse(t testing.TB, s string) Definition {
	t.Helper()
	d, err := ParseDefinitionJSON([]byte(s))
	if err != nil {
		t.Fatalf("parse %s: %v", s, err)
	}
	return d
}
