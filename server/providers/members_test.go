package providers_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers"
)

// allocated reports the bytes fn allocates on the heap.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Issue 17: decoding multiplied a body about 6.5 times (members, the
// messages, each message and each content string were copies). Parsing
// now reads what routing and policies need and keeps the rest as slices
// of the body: a 6 MiB request costs the parse a few kilobytes.
func TestParseKeepsTheBodyAsIs(t *testing.T) {
	text := strings.Repeat("a long prompt\n", 2<<20/14)
	image := "data:image/png;base64," + strings.Repeat("QUJD", 1<<20)
	body, err := json.Marshal(map[string]any{
		"model": "m", "temperature": 0.2,
		"messages": []any{
			map[string]any{"role": "system", "content": text},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": text},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": image}},
			}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var req *providers.ChatRequest
	n := allocated(func() { req, err = providers.ParseChatRequest(body) })
	if err != nil {
		t.Fatal(err)
	}
	if n > 64<<10 {
		t.Fatalf("parsing a %d-byte body allocated %d bytes", len(body), n)
	}
	t.Logf("parsing a %.1f MiB body allocated %d bytes", float64(len(body))/(1<<20), n)
	if got := req.Modalities(); !slices.Equal(got, []catalog.Modality{catalog.ModalityImage}) {
		t.Fatalf("modalities %v", got)
	}
	// A translation decodes what it needs, when it needs it.
	sys, parts, err := req.Messages[0].Content.Decode()
	if err != nil || sys != text || parts != nil || req.Messages[0].Content.IsParts() {
		t.Fatalf("system content: %d bytes, parts %v, %v", len(sys), parts, err)
	}
	_, parts, err = req.Messages[1].Content.Decode()
	if err != nil || len(parts) != 2 || parts[0].Text != text || parts[1].ImageURL != image || !req.Messages[1].Content.IsParts() {
		t.Fatalf("user content: %d parts, %v", len(parts), err)
	}
}

func TestContentIsCheckedWithoutBeingDecoded(t *testing.T) {
	for _, tc := range []struct{ body, param string }{
		{`{"model":"m","messages":[1]}`, "messages[0]"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":7}]}]}`, "messages[0].content.text"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":""}}]}]}`, "messages[0].content[0].image_url.url"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_data":null}}]}]}`, "messages[0].content[0].file"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":3}}]}]}`, "messages[0].content.file.file_id"},
		{`{"model":"m","messages":[{"role":"user","content":{"text":"hi"}}]}`, "messages[0].content"},
	} {
		_, err := providers.ParseChatRequest([]byte(tc.body))
		var inv *providers.InvalidRequestError
		if !errors.As(err, &inv) || inv.Param != tc.param {
			t.Errorf("%s: got %v, want a refusal of %q", tc.body, err, tc.param)
		}
	}
	// Escapes, null and refusals decode as encoding/json reads them; the
	// last of a repeated member counts, as in a decoded map.
	r := parse(t, `{"model":"x","model":"m","messages":[{"role":"user","content":"a\n\u00e9\"b"},{"role":"assistant","content":null},`+
		`{"role":"assistant","content":[{"type":"refusal","refusal":"no"},{"type":"text","text":"yes"}]},{"role":"user","content":[]}]}`)
	if r.Model != "m" {
		t.Fatalf("model %q", r.Model)
	}
	if text, _, _ := r.Messages[0].Content.Decode(); text != "a\né\"b" {
		t.Fatalf("text %q", text)
	}
	if text, parts, _ := r.Messages[1].Content.Decode(); text != "" || parts != nil {
		t.Fatalf("null content: %q %v", text, parts)
	}
	if _, parts, _ := r.Messages[2].Content.Decode(); len(parts) != 2 || parts[0].Text != "no" || parts[1].Text != "yes" {
		t.Fatalf("parts %+v", parts)
	}
	if _, parts, _ := r.Messages[3].Content.Decode(); parts == nil || len(parts) != 0 {
		t.Fatalf("empty parts %+v", parts)
	}
}

// The members of a body are its own bytes; a body that is not one JSON
// object is refused.
func TestParseObject(t *testing.T) {
	body := []byte(`{"a":1, "b" : {"c":[1,2]},"d\u0065":"x","a":2}`)
	m, err := providers.ParseObject(body)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Value("a")) != "2" || string(m.Value("b")) != `{"c":[1,2]}` || string(m.Value("de")) != `"x"` || len(m) != 3 {
		t.Fatalf("members %q", m)
	}
	// Each name once, where it was first written, with its last value.
	if m[0].Name != "a" || m[1].Name != "b" || m[2].Name != "de" {
		t.Fatalf("members in the order %q, %q, %q", m[0].Name, m[1].Name, m[2].Name)
	}
	for _, bad := range []string{`[]`, `{"a":`, `"x"`, ``, `{"a":1}{}`} {
		if _, err := providers.ParseObject([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A Messages request translates to the Chat Completions request it
// amounts to, its content moved as JSON: texts keep their escapes, base64
// payloads become data: URLs, tool results become tool messages before
// the rest of their turn, thinking blocks are dropped.
func TestMessagesToChat(t *testing.T) {
	body := `{"model":"m","max_tokens":50,"stream":true,"system":[{"type":"text","text":"be brief"},{"type":"text","text":"be kind"}],
		"metadata":{"user_id":"u-1"},"stop_sequences":["END"],"temperature":0.5,
		"messages":[
			{"role":"user","content":"line one\nline \"two\" \u00e9"},
			{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"a"},{"type":"text","text":"b"},
				{"type":"tool_use","id":"call_1","name":"f","input":{"x": 1}}]},
			{"role":"user","content":[
				{"type":"tool_result","tool_use_id":"call_1","content":[{"type":"text","text":"r1"},{"type":"text","text":"r2"}]},
				{"type":"tool_result","tool_use_id":"call_2","content":"plain"},
				{"type":"text","text":"look"},
				{"type":"image","source":{"type":"base64","media_type":"image/png","data":"QUJD"}},
				{"type":"image","source":{"type":"url","url":"https://x/y.png"}},
				{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBE"}}]},
			{"role":"assistant","content":[{"type":"tool_use","id":"call_3","name":"g","input":{}}]}]}`
	chat, err := providers.MessagesToChat([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(chat, &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, chat)
	}
	want := map[string]any{
		"model": "m", "max_completion_tokens": 50.0, "stream": true, "user": "u-1", "stop": []any{"END"}, "temperature": 0.5,
		"messages": []any{
			map[string]any{"role": "system", "content": "be brief\n\nbe kind"},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "line one\nline \"two\" é"}}},
			map[string]any{"role": "assistant", "content": "ab", "tool_calls": []any{map[string]any{"id": "call_1", "type": "function",
				"function": map[string]any{"name": "f", "arguments": `{"x":1}`}}}},
			map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "r1\nr2"},
			map[string]any{"role": "tool", "tool_call_id": "call_2", "content": "plain"},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "look"},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,QUJD"}},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://x/y.png"}},
				map[string]any{"type": "file", "file": map[string]any{"file_data": "data:application/pdf;base64,JVBE", "filename": "document.pdf"}},
			}},
			map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "call_3", "type": "function",
				"function": map[string]any{"name": "g", "arguments": `{}`}}}},
		},
	}
	if g, w := mustJSONText(t, got), mustJSONText(t, want); g != w {
		t.Fatalf("translated:\n%s\nwant:\n%s", g, w)
	}
	if _, err := providers.ParseChatRequest(chat); err != nil {
		t.Fatalf("the translation does not parse as Chat Completions: %v", err)
	}
	for _, tc := range []struct{ body, param string }{
		{`{"model":"m","max_tokens":5,"messages":"hi"}`, "messages"},
		{`{"model":"m","max_tokens":5,"messages":[]}`, "messages"},
		{`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":7}]}`, "messages.0.content"},
		{`{"model":"m","max_tokens":5,"messages":[{"role":"robot","content":"x"}]}`, "messages.0.role"},
		{`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image"}]}]}`, "messages.0.content.0.source"},
		{`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"video"}]}]}`, "messages.0.content.0.type"},
		{`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":[{"type":"image"}]}]}]}`, "messages.0.content.0.content.0.source"},
		{`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":3}]}]}`, "messages.0.content.0.text"},
	} {
		_, err := providers.MessagesToChat([]byte(tc.body))
		var inv *providers.InvalidRequestError
		if !errors.As(err, &inv) || inv.Param != tc.param {
			t.Errorf("%s: got %v, want a refusal of %q", tc.body, err, tc.param)
		}
	}
}

// A large Messages request is translated without multiplying it: the
// translation allocates about the chat body it makes, not several copies.
func TestMessagesToChatDoesNotMultiplyTheBody(t *testing.T) {
	text := strings.Repeat("a long prompt\n", 4<<20/14)
	body, _ := json.Marshal(map[string]any{"model": "m", "max_tokens": 10, "messages": []any{
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text},
			map[string]any{"type": "tool_result", "tool_use_id": "t", "content": text}}}}})
	var chat []byte
	var err error
	n := allocated(func() { chat, err = providers.MessagesToChat(body) })
	if err != nil {
		t.Fatal(err)
	}
	ratio := float64(n) / float64(len(body))
	t.Logf("translating a %.1f MiB Messages body allocated %.2f bytes per body byte (the chat body: %.2f)", float64(len(body))/(1<<20), ratio, float64(len(chat))/float64(len(body)))
	if ratio > 1.5 {
		t.Fatalf("the translation allocated %.2f bytes per body byte", ratio)
	}
}

func mustJSONText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A Responses request translates the same way: parts and function calls
// and outputs move as JSON; consecutive calls make one assistant message.
func TestResponsesToChat(t *testing.T) {
	body := `{"model":"m","instructions":"be brief","max_output_tokens":20,"reasoning":{"effort":"low"},
		"input":[
			{"role":"user","content":[{"type":"input_text","text":"look \"here\"\n"},{"type":"input_image","image_url":"data:image/png;base64,QUJD"},
				{"type":"input_file","file_data":"data:application/pdf;base64,JVBE","filename":"a.pdf"}]},
			{"type":"reasoning","summary":[]},
			{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"x\":1}"},
			{"type":"function_call","call_id":"c2","name":"g","arguments":"{}"},
			{"type":"function_call_output","call_id":"c1","output":"one"},
			{"type":"function_call_output","call_id":"c2","output":[{"type":"output_text","text":"t"},{"type":"output_text","text":"wo"}]},
			{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"},{"type":"refusal","refusal":"no"}]},
			{"role":"developer","content":null}]}`
	chat, err := providers.ResponsesToChat([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(chat, &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, chat)
	}
	want := map[string]any{
		"model": "m", "max_completion_tokens": 20.0, "reasoning_effort": "low",
		"messages": []any{
			map[string]any{"role": "system", "content": "be brief"},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "look \"here\"\n"},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,QUJD"}},
				map[string]any{"type": "file", "file": map[string]any{"file_data": "data:application/pdf;base64,JVBE", "filename": "a.pdf"}},
			}},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
				map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "f", "arguments": `{"x":1}`}},
				map[string]any{"id": "c2", "type": "function", "function": map[string]any{"name": "g", "arguments": `{}`}},
			}},
			map[string]any{"role": "tool", "tool_call_id": "c1", "content": "one"},
			map[string]any{"role": "tool", "tool_call_id": "c2", "content": "two"},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "done"}, map[string]any{"type": "text", "text": "no"}}},
			map[string]any{"role": "developer", "content": ""},
		},
	}
	if g, w := mustJSONText(t, got), mustJSONText(t, want); g != w {
		t.Fatalf("translated:\n%s\nwant:\n%s", g, w)
	}
	if _, err := providers.ParseChatRequest(chat); err != nil {
		t.Fatalf("the translation does not parse as Chat Completions: %v", err)
	}
	for _, tc := range []struct{ body, param string }{
		{`{"model":"m","input":7}`, "input"},
		{`{"model":"m"}`, "input"},
		{`{"model":"m","input":[{"role":"robot","content":"x"}]}`, "input[0].role"},
		{`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"f"}]}]}`, "input[0].content[0].image_url"},
		{`{"model":"m","input":[{"role":"user","content":[{"type":"input_video"}]}]}`, "input[0].content[0].type"},
		{`{"model":"m","input":[{"type":"web_search_call"}]}`, "input[0].type"},
	} {
		_, err := providers.ResponsesToChat([]byte(tc.body))
		var inv *providers.InvalidRequestError
		if !errors.As(err, &inv) || inv.Param != tc.param {
			t.Errorf("%s: got %v, want a refusal of %q", tc.body, err, tc.param)
		}
	}
	text := strings.Repeat("a long prompt\n", 4<<20/14)
	big, _ := json.Marshal(map[string]any{"model": "m", "input": []any{map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "input_text", "text": text}}}, map[string]any{"type": "function_call_output", "call_id": "c", "output": text}}})
	n := allocated(func() { chat, err = providers.ResponsesToChat(big) })
	if err != nil {
		t.Fatal(err)
	}
	if ratio := float64(n) / float64(len(big)); ratio > 1.5 {
		t.Fatalf("translating a large Responses body allocated %.2f bytes per body byte", ratio)
	}
}

// Members read as the map of members they replaced (issue 33): every name
// once with its last value, a missing name absent, a change to a clone
// not seen by the original, and the same JSON both ways, with few
// members and with more than the look along them is used for.
func TestMembersAreTheMap(t *testing.T) {
	for _, n := range []int{0, 1, 5, 32, 33, 200} {
		var b strings.Builder
		want := map[string]json.RawMessage{}
		b.WriteString("{")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			name := "m" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strings.Repeat("y", i/26)
			v := `[` + strings.Repeat("1,", i%3) + `0]`
			b.WriteString(`"` + name + `":` + v)
			want[name] = json.RawMessage(v)
			if i%4 == 0 { // the same name again, later: its value wins
				v = `{"again":` + v + `}`
				b.WriteString(`,"` + name + `":` + v)
				want[name] = json.RawMessage(v)
			}
		}
		b.WriteString("}")
		m, err := providers.ParseObject([]byte(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		if len(m) != len(want) {
			t.Fatalf("%d members: %d, want %d", n, len(m), len(want))
		}
		for name, v := range want {
			if got, ok := m.Get(name); !ok || string(got) != string(v) || !m.Has(name) || string(m.Value(name)) != string(v) {
				t.Fatalf("%d members: %s = %s, %v; want %s", n, name, got, ok, v)
			}
		}
		if _, ok := m.Get("absent"); ok || m.Has("absent") || m.Value("absent") != nil {
			t.Fatalf("%d members: a member that is not there", n)
		}
		got, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		wantJSON, _ := json.Marshal(want)
		if string(got) != string(wantJSON) {
			t.Fatalf("%d members: JSON %s, want %s", n, got, wantJSON)
		}
		var back providers.Members
		if err := json.Unmarshal(got, &back); err != nil || len(back) != len(want) {
			t.Fatalf("%d members: read back %d, %v", n, len(back), err)
		}
		c := m.Clone()
		c.Set("added", json.RawMessage(`true`))
		if len(m) > 0 {
			c.Delete(m[0].Name)
		}
		if len(m) > 1 {
			c.Set(m[len(m)-1].Name, json.RawMessage(`null`))
		}
		if m.Has("added") || (len(m) > 0 && (!m.Has(m[0].Name) || string(m[len(m)-1].Value) == "null")) {
			t.Fatalf("%d members: a change to the clone changed the original", n)
		}
		if !c.Has("added") || (len(m) > 0 && (c.Has(m[0].Name) || len(c) != len(m))) {
			t.Fatalf("%d members: the clone's changes: %d members", n, len(c))
		}
	}
	var none providers.Members
	if got, _ := json.Marshal(none); string(got) != "null" {
		t.Fatalf("no members: %s", got)
	}
	if err := json.Unmarshal([]byte(`[1]`), &none); err == nil {
		t.Fatal("an array read as members")
	}
}

// ParseObject reads what encoding/json reads into a map of members, and
// refuses what it refuses: the same names with the same values (compared
// as JSON), whatever the text.
func FuzzParseObject(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"a":2}`, `{"d\u0065":"x", "b" : {"c":[1,2]}}`, `[]`, `{"a":`, `null`, ` {"x":null} `,
		`{"\ud800":1}`, `{"a":1}{}`, `{"é":"\u00e9","e\u0301":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := providers.ParseObject(b)
		var want map[string]json.RawMessage
		wantErr := json.Unmarshal(b, &want)
		if wantErr == nil && want == nil { // null: not an object
			wantErr = errors.New("null")
		}
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%q: ParseObject %v, encoding/json %v", b, err, wantErr)
		}
		if err != nil {
			return
		}
		if len(m) != len(want) {
			t.Fatalf("%q: %d members, encoding/json %d", b, len(m), len(want))
		}
		for name, v := range want {
			got, ok := m.Get(name)
			var a, c any
			if !ok || json.Unmarshal(got, &a) != nil || json.Unmarshal(v, &c) != nil || !reflect.DeepEqual(a, c) {
				t.Fatalf("%q: %q = %s, encoding/json %s", b, name, got, v)
			}
		}
	})
}

// A Delete leaves another holder of the same list with the list it had.
func TestMembersDeleteLeavesTheSharedList(t *testing.T) {
	m, err := providers.ParseObject([]byte(`{"a":1,"b":2,"c":3}`))
	if err != nil {
		t.Fatal(err)
	}
	shared := m
	m.Delete("a")
	if len(m) != 2 || m.Has("a") || string(m.Value("c")) != "3" {
		t.Fatalf("after Delete: %v", m)
	}
	if len(shared) != 3 || string(shared.Value("a")) != "1" || string(shared.Value("b")) != "2" || string(shared.Value("c")) != "3" {
		t.Fatalf("the other holder's list: %v", shared)
	}
}
