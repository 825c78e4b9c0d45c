package providers

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// checkMessageScan holds scanMessage to parseMessage on item: where it
// answers, parseMessage accepts item and makes the same Message.
func checkMessageScan(t *testing.T, item []byte) bool {
	t.Helper()
	got, ok := scanMessage(item)
	if !ok {
		return false
	}
	want, err := parseMessage(&memberDecoder{}, 0, item)
	if err != nil {
		t.Fatalf("scan took %s, which parseMessage refuses: %v", item, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\nscan  %#v\nparse %#v", item, got, want)
	}
	return true
}

func TestScanMessageMatchesParse(t *testing.T) {
	for _, item := range []string{
		`{"role":"system","content":"You are a helpful assistant."}`,
		`{"role":"user","content":"Hello!"}`,
		`{ "role" : "assistant" , "content" : null , "name" : "bot" }`,
		`{"role":"tool","tool_call_id":"call_1","content":"42"}`,
		`{"role":"user","name":"a","name":null,"content":"x"}`,
		`{"role":"user","content":"a","content":"b"}`,
		`{"role":"developer","tool_calls":null}`,
		`{"role":"function","name":"f","content":"{\"a\":1}"}`,
		`{"content":"x","role":"user","extra":{"nested":[1,2]}}`,
	} {
		if !checkMessageScan(t, []byte(item)) {
			t.Errorf("the fast path declined %s", item)
		}
	}
	for _, item := range []string{
		`{"role":"User","content":"x"}`, `{"Role":"user"}`, `{"role":"user","Content":"x"}`, `{"role":"user","content":[{"type":"text","text":"x"}]}`,
		`{"role":"user","tool_calls":[]}`, `{"role":"user","name":"\u0041"}`, `{"role":"user","name":"` + "\xff" + `"}`,
		`{"role":null}`, `{"content":"x"}`, `["role"]`, `{"role":"user","content":5}`, `{"r\u006fle":"user"}`, `{"role":"user","name":5}`,
	} {
		if _, ok := scanMessage([]byte(item)); ok {
			t.Errorf("the fast path took %s", item)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	values := map[string][]string{
		"role":         {`"system"`, `"user"`, `"assistant"`, `"tool"`, `"developer"`, `"function"`, `"bogus"`, `null`, `"User"`, `3`},
		"content":      {`"hi"`, `null`, `""`, `"a \"quoted\" word"`, `[{"type":"text","text":"x"}]`, `7`},
		"name":         {`"n"`, `null`, `"é"`, `"\u00e9"`, `1`},
		"tool_call_id": {`"c1"`, `null`, `""`},
		"tool_calls":   {`null`, `[]`},
		"Name":         {`"N"`},
		"other":        {`{"a":[1,{"b":null}]}`, `true`},
	}
	keys := []string{"role", "content", "name", "tool_call_id", "tool_calls", "Name", "other"}
	took := 0
	for range 20000 {
		var parts []string
		for range 1 + rng.IntN(5) {
			k := keys[rng.IntN(len(keys))]
			vs := values[k]
			parts = append(parts, `"`+k+`":`+vs[rng.IntN(len(vs))])
		}
		if checkMessageScan(t, []byte("{"+strings.Join(parts, ",")+"}")) {
			took++
		}
	}
	if took < 1000 {
		t.Errorf("the fast path took only %d of 20000 messages", took)
	}
}

func FuzzScanMessage(f *testing.F) {
	f.Add([]byte(`{"role":"user","content":"Hello!"}`))
	f.Add([]byte(`{"role":"tool","tool_call_id":"c","name":null,"content":null}`))
	f.Fuzz(func(t *testing.T, item []byte) {
		if !json.Valid(item) {
			return // messages come from a body json.Valid accepted
		}
		checkMessageScan(t, item)
	})
}

// TestEncodeMembersMatchesMarshal: with compact values, encodeMembers
// writes what json.Marshal writes of the map, names of every kind
// included (escaped, HTML-escaped, not ASCII, not UTF-8).
func TestEncodeMembersMatchesMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	alphabet := []string{"a", "z", "_", "0", " ", "\"", "\\", "<", ">", "&", "\n", "\x7f", "é", "\u2028", "\xff", "~", "model"}
	for range 5000 {
		m := map[string]json.RawMessage{}
		for range rng.IntN(30) {
			var b strings.Builder
			for range rng.IntN(4) {
				b.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
			m[b.String()] = json.RawMessage(`[1,"x",{"k":null}]`)
		}
		var members Members
		for name, v := range m {
			members = append(members, Member{Name: name, Value: v})
		}
		got, err := encodeMembers(members)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("encodeMembers %s\njson.Marshal  %s", got, want)
		}
	}
}

// TestJSONStringMatchesMarshal: jsonString writes a string as json.Marshal
// does, whatever its characters.
func TestJSONStringMatchesMarshal(t *testing.T) {
	for _, v := range []string{"", "openai/gpt-4o-mini", "a b", "<x>", "a&b", "q\"", `back\slash`, "tab\t", "\x7f", "é", "\u2028", "\xff", "~!@#$%^*()"} {
		want, _ := json.Marshal(v)
		if got := jsonString(v); string(got) != string(want) {
			t.Errorf("jsonString(%q) = %s, json.Marshal %s", v, got, want)
		}
	}
}
