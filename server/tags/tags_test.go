package tags_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server/tags"
)

// A header may not name a tag a tag budget governs unless its key carries
// the same value, nor give a tag a value tag_values does not list.
func TestRulesAllowed(t *testing.T) {
	rules := tags.Rules{Governed: map[string]bool{"team": true}, Values: map[string][]string{"env": {"prod", "staging"}}}
	for _, c := range []struct {
		name        string
		header, key map[string]string
		refused     string // the refused tag's key, "" when allowed
		msg         string
	}{
		{name: "no header", key: map[string]string{"team": "ads"}},
		{name: "free tag", header: map[string]string{"feature": "chat"}},
		{name: "governed tag, untagged key", header: map[string]string{"team": "ads"}, refused: "team", msg: "this key has none"},
		{name: "governed tag, another value", header: map[string]string{"team": "ads"}, key: map[string]string{"team": "search"},
			refused: "team", msg: "this key's is team=search"},
		{name: "governed tag, the key's own value", header: map[string]string{"team": "ads"}, key: map[string]string{"team": "ads"}},
		{name: "listed value", header: map[string]string{"env": "prod"}},
		{name: "unlisted value", header: map[string]string{"env": "dev"}, refused: "env", msg: "allow env only prod, staging"},
		{name: "unlisted value the key carries", header: map[string]string{"env": "dev"}, key: map[string]string{"env": "dev"}},
		{name: "first refused in key order", header: map[string]string{"team": "x", "env": "dev"}, refused: "env"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rules.Allowed(c.header, c.key)
			switch {
			case c.refused == "" && r != nil:
				t.Fatalf("refused %+v", r)
			case c.refused != "" && (r == nil || r.Key != c.refused || !strings.Contains(r.Msg, c.msg)):
				t.Fatalf("got %+v, want %s refused saying %q", r, c.refused, c.msg)
			}
		})
	}
	if r := (tags.Rules{}).Allowed(map[string]string{"team": "ads"}, nil); r != nil {
		t.Fatalf("no rules refused %+v", r)
	}
}

func TestCheckValues(t *testing.T) {
	many := map[string][]string{}
	for i := range tags.MaxPairs + 1 {
		many[string(rune('a'+i))] = []string{"v"}
	}
	long := make([]string, tags.MaxAllowedValues+1)
	for i := range long {
		long[i] = strings.Repeat("v", i+1)
	}
	for _, c := range []struct {
		name   string
		values map[string][]string
		key    string // the problem's key; "-" for none
		msg    string
	}{
		{name: "fine", values: map[string][]string{"team": {"ads", "search"}, "env": {"prod"}}, key: "-"},
		{name: "no values", values: map[string][]string{"team": {}}, key: "team", msg: "at least 1 value"},
		{name: "bad key", values: map[string][]string{"Team": {"ads"}}, key: "Team", msg: "lowercase letters"},
		{name: "bad value", values: map[string][]string{"team": {"a\tb"}}, key: "team", msg: "printable"},
		{name: "twice", values: map[string][]string{"team": {"ads", "ads"}}, key: "team", msg: "listed twice"},
		{name: "too many values", values: map[string][]string{"team": long}, key: "team", msg: "at most 100 values"},
		{name: "too many keys", values: many, key: "", msg: "at most 20 tag keys"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := tags.CheckValues(c.values)
			if c.key == "-" {
				if len(ps) > 0 {
					t.Fatalf("problems %+v", ps)
				}
				return
			}
			if len(ps) == 0 || ps[0].Key != c.key || !strings.Contains(ps[0].Msg, c.msg) {
				t.Fatalf("problems %+v, want %q at %q first", ps, c.msg, c.key)
			}
		})
	}
}

// TestParseList: LiteLLM's tags as gw's pairs (issue 35).
func TestParseList(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want map[string]string
		err  string
	}{
		{[]string{"team=search", "job:214590", " prod "}, map[string]string{"team": "search", "job": "214590", "prod": "true"}, ""},
		{[]string{"url:http://x", "a=b:c"}, map[string]string{"url": "http://x", "a": "b:c"}, ""},
		{[]string{"prod", "prod=true"}, map[string]string{"prod": "true"}, ""},
		{[]string{}, map[string]string{}, ""},
		{[]string{"jobID:1"}, nil, `metadata.tags: a tag key is lowercase letters, digits, _ . and -, starting with a letter or digit (got "jobID")`},
		{[]string{"team=a", "team:b"}, nil, "metadata.tags: tag team is given twice, as a and b"},
		{[]string{" "}, nil, "metadata.tags: an empty tag; send key=value, key:value or a bare word"},
		{[]string{"k="}, nil, "metadata.tags: tag k: a tag value has at least 1 character"},
	} {
		got, err := tags.ParseList(c.in, "metadata.tags")
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%q: %v, want %s", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, c.want) {
			t.Errorf("%q: %v %v", c.in, got, err)
		}
	}
	many := make([]string, tags.MaxPairs+1)
	for i := range many {
		many[i] = fmt.Sprintf("k%d", i)
	}
	if _, err := tags.ParseList(many, "x-litellm-tags"); err == nil {
		t.Error("21 tags taken")
	}
}
