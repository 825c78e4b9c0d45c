package tokens

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"
)

// prose is English text past memoText, so that no count of it is
// remembered.
var prose = strings.Repeat("Tell me about the history of the printing press, and why it mattered to 15th-century Europe. ", 60)

// Counting allocates nothing, whatever the text's length: the split,
// the merges and the vocabulary's lookups work in place (tiktoken-go
// allocated twice a token, 280 bytes).
func TestCountAllocatesNothing(t *testing.T) {
	long := strings.Repeat("=", 500) + strings.Repeat("ab", 300) + " naïve 日本語 " + prose
	for _, b := range []*bpe{o200k, cl100k} {
		b.Count("warm")
		if got := testing.AllocsPerRun(20, func() { b.Count(long) }); got != 0 {
			t.Errorf("counting %d bytes allocates %.0f times", len(long), got)
		}
	}
}

// BenchmarkCount counts prose no memo holds, with gw's counter and with
// tiktoken-go's, for the ratio in one run (docs/performance.md).
func BenchmarkCount(b *testing.B) {
	codec, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		b.Fatal(err)
	}
	o200k.load()
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = strconv.Itoa(i) + prose
	}
	b.Run("gw", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(prose)))
		i := 0
		for b.Loop() {
			countTokens(o200k.vocab, o200k.split, texts[i%len(texts)])
			i++
		}
	})
	b.Run("tiktoken-go", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(prose)))
		i := 0
		for b.Loop() {
			if _, err := codec.Count(texts[i%len(texts)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkCountDocs counts the repository's documentation, a varied
// text whose tokens are spread over the vocabulary (prose repeats a few
// dozen, which stay in the processor's caches), 4 KiB at a time.
func BenchmarkCountDocs(b *testing.B) {
	var texts []string
	for _, text := range corpus(b)[len(tokenSamples):] {
		for len(text) > 4<<10 {
			cut := 4 << 10
			for !utf8.RuneStart(text[cut]) {
				cut--
			}
			texts = append(texts, text[:cut])
			text = text[cut:]
		}
	}
	o200k.load()
	var bytes, toks int64
	for _, t := range texts {
		bytes += int64(len(t))
		toks += countTokens(o200k.vocab, o200k.split, t)
	}
	b.ReportAllocs()
	b.SetBytes(bytes / int64(len(texts)))
	i := 0
	for b.Loop() {
		countTokens(o200k.vocab, o200k.split, texts[i%len(texts)])
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(float64(toks)/float64(len(texts))), "ns/token")
}
