package providers

import (
	"encoding/json"
	"strings"
	"testing"
)

var validDocs = []string{
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`,
	`{"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":0}}}`,
	` { "a" : [ 1 , -2.5e+3 , 0 , 0.0 , 1E9 , true , false , null , "\u00e9\n\"\\\/\b\f\r\t" ] } `,
	`"a string"`, `12`, `-0`, `[]`, `{}`, `[[]]`, "\"\xff\xfe bytes\"", `"é"`,
	// Not JSON:
	``, ` `, `{`, `}`, `[`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[,]`, `{,}`, `{"a" 1}`, `[1 2]`, `01`, `-`, `1.`, `.5`,
	`1e`, `1e+`, `+1`, `tru`, `nul`, `True`, `"\x"`, `"\u12"`, `"\u12g4"`, "\"a\x01b\"", `"unterminated`, `{"a":1}x`,
	`{"a":1} {}`, `[1]]`, `{'a':1}`, `NaN`, `Infinity`, "\"\\", `"\`, `{"a":1 `, `[1,2`, "\x00",
	// What setMember learns of a valid answer (checkScanJSON):
	`{"a":"<b>","c":"x & y"}`, "{\"a\":\"\u2028\"}", "[\"\xe2\"]", `{"a":"\u003c"}`, "{\"a\":\n1}", "[1,\t2]", `{"a":" "}`,
}

func TestValidJSONIsJSONValid(t *testing.T) {
	docs := append([]string{strings.Repeat("[", 600) + strings.Repeat("]", 600), strings.Repeat(`{"a":`, 600) + "1" + strings.Repeat("}", 600),
		strings.Repeat("[", 20000) + strings.Repeat("]", 20000)}, validDocs...)
	for _, d := range docs {
		if got, want := validJSON([]byte(d)), json.Valid([]byte(d)); got != want {
			t.Errorf("%.80q: %v, json.Valid %v", d, got, want)
		}
		checkScanJSON(t, d)
	}
}

// checkScanJSON holds what scanJSON tells of a valid document to the
// separate scans it replaced, and its validity to validJSON's.
func checkScanJSON(t *testing.T, d string) {
	t.Helper()
	ok, compact, html := scanJSON([]byte(d))
	if ok != json.Valid([]byte(d)) {
		t.Fatalf("%.80q: scanJSON %v, json.Valid %v", d, ok, !ok)
	}
	if !ok {
		return
	}
	if want := isCompact([]byte(d)); compact != want {
		t.Errorf("%.80q: compact %v, isCompact %v", d, compact, want)
	}
	if want := needsHTMLEscape([]byte(d)); html != want {
		t.Errorf("%.80q: html %v, needsHTMLEscape %v", d, html, want)
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, d := range validDocs {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, d string) {
		if got, want := validJSON([]byte(d)), json.Valid([]byte(d)); got != want {
			t.Fatalf("%q: %v, json.Valid %v", d, got, want)
		}
		checkScanJSON(t, d)
	})
}

func BenchmarkValidJSON(b *testing.B) {
	chunk := []byte(validDocs[0])
	b.Run("validJSON", func(b *testing.B) {
		for range b.N {
			validJSON(chunk)
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		for range b.N {
			json.Valid(chunk)
		}
	})
}

// validChunk is validJSON and objectMembers, then chatDelta of the last
// choices member, in one pass.
func checkValidChunk(t *testing.T, d string) {
	t.Helper()
	b := []byte(d)
	var w chunkWalk
	ok, read := validChunk(&w, b)
	got := w.members
	var want []jsonMember
	wantOK := validJSON(b) // objectMembers reads only valid JSON
	if wantOK {
		want, wantOK = objectMembers(nil, b)
	}
	if ok != wantOK {
		t.Fatalf("%.80q: ok %v, the two passes %v", d, ok, wantOK)
	}
	if !ok {
		return
	}
	if len(got) != len(want) {
		t.Fatalf("%.80q: %d members, the two passes %d", d, len(got), len(want))
	}
	var choices []byte
	for i := range got {
		if string(got[i].key) != string(want[i].key) || string(got[i].value) != string(want[i].value) {
			t.Fatalf("%.80q: member %d %q:%q, the two passes %q:%q", d, i, got[i].key, got[i].value, want[i].key, want[i].value)
		}
		if isKey(want[i].key, "choices") {
			choices = want[i].value
		}
	}
	if !read {
		return
	}
	var walked, twice relayed
	walked.chatDeltas(w.deltas)
	finished := twice.chatDelta(choices)
	if w.finished != finished || walked.text.String() != twice.text.String() || walked.pieces != twice.pieces ||
		walked.reasoning != twice.reasoning || walked.rest != twice.rest {
		t.Fatalf("%.80q: read finished %v, text %q, %d pieces, %d reasoning; chatDelta %v, %q, %d, %d", d,
			w.finished, walked.text.String(), walked.pieces, walked.reasoning, finished, twice.text.String(), twice.pieces, twice.reasoning)
	}
}

// chunkDocs are chat chunks of every shape chatDelta reads.
var chunkDocs = []string{
	`{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"content":"a\u00e9\n"},"finish_reason":null},{"index":1,"delta":{"refusal":"no"},"finish_reason":"stop"}]}`,
	`{"choices":[{"delta":{"reasoning_content":"think","reasoning":"more","content":null}}],"model":"m"}`,
	`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"t","function":{"name":"f","arguments":"{\"a\":1}"}}]}}]}`,
	`{"choices":[{"finish_reason":""},{"finish_reason":"length","delta":{}},{"delta":{"content":"x"},"delta":{"content":"y"}}]}`,
	`{"choices":[{"delta":{"content":"a"}}],"choices":[{"delta":{"content":"b"},"finish_reason":"stop"}]}`,
	`{"choices":[{"delta":{"content":"a"}}],"choices":null}`,
	`{"choices":[1,"x",null,[],{"delta":"text"},{"delta":[1]},{"delta":{"content":7}}]}`,
	`{"choices":{"delta":{"content":"a"}}}`,
	` { "choices" : [ { "delta" : { "content" : "sp" } , "finish_reason" : "stop" } ] } `,
	`{"ch\u006fices":[{"delta":{"content":"escaped key"}}]}`,
	`{"choices":[{"delta":{"content":"a"},"finish_reason":null}],"usage":{"prompt_tokens":1}}`,
	`{"b":1,"a":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`,
	`{"choices":[{"delta":{"content":"a","x":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}}]}`,
	`{"choices":[{"delta":{"content":"a"}}],"x":` + strings.Repeat(`{"a":`, 600) + "1" + strings.Repeat("}", 600) + `}`,
	`{"choices":[{"delta":{"content":"a"}]}`, `{"choices":[{"delta":{"content":"a"}}]`, `{"choices":[{"delta":{"content":"a",}}]}`,
	`{"choices":[{"delta":{"content" "a"}}]}`, `{"choices":[{"delta":{"content":"a"}},]}`, `{"choices":[{"delta" {}}]}`,
}

func TestValidChunk(t *testing.T) {
	docs := append([]string{`{"a":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `,"b":1}`,
		`{"a":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`, ` {} `, `{"a":1,"a":2}`}, validDocs...)
	for _, d := range append(docs, chunkDocs...) {
		checkValidChunk(t, d)
	}
}

func FuzzValidChunk(f *testing.F) {
	for _, d := range append(validDocs, chunkDocs...) {
		f.Add(d)
	}
	f.Fuzz(checkValidChunk)
}

// The byte walkers read valid JSON, but text that is not must not make
// them panic: an unterminated string ending in a backslash ran one byte
// past the end (found by FuzzValidChunk, then named FuzzValidObjectMembers).
func TestMemberWalkersOnBrokenText(t *testing.T) {
	for _, d := range []string{`{ "0000\`, `{"a":"\`, `["\`, `"\`, `{"a":{"b":"\`, `{"a`} {
		b := []byte(d)
		if _, ok := objectMembers(nil, b); ok && d[0] != '{' {
			t.Errorf("%q read as an object", d)
		}
		arrayElements(b, func([]byte) {})
		if n := skipValue(b, 0); n > len(b) {
			t.Errorf("%q: skipValue ran to %d, past %d", d, n, len(b))
		}
	}
}
