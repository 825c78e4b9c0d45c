package providers

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestEditObject(t *testing.T) {
	model := setTo("model", []byte(`"gpt-4o"`))
	noStore := setTo("store", []byte(`false`))
	cases := []struct {
		name, body string
		edits      []Edit
		want       string
	}{
		{"replaced in place", `{"model":"a","input":"hi"}`, []Edit{model}, `{"model":"gpt-4o","input":"hi"}`},
		{"added last", `{"input":"hi"}`, []Edit{noStore}, `{"input":"hi","store":false}`},
		{"spaces kept around what is not edited", "{ \"input\" : \"hi\" ,\n \"n\": 1 ,\"model\":\"a\" }", []Edit{model},
			"{\"input\" : \"hi\" ,\n \"n\": 1,\"model\":\"gpt-4o\"}"},
		{"removed", `{"model":"a","stream":true,"input":"hi"}`, []Edit{removed("stream")}, `{"model":"a","input":"hi"}`},
		{"removed first", `{"stream":true,"input":"hi"}`, []Edit{removed("stream")}, `{"input":"hi"}`},
		{"removed last", `{"input":"hi","stream":true}`, []Edit{removed("stream")}, `{"input":"hi"}`},
		{"the only member removed", `{"stream":true}`, []Edit{removed("stream")}, `{}`},
		{"absent and removed", `{"input":"hi"}`, []Edit{removed("stream")}, `{"input":"hi"}`},
		{"empty object", `{}`, []Edit{model, noStore}, `{"model":"gpt-4o","store":false}`},
		{"every duplicate", `{"model":"a","input":"hi","model":"b"}`, []Edit{model}, `{"model":"gpt-4o","input":"hi","model":"gpt-4o"}`},
		{"an escaped name is the name", `{"mod\u0065l":"a","input":"hi"}`, []Edit{model}, `{"mod\u0065l":"gpt-4o","input":"hi"}`},
		{"the later edit wins", `{"model":"a"}`, []Edit{model, removed("model")}, `{}`},
		{"the later edit wins when absent", `{}`, []Edit{removed("model"), model}, `{"model":"gpt-4o"}`},
		{"nested members are not top-level", `{"input":{"model":"a"}}`, []Edit{model}, `{"input":{"model":"a"},"model":"gpt-4o"}`},
		{"a value in pieces", `{"system":"s"}`, []Edit{{Name: "system", Value: rope{[]byte("["), []byte(`"a"`), []byte("]")}}}, `{"system":["a"]}`},
	}
	for _, c := range cases {
		out, ok := editObject([]byte(c.body), c.edits)
		if !ok {
			t.Errorf("%s: not an object", c.name)
			continue
		}
		if got := string(out.bytes()); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
		if !json.Valid(out.bytes()) {
			t.Errorf("%s: not valid JSON: %s", c.name, out.bytes())
		}
		if n := out.len(); n != len(c.want) {
			t.Errorf("%s: length %d", c.name, n)
		}
	}
	for _, notObject := range []string{`[]`, `"x"`, `1`, ``} {
		if _, ok := editObject([]byte(notObject), []Edit{model}); ok {
			t.Errorf("%q edited as an object", notObject)
		}
	}
}

// FuzzEditObject holds editObject to a decode, an edit of the map and an
// encode: the same members with the same values.
func FuzzEditObject(f *testing.F) {
	f.Add(`{"model":"a","input":"hi","stream":false}`)
	f.Add(`{"model":"a","model":{"x":[1,2]}, "store" : true}`)
	f.Add(`{ }`)
	f.Add(`{"st\u006fre":null,"a":"\"}"}`)
	f.Fuzz(func(t *testing.T, body string) {
		var want map[string]json.RawMessage
		if json.Unmarshal([]byte(body), &want) != nil || want == nil || !json.Valid([]byte(body)) {
			return
		}
		edits := []Edit{setTo("model", []byte(`"m"`)), removed("stream"), setTo("store", []byte("false"))}
		out, ok := editObject([]byte(body), edits)
		if !ok {
			t.Fatalf("%s: not an object", body)
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out.bytes(), &got); err != nil {
			t.Fatalf("%s edited is not JSON: %s", body, out.bytes())
		}
		want["model"], want["store"] = json.RawMessage(`"m"`), json.RawMessage("false")
		delete(want, "stream")
		if len(got) != len(want) {
			t.Fatalf("%s: got %s", body, out.bytes())
		}
		for k, v := range want {
			var a, b any
			_ = json.Unmarshal(v, &a)
			_ = json.Unmarshal(got[k], &b)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%s: member %q is %s, want %s", body, k, got[k], v)
			}
		}
	})
}

func TestOutline(t *testing.T) {
	long := strings.Repeat("a", 1000)
	cases := []struct{ name, body, want string }{
		{"short strings kept", `{"model":"m","input":"hi"}`, `{"model":"m","input":"hi"}`},
		{"a long value cut", `{"input":"` + long + `","model":"m"}`, `{"input":"` + long[:outlineKeep] + `","model":"m"}`},
		{"a long key kept", `{"` + long + `":1}`, `{"` + long + `":1}`},
		{"in arrays", `["` + long + `","b"]`, `["` + long[:outlineKeep] + `","b"]`},
		{"not inside an escape", `"` + long[:outlineKeep-1] + `\u00e9` + long + `"`, `"` + long[:outlineKeep-1] + `"`},
		{"not inside a character", `"` + long[:outlineKeep-1] + "é" + long + `"`, `"` + long[:outlineKeep-1] + `"`},
		{"an escaped quote is no end", `"` + long[:10] + `\"` + long + `"`, `"` + long[:10] + `\"` + long[:outlineKeep-12] + `"`},
	}
	for _, c := range cases {
		got := string(Outline([]byte(c.body)))
		if got != c.want {
			t.Errorf("%s: %.80s… (%d bytes), want %d bytes", c.name, got, len(got), len(c.want))
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("%s: not valid JSON", c.name)
		}
	}
	short := []byte(`{"model":"m"}`)
	if out := Outline(short); &out[0] != &short[0] {
		t.Error("a body with nothing to cut was copied")
	}
}

// FuzzOutline: an outline is valid JSON of the same shape, each string a
// prefix of the one it outlines.
func FuzzOutline(f *testing.F) {
	f.Add(`{"a":"` + strings.Repeat("é\\n\\u00e9", 200) + `","b":[1,"x",{"c":null}]}`)
	f.Add(`"` + strings.Repeat(`\"`, 300) + `"`)
	f.Fuzz(func(t *testing.T, body string) {
		if !json.Valid([]byte(body)) {
			return
		}
		out := Outline([]byte(body))
		var a, b any
		if err := json.Unmarshal(out, &b); err != nil {
			t.Fatalf("outline of %q is not JSON: %s", body, out)
		}
		_ = json.Unmarshal([]byte(body), &a)
		sameShape(t, a, b)
	})
}

func sameShape(t *testing.T, whole, outline any) {
	t.Helper()
	switch w := whole.(type) {
	case map[string]any:
		o, _ := outline.(map[string]any)
		if len(o) != len(w) {
			t.Fatalf("object of %d members outlined as %v", len(w), outline)
		}
		for k, v := range w {
			sameShape(t, v, o[k])
		}
	case []any:
		o, _ := outline.([]any)
		if len(o) != len(w) {
			t.Fatalf("array of %d outlined as %v", len(w), outline)
		}
		for i := range w {
			sameShape(t, w[i], o[i])
		}
	case string:
		o, _ := outline.(string)
		// A cut may split a surrogate pair, which decodes to U+FFFD.
		if !strings.HasPrefix(w, strings.TrimSuffix(o, "\uFFFD")) {
			t.Fatalf("%q outlined as %q", w, o)
		}
	default:
		if !reflect.DeepEqual(whole, outline) {
			t.Fatalf("%v outlined as %v", whole, outline)
		}
	}
}

// A request is routed as the translation of its outline: what routing
// reads of it (model, stream, limits, the capabilities and modalities it
// requires) must be what the whole translation says, whatever its long
// strings hold.
func TestOutlineRoutesAsWhole(t *testing.T) {
	long := strings.Repeat("word ", 2000)
	b64 := strings.Repeat("QUJD", 3000)
	messages := []string{
		`{"model":"m","max_tokens":99,"stream":true,"system":"` + long + `","messages":[{"role":"user","content":"` + long + `"}]}`,
		`{"model":"m","max_tokens":5,"system":[{"type":"text","text":"` + long + `","cache_control":{"type":"ephemeral","ttl":"1h"}}],` +
			`"messages":[{"role":"user","content":[{"type":"text","text":"` + long + `"},` +
			`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + b64 + `"}},` +
			`{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"` + b64 + `"}}]},` +
			`{"role":"assistant","content":[{"type":"thinking","thinking":"` + long + `","signature":"` + b64 + `"},{"type":"tool_use","id":"t1","name":"f","input":{"q":"` + long + `"}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"` + long + `"}]}],` +
			`"tools":[{"name":"f","description":"` + long + `","input_schema":{"type":"object","properties":{"q":{"type":"string","description":"` + long + `"}}}}],` +
			`"thinking":{"type":"enabled","budget_tokens":2048}}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://example.com/` + strings.Repeat("p", 600) + `.png"}}]}]}`,
	}
	responses := []string{
		`{"model":"m","input":"` + long + `","instructions":"` + long + `","max_output_tokens":7}`,
		`{"model":"m","stream":true,"input":[{"role":"user","content":[{"type":"input_text","text":"` + long + `"},` +
			`{"type":"input_image","image_url":"data:image/png;base64,` + b64 + `"},{"type":"input_file","filename":"a.pdf","file_data":"data:application/pdf;base64,` + b64 + `"}]},` +
			`{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"q\":\"` + long + `\"}"},` +
			`{"type":"function_call_output","call_id":"c1","output":"` + long + `"}],` +
			`"tools":[{"type":"function","name":"f","description":"` + long + `","parameters":{"type":"object"}}],` +
			`"reasoning":{"effort":"high"},"text":{"format":{"type":"json_schema","name":"s","schema":{"type":"object","description":"` + long + `"}}}}`,
	}
	check := func(name string, translate func([]byte) ([]byte, error), body string) {
		t.Helper()
		outline := Outline([]byte(body))
		if len(body) > 10_000 && len(outline) >= len(body)/4 {
			t.Errorf("%s: an outline of %d bytes for %d", name, len(outline), len(body))
		}
		route := func(b []byte) any {
			chat, err := translate(b)
			if err != nil {
				return err.Error()
			}
			r, err := ParseChatRequest(chat)
			if err != nil {
				return err.Error()
			}
			return []any{r.Model, r.Stream, r.MaxTokens, r.N, r.Capabilities(), r.Modalities(), len(r.Messages), len(r.Tools), r.ReasoningEffort}
		}
		whole, outlined := route([]byte(body)), route(outline)
		if msg, failed := whole.(string); failed {
			t.Fatalf("%s: %s", name, msg)
		}
		if !reflect.DeepEqual(whole, outlined) {
			t.Errorf("%s: routed as %v, whole %v", name, outlined, whole)
		}
	}
	for i, b := range messages {
		check("messages "+string(rune('a'+i)), MessagesToChat, b)
	}
	for i, b := range responses {
		check("responses "+string(rune('a'+i)), ResponsesToChat, b)
	}
}

// editBody is a chat request as a caller sends it, and editCases the
// edits gw makes of it: its model and limit set, and for a stream, stream
// and its options added.
var editBody = []byte(`{"model":"gpt","messages":[{"role":"user","content":"Say hi."}],"max_tokens":64,"temperature":0.2}`)

var editCases = []struct {
	name  string
	edits []Edit
	// allocs: the result, and the quoted name of each member added.
	allocs float64
}{
	{"set", []Edit{setTo("model", []byte(`"openai/gpt-4o-mini"`)), setTo("max_tokens", []byte("64"))}, 1},
	{"stream", []Edit{setTo("model", []byte(`"openai/gpt-4o-mini"`)), setTo("max_tokens", []byte("64")),
		setTo("stream", []byte("true")), setTo("stream_options", []byte(`{"include_usage":true}`))}, 3},
}

// TestEditObjectAllocations holds editObject to its result's allocation
// and an added member's name.
func TestEditObjectAllocations(t *testing.T) {
	for _, c := range editCases {
		if n := testing.AllocsPerRun(100, func() { editObject(editBody, c.edits) }); n != c.allocs {
			t.Errorf("%s: %v allocations, want %v", c.name, n, c.allocs)
		}
	}
}

func BenchmarkEditObject(b *testing.B) {
	for _, c := range editCases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				editObject(editBody, c.edits)
			}
		})
	}
}
