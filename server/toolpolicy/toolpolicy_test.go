package toolpolicy_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/toolpolicy"
	"github.com/gw-gateway/gw/server/validate"
)

func parse(t *testing.T, text string) (toolpolicy.Definition, []validate.Issue) {
	t.Helper()
	v, err := validate.ParseJSON([]byte(text), validate.Loc{"body", "definition"})
	if err != nil {
		t.Fatalf("parse json: %v", err)
	}
	var errs validate.Errors
	d := toolpolicy.ParseDefinition(v, validate.Loc{"body", "definition"}, &errs)
	return d, errs.Issues()
}

func TestParseDefinitionRefusals(t *testing.T) {
	cases := []struct {
		name, body, loc, typ string
	}{
		{"extra member", `{"target":{"kind":"workspace"},"rules":[{"match":{},"phase":"call","action":{"kind":"allow"}}],"x":1}`, "body.definition.x", "extra_forbidden"},
		{"extra in match", `{"target":{"kind":"workspace"},"rules":[{"match":{"model":"a"},"phase":"call","action":{"kind":"allow"}}]}`, "body.definition.rules.0.match.model", "extra_forbidden"},
		{"bad phase", `{"target":{"kind":"workspace"},"rules":[{"match":{},"phase":"both","action":{"kind":"allow"}}]}`, "body.definition.rules.0.phase", "literal_error"},
		{"bad action", `{"target":{"kind":"workspace"},"rules":[{"match":{},"phase":"call","action":{"kind":"maybe"}}]}`, "body.definition.rules.0.action", "union_tag_invalid"},
		{"bad glob", `{"target":{"kind":"workspace"},"rules":[{"match":{"tools":["[a"]},"phase":"call","action":{"kind":"allow"}}]}`, "body.definition.rules.0.match.tools.0", "value_error"},
		{"bad regex", `{"target":{"kind":"workspace"},"rules":[{"match":{"arguments":{"/p":{"regex":"("}}},"phase":"call","action":{"kind":"allow"}}]}`, "body.definition.rules.0.match.arguments./p.regex", "value_error"},
		{"bad pointer", `{"target":{"kind":"workspace"},"rules":[{"match":{"arguments":{"p":{"equals":1}}},"phase":"call","action":{"kind":"allow"}}]}`, "body.definition.rules.0.match.arguments.p", "value_error"},
		{"two ops", `{"target":{"kind":"workspace"},"rules":[{"match":{"arguments":{"/p":{"equals":1,"prefix":"a"}}},"phase":"call","action":{"kind":"allow"}}]}`, "body.definition.rules.0.match.arguments./p", "value_error"},
		{"list with arguments", `{"target":{"kind":"workspace"},"rules":[{"match":{"arguments":{"/p":{"equals":1}}},"phase":"list","action":{"kind":"allow"}}]}`, "body.definition.rules.0.match.arguments", "value_error"},
		{"bad server", `{"target":{"kind":"workspace"},"rules":[{"match":{"servers":["Bad_Name"]},"phase":"call","action":{"kind":"allow"}}]}`, "body.definition.rules.0.match.servers.0", "string_pattern_mismatch"},
		{"no rules", `{"target":{"kind":"workspace"},"rules":[]}`, "body.definition.rules", "too_short"},
		{"bad target", `{"target":{"kind":"everyone"},"rules":[{"match":{},"phase":"call","action":{"kind":"allow"}}]}`, "body.definition.target", "union_tag_invalid"},
		{"missing target", `{"rules":[{"match":{},"phase":"call","action":{"kind":"allow"}}]}`, "body.definition.target", "missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, issues := parse(t, c.body)
			for _, is := range issues {
				if locText(is.Loc) == c.loc && is.Type == c.typ {
					return
				}
			}
			t.Fatalf("want %s at %s, got %+v", c.typ, c.loc, issues)
		})
	}
}

func locText(l []any) string {
	parts := make([]string, len(l))
	for i, p := range l {
		parts[i] = fmt.Sprint(p)
	}
	return strings.Join(parts, ".")
}

func TestDecide(t *testing.T) {
	owner := uuid.New()
	def := func(text string) toolpolicy.Definition {
		d, issues := parse(t, text)
		if len(issues) > 0 {
			t.Fatalf("%s: %+v", text, issues)
		}
		// The bundle's round trip keeps the meaning.
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var back toolpolicy.Definition
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("round trip of %s: %v", b, err)
		}
		return back
	}
	allowGit := toolpolicy.Policy{Name: "git", Definition: def(`{"target":{"kind":"workspace"},"rules":[
		{"match":{"servers":["git"]},"phase":"list","action":{"kind":"allow"}},
		{"match":{"servers":["git"],"tools":["read_*"]},"phase":"call","action":{"kind":"allow"}},
		{"match":{"servers":["git"],"tools":["read_file"],"arguments":{"/path":{"prefix":"/etc/"}}},"phase":"call","action":{"kind":"deny","message":"no system files"}},
		{"match":{"servers":["git"],"tools":["push"],"arguments":{"/force":{"equals":true}}},"phase":"call","action":{"kind":"deny"}},
		{"match":{"servers":["git"],"tools":["push"],"arguments":{"/branch":{"regex":"^feature/"}}},"phase":"call","action":{"kind":"allow"}}]}`)}
	onlyKey := toolpolicy.Policy{Name: "k", Definition: def(`{"target":{"kind":"selected_keys","key_ids":["key-b"]},"rules":[
		{"match":{},"phase":"call","action":{"kind":"deny","message":"key b may call nothing"}}]}`)}
	ps := []toolpolicy.Policy{allowGit, onlyKey}
	cases := []struct {
		name         string
		key, phase   string
		server, tool string
		args         string
		defaultAllow bool
		allowed      bool
		msg          string
	}{
		{"deny by default", "key-a", "call", "other", "x", `{}`, false, false, "no tool policy allows"},
		{"default allow setting", "key-a", "call", "other", "x", `{}`, true, true, ""},
		{"list allowed", "key-a", "list", "git", "push", ``, false, true, ""},
		{"call allowed by glob", "key-a", "call", "git", "read_file", `{"path":"/src/a.go"}`, false, true, ""},
		{"call denied by argument prefix", "key-a", "call", "git", "read_file", `{"path":"/etc/passwd"}`, false, false, "no system files"},
		{"call not allowed: glob misses", "key-a", "call", "git", "write_file", `{}`, false, false, "no tool policy allows"},
		{"equals true denies", "key-a", "call", "git", "push", `{"force":true,"branch":"feature/x"}`, false, false, "denied by tool policy"},
		{"regex allows", "key-a", "call", "git", "push", `{"force":false,"branch":"feature/x"}`, false, true, ""},
		{"regex misses", "key-a", "call", "git", "push", `{"branch":"main"}`, false, false, "no tool policy allows"},
		{"deny wins over allow", "key-b", "call", "git", "read_file", `{"path":"/src"}`, false, false, "key b may call nothing"},
		{"deny wins over default allow", "key-b", "call", "x", "y", `{}`, true, false, "key b may call nothing"},
		{"call rules do not list", "key-b", "list", "git", "read_file", ``, false, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var args any
			if c.args != "" {
				v, err := validate.ParseJSON([]byte(c.args), nil)
				if err != nil {
					t.Fatal(err)
				}
				args = v
			}
			d := toolpolicy.Decide(ps, toolpolicy.Request{KeyID: c.key, OwnerUserID: owner, Phase: c.phase, Server: c.server, Tool: c.tool, Arguments: args}, c.defaultAllow)
			if d.Allowed != c.allowed || !strings.Contains(d.Message, c.msg) {
				t.Fatalf("got %+v, want allowed=%v message~%q", d, c.allowed, c.msg)
			}
		})
	}
}

func TestFilterAndPrices(t *testing.T) {
	f := toolpolicy.Filter{Allow: []string{"read_*", "list"}, Deny: []string{"read_secret"}}
	for tool, want := range map[string]bool{"read_file": true, "list": true, "read_secret": false, "write": false} {
		if f.Admits(tool) != want {
			t.Errorf("Admits(%q) = %v", tool, !want)
		}
	}
	if !(toolpolicy.Filter{}).Admits("anything") {
		t.Error("an empty filter admits every tool")
	}
	var errs validate.Errors
	p := toolpolicy.ParsePrices(map[string]any{"*": "0.001", "search_*": "0.01", "search_web": "0.5", "bad": "1e3", "[x": "1"}, validate.Loc{"body", "prices"}, &errs)
	if errs.Len() != 2 {
		t.Fatalf("want the exponent and the glob refused, got %+v", errs.Issues())
	}
	for tool, want := range map[string]int64{"search_web": 500_000_000, "search_news": 10_000_000, "other": 1_000_000} {
		if got := p.NanoUSD(tool); got != want {
			t.Errorf("NanoUSD(%q) = %d, want %d", tool, got, want)
		}
	}
	if got := (toolpolicy.Prices{}).NanoUSD("x"); got != 0 {
		t.Errorf("no price is $0, got %d", got)
	}
	errs = validate.Errors{}
	toolpolicy.ParsePrices(map[string]any{"t": "1000.000000001"}, validate.Loc{"body", "prices"}, &errs)
	if errs.Len() != 1 {
		t.Fatalf("a price over the bound is refused: %+v", errs.Issues())
	}
}

func TestResolve(t *testing.T) {
	doc, _ := validate.ParseJSON([]byte(`{"a":{"b/c":[1,{"~k":"v"}]}}`), nil)
	for ptr, want := range map[string]any{"/a/b~1c/1/~0k": "v", "/a/b~1c/5": nil, "/x": nil} {
		got, ok := toolpolicy.Resolve(doc, ptr)
		if want == nil && ok || want != nil && got != want {
			t.Errorf("Resolve(%q) = %v %v", ptr, got, ok)
		}
	}
}

func FuzzParseDefinition(f *testing.F) {
	f.Add(`{"target":{"kind":"workspace"},"rules":[{"match":{"tools":["a*"],"arguments":{"/p":{"regex":"^x"}}},"phase":"call","action":{"kind":"deny","message":"m"}}]}`)
	f.Add(`{"target":{"kind":"selected_keys","key_ids":["k"]},"rules":[{"match":{"servers":["s"]},"phase":"list","action":{"kind":"allow"}}]}`)
	f.Fuzz(func(t *testing.T, text string) {
		d, err := toolpolicy.ParseDefinitionJSON([]byte(text))
		if err != nil {
			return
		}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		if _, err := toolpolicy.ParseDefinitionJSON(b); err != nil {
			t.Fatalf("a parsed definition must parse again: %s: %v", b, err)
		}
		toolpolicy.Decide([]toolpolicy.Policy{{Name: "p", Definition: d}}, toolpolicy.Request{KeyID: "k", Phase: "call", Server: "s", Tool: "a", Arguments: map[string]any{"p": "x"}}, false)
	})
}
