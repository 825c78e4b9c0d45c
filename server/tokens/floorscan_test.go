package tokens

import (
	"bytes"
	"encoding/json"
	"testing"
)

// floorByDecoder is the floor as the json.Decoder walk finds it: what
// the scan must agree with on every JSON document.
func floorByDecoder(key string, doc []byte, keys map[string]bool) int64 {
	w := requestWalker{c: o200k, exact: true, keys: keys, floorOnly: true, dec: json.NewDecoder(bytes.NewReader(doc))}
	if w.value(key, 0) != nil {
		return 0
	}
	return w.floor
}

var floorDocs = []string{
	`{"id":"chatcmpl-1","choices":[{"message":{"role":"assistant","content":"The sea rolls in; the wind keeps count."}}]}`,
	`{"messages":[{"role":"user","content":[{"type":"text","text":"Hello there, how are you today?"}]}],"system":"Be brief and kind."}`,
	`{"content":"escaped \"quotes\", a tab\there and \u00e9 \ud83d\ude00 emoji","n":[1,2.5e3,true,null,{"text":"nested text value"}]}`,
	`{"input":[{"role":"user","content":"x"}],"instructions":"Answer in French, please, and briefly.","tools":[{"description":"Looks a thing up in the index"}]}`,
	` [ "a", {"text" : "spaced   out text"} , [ ] , { } ] `,
	`{"te\u0078t":"a member name with an escape is still its name"}`,
}

func TestFloorScanAgreesWithTheDecoder(t *testing.T) {
	for _, doc := range floorDocs {
		for _, keys := range []map[string]bool{RequestKeys, AnswerKeys} {
			if got, want := FloorJSON(o200k, "", []byte(doc), keys), floorByDecoder("", []byte(doc), keys); got != want {
				t.Errorf("%s: floor %d, the decoder's %d", doc, got, want)
			}
		}
	}
	// Not JSON: no floor.
	for _, doc := range []string{`{"content":"unterminated`, `{"content" "x"}`, `{"content":"x",}`, `[1 2]`, ``} {
		if got := FloorJSON(o200k, "", []byte(doc), RequestKeys); got != 0 {
			t.Errorf("%q: floor %d, want 0", doc, got)
		}
	}
	// What it costs: only what is counted allocates.
	doc := []byte(floorDocs[0])
	if n := testing.AllocsPerRun(50, func() { FloorJSON(o200k, "", doc, AnswerKeys) }); n > 45 {
		t.Errorf("the floor of a chat answer allocates %.0f times", n)
	}
}

func FuzzFloorScan(f *testing.F) {
	for _, doc := range floorDocs {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if !json.Valid([]byte(doc)) {
			FloorJSON(o200k, "", []byte(doc), RequestKeys) // never panics
			return
		}
		if got, want := FloorJSON(o200k, "", []byte(doc), RequestKeys), floorByDecoder("", []byte(doc), RequestKeys); got != want {
			t.Fatalf("%q: floor %d, the decoder's %d", doc, got, want)
		}
	})
}

// boundDocs are bodies whose bound the strict scan must count as the
// decoder's walk does, JSON or not: what the scan refuses goes to the
// decoder, so every one must agree.
var boundDocs = append([]string{
	`{"model":"gpt-4o-mini","max_tokens":1024,"temperature":0.7,"stream":true,"user":null,"messages":[{"role":"user","content":"Hello"}]}`,
	`{"content":"data:image/png;base64,iVBORw0KGgo=","n":-0.5E-7}`,
	`{"a":"ctl` + "\x01" + `char"}`, `{"a":"bad utf-8 ` + "\xff\xfe" + `"}`, `{"k` + "\xff" + `":1}`,
	`123`, `true`, `"just a string"`, `nul`, `tru`, `01`, `-`, `1.`, `1e`, `{"a":1}trailing`, `{"a":1abc}`, `[1,]`, `[,1]`,
	`{"a":1,}`, `{,}`, `{"a" 1}`, `{"a":1 "b":2}`, `not json`, ``, `   `, `{"content":"unterminated`, `{"a":"\q"}`,
	`{"a":[true,false,null,1,-2,3.25,4e10,5E-3]}`, `[[[[[]]]]]`, `{"":""}`,
}, floorDocs...)

func TestCountRequestScanAgreesWithTheDecoder(t *testing.T) {
	for _, c := range []Counter{o200k, Estimate{}} {
		for _, doc := range boundDocs {
			if got, want := CountRequest(c, []byte(doc)), countRequestDecoded(c, []byte(doc)); got != want {
				t.Errorf("%q: %+v, the decoder's walk %+v", doc, got, want)
			}
		}
	}
	// What it costs on a body whose texts the memo holds: the member
	// names' text, nothing per token.
	doc := []byte(boundDocs[0])
	CountRequest(o200k, doc)
	if n := testing.AllocsPerRun(50, func() { CountRequest(o200k, doc) }); n > 1 {
		t.Errorf("the bound of a chat request allocates %.0f times", n)
	}
}

func FuzzCountRequestScan(f *testing.F) {
	for _, doc := range boundDocs {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if got, want := CountRequest(o200k, []byte(doc)), countRequestDecoded(o200k, []byte(doc)); got != want {
			t.Fatalf("%q: %+v, the decoder's walk %+v", doc, got, want)
		}
	})
}
