package tokens

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestForModel(t *testing.T) {
	for model, want := range map[string]Counter{
		"gpt-4o-mini": o200k, "gpt-4.1": o200k, "gpt-5.1": o200k, "o3-mini": o200k, "o4-mini": o200k,
		"openai/gpt-oss-120b": o200k, "gpt-4-turbo": cl100k, "gpt-3.5-turbo": cl100k, "text-embedding-3-small": cl100k,
		"claude-sonnet-4-5-20250929": Estimate{}, "gemini-2.5-pro": Estimate{}, "mistral-large-2411": Estimate{},
		"meta-llama/llama-4-scout-17b-16e-instruct": Estimate{},
	} {
		if got := ForModel(model); got != want {
			t.Errorf("%s: got %T %v", model, got, got)
		}
	}
}

func TestExactCounts(t *testing.T) {
	// Known counts of OpenAI's tokenizers (tiktoken).
	for _, c := range []struct {
		counter Counter
		text    string
		want    int64
	}{
		{o200k, "Hello, world!", 4},
		{cl100k, "Hello, world!", 4},
		{o200k, "", 0},
		{o200k, "The quick brown fox jumps over the lazy dog.", 10},
	} {
		if got := c.counter.Count(c.text); got != c.want {
			t.Errorf("%q: %d, want %d", c.text, got, c.want)
		}
	}
}

// TestEstimateIsHigh holds the estimate above a real tokenizer's count on
// prose, code, CJK and emoji: it must never count low.
func TestEstimateIsHigh(t *testing.T) {
	for _, text := range []string{
		"The quick brown fox jumps over the lazy dog.",
		"func main() {\n\tfmt.Println(\"hello\")\n}\n",
		"東京は日本の首都です。人口は約千四百万人です。",
		"Привет, как дела? Всё хорошо.",
		"🙂🙃😉 emoji 🚀",
		`{"a":[1,2,3],"b":{"c":"d"}}`,
		"a",
	} {
		if est, exact := (Estimate{}).Count(text), o200k.Count(text); est < exact {
			t.Errorf("%q: estimate %d below o200k's %d", text, est, exact)
		}
	}
}

// TestCountsPastTheLimitExtrapolate: text longer than exactLimit is
// counted in bounded time and never below the exact count of like text.
func TestCountsPastTheLimitExtrapolate(t *testing.T) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", exactLimit/40)
	exact := o200k.count(text)
	got := o200k.Count(text)
	if got < exact || float64(got) > float64(exact)*1.3 {
		t.Fatalf("extrapolated %d, exact %d", got, exact)
	}
}

func TestCountJSON(t *testing.T) {
	png := "data:image/png;base64," + base64.StdEncoding.EncodeToString(make([]byte, 300_000))
	pdf := base64.StdEncoding.EncodeToString(make([]byte, 160_000))
	for _, c := range []struct {
		name string
		doc  string
		want int64
	}{
		{"strings, not member names, plus framing", `{"messages":[{"role":"user","content":"Hello, world!"}]}`,
			o200k.Count("user Hello, world! ") + 2*objectFraming},
		{"an inline image counts its allowance", `{"content":[{"type":"image_url","image_url":{"url":"` + png + `"}}]}`,
			o200k.Count("image_url ") + 3*objectFraming + imageTokens},
		{"an Anthropic base64 document by its size", `{"source":{"type":"base64","media_type":"application/pdf","data":"` + pdf + `"}}`,
			o200k.Count("base64 application/pdf ") + 2*objectFraming + 10_000},
		{"not JSON: text", `not json at all`, o200k.Count(`not json at all`)},
		{"numbers and literals add nothing", `{"max_tokens":100,"stream":true,"x":null}`, objectFraming},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := CountJSON(o200k, []byte(c.doc)); got != c.want {
				t.Fatalf("%d, want %d", got, c.want)
			}
		})
	}
	deep := strings.Repeat("[", maxDepth+5) + strings.Repeat("]", maxDepth+5)
	if got, want := CountJSON(Estimate{}, []byte(deep)), (Estimate{}).Count(deep); got != want {
		t.Fatalf("deep document: %d", got)
	}
}

func BenchmarkCountJSON(b *testing.B) {
	doc := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"` +
		strings.Repeat("Tell me about the history of the printing press. ", 40) + `"}]}`)
	b.ReportAllocs()
	for b.Loop() {
		CountJSON(o200k, doc)
	}
}

// TestCountJSONOneHugeString: a string longer than exactLimit is counted
// in part and extrapolated, not priced a token a byte.
func TestCountJSONOneHugeString(t *testing.T) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 2*exactLimit/40)
	got := CountJSON(o200k, []byte(`{"content":"`+text+`"}`))
	exact := o200k.count(text)
	if got < exact || float64(got) > float64(exact)*1.3 {
		t.Fatalf("counted %d, exact %d", got, exact)
	}
}
