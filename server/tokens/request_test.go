package tokens

import (
	"encoding/base64"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// openAIPromptTokens is what OpenAI bills for a chat of (role, content)
// messages, by its documented formula: 3 tokens a message, its role and
// content, and 3 priming the reply.
func openAIPromptTokens(msgs [][2]string) int64 {
	n := int64(3)
	for _, m := range msgs {
		n += 3 + o200k.Count(m[0]) + o200k.Count(m[1])
	}
	return n
}

func chatBody(msgs [][2]string) string {
	var parts []string
	for _, m := range msgs {
		parts = append(parts, fmt.Sprintf(`{"role":%q,"content":%q}`, m[0], m[1]))
	}
	return `{"model":"gpt-4o-mini","max_tokens":1024,"stream":true,"messages":[` + strings.Join(parts, ",") + `]}`
}

// The bound is never below what OpenAI bills for a chat, the floor never
// above it, and both close to it on prose.
func TestCountRequestHoldsTheBill(t *testing.T) {
	prose := strings.Repeat("The committee reviewed the quarterly figures and agreed to revisit the budget next month. ", 40)
	for _, msgs := range [][][2]string{
		{{"user", "hi"}},
		{{"system", "You are terse."}, {"user", prose}},
		{{"user", "東京は日本の首都です。"}, {"assistant", "はい。"}, {"user", "func main() {\n\tfmt.Println(\"x\")\n}"}},
		{{"user", "🙂🙃😉 emoji 🚀 \"quoted\" \\ back"}},
	} {
		bill := openAIPromptTokens(msgs)
		r := CountRequest(o200k, []byte(chatBody(msgs)))
		if r.Bound < bill || r.Floor > bill {
			t.Errorf("%v: bound %d, floor %d, bill %d", msgs[len(msgs)-1][0], r.Bound, r.Floor, bill)
		}
		if len(msgs) == 2 && (float64(r.Bound) > 1.05*float64(bill) || float64(r.Floor) < 0.95*float64(bill)) {
			t.Errorf("prose: bound %d, floor %d, bill %d: not tight", r.Bound, r.Floor, bill)
		}
	}
}

func TestCountRequest(t *testing.T) {
	png := "data:image/png;base64," + base64.StdEncoding.EncodeToString(make([]byte, 30_000))
	for _, c := range []struct {
		name    string
		counter Counter
		doc     string
		bound   int64
		floor   int64
	}{
		{"names, strings, numbers, literals and objects", o200k, `{"max_tokens":100,"stream":true,"messages":[{"role":"user","content":"Hello, world!"}]}`,
			o200k.Count("max_tokens stream messages role content ") + o200k.Count("100") + 1 + o200k.Count("user") +
				o200k.Count("Hello, world!") + 2*objectFraming,
			o200k.Count("Hello, world!") - floorMargin},
		{"inline data is left out", o200k, `{"content":[{"type":"image_url","image_url":{"url":"` + png + `"}}]}`,
			o200k.Count("content type image_url url ") + o200k.Count("image_url") + 3*objectFraming, 0},
		{"an estimate bounds at its rates, proves nothing", Estimate{}, `{"content":"Hello, world!"}`,
			Estimate{}.Count("content ") + Estimate{}.Count("Hello, world!") + objectFraming, 0},
		{"not JSON: text", o200k, `not json`, o200k.Count("not json"), 0},
		{"a short string proves nothing", o200k, `{"content":"hi"}`, o200k.Count("content ") + 1 + objectFraming, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := CountRequest(c.counter, []byte(c.doc)); got != (Request{Bound: c.bound, Floor: c.floor}) {
				t.Fatalf("%+v, want bound %d floor %d", got, c.bound, c.floor)
			}
		})
	}
}

// A body past exactLimit is bounded by extrapolation and floored by the
// part counted.
func TestCountRequestPastTheLimit(t *testing.T) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 2*exactLimit/40)
	o200k.Count("") // builds the encoding
	exact := o200k.count(text)
	r := CountRequest(o200k, []byte(`{"content":"`+text+`"}`))
	if r.Bound < exact || float64(r.Bound) > 1.3*float64(exact) || r.Floor > exact || r.Floor < exact/3 {
		t.Fatalf("bound %d, floor %d, exact %d", r.Bound, r.Floor, exact)
	}
}

func TestFloorJSON(t *testing.T) {
	answer := `{"id":"chatcmpl-1","model":"gpt-4o-mini","choices":[{"message":{"role":"assistant","content":"The sea rolls in; the wind keeps count."},"finish_reason":"stop"}]}`
	want := o200k.Count("The sea rolls in; the wind keeps count.") - floorMargin
	if got := FloorJSON(o200k, "", []byte(answer), AnswerKeys); got != want {
		t.Fatalf("answer floor %d, want %d", got, want)
	}
	// A Responses answer echoes its request's instructions: not output.
	echo := `{"instructions":"Be brief and polite to everyone you meet today.","output":[{"type":"message","content":[{"type":"output_text","text":"Fine."}]}]}`
	if got := FloorJSON(o200k, "", []byte(echo), AnswerKeys); got != 0 {
		t.Fatalf("echoed instructions floored: %d", got)
	}
	if FloorJSON(Estimate{}, "", []byte(answer), AnswerKeys) != 0 || FloorJSON(o200k, "", []byte("{"), AnswerKeys) != 0 {
		t.Fatal("an estimate or a broken document proves a floor")
	}
	if got := FloorText(o200k, "The sea rolls in; the wind keeps count."); got != want {
		t.Fatalf("text floor %d, want %d", got, want)
	}
}

func BenchmarkCountRequest(b *testing.B) {
	doc := []byte(chatBody([][2]string{{"system", "You are a helpful assistant."},
		{"user", strings.Repeat("Tell me about the history of the printing press. ", 40)}}))
	b.ReportAllocs()
	for b.Loop() {
		CountRequest(o200k, doc)
	}
}

// BenchmarkCountRequestShort is the harness's request (go run ./bench):
// a short system and user message, whose counts the memo keeps, so the
// walk itself is most of it.
func BenchmarkCountRequestShort(b *testing.B) {
	doc := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Hello!"}],"temperature":0.7}`)
	b.ReportAllocs()
	for b.Loop() {
		CountRequest(o200k, doc)
	}
}

// A body of many megabytes is walked as far as walkLimit and counted as
// far as exactLimit: what counting allocates does not grow with the body
// (a decoder holds what it reads: walking a body whole allocated over
// twice its size), the bound still above the exact count and the floor
// below it (issue 27, row 2: memory bounded on every dialect).
func TestCountRequestOfAHugeBodyAllocatesLittle(t *testing.T) {
	body := func(mib int) ([]byte, []byte, string) {
		prompt := strings.Repeat("The quick brown fox jumps over the lazy dog. ", mib<<20/45)
		messages := `[{"role":"system","content":"Be brief."},{"role":"user","content":"` + prompt + `"}]`
		return []byte(`{"model":"gpt-4o-mini","messages":` + messages + `}`), []byte(messages), prompt
	}
	allocated := func(doc, messages []byte) (uint64, Request, int64) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r := CountRequest(o200k, doc)
		floor := FloorJSON(o200k, "messages", messages, RequestKeys)
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc, r, floor
	}
	o200k.Count("") // builds the encoding
	small, smallMessages, _ := body(1)
	large, largeMessages, prompt := body(16)
	little, _, _ := allocated(small, smallMessages)
	much, r, floor := allocated(large, largeMessages)
	if much > little+little/4+1<<20 {
		t.Errorf("counting a %d-byte body allocated %d bytes, a %d-byte one %d", len(large), much, len(small), little)
	}
	exact := o200k.count(prompt)
	if r.Bound < exact || float64(r.Bound) > 1.4*float64(exact) || r.Floor <= 0 || r.Floor > exact || floor <= 0 || floor > exact {
		t.Errorf("bound %d, floor %d (the messages' floor %d), exact %d", r.Bound, r.Floor, floor, exact)
	}
}
