package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	randv2 "math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/shopspring/decimal"
)

// The schema and the parser must agree: whatever ParseDefinitionJSON accepts
// the schema accepts, and whatever the schema accepts the parser accepts,
// except where a documented gap (schemaGaps) says otherwise. The corpus is
// every input of the package's parse tables and fuzz seeds, plus cases of
// its own at each bound of spec 8; a mutation test and a fuzz target look
// for disagreements beyond it.

// schemaGap is a rule of the parser that the schema does not state. Its
// normalise step rewrites a value the gap decides into one the parser
// decides the same way and the schema then agrees on, so an input the gap
// explains still has the rest of its content checked.
type schemaGap struct {
	name string
	why  string
	// members are the object members whose values the gap concerns.
	members []string
	// normalise returns the replacement for v and whether the gap applies.
	normalise func(v any) (any, bool)
	// examples pin the disagreement: each must show exactly these verdicts.
	examples []gapExample
}

type gapExample struct {
	body           string
	parserAccepts  bool
	schemaAccepts  bool
	whatParserRead string
}

var decimalMembers = []string{"max_input_price_per_mtok", "max_output_price_per_mtok", "amount_usd"}

// schemaGaps lists every allowed disagreement. "At most one fallback rule" is
// not among them: draft 2020-12 states it with contains, minContains 0 and
// maxContains 1.
var schemaGaps = []schemaGap{
	{
		name: "decimal scale",
		why: "parseDecimal hands the text to shopspring/decimal, which refuses more than " +
			"decimal.MaxDecodeExponent (10000) digits after the point (decimal_parsing). The spec's pattern " +
			"has no such bound; the limit belongs to the library, and a pattern for it would need a " +
			"repetition count beyond what RE2 (Go's regexp, which validators written in Go use) compiles.",
		members:   decimalMembers,
		normalise: normaliseDecimalScale,
		examples: []gapExample{
			{wsDef(priceJSON(`"0.`+strings.Repeat("0", 10001)+`1"`, `"2"`)), false, true, "decimal_parsing"},
			{wsDef(budgetJSON(`"1.`+strings.Repeat("5", 10001)+`"`, `"day"`, `"shared"`)), false, true, "decimal_parsing"},
		},
	},
}

// normaliseDecimalScale replaces a decimal with too many digits after the
// point by "x", which both sides refuse.
func normaliseDecimalScale(v any) (any, bool) {
	s, ok := v.(string)
	if !ok || !decimalPattern.MatchString(s) {
		return v, false
	}
	dot := strings.IndexByte(s, '.')
	if dot < 0 || len(s)-dot-1 <= decimal.MaxDecodeExponent {
		return v, false
	}
	return "x", true
}

// normaliseGaps returns a copy of the decoded document with every value a
// gap decides rewritten, and the names of the gaps that applied.
func normaliseGaps(v any) (any, []string) {
	hit := map[string]bool{}
	var walk func(v any, member string) any
	walk = func(v any, member string) any {
		switch x := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = walk(e, k)
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = walk(e, "")
			}
			return out
		}
		for _, g := range schemaGaps {
			if slices.Contains(g.members, member) {
				if nv, ok := g.normalise(v); ok {
					hit[g.name] = true
					return nv
				}
			}
		}
		return v
	}
	out := walk(v, "")
	names := make([]string, 0, len(hit))
	for n := range hit {
		names = append(names, n)
	}
	sort.Strings(names)
	return out, names
}

// --- schema compilation and the two verdicts

const schemaURL = "https://gw.invalid/policy-definition.schema.json"

// compiledSchemas compiles the schema twice: as draft 2020-12 has it (format
// an annotation) and with formats asserted; both must decide alike.
var compiledSchemas = sync.OnceValues(func() ([]*jsonschema.Schema, error) {
	var out []*jsonschema.Schema
	for _, assertFormat := range []bool{false, true} {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(JSONSchema()))
		if err != nil {
			return nil, err
		}
		c := jsonschema.NewCompiler()
		if assertFormat {
			c.AssertFormat()
		}
		if err := c.AddResource(schemaURL, doc); err != nil {
			return nil, err
		}
		s, err := c.Compile(schemaURL)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
})

func schemas(t testing.TB) []*jsonschema.Schema {
	t.Helper()
	s, err := compiledSchemas()
	if err != nil {
		t.Fatalf("compile schema.json: %v", err)
	}
	return s
}

// schemaVerdict validates data, which is refused when it is not one JSON
// value. err explains a refusal.
func schemaVerdict(t testing.TB, data []byte) (ok bool, err error) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return false, err
	}
	return schemaVerdictValue(t, v)
}

func schemaVerdictValue(t testing.TB, v any) (bool, error) {
	t.Helper()
	var verdicts []error
	for _, s := range schemas(t) {
		verdicts = append(verdicts, s.Validate(v))
	}
	if (verdicts[0] == nil) != (verdicts[1] == nil) {
		t.Errorf("asserting formats changes the verdict: %v / %v", verdicts[0], verdicts[1])
	}
	return verdicts[0] == nil, verdicts[0]
}

// agreement checks one input: the verdicts agree, or a gap explains the
// difference and the input agrees once the gap is normalised away. An
// accepted definition's marshalling must validate too. It returns the
// parser's verdict and the gaps that explained a disagreement.
func agreement(t testing.TB, name string, data []byte) (parserAccepts bool, gaps []string) {
	t.Helper()
	d, perr := ParseDefinitionJSON(data)
	parserAccepts = perr == nil
	schemaAccepts, serr := schemaVerdict(t, data)
	if parserAccepts != schemaAccepts {
		v, derr := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if derr == nil {
			var norm any
			norm, gaps = normaliseGaps(v)
			if len(gaps) > 0 {
				text, err := json.Marshal(norm)
				if err != nil {
					t.Fatalf("%s: marshal normalised input: %v", name, err)
				}
				_, perr2 := ParseDefinitionJSON(text)
				s2, serr2 := schemaVerdictValue(t, norm)
				switch {
				case (perr2 == nil) != parserAccepts:
					t.Errorf("%s: normalising %v changed the parser's verdict (%v, then %v)", name, gaps, perr, perr2)
				case (perr2 == nil) != s2:
					t.Errorf("%s: disagreement beyond the gaps %v: parser %v, schema %v\ninput: %s",
						name, gaps, perr2, serr2, abbreviate(data))
				}
			}
		}
		if len(gaps) == 0 {
			t.Errorf("%s: parser accepts=%v (%v), schema accepts=%v (%v)\ninput: %s",
				name, parserAccepts, perr, schemaAccepts, serr, abbreviate(data))
		}
	}
	if parserAccepts {
		out, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("%s: marshal accepted definition: %v", name, err)
		}
		if ok, err := schemaVerdict(t, out); !ok {
			t.Errorf("%s: the marshalled definition does not validate: %v\noutput: %s", name, err, abbreviate(out))
		}
	}
	return parserAccepts, gaps
}

// abbreviate shortens an input for a failure message, keeping its ends.
func abbreviate(b []byte) string {
	s := string(b)
	if len(b) > 600 {
		s = string(b[:300]) + fmt.Sprintf(" …(%d bytes)… ", len(b)-600) + string(b[len(b)-300:])
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// --- the corpus

type verdict int

const (
	anyVerdict verdict = iota // pinned elsewhere (the parse tables)
	accepted
	refused
)

type corpusCase struct {
	name string
	body string
	want verdict // the parser's verdict
}

// tableCorpus repeats the inputs of parse_test.go, marshal_test.go and
// fuzz_test.go, whose tables are local to their tests. Their verdicts are
// pinned there.
func tableCorpus() []corpusCase {
	var out []corpusCase
	add := func(prefix string, bodies ...string) {
		for i, b := range bodies {
			out = append(out, corpusCase{fmt.Sprintf("%s/%02d", prefix, i), b, anyVerdict})
		}
	}
	// TestParseDefinitionBoundaries, in its order.
	add("boundaries",
		wsDef(), wsDef(denyRule), wsDef(repeatRule(denyRule, 100)...), wsDef(repeatRule(denyRule, 101)...),
		`{"target":{"kind":"workspace"},"rules":{}}`, wsDef(`"deny"`),
		wsDef(fallbackRule, denyRule), wsDef(fallbackRule, denyRule, fallbackRule),
		defJSON(`{"kind":"selected_users","user_ids":[]}`, denyRule),
		defJSON(`{"kind":"selected_users","user_ids":`+uuids(1)+`}`, denyRule),
		defJSON(`{"kind":"selected_users","user_ids":`+uuids(1000)+`}`, denyRule),
		defJSON(`{"kind":"selected_users","user_ids":`+uuids(1001)+`}`, denyRule),
		defJSON(`{"kind":"selected_users","user_ids":["nope",7]}`, denyRule),
		defJSON(`{"kind":"selected_users"}`, denyRule),
		defJSON(`{"kind":"selected_keys","key_ids":[]}`, denyRule),
		defJSON(`{"kind":"selected_keys","key_ids":`+strs(1000, 8)+`}`, denyRule),
		defJSON(`{"kind":"selected_keys","key_ids":`+strs(1001, 8)+`}`, denyRule),
		defJSON(`{"kind":"selected_keys","key_ids":[""]}`, denyRule),
		defJSON(`{"kind":"selected_keys","key_ids":["k"]}`, denyRule),
		defJSON(`{"kind":"selected_keys","key_ids":`+strs(1, 255)+`}`, denyRule),
		defJSON(`{"kind":"selected_keys","key_ids":`+strs(1, 256)+`}`, denyRule),
		defJSON(`{"kind":"selected_keys","key_ids":[`+quote(strings.Repeat("é", 255))+`]}`, denyRule),
		wsDef(matchRule(`{"kind":"request","stream":null,"models":[]}`)),
		wsDef(matchRule(`{"kind":"request","stream":null,"models":`+strs(1000, 10)+`}`)),
		wsDef(matchRule(`{"kind":"request","stream":null,"models":`+strs(1001, 10)+`}`)),
		wsDef(matchRule(`{"kind":"request","stream":null,"models":`+strs(1, 256)+`}`)),
		wsDef(matchRule(`{"kind":"request","stream":null,"models":[""]}`)),
		wsDef(matchRule(`{"kind":"request","stream":null}`)),
		wsDef(matchRule(`{"kind":"request","models":[],"stream":null,"capabilities":[]}`)),
		wsDef(matchRule(`{"kind":"request","stream":true}`)),
		wsDef(matchRule(`{"kind":"request","stream":"yes"}`)),
		wsDef(matchRule(`{"kind":"request","stream":null,"capabilities":["tools","reasoning","structured_output"]}`)),
		wsDef(matchRule(`{"kind":"request","stream":null,"capabilities":["tools","reasoning","structured_output","tools"]}`)),
		wsDef(matchRule(`{"kind":"request","stream":null,"capabilities":["streaming"]}`)),
		wsDef(matchRule(`{"kind":"all_requests","models":[]}`)),
		wsDef(act("models", `"names":[]`)),
		wsDef(act("providers", `"names":["openai"]`)),
		wsDef(act("models", `"names":`+strs(1000, 12))),
		wsDef(act("providers", `"names":`+strs(1001, 12))),
		wsDef(act("models", `"names":`+strs(1, 255))),
		wsDef(act("models", `"names":`+strs(1, 256))),
		wsDef(act("models", `"names":["a",""]`)),
		wsDef(act("models", "")),
		wsDef(act("deny", `"message":""`)),
		wsDef(act("deny", `"message":"n"`)),
		wsDef(act("deny", `"message":`+quote(strings.Repeat("m", 200)))),
		wsDef(act("deny", `"message":`+quote(strings.Repeat("m", 201)))),
		wsDef(act("deny", `"message":`+quote(strings.Repeat("ü", 200)))),
		wsDef(act("deny", `"message":5`)),
		wsDef(act("request_limits", `"max_output_tokens":0`)),
		wsDef(act("request_limits", `"max_output_tokens":1`)),
		wsDef(act("request_limits", `"max_output_tokens":9223372036854775807`)),
		wsDef(act("request_limits", `"max_output_tokens":1.5`)),
		wsDef(act("request_limits", `"max_output_tokens":"5"`)),
		wsDef(act("credential_access", `"scopes":[]`)),
		wsDef(act("credential_access", `"scopes":["org"]`)),
		wsDef(act("credential_access", `"scopes":["platform","org","workspace"]`)),
		wsDef(act("credential_access", `"scopes":["platform","org","workspace","org"]`)),
		wsDef(act("credential_access", `"scopes":["instance"]`)),
		wsDef(fallbackJSON(`[]`, `["timeout"]`, "2", "100")),
		wsDef(fallbackJSON(`["a"]`, `["timeout"]`, "2", "100")),
		wsDef(fallbackJSON(strs(4, 5), `["timeout"]`, "2", "100")),
		wsDef(fallbackJSON(strs(5, 5), `["timeout"]`, "2", "100")),
		wsDef(fallbackJSON(strs(1, 256), `["timeout"]`, "2", "100")),
		wsDef(fallbackJSON(`["a"]`, `[]`, "2", "100")),
		wsDef(fallbackJSON(`["a"]`, `["rate_limited"]`, "2", "100")),
		wsDef(fallbackJSON(`["a"]`, `["rate_limited","upstream_unavailable","timeout"]`, "2", "100")),
		wsDef(fallbackJSON(`["a"]`, `["rate_limited","upstream_unavailable","timeout","timeout"]`, "2", "100")),
		wsDef(fallbackJSON(`["a"]`, `["server_error"]`, "2", "100")),
		wsDef(fallbackJSON(`["a"]`, `["timeout"]`, "1", "100")),
		wsDef(fallbackJSON(`["a"]`, `["timeout"]`, "2", "100")),
		wsDef(fallbackJSON(`["a"]`, `["timeout"]`, "5", "100")),
		wsDef(fallbackJSON(`["a"]`, `["timeout"]`, "6", "100")),
		wsDef(fallbackJSON(`["a"]`, `["timeout"]`, "2", "99")),
		wsDef(fallbackJSON(`["a"]`, `["timeout"]`, "2", "100")),
		wsDef(fallbackJSON(`["a"]`, `["timeout"]`, "2", "120000")),
		wsDef(fallbackJSON(`["a"]`, `["timeout"]`, "2", "120001")),
		wsDef(priceJSON(`"1"`, `"2"`)),
		wsDef(priceJSON(`"1.5"`, `"0.000001"`)),
		wsDef(priceJSON(`"1."`, `"2"`)),
		wsDef(priceJSON(`"1"`, `"-1"`)),
		wsDef(priceJSON(`"1e3"`, `"2"`)),
		wsDef(priceJSON(`".5"`, `"2"`)),
		wsDef(priceJSON(`""`, `"2"`)),
		wsDef(priceJSON(`"1\n"`, `"2"`)),
		wsDef(priceJSON(`"١"`, `"2"`)),
		wsDef(priceJSON(`1.5`, `"2"`)),
		wsDef(priceJSON(`"0.`+strings.Repeat("0", 10001)+`1"`, `"2"`)),
		wsDef(budgetJSON(`"100.00"`, `"month"`, `"per_key"`)),
		wsDef(budgetJSON(`"1e3"`, `"day"`, `"shared"`)),
		wsDef(budgetJSON(`"1"`, `"week"`, `"shared"`)),
		wsDef(budgetJSON(`"1"`, `"day"`, `"team"`)),
		`{"target":{"kind":"workspace"},"rules":[`+denyRule+`],"name":"x"}`,
		defJSON(`{"kind":"workspace","user_ids":[]}`, denyRule),
		defJSON(`{"kind":"selected_keys","key_ids":["k"],"user_ids":[]}`, denyRule),
		wsDef(`{"match":{"kind":"all_requests"},"action":{"kind":"strict_parameters"},"priority":1}`),
		wsDef(matchRule(`{"kind":"request","stream":null,"model":"x"}`)),
		wsDef(act("deny", `"message":"no","code":403`)),
		wsDef(act("strict_parameters", `"enabled":true`)),
		wsDef(act("deny", `"message":"no","names":["a"]`)),
		wsDef(act("deny", `"message":"no","z":1,"a":2`)),
		defJSON(`{"kind":"org","extra":1}`, denyRule),
		defJSON(`{"user_ids":[]}`, denyRule),
		defJSON(`{"kind":1}`, denyRule),
		defJSON(`"workspace"`, denyRule),
		wsDef(matchRule(`{"kind":"some_requests"}`)),
		wsDef(ruleJSON(`{"kind":"allow","names":["a"]}`)),
		wsDef(ruleJSON(`{"names":["a"]}`)),
		`{}`, `[]`, wsDef(`{}`),
		wsDef(act("fallback", "")),
		wsDef(act("price_limit", "")),
		``, `{"target":}`,
	)
	// TestParseDefinitionReportsEverything, TestParseDefinitionIssueShape,
	// TestParseDefinitionValues and TestParseDefinitionSharedErrors.
	add("parse-tests",
		defJSON(`{"kind":"selected_keys","key_ids":[""],"x":1}`,
			act("models", `"names":[]`),
			`{"match":{"kind":"request","stream":null,"capabilities":["vision"]},"action":{"kind":"request_limits","max_output_tokens":0}}`,
			fallbackJSON(`[]`, `["timeout"]`, "9", "100"),
			fallbackJSON(`["a"]`, `["timeout"]`, "2", "50"),
			ruleJSON(`{"kind":"nope"}`),
		),
		wsDef(denyRule, act("models", `"names":[]`)),
		wsDef(fallbackRule, fallbackRule),
		defJSON(`{"kind":"selected_users","user_ids":["6F9619FF-8B86-4011-B42D-00C04FC964FF"]}`,
			`{"match":{"kind":"request","models":["openai/gpt-4o"],"stream":false,"capabilities":["tools"]},"action":{"kind":"models","names":["openai/gpt-4o"]}}`,
			`{"match":{"kind":"request","stream":null},"action":{"kind":"providers","names":["openai"]}}`,
			act("deny", `"message":"blocked"`),
			act("strict_parameters", ""),
			priceJSON(`"2.50"`, `"10"`),
			act("request_limits", `"max_output_tokens":1e3`),
			act("credential_access", `"scopes":["workspace","org"]`),
			fallbackJSON(`["anthropic/claude"]`, `["timeout","rate_limited"]`, "3", "5000"),
			budgetJSON(`"100.00"`, `"month"`, `"shared"`),
		),
		`{"target":{"kind":"workspace"},"rules":[]}`,
	)
	// TestDefinitionRoundTrip and TestUnmarshalDefinitionIsStrict.
	add("marshal-tests",
		defJSON(`{"kind":"selected_users","user_ids":["6F9619FF-8B86-4011-B42D-00C04FC964FF"]}`,
			`{"match":{"kind":"request","stream":null,"models":["openai/gpt-4o"]},"action":{"kind":"models","names":["openai/gpt-4o"]}}`,
			priceJSON(`"007.50"`, `"0"`),
			budgetJSON(`"1.000"`, `"day"`, `"per_key"`),
			act("request_limits", `"max_output_tokens":2.0`),
		),
		`{"Target":{"kind":"workspace"},"rules":[`+denyRule+`]}`,
		`{"target":{"kind":"workspace"},"rules":[`+denyRule+`],"extra":1}`,
		`null`,
	)
	add("fuzz-seed", fuzzSeeds()...)
	return out
}

// fuzzSeeds repeats FuzzParseDefinition's seed corpus.
func fuzzSeeds() []string {
	return []string{
		wsDef(denyRule),
		wsDef(fallbackRule, strictRule),
		wsDef(fallbackRule, fallbackRule),
		defJSON(`{"kind":"selected_users","user_ids":["6F9619FF-8B86-4011-B42D-00C04FC964FF"]}`, denyRule),
		defJSON(`{"kind":"selected_keys","key_ids":["k","é"]}`, strictRule),
		wsDef(matchRule(`{"kind":"request","models":["a/b"],"stream":null,"capabilities":["tools","reasoning"]}`)),
		wsDef(matchRule(`{"kind":"request","stream":true}`)),
		wsDef(act("models", `"names":["openai/gpt-4o"]`), act("providers", `"names":["openai"]`)),
		wsDef(priceJSON(`"2.50"`, `"007"`), budgetJSON(`"1.0"`, `"day"`, `"per_key"`)),
		wsDef(act("request_limits", `"max_output_tokens":1e3`), act("credential_access", `"scopes":["org","org"]`)),
		wsDef(fallbackJSON(`["a","b","c","d"]`, `["timeout","rate_limited","upstream_unavailable"]`, "5", "120000")),
		wsDef(act("deny", `"message":"\u00e9\ud83d\ude00"`)),
		wsDef(priceJSON(`"1."`, `"-1"`)),
		wsDef(act("deny", `"message":"\u0000\ud800x"`), act("models", `"names":["\u00e9","a\\b"]`)),
		defJSON(`{"kind":"selected_keys","key_ids":["k1","k2"]}`,
			`{"match":{"kind":"request","models":["a/b","c/d"],"stream":false,"capabilities":["structured_output"]},"action":{"kind":"deny","message":"m"}}`,
			act("models", `"names":["a/b"]`), act("providers", `"names":["a"]`), act("strict_parameters", ""),
			priceJSON(`"0.5"`, `"1"`), act("request_limits", `"max_output_tokens":100`),
			act("credential_access", `"scopes":["platform","workspace"]`),
			fallbackJSON(`["c/d"]`, `["upstream_unavailable"]`, "4", "30000"),
			budgetJSON(`"25"`, `"month"`, `"shared"`)),
		`{"target":{"kind":"org"},"rules":[{"match":{},"action":{"kind":7}}],"x":null}`,
		`[]`, `null`, ``, `{`,
	}
}

// fuzzCorpusFiles reads the checked-in corpus of the fuzz targets, if any
// (go test fuzz v1 files holding one []byte).
func fuzzCorpusFiles(t *testing.T) []corpusCase {
	var out []corpusCase
	for _, target := range []string{"FuzzParseDefinition", "FuzzSchemaAgreesWithParser"} {
		dir := filepath.Join("testdata", "fuzz", target)
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
			if len(lines) != 2 || lines[0] != "go test fuzz v1" ||
				!strings.HasPrefix(lines[1], "[]byte(") || !strings.HasSuffix(lines[1], ")") {
				t.Fatalf("%s/%s: not a one-value go test fuzz v1 file", dir, e.Name())
			}
			s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
			if err != nil {
				t.Fatalf("%s/%s: %v", dir, e.Name(), err)
			}
			out = append(out, corpusCase{"fuzz-file/" + target + "/" + e.Name(), s, anyVerdict})
		}
	}
	return out
}

// schemaCorpus covers each kind and both sides of each bound of spec 8 with
// what the parse tables leave out: other kinds at the same bound, number
// and string forms, UUID forms, types, and the fallback count.
func schemaCorpus() []corpusCase {
	const (
		uuidLower = "6f9619ff-8b86-4011-b42d-00c04fc964ff"
		uuidUpper = "6F9619FF-8B86-4011-B42D-00C04FC964FF"
	)
	users := func(ids string) string { return defJSON(`{"kind":"selected_users","user_ids":`+ids+`}`, denyRule) }
	keys := func(ids string) string { return defJSON(`{"kind":"selected_keys","key_ids":`+ids+`}`, denyRule) }
	limit := func(n string) string { return wsDef(act("request_limits", `"max_output_tokens":`+n)) }
	attempts := func(n string) string { return wsDef(fallbackJSON(`["a"]`, `["timeout"]`, n, "100")) }
	timeout := func(n string) string { return wsDef(fallbackJSON(`["a"]`, `["timeout"]`, "2", n)) }
	price := func(s string) string { return wsDef(priceJSON(s, `"1"`)) }
	rep := func(s string, n int) string { return quote(strings.Repeat(s, n)) }
	list := func(item string, n int) string { return "[" + strings.Repeat(item+",", n-1) + item + "]" }

	A, R := accepted, refused
	return []corpusCase{
		// definition
		{"def/padded with blanks", " \n\t" + wsDef(denyRule) + "\r\n ", A},
		{"def/trailing value", wsDef(denyRule) + ` {}`, R},
		{"def/trailing garbage", wsDef(denyRule) + `x`, R},
		{"def/byte order mark", "\ufeff" + wsDef(denyRule), R},
		{"def/string", `"definition"`, R},
		{"def/number", `1`, R},
		{"def/blank", " \n", R},
		{"def/target missing", `{"rules":[` + denyRule + `]}`, R},
		{"def/rules missing", `{"target":{"kind":"workspace"}}`, R},
		{"def/target null", `{"target":null,"rules":[` + denyRule + `]}`, R},
		{"def/rules null", `{"target":{"kind":"workspace"},"rules":null}`, R},
		{"def/duplicate member, last wins", `{"target":{"kind":"org"},"rules":[` + denyRule + `],"target":{"kind":"workspace"}}`, A},
		{"def/member case", `{"target":{"kind":"workspace"},"Rules":[` + denyRule + `]}`, R},

		// targets
		{"target/workspace", wsDef(strictRule), A},
		{"target/kind case", defJSON(`{"kind":"Workspace"}`, denyRule), R},
		{"target/kind null", defJSON(`{"kind":null}`, denyRule), R},
		{"target/empty object", defJSON(`{}`, denyRule), R},
		{"target/array", defJSON(`[{"kind":"workspace"}]`, denyRule), R},
		{"target/workspace with key_ids", defJSON(`{"kind":"workspace","key_ids":["k"]}`, denyRule), R},
		{"target/users with key_ids", defJSON(`{"kind":"selected_users","user_ids":["`+uuidLower+`"],"key_ids":["k"]}`, denyRule), R},
		{"user_ids/lower", users(`["` + uuidLower + `"]`), A},
		{"user_ids/upper", users(`["` + uuidUpper + `"]`), A},
		{"user_ids/mixed case", users(`["6f9619FF-8b86-4011-B42D-00c04fc964ff"]`), A},
		{"user_ids/nil uuid", users(`["00000000-0000-0000-0000-000000000000"]`), A},
		{"user_ids/not v4", users(`["6f9619ff-8b86-1011-c42d-00c04fc964ff"]`), A},
		{"user_ids/repeated", users(`["` + uuidLower + `","` + uuidUpper + `"]`), A},
		{"user_ids/no hyphens", users(`["6f9619ff8b864011b42d00c04fc964ff"]`), R},
		{"user_ids/braces", users(`["{` + uuidLower + `}"]`), R},
		{"user_ids/urn", users(`["urn:uuid:` + uuidLower + `"]`), R},
		{"user_ids/trailing blank", users(`["` + uuidLower + ` "]`), R},
		{"user_ids/hyphens moved", users(`["6f9619ff8-b86-4011-b42d-00c04fc964ff"]`), R},
		{"user_ids/non-hex", users(`["6f9619ff-8b86-4011-b42d-00c04fc964fg"]`), R},
		{"user_ids/35 chars", users(`["6f9619ff-8b86-4011-b42d-00c04fc964f"]`), R},
		{"user_ids/null item", users(`[null]`), R},
		{"user_ids/null", users(`null`), R},
		{"user_ids/string", users(`"` + uuidLower + `"`), R},
		{"key_ids/255 astral chars", keys(`[` + rep("😀", 255) + `]`), A},
		{"key_ids/256 astral chars", keys(`[` + rep("😀", 256) + `]`), R},
		{"key_ids/256 two-byte chars", keys(`[` + rep("é", 256) + `]`), R},
		{"key_ids/255 invalid bytes", keys(`["` + strings.Repeat("\xff", 255) + `"]`), A},
		{"key_ids/256 invalid bytes", keys(`["` + strings.Repeat("\xff", 256) + `"]`), R},
		{"key_ids/255 escapes", keys(`["` + strings.Repeat(`\u0041`, 255) + `"]`), A},
		{"key_ids/256 escapes", keys(`["` + strings.Repeat(`\u0041`, 256) + `"]`), R},
		{"key_ids/repeated", keys(`["k","k"]`), A},
		{"key_ids/number item", keys(`["k",1]`), R},
		{"key_ids/missing", defJSON(`{"kind":"selected_keys"}`, denyRule), R},

		// rules and the fallback count
		{"rules/100 with one fallback", wsDef(append(repeatRule(denyRule, 99), fallbackRule)...), A},
		{"rules/101 with one fallback", wsDef(append(repeatRule(denyRule, 100), fallbackRule)...), R},
		{"rules/1 fallback only", wsDef(fallbackRule), A},
		{"rules/2 fallbacks apart", wsDef(fallbackRule, denyRule, strictRule, fallbackRule), R},
		{"rules/3 fallbacks", wsDef(fallbackRule, fallbackRule, fallbackRule), R},
		{"rules/100 fallbacks", wsDef(repeatRule(fallbackRule, 100)...), R},
		{"rules/fallback and an empty fallback", wsDef(fallbackRule, act("fallback", "")), R},
		{"rules/fallback match differs", wsDef(fallbackRule, `{"match":{"kind":"request","stream":null},"action":{"kind":"fallback","models":["x"],"on":["timeout"],"max_attempts":3,"timeout_ms":200}}`), R},
		{"rules/null rule", wsDef(`null`), R},
		{"rules/match missing", wsDef(`{"action":{"kind":"strict_parameters"}}`), R},
		{"rules/action missing", wsDef(`{"match":{"kind":"all_requests"}}`), R},
		{"rules/match null", wsDef(`{"match":null,"action":{"kind":"strict_parameters"}}`), R},

		// matches
		{"match/all_requests", wsDef(matchRule(`{"kind":"all_requests"}`)), A},
		{"match/all_requests with stream null", wsDef(matchRule(`{"kind":"all_requests","stream":null}`)), R},
		{"match/kind missing", wsDef(matchRule(`{"models":[]}`)), R},
		{"match/kind null", wsDef(matchRule(`{"kind":null}`)), R},
		{"match/array", wsDef(matchRule(`[]`)), R},
		{"match/stream false", wsDef(matchRule(`{"kind":"request","stream":false}`)), A},
		{"match/stream 0", wsDef(matchRule(`{"kind":"request","stream":0}`)), R},
		{"match/models null", wsDef(matchRule(`{"kind":"request","stream":null,"models":null}`)), R},
		{"match/models string", wsDef(matchRule(`{"kind":"request","stream":null,"models":"a/b"}`)), R},
		{"match/models 1000 of 255 chars", wsDef(matchRule(`{"kind":"request","stream":null,"models":` + strs(1000, 255) + `}`)), A},
		{"match/model 255 chars", wsDef(matchRule(`{"kind":"request","stream":null,"models":` + strs(1, 255) + `}`)), A},
		{"match/model null", wsDef(matchRule(`{"kind":"request","stream":null,"models":[null]}`)), R},
		{"match/capabilities 0", wsDef(matchRule(`{"kind":"request","stream":null,"capabilities":[]}`)), A},
		{"match/capabilities repeated 3", wsDef(matchRule(`{"kind":"request","stream":null,"capabilities":["tools","tools","tools"]}`)), A},
		{"match/capabilities null", wsDef(matchRule(`{"kind":"request","stream":null,"capabilities":null}`)), R},
		{"match/capabilities string", wsDef(matchRule(`{"kind":"request","stream":null,"capabilities":"tools"}`)), R},
		{"match/capability case", wsDef(matchRule(`{"kind":"request","stream":null,"capabilities":["Tools"]}`)), R},
		{"match/all members", wsDef(matchRule(`{"kind":"request","models":["a"],"stream":true,"capabilities":["structured_output","reasoning"]}`)), A},

		// models and providers
		{"names/providers 1000", wsDef(act("providers", `"names":`+strs(1000, 12))), A},
		{"names/models 1001", wsDef(act("models", `"names":`+strs(1001, 12))), R},
		{"names/providers 0", wsDef(act("providers", `"names":[]`)), R},
		{"names/providers 255 chars", wsDef(act("providers", `"names":`+strs(1, 255))), A},
		{"names/providers 256 chars", wsDef(act("providers", `"names":`+strs(1, 256))), R},
		{"names/null", wsDef(act("models", `"names":null`)), R},
		{"names/null item", wsDef(act("providers", `"names":[null]`)), R},
		{"names/with message", wsDef(act("providers", `"names":["a"],"message":"x"`)), R},

		// deny
		{"deny/200 astral chars", wsDef(act("deny", `"message":`+rep("😀", 200))), A},
		{"deny/201 astral chars", wsDef(act("deny", `"message":`+rep("😀", 201))), R},
		{"deny/201 two-byte chars", wsDef(act("deny", `"message":`+rep("ü", 201))), R},
		{"deny/NUL", wsDef(act("deny", `"message":"\u0000"`)), A},
		{"deny/lone surrogate", wsDef(act("deny", `"message":"\udc00"`)), A},
		{"deny/null", wsDef(act("deny", `"message":null`)), R},
		{"deny/missing", wsDef(act("deny", "")), R},

		// strict_parameters
		{"strict/null member", wsDef(act("strict_parameters", `"x":null`)), R},

		// price_limit and budget decimals
		{"decimal/0", price(`"0"`), A},
		{"decimal/00", price(`"00"`), A},
		{"decimal/007.50", price(`"007.50"`), A},
		{"decimal/0.0", price(`"0.0"`), A},
		{"decimal/10000 digits after the point", price(`"0.` + strings.Repeat("9", 10000) + `"`), A},
		{"decimal/1000 digits before the point", price(`"` + strings.Repeat("9", 1000) + `"`), A},
		{"decimal/1.5.5", price(`"1.5.5"`), R},
		{"decimal/leading blank", price(`" 1"`), R},
		{"decimal/trailing blank", price(`"1 "`), R},
		{"decimal/plus", price(`"+1"`), R},
		{"decimal/hex", price(`"0x1"`), R},
		{"decimal/comma", price(`"1,5"`), R},
		{"decimal/underscore", price(`"1_000"`), R},
		{"decimal/vulgar fraction", price(`"½"`), R},
		{"decimal/fullwidth digit", price(`"１"`), R},
		{"decimal/exponent", price(`"1.0e3"`), R},
		{"decimal/leading newline", price(`"\n1"`), R},
		{"decimal/NaN", price(`"NaN"`), R},
		{"decimal/null", price(`null`), R},
		{"decimal/integer", price(`1`), R},
		{"price/one missing", wsDef(act("price_limit", `"max_input_price_per_mtok":"1"`)), R},
		{"budget/day shared", wsDef(budgetJSON(`"0"`, `"day"`, `"shared"`)), A},
		{"budget/month per_key", wsDef(budgetJSON(`"12.5"`, `"month"`, `"per_key"`)), A},
		{"budget/amount 10000 digits after the point", wsDef(budgetJSON(`"1.`+strings.Repeat("0", 10000)+`"`, `"day"`, `"shared"`)), A},
		{"budget/amount number", wsDef(budgetJSON(`1.5`, `"day"`, `"shared"`)), R},
		{"budget/amount bad", wsDef(budgetJSON(`"1."`, `"day"`, `"shared"`)), R},
		{"budget/period case", wsDef(budgetJSON(`"1"`, `"Day"`, `"shared"`)), R},
		{"budget/aggregation null", wsDef(budgetJSON(`"1"`, `"day"`, `null`)), R},
		{"budget/missing", wsDef(act("budget", `"amount_usd":"1","period":"day"`)), R},

		// integers
		{"max_output_tokens/2.0", limit(`2.0`), A},
		{"max_output_tokens/1e0", limit(`1e0`), A},
		{"max_output_tokens/1E3", limit(`1E3`), A},
		{"max_output_tokens/10e-1", limit(`10e-1`), A},
		{"max_output_tokens/-1", limit(`-1`), R},
		{"max_output_tokens/-0", limit(`-0`), R},
		{"max_output_tokens/0.5", limit(`0.5`), R},
		{"max_output_tokens/1e-400", limit(`1e-400`), R},
		{"max_output_tokens/2^63", limit(`9223372036854775808`), R},
		{"max_output_tokens/1e19", limit(`1e19`), R},
		{"max_output_tokens/1e400", limit(`1e400`), R},
		{"max_output_tokens/true", limit(`true`), R},
		{"max_output_tokens/null", limit(`null`), R},
		{"max_attempts/2.0", attempts(`2.0`), A},
		{"max_attempts/5e0", attempts(`5e0`), A},
		{"max_attempts/0.5e1", attempts(`0.5e1`), A},
		{"max_attempts/5.5", attempts(`5.5`), R},
		{"max_attempts/string", attempts(`"3"`), R},
		{"max_attempts/null", attempts(`null`), R},
		{"timeout_ms/1e2", timeout(`1e2`), A},
		{"timeout_ms/1.2e5", timeout(`1.2e5`), A},
		{"timeout_ms/1.20001e5", timeout(`1.20001e5`), R},
		{"timeout_ms/99.5", timeout(`99.5`), R},
		{"timeout_ms/string", timeout(`"100"`), R},

		// credential_access
		{"scopes/repeated 3", wsDef(act("credential_access", `"scopes":["org","org","org"]`)), A},
		{"scopes/case", wsDef(act("credential_access", `"scopes":["Org"]`)), R},
		{"scopes/null", wsDef(act("credential_access", `"scopes":null`)), R},
		{"scopes/string", wsDef(act("credential_access", `"scopes":"org"`)), R},

		// fallback members
		{"fallback/4 models of 255 chars", wsDef(fallbackJSON(strs(4, 255), `["timeout"]`, "2", "100")), A},
		{"fallback/model empty", wsDef(fallbackJSON(`["a",""]`, `["timeout"]`, "2", "100")), R},
		{"fallback/on repeated 3", wsDef(fallbackJSON(`["a"]`, `["timeout","timeout","timeout"]`, "2", "100")), A},
		{"fallback/on case", wsDef(fallbackJSON(`["a"]`, `["Timeout"]`, "2", "100")), R},
		{"fallback/extra member", wsDef(act("fallback", `"models":["a"],"on":["timeout"],"max_attempts":2,"timeout_ms":100,"delay_ms":5`)), R},
		{"fallback/one member missing", wsDef(act("fallback", `"models":["a"],"on":["timeout"],"max_attempts":2`)), R},

		// kinds sharing members
		{"kind/models as providers", wsDef(act("providers", `"names":["openai/gpt-4o"]`)), A},
		{"kind/deny with names", wsDef(act("deny", `"names":["a"]`)), R},
		{"kind/fallback with names", wsDef(act("fallback", `"names":["a"]`)), R},
		{"kind/action kind case", wsDef(act("Deny", `"message":"no"`)), R},
		{"kind/match kind on action", wsDef(act("all_requests", "")), R},
		{"kind/action kind on match", wsDef(matchRule(`{"kind":"deny","message":"no"}`)), R},
		{"kind/target kind on match", wsDef(matchRule(`{"kind":"workspace"}`)), R},

		// every action kind in one definition per target kind
		{"all kinds/selected_users", defJSON(`{"kind":"selected_users","user_ids":`+uuids(3)+`}`,
			act("models", `"names":["a/b"]`), act("providers", `"names":["a"]`), act("deny", `"message":"m"`),
			strictRule, priceJSON(`"1"`, `"2.5"`), act("request_limits", `"max_output_tokens":4096`),
			act("credential_access", `"scopes":["workspace"]`), fallbackJSON(`["c/d"]`, `["timeout"]`, "3", "1000"),
			budgetJSON(`"10"`, `"month"`, `"per_key"`)), A},
		{"all kinds/selected_keys", defJSON(`{"kind":"selected_keys","key_ids":`+list(`"key"`, 3)+`}`,
			act("models", `"names":["a/b"]`), act("providers", `"names":["a"]`), act("deny", `"message":"m"`),
			strictRule, priceJSON(`"1"`, `"2.5"`), act("request_limits", `"max_output_tokens":4096`),
			act("credential_access", `"scopes":["workspace"]`), fallbackJSON(`["c/d"]`, `["timeout"]`, "3", "1000"),
			budgetJSON(`"10"`, `"month"`, `"per_key"`)), A},
		// Integers are read exactly, as JSON Schema compares them: a
		// number a hair off a whole one is not an integer on either side.
		{"int/hair above 1", limit("1.0000000000000001"), R},
		{"int/hair above 2 attempts", attempts("2.0000000000000001"), R},
		{"int/hair below 2 attempts", attempts("1.9999999999999999"), R},
		{"int/hair below 100 ms", timeout("99.999999999999999"), R},
		{"int/hair above 120000 ms", timeout("120000.000000000001"), R},
		{"int/max int64 with a fraction", limit("9223372036854775807.0"), A},
		{"int/max int64 with an exponent", limit("9.223372036854775807e18"), A},
		{"int/2^63", limit("9223372036854775808"), R},
	}
}

// --- tests

func TestJSONSchemaIsACopy(t *testing.T) {
	a := JSONSchema()
	if !json.Valid(a) {
		t.Fatal("JSONSchema is not JSON")
	}
	for i := range a {
		a[i] = 'x'
	}
	if b := JSONSchema(); !json.Valid(b) || bytes.Equal(a, b) {
		t.Error("JSONSchema shares its bytes with the caller")
	}
}

func TestSchemaAgreesWithParser(t *testing.T) {
	cases := append(tableCorpus(), fuzzCorpusFiles(t)...)
	cases = append(cases, schemaCorpus()...)
	for _, g := range schemaGaps {
		for i, ex := range g.examples {
			cases = append(cases, corpusCase{fmt.Sprintf("gap/%s/%d", g.name, i), ex.body, verdictOf(ex.parserAccepts)})
		}
	}
	names := map[string]bool{}
	var accepts, refusals, own int
	explained := map[string]int{}
	for _, c := range cases {
		if names[c.name] {
			t.Fatalf("corpus names %q twice", c.name)
		}
		names[c.name] = true
		ok, gaps := agreement(t, c.name, []byte(c.body))
		if ok {
			accepts++
		} else {
			refusals++
		}
		for _, g := range gaps {
			explained[g]++
		}
		if c.want != anyVerdict {
			own++
			if ok != (c.want == accepted) {
				t.Errorf("%s: parser accepts=%v, the corpus expects %v", c.name, ok, c.want == accepted)
			}
		}
	}
	if own < 60 {
		t.Errorf("only %d cases with their own verdict; want at least 60", own)
	}
	for _, g := range schemaGaps {
		if explained[g.name] == 0 {
			t.Errorf("gap %q explains no input of the corpus", g.name)
		}
	}
	t.Logf("%d inputs (%d with a verdict of their own): %d accepted, %d refused; disagreements explained by gaps: %v",
		len(cases), own, accepts, refusals, explained)
}

func verdictOf(accepts bool) verdict {
	if accepts {
		return accepted
	}
	return refused
}

// Each documented gap shows exactly the disagreement it documents, so the
// list cannot outlive a change to the parser or the schema.
func TestSchemaGapsAreExact(t *testing.T) {
	for _, g := range schemaGaps {
		if len(g.examples) == 0 || g.why == "" {
			t.Errorf("gap %q is undocumented", g.name)
		}
		for i, ex := range g.examples {
			_, perr := ParseDefinitionJSON([]byte(ex.body))
			sok, serr := schemaVerdict(t, []byte(ex.body))
			if (perr == nil) != ex.parserAccepts || sok != ex.schemaAccepts {
				t.Errorf("gap %q example %d (parser reads %s): parser accepts=%v (%v), schema accepts=%v (%v); documented %v, %v",
					g.name, i, ex.whatParserRead, perr == nil, perr, sok, serr, ex.parserAccepts, ex.schemaAccepts)
			}
		}
	}
}

// What the parser accepts always marshals to something the schema accepts,
// here for the random definitions of the property tests.
func TestSchemaAcceptsMarshalledRandomDefinitions(t *testing.T) {
	for seed := int64(1); seed <= 300; seed++ {
		r := rand.New(rand.NewSource(seed))
		for _, p := range randomPolicies(r) {
			out, err := json.Marshal(p.Definition)
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := schemaVerdict(t, out); !ok {
				t.Fatalf("seed %d: marshalled definition does not validate: %v\n%s", seed, err, out)
			}
			if _, err := ParseDefinitionJSON(out); err != nil {
				t.Fatalf("seed %d: parser refuses a marshalled definition: %v", seed, err)
			}
		}
	}
}

// The marshaller writes, for every kind, exactly the members its variant
// lists: responses carry every member, including the request match's
// optional ones.
func TestSchemaVariantsListMarshalledMembers(t *testing.T) {
	defs := schemaDoc(t)["$defs"].(map[string]any)
	tr := true
	all := Match{Kind: MatchAllRequests}
	byKind := map[string]any{
		"Target" + pascal(TargetWorkspace):     Target{Kind: TargetWorkspace},
		"Target" + pascal(TargetSelectedUsers): Target{Kind: TargetSelectedUsers},
		"Target" + pascal(TargetSelectedKeys):  Target{Kind: TargetSelectedKeys},
		"Match" + pascal(MatchAllRequests):     all,
		"Match" + pascal(MatchRequest):         Match{Kind: MatchRequest, Stream: &tr},
		"Rule":                                 Rule{all, Action{Kind: ActionStrictParameters}},
	}
	for _, k := range actionKinds {
		byKind["Action"+pascal(k)] = Action{Kind: k}
	}
	if len(byKind) != len(defs)-5 { // less Target, Match, Action, NameString, DecimalString
		t.Errorf("%d variants marshalled, the schema has %d definitions", len(byKind), len(defs))
	}
	for name, v := range byKind {
		def, ok := defs[name].(map[string]any)
		if !ok {
			t.Errorf("no $defs/%s", name)
			continue
		}
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		if g, w := sortedKeys(got), sortedKeys(def["properties"].(map[string]any)); !slices.Equal(g, w) {
			t.Errorf("%s: marshalled members %v, schema properties %v", name, g, w)
		}
	}
}

// pascal turns a kind such as selected_users into SelectedUsers, the suffix
// of its $defs name.
func pascal[T ~string](k T) string {
	var b strings.Builder
	for _, part := range strings.Split(string(k), "_") {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func schemaDoc(t testing.TB) map[string]any {
	t.Helper()
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(JSONSchema()))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// get walks the schema document by member names.
func get(t *testing.T, v any, path ...string) any {
	t.Helper()
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("schema: no object at %q of %v", p, path)
		}
		if v, ok = m[p]; !ok {
			t.Fatalf("schema: no member %v", path)
		}
	}
	return v
}

// The schema's shape: relative references only, every definition used,
// additionalProperties false on every object schema, and the kinds, enums
// and bounds of the Go code. A new kind or a changed limit fails here before
// it can drift.
func TestSchemaShape(t *testing.T) {
	doc := schemaDoc(t)
	if doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %v", doc["$schema"])
	}
	defs := doc["$defs"].(map[string]any)
	refs := map[string]bool{}
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range []string{"$id", "$anchor", "$dynamicRef", "$dynamicAnchor", "discriminator", "definitions"} {
				if _, ok := x[k]; ok {
					t.Errorf("%s: %s is not used in this document", path, k)
				}
			}
			if ref, ok := x["$ref"].(string); ok {
				name, rel := strings.CutPrefix(ref, "#/$defs/")
				if _, exists := defs[name]; !rel || !exists {
					t.Errorf("%s: $ref %q is not a definition of this document", path, ref)
				}
				refs[name] = true
			}
			// The contains of rules picks fallback rules out of the list; it
			// must stay open, or it would pick nothing.
			if _, ok := x["properties"]; ok && !strings.HasSuffix(path, "/contains") &&
				!strings.Contains(path, "/contains/") && x["additionalProperties"] != false {
				t.Errorf("%s: object schema without additionalProperties: false", path)
			}
			if x["type"] == "object" && x["properties"] == nil && !strings.Contains(path, "/examples") {
				t.Errorf("%s: object schema without properties", path)
			}
			for _, k := range sortedKeys(x) {
				if k == "examples" || k == "default" || k == "const" || k == "enum" {
					continue
				}
				walk(x[k], path+"/"+k)
			}
		case []any:
			for i, e := range x {
				walk(e, fmt.Sprintf("%s/%d", path, i))
			}
		}
	}
	walk(doc, "#")
	for name := range defs {
		if !refs[name] {
			t.Errorf("$defs/%s is never referenced", name)
		}
	}

	unionKinds := func(name string) []string {
		var kinds []string
		for _, alt := range get(t, defs, name, "oneOf").([]any) {
			ref := strings.TrimPrefix(alt.(map[string]any)["$ref"].(string), "#/$defs/")
			kind := get(t, defs, ref, "properties", "kind", "const").(string)
			if ref != name+pascal(kind) {
				t.Errorf("$defs/%s holds kind %q", ref, kind)
			}
			req := get(t, defs, ref, "required").([]any)
			if len(req) == 0 || req[0] != "kind" {
				t.Errorf("$defs/%s: kind is not required first: %v", ref, req)
			}
			kinds = append(kinds, kind)
		}
		return kinds
	}
	eq := func(what string, got any, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: schema has %v, the code %v", what, got, want)
		}
	}
	eq("target kinds", unionKinds("Target"), names(targetKinds))
	eq("match kinds", unionKinds("Match"), names(matchKinds))
	eq("action kinds", unionKinds("Action"), names(actionKinds))

	strList := func(v any) []string {
		var out []string
		for _, e := range v.([]any) {
			out = append(out, e.(string))
		}
		return out
	}
	eq("capabilities", strList(get(t, defs, "MatchRequest", "properties", "capabilities", "items", "enum")), names(capabilities))
	eq("credential scopes", strList(get(t, defs, "ActionCredentialAccess", "properties", "scopes", "items", "enum")), names(credentialScopes))
	eq("fallback triggers", strList(get(t, defs, "ActionFallback", "properties", "on", "items", "enum")), names(fallbackTriggers))
	eq("budget periods", strList(get(t, defs, "ActionBudget", "properties", "period", "enum")), names(budgetPeriods))
	eq("budget aggregations", strList(get(t, defs, "ActionBudget", "properties", "aggregation", "enum")), names(budgetAggregations))
	eq("decimal pattern", get(t, defs, "DecimalString", "pattern"), decimalPattern.String())

	num := func(path ...string) int64 {
		t.Helper()
		n, err := get(t, doc, path...).(json.Number).Int64()
		if err != nil {
			t.Fatalf("%v: %v", path, err)
		}
		return n
	}
	d := func(path ...string) []string { return append([]string{"$defs"}, path...) }
	bounds := []struct {
		path []string
		want int64
	}{
		{[]string{"properties", "rules", "minItems"}, 1},
		{[]string{"properties", "rules", "maxItems"}, MaxRules},
		{[]string{"properties", "rules", "maxContains"}, 1},
		{[]string{"properties", "rules", "minContains"}, 0},
		{d("TargetSelectedUsers", "properties", "user_ids", "minItems"), 1},
		{d("TargetSelectedUsers", "properties", "user_ids", "maxItems"), MaxTargetIDs},
		{d("TargetSelectedKeys", "properties", "key_ids", "minItems"), 1},
		{d("TargetSelectedKeys", "properties", "key_ids", "maxItems"), MaxTargetIDs},
		{d("NameString", "minLength"), int64(nameRule.Min)},
		{d("NameString", "maxLength"), MaxNameLength},
		{d("MatchRequest", "properties", "models", "maxItems"), MaxMatchModels},
		{d("MatchRequest", "properties", "capabilities", "maxItems"), int64(len(capabilities))},
		{d("ActionModels", "properties", "names", "minItems"), 1},
		{d("ActionModels", "properties", "names", "maxItems"), MaxNames},
		{d("ActionProviders", "properties", "names", "minItems"), 1},
		{d("ActionProviders", "properties", "names", "maxItems"), MaxNames},
		{d("ActionDeny", "properties", "message", "minLength"), int64(messageRule.Min)},
		{d("ActionDeny", "properties", "message", "maxLength"), MaxDenyMessage},
		{d("ActionRequestLimits", "properties", "max_output_tokens", "minimum"), 1},
		{d("ActionRequestLimits", "properties", "max_output_tokens", "maximum"), math.MaxInt64},
		{d("ActionCredentialAccess", "properties", "scopes", "minItems"), 1},
		{d("ActionCredentialAccess", "properties", "scopes", "maxItems"), int64(len(credentialScopes))},
		{d("ActionFallback", "properties", "models", "minItems"), 1},
		{d("ActionFallback", "properties", "models", "maxItems"), MaxFallbackModels},
		{d("ActionFallback", "properties", "on", "minItems"), 1},
		{d("ActionFallback", "properties", "on", "maxItems"), int64(len(fallbackTriggers))},
		{d("ActionFallback", "properties", "max_attempts", "minimum"), MinFallbackTries},
		{d("ActionFallback", "properties", "max_attempts", "maximum"), MaxFallbackTries},
		{d("ActionFallback", "properties", "timeout_ms", "minimum"), MinFallbackMS},
		{d("ActionFallback", "properties", "timeout_ms", "maximum"), MaxFallbackMS},
	}
	for _, b := range bounds {
		if got := num(b.path...); got != b.want {
			t.Errorf("%v = %d, the code says %d", b.path, got, b.want)
		}
	}
	// Every array and string carries both bounds where the spec gives two.
	for _, name := range sortedKeys(defs) {
		for member, p := range mapOrNil(mapOrNil(defs[name])["properties"]) {
			ps := mapOrNil(p)
			if ps["type"] == "array" && ps["maxItems"] == nil {
				t.Errorf("$defs/%s/%s: array without maxItems", name, member)
			}
		}
	}
}

func mapOrNil(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// The examples of the schema are definitions the parser accepts.
func TestSchemaExamples(t *testing.T) {
	examples := schemaDoc(t)["examples"].([]any)
	if len(examples) == 0 {
		t.Fatal("no examples")
	}
	for i, ex := range examples {
		body, err := json.Marshal(ex)
		if err != nil {
			t.Fatal(err)
		}
		if ok, gaps := agreement(t, fmt.Sprintf("example %d", i), body); !ok || gaps != nil {
			t.Errorf("example %d refused by the parser: %s", i, body)
		}
	}
}

// A consumer moves $defs into an OpenAPI document's components by rewriting
// one prefix, as server/api's schemaRefs does for reflected types; the
// result validates alike.
func TestSchemaAsOpenAPIComponent(t *testing.T) {
	text := strings.ReplaceAll(string(JSONSchema()), `"#/$defs/`, `"#/components/schemas/`)
	var root map[string]any
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		t.Fatal(err)
	}
	components := root["$defs"].(map[string]any)
	delete(root, "$defs")
	delete(root, "$schema")
	components["PolicyDefinition"] = root
	openapi := map[string]any{
		"openapi":    "3.1.0",
		"components": map[string]any{"schemas": components},
	}
	c := jsonschema.NewCompiler()
	const url = "https://gw.invalid/openapi.json"
	if err := c.AddResource(url, openapi); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url + "#/components/schemas/PolicyDefinition")
	if err != nil {
		t.Fatalf("compile as a component: %v", err)
	}
	for _, cs := range schemaCorpus() {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(cs.body))
		if err != nil {
			continue
		}
		want, _ := schemaVerdictValue(t, v)
		if got := s.Validate(v) == nil; got != want {
			t.Errorf("%s: as a component the schema accepts=%v, on its own %v", cs.name, got, want)
		}
	}
}

// --- mutation: random changes to valid definitions, near the bounds

// TestSchemaAgreesWithParserOnMutations changes valid definitions a few
// places at a time (a value swapped for one at or past a bound, a member
// dropped or added, a kind swapped, a list resized to a bound) and checks
// that the parser and the schema still agree.
func TestSchemaAgreesWithParserOnMutations(t *testing.T) {
	iterations := 3000
	if testing.Short() {
		iterations = 300
	}
	var bases []any
	for seed := int64(1); seed <= 50; seed++ {
		for _, p := range randomPolicies(rand.New(rand.NewSource(seed))) {
			out, err := json.Marshal(p.Definition)
			if err != nil {
				t.Fatal(err)
			}
			bases = append(bases, mustDecode(t, out))
		}
	}
	for _, c := range schemaCorpus() {
		if c.want == accepted && len(c.body) < 4096 {
			bases = append(bases, mustDecode(t, []byte(c.body)))
		}
	}
	r := randv2.New(randv2.NewPCG(2026, 8))
	var accepts, refusals int
	for i := range iterations {
		doc := deepCopy(bases[r.IntN(len(bases))])
		for range 1 + r.IntN(3)/2 {
			mutate(r, &doc)
		}
		data, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		ok, _ := agreement(t, fmt.Sprintf("mutation %d", i), data)
		if ok {
			accepts++
		} else {
			refusals++
		}
		if t.Failed() {
			t.Fatalf("stopping at mutation %d", i)
		}
	}
	// Both verdicts must come up often, or the test says little.
	if accepts < iterations/10 || refusals < iterations/10 {
		t.Errorf("mutations are lopsided: %d accepted, %d refused", accepts, refusals)
	}
	t.Logf("%d mutations: %d accepted, %d refused", iterations, accepts, refusals)
}

func mustDecode(t testing.TB, data []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decode %s: %v", abbreviate(data), err)
	}
	return v
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

type slot struct {
	val any
	set func(any)
}

func slotsOf(root *any) []slot {
	var out []slot
	var walk func(v any, set func(any))
	walk = func(v any, set func(any)) {
		out = append(out, slot{v, set})
		switch x := v.(type) {
		case map[string]any:
			for _, k := range sortedKeys(x) {
				walk(x[k], func(n any) { x[k] = n })
			}
		case []any:
			for i := range x {
				walk(x[i], func(n any) { x[i] = n })
			}
		}
	}
	walk(*root, func(n any) { *root = n })
	return out
}

var (
	mutationSizes   = []int{0, 1, 2, 3, 4, 5, 99, 100, 101, 999, 1000, 1001}
	mutationMembers = []string{"kind", "target", "rules", "match", "action", "user_ids", "key_ids", "models",
		"stream", "capabilities", "names", "message", "max_input_price_per_mtok", "max_output_price_per_mtok",
		"max_output_tokens", "scopes", "on", "max_attempts", "timeout_ms", "amount_usd", "period",
		"aggregation", "x", "Kind"}
)

func mutationKinds() []string {
	out := []string{"org", "", "Workspace"}
	out = append(out, names(targetKinds)...)
	out = append(out, names(matchKinds)...)
	return append(out, names(actionKinds)...)
}

// poolValueLike is, half the time, a pool value of the same JSON type as v,
// so that more mutations keep a definition valid.
func poolValueLike(r *randv2.Rand, v any) any {
	if r.IntN(2) == 0 {
		return poolValue(r)
	}
	for range 20 {
		p := poolValue(r)
		if reflect.TypeOf(p) == reflect.TypeOf(v) {
			return p
		}
	}
	return poolValue(r)
}

// poolValue is a value at or past some bound of the definition.
func poolValue(r *randv2.Rand) any {
	numbers := []string{"0", "1", "2", "5", "6", "99", "100", "4096", "120000", "120001", "-1", "1.5", "2.0", "1e3",
		"1e2", "5e0", "9223372036854775807", "9223372036854775808", "2.0000000000000001", "99.999999999999999",
		"1e400"}
	texts := []string{"", "a", "a/b", strings.Repeat("x", 255), strings.Repeat("x", 256), strings.Repeat("m", 200),
		strings.Repeat("m", 201), strings.Repeat("é", 255), strings.Repeat("😀", 256), strings.Repeat("😀", 200),
		strings.Repeat("😀", 201), "6f9619ff-8b86-4011-b42d-00c04fc964ff", "6F9619FF-8B86-4011-B42D-00C04FC964FF",
		"6f9619ff8b864011b42d00c04fc964ff", "1", "1.50", "007", "1.", ".5", "-1", "1e3", "١", "1\n",
		"0." + strings.Repeat("0", 10001) + "1", "streaming", "week", "team", "instance"}
	texts = append(texts, names(capabilities)...)
	texts = append(texts, names(credentialScopes)...)
	texts = append(texts, names(fallbackTriggers)...)
	texts = append(texts, names(budgetPeriods)...)
	texts = append(texts, names(budgetAggregations)...)
	texts = append(texts, mutationKinds()...)
	switch r.IntN(7) {
	case 0:
		return []any{nil, true, false}[r.IntN(3)]
	case 1, 2:
		return json.Number(numbers[r.IntN(len(numbers))])
	case 3, 4:
		return texts[r.IntN(len(texts))]
	case 5:
		return []any{[]any{}, []any{"tools"}, []any{"6f9619ff-8b86-4011-b42d-00c04fc964ff"}, []any{"a"},
			[]any{"timeout", "org"}}[r.IntN(5)]
	default:
		return []any{map[string]any{}, map[string]any{"kind": "workspace"}, map[string]any{"kind": "all_requests"},
			map[string]any{"kind": "strict_parameters"},
			map[string]any{"match": map[string]any{"kind": "all_requests"}, "action": map[string]any{"kind": "deny", "message": "no"}},
			map[string]any{"match": map[string]any{"kind": "all_requests"}, "action": map[string]any{"kind": "fallback",
				"models": []any{"a"}, "on": []any{"timeout"}, "max_attempts": json.Number("2"), "timeout_ms": json.Number("100")}},
		}[r.IntN(6)]
	}
}

func mutate(r *randv2.Rand, root *any) {
	slots := slotsOf(root)
	s := slots[r.IntN(len(slots))]
	switch x := s.val.(type) {
	case map[string]any:
		switch r.IntN(4) {
		case 0:
			if keys := sortedKeys(x); len(keys) > 0 {
				delete(x, keys[r.IntN(len(keys))])
				return
			}
		case 1:
			x[mutationMembers[r.IntN(len(mutationMembers))]] = poolValue(r)
			return
		case 2:
			if _, ok := x["kind"]; ok {
				kinds := mutationKinds()
				x["kind"] = kinds[r.IntN(len(kinds))]
				return
			}
		}
	case []any:
		switch r.IntN(4) {
		case 0, 1:
			n := mutationSizes[r.IntN(len(mutationSizes))]
			out := make([]any, n)
			for i := range out {
				if len(x) > 0 {
					out[i] = deepCopy(x[i%len(x)])
				} else {
					out[i] = poolValue(r)
				}
			}
			s.set(out)
			return
		case 2:
			if len(x) > 0 {
				i := r.IntN(len(x))
				s.set(append(slices.Clone(x[:i]), x[i+1:]...))
				return
			}
		}
	}
	s.set(poolValueLike(r, s.val))
}

// FuzzSchemaAgreesWithParser looks for inputs on which the schema and the
// parser disagree beyond the documented gaps.
func FuzzSchemaAgreesWithParser(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add([]byte(s))
	}
	for _, c := range schemaCorpus() {
		if len(c.body) < 4096 {
			f.Add([]byte(c.body))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		agreement(t, "fuzz", data)
	})
}
