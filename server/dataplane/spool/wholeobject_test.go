package spool

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/wire"
)

// objectLines are lines as the spool writes them, and other JSON objects
// whose strings hold brackets, quotes and escapes.
func objectLines(t testing.TB) [][]byte {
	reason, rid, tagged := `a "quoted" reason \ with } and ]`, "req_{[", "x"
	lines := [][]byte{
		[]byte(`{}`), []byte(`{"a":[]}`), []byte(`{"a":"}"}`), []byte(`{"a":"\\"}`), []byte(`{"a":"\"}"}`),
		[]byte(`{"a":{"b":[1,{"c":"]"}]},"d":"\u007d"}`), []byte(`{ "a" : [ 1 , 2 ] } `),
	}
	for _, e := range []wire.UsageEventIn{
		{ID: uuid.New(), Model: "openai/gpt-4o", Provider: "openai", CostUSD: "0.1", Status: "ok"},
		{ID: uuid.New(), Model: "m{", Provider: "p]", CostUSD: "0.000001", Status: "error", Reason: &reason, RequestID: &rid,
			Tags: map[string]string{"team": "}{", tagged: `"\`}, Attempts: []wire.UsageAttempt{{Model: "m", Provider: "p", LatencyMS: 3}}},
	} {
		b, err := wire.AppendUsageEventInJSON(nil, &e)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, b)
	}
	for _, l := range lines {
		if !json.Valid(l) {
			t.Fatalf("test line %q is not JSON", l)
		}
	}
	return lines
}

// Every line the spool writes reads as whole, and no prefix of one (what a
// crash mid-write leaves) does.
func TestWholeObjectRefusesEveryPrefix(t *testing.T) {
	for _, line := range objectLines(t) {
		if !wholeObject(line) {
			t.Fatalf("%q: not whole", line)
		}
		end := len(strings.TrimRight(string(line), " "))
		for i := range end {
			if wholeObject(line[:i]) {
				t.Fatalf("the prefix %q of %q reads as whole", line[:i], line)
			}
		}
	}
	for _, bad := range []string{"", " ", "[1,2]", `"s"`, "{", `{"a":"}`, `{"a":1}}`, `{"a":1} {}`, `{"a":1}x`, `{"a":"\"}`, "\x00{}"} {
		if wholeObject([]byte(bad)) {
			t.Errorf("%q reads as whole", bad)
		}
	}
}

// FuzzWholeObject: a JSON object is whole and none of its prefixes is; no
// input panics.
func FuzzWholeObject(f *testing.F) {
	for _, l := range objectLines(f) {
		f.Add(l)
	}
	f.Add([]byte(`{"id":"torn`))
	f.Fuzz(func(t *testing.T, b []byte) {
		whole := wholeObject(b)
		if !json.Valid(b) || len(b) == 0 || b[0] != '{' || b[len(b)-1] != '}' {
			return
		}
		if !whole {
			t.Fatalf("the object %q is not whole", b)
		}
		for i := range len(b) {
			if wholeObject(b[:i]) {
				t.Fatalf("the prefix %q of %q reads as whole", b[:i], b)
			}
		}
	})
}

// BenchmarkWholeObject: the check of a spool line against json.Valid's,
// on an event shaped like the harness's.
func BenchmarkWholeObject(b *testing.B) {
	rid := "req_019ad3f0a1b2c3d4e5f6a7b8"
	e := wire.UsageEventIn{ID: uuid.New(), OrgID: uuid.New(), WorkspaceID: uuid.New(), Model: "openai/gpt-4o-mini", Provider: "openai",
		CostUSD: "0.00000885", Status: "ok", LatencyMS: 1, RequestID: &rid, RequestedModel: "openai/gpt-4o-mini",
		Attempts:   []wire.UsageAttempt{{Model: "openai/gpt-4o-mini", Provider: "openai", LatencyMS: 1}},
		Provenance: &wire.UsageProvenance{BundleVersion: 7, Policies: []wire.UsagePolicy{{PolicyID: uuid.New(), PolicyName: "allow", Action: "models", Effect: "allowed"}}}}
	line, err := wire.AppendUsageEventInJSON(nil, &e)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("wholeObject", func(b *testing.B) {
		for b.Loop() {
			wholeObject(line)
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		for b.Loop() {
			json.Valid(line)
		}
	})
}
