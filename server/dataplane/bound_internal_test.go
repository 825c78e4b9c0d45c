package dataplane

import (
	"strconv"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/tokens"
)

// TestInputShape: what the bound adds to a body's bytes, read from the
// JSON members themselves, never from text inside strings.
func TestInputShape(t *testing.T) {
	for _, tc := range []struct {
		name, body            string
		extra                 int64
		tools, cache, cache1h bool
	}{
		{"text", `{"messages":[{"role":"user","content":"hi"}]}`, 0, false, false, false},
		{"an image by URL", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`, attachmentTokens, false, false, false},
		{"spaced JSON", `{"messages":[{"content":[{"type" :  "image","source":{}} , {"type":"document"}]}]}`, 2 * attachmentTokens, false, false, false},
		{"a Responses image and file", `{"input":[{"content":[{"type":"input_image"},{"type":"input_file"},{"type":"input_text","text":"a"}]}]}`, 2 * attachmentTokens, false, false, false},
		{"the words in a string", `{"messages":[{"role":"user","content":"{\"type\":\"image\",\"tools\":[],\"cache_control\":{}}"}]}`, 0, false, false, false},
		{"an escaped type", `{"messages":[{"content":[{"typ\u0065":"image"}]}]}`, attachmentTokens, false, false, false},
		{"an escaped value", `{"messages":[{"content":[{"type":"imag\u0065"}]}]}`, attachmentTokens, false, false, false},
		{"function tools", `{"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`, 0, true, false, false},
		{"an output schema", `{"response_format":{"type":"json_schema"}}`, 0, true, false, false},
		{"provider-defined tools", `{"tools":[{"type":"bash_20250124","name":"bash"},{"type":"text_editor_20250728"}]}`, 2 * definedToolTokens, true, false, false},
		{"server tools", `{"tools":[{"type":"web_search_20250305","name":"web_search"},{"type":"file_search"}]}`, 2 * attachmentTokens, true, false, false},
		{"MCP servers", `{"mcp_servers":[{"type":"url","url":"https://m"}]}`, attachmentTokens, true, false, false},
		{"a cache write", `{"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}]}`, 0, false, true, false},
		{"an hour's cache write", `{"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral","ttl":"1h"}}]}`, 0, false, true, true},
	} {
		s := inputShapeOf([]byte(tc.body))
		if s.bytes != int64(len(tc.body)) || s.extra != tc.extra || s.tools != tc.tools || s.cacheWrite != tc.cache || s.cacheWrite1h != tc.cache1h {
			t.Errorf("%s: %+v", tc.name, s)
		}
	}
	tools := inputShape{bytes: 100, tools: true}
	if a, o := tools.tokens(catalog.KindAnthropic), tools.tokens(catalog.KindOpenAI); a != 700 || o != 200 {
		t.Errorf("tool framing: anthropic %d, openai %d", a, o)
	}
}

// TestBoundPriceClass: input at the input price, at the cache write's
// when the request can write a prompt cache (the one-hour write's when it
// asks for one), and every price at the long-context tier's once the
// bound's input passes its threshold.
func TestBoundPriceClass(t *testing.T) {
	pricing := catalog.Pricing{InputPerMTok: "1", OutputPerMTok: "5", CacheReadPerMTok: "0.10", CacheWritePerMTok: "1.25"}
	p, err := pricing.Parse()
	if err != nil {
		t.Fatal(err)
	}
	b := boundPricesOf(p)
	if in, out := b.forRequest(inputShape{}, 10); in != 1_000_000_000 || out != 5_000_000_000 {
		t.Errorf("plain: %d %d", in, out)
	}
	if in, _ := b.forRequest(inputShape{cacheWrite: true}, 10); in != 1_250_000_000 {
		t.Errorf("cache write: %d", in)
	}
	if in, _ := b.forRequest(inputShape{cacheWrite: true, cacheWrite1h: true}, 10); in != 1_250_000_000 {
		t.Errorf("an hour's cache write without its own price costs the five-minute one: %d", in)
	}
	pricing.CacheWrite1hPerMTok = "2"
	pricing.LongContext = &catalog.LongContextPricing{AboveInputTokens: 200_000, InputPerMTok: "2", OutputPerMTok: "7.50",
		CacheReadPerMTok: "0.20", CacheWritePerMTok: "2.50", CacheWrite1hPerMTok: "4"}
	if p, err = pricing.Parse(); err != nil {
		t.Fatal(err)
	}
	b = boundPricesOf(p)
	if in, _ := b.forRequest(inputShape{cacheWrite: true, cacheWrite1h: true}, 10); in != 2_000_000_000 {
		t.Errorf("an hour's cache write: %d", in)
	}
	if in, out := b.forRequest(inputShape{}, 200_000); in != 1_000_000_000 || out != 5_000_000_000 {
		t.Errorf("at the threshold: %d %d", in, out)
	}
	if in, out := b.forRequest(inputShape{cacheWrite: true, cacheWrite1h: true}, 200_001); in != 4_000_000_000 || out != 7_500_000_000 {
		t.Errorf("past the threshold: %d %d", in, out)
	}
}

// TestBoundOfTextIsAtMostFourTimesItsCost: a text request whose max_tokens
// is what it produces reserves at most 4× what it is billed, for English
// prompts of 1 to 4k tokens at ~4 bytes a token (what tokenizers of the
// GPT-4o and Claude families make of prose), on an OpenAI and on an
// Anthropic model, with and without tools.
func TestBoundOfTextIsAtMostFourTimesItsCost(t *testing.T) {
	prose := strings.Repeat("The committee reviewed the quarterly figures and agreed to revisit the budget next month. ", 200)
	for _, m := range []struct {
		kind          catalog.Kind
		input, output uint64 // nano-dollars per million tokens
		framing       int64  // tokens the provider adds to the prompt
	}{
		{catalog.KindOpenAI, 150_000_000, 600_000_000, 7},
		{catalog.KindAnthropic, 1_000_000_000, 5_000_000_000, 10},
	} {
		for _, tokens := range []int64{1000, 2000, 4000} {
			for _, produced := range []int64{100, 300, 1024} {
				text := prose[:tokens*4]
				body := `{"model":"m","max_tokens":` + strconv.FormatInt(produced, 10) + `,"messages":[{"role":"user","content":"` + text + `"}]}`
				s := inputShapeOf([]byte(body))
				bound, err := costBound(m.input, m.output, s.tokens(m.kind), produced)
				if err != nil {
					t.Fatal(err)
				}
				cost := ((tokens+m.framing)*int64(m.input) + produced*int64(m.output)) / 1_000_000
				if ratio := float64(bound) / float64(cost); ratio > 4 {
					t.Errorf("%s, %d tokens in, %d out: bound %d is %.2f× the cost %d", m.kind, tokens, produced, bound, ratio, cost)
				}
			}
		}
	}
}

// TestBoundPricesEachTokenAtItsClass: with cache markers, only what comes
// before the last marked message is priced as a cache write; the messages
// after it at the input price. The counted bound of a prose request on an
// OpenAI model is within a few percent of its input, against a token a
// byte before.
func TestBoundPricesEachTokenAtItsClass(t *testing.T) {
	pricing, err := catalog.Pricing{InputPerMTok: "1", OutputPerMTok: "5", CacheReadPerMTok: "0.10", CacheWritePerMTok: "1.25",
		CacheWrite1hPerMTok: "2"}.Parse()
	if err != nil {
		t.Fatal(err)
	}
	prose := strings.Repeat("The committee reviewed the quarterly figures and agreed to revisit the budget next month. ", 40)
	boundOf := func(model, body string) int64 {
		t.Helper()
		m := catalog.Model{ID: "openai/" + model, Provider: "openai"}
		x := &exchange{admission: admission{p: &Plane{}}, req: &providers.ChatRequest{MaxTokens: 10}, body: []byte(body), input: inputShapeOf([]byte(body))}
		b, err := x.boundOf(&route{model: &routeModel{model: m, kind: catalog.KindOpenAI, bound: boundPricesOf(pricing)}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	msg := func(text string, marked bool) string {
		cc := ""
		if marked {
			cc = `,"cache_control":{"type":"ephemeral","ttl":"1h"}`
		}
		return `{"role":"user","content":[{"type":"text","text":"` + text + `"` + cc + `}]}`
	}
	plain := `{"model":"gpt-4o-mini","messages":[` + msg(prose, false) + `,` + msg(prose, false) + `]}`
	markedFirst := `{"model":"gpt-4o-mini","messages":[` + msg(prose, true) + `,` + msg(prose, false) + `]}`
	markedLast := `{"model":"gpt-4o-mini","messages":[` + msg(prose, false) + `,` + msg(prose, true) + `]}`
	p, first, last := boundOf("gpt-4o-mini", plain), boundOf("gpt-4o-mini", markedFirst), boundOf("gpt-4o-mini", markedLast)
	// Marked last: everything at the hour's write price (2×); marked first:
	// about half of it (the second message is input), 1.5×.
	if r := float64(last-50_000) / float64(p-50_000); r < 1.95 || r > 2.05 {
		t.Errorf("marked last: %.2f× the plain bound", r)
	}
	if r := float64(first-50_000) / float64(p-50_000); r < 1.45 || r > 1.55 {
		t.Errorf("marked first: %.2f× the plain bound", r)
	}
	// 1,600 prose tokens at $1 a million: the counted bound is within 5%.
	exact := tokens.ForModel("gpt-4o-mini").Count(prose) * 2
	if in := (p - 50_001) / 1_000; in < exact || float64(in) > 1.05*float64(exact) {
		t.Errorf("counted bound %d tokens for a prompt of %d", in, exact)
	}
}
