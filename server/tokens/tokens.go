// Package tokens counts tokens where an upstream does not: an answer
// without usage, a stream cut before its usage arrived, a caller who left.
// gw never records less than it delivered (DESIGN §8), so where it must
// count, it counts exactly with the model family's real tokenizer when a
// public one exists (OpenAI's o200k_base and cl100k_base, counted here
// as tiktoken counts them: split.go, bpe.go), and otherwise errs high on
// purpose (Estimate).
//
// The package is pure: no I/O, no clock (the counts it remembers, countMemo,
// are the tokenizer's own, so they change no result). The BPE vocabularies are read on
// first use (about 50 ms and 11 MiB for o200k_base, none of it scanned by
// the garbage collector), so a gateway that never needs to count pays
// nothing.
package tokens

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// Counter counts the tokens of text as one model family's tokenizer does,
// or bounds them from above.
type Counter interface {
	// Count returns the tokens of text.
	Count(text string) int64
	// Exact says whether Count is the family's real tokenizer rather
	// than an estimate.
	Exact() bool
}

// ForModel returns the counter for an upstream model name (the name the
// provider knows, without gw's provider prefix): OpenAI's encodings for
// OpenAI's models and for open-weight ones that use them (gpt-oss), the
// high estimate for every other family.
func ForModel(model string) Counter {
	name := model
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	switch {
	case hasAnyPrefix(name, "gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o", "gpt-oss", "codex-"):
		return o200k
	case hasAnyPrefix(name, "gpt-4", "gpt-3.5", "gpt-35", "text-embedding-3", "text-embedding-ada-002"):
		return cl100k
	}
	return Estimate{}
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// exactLimit bounds the text a BPE counter tokenizes: tokenizing costs
// tens of nanoseconds a token (it cost 0.3 µs and 280 bytes of garbage
// with tiktoken-go), and a request
// body may hold tens of megabytes; 64 KiB is four times the largest
// prompt of a realistic caller, counted exactly, and at most ≈ 16k
// tokens (≈ 4 MB) a count past it. Past
// the limit the count is extrapolated from the part counted, a quarter
// higher (extrapolationMargin), so a huge input costs bounded time and is
// still never counted low for text like the part counted.
const (
	exactLimit          = 64 << 10
	extrapolationMargin = 1.25
)

// bpe counts with one of OpenAI's encodings, its vocabulary read on
// first use.
type bpe struct {
	raw   string                // the vocabulary, in vocabgen's form
	split func(string, int) int // where the piece starting at i ends
	once  sync.Once
	vocab *vocab
	memo  countMemo
}

// Texts of at most memoText bytes are remembered with their count, up to
// memoBytes of them at once (then all are forgotten and the memo starts
// again): a gateway counts the same texts over and over (a system prompt,
// the request's floor on every answer), and a lookup costs less than
// tokenizing again. The count is the tokenizer's own, so remembering it
// changes no figure.
const (
	memoText  = 4 << 10
	memoBytes = 4 << 20
)

// countMemo is the remembered counts of one encoding.
type countMemo struct {
	mu    sync.Mutex
	m     map[string]int64
	bytes int
}

func (m *countMemo) get(text string) (int64, bool) {
	m.mu.Lock()
	n, ok := m.m[text]
	m.mu.Unlock()
	return n, ok
}

// put remembers text, which must be a copy of the memo's own (a string
// no body shares).
func (m *countMemo) put(text string, n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil || m.bytes+len(text) > memoBytes {
		m.m, m.bytes = make(map[string]int64), 0
	}
	if _, ok := m.m[text]; !ok {
		// text is the caller's own copy (count), never a view.
		m.m[text] = n
		m.bytes += len(text)
	}
}

var (
	o200k  = &bpe{raw: o200kVocab, split: o200kPiece}
	cl100k = &bpe{raw: cl100kVocab, split: cl100kPiece}
)

func (b *bpe) Exact() bool { return true }

// load reads the vocabulary, once.
func (b *bpe) load() {
	b.once.Do(func() {
		v, err := parseVocab(b.raw)
		if err != nil {
			// Both vocabularies are compiled in, and held by the tests.
			panic("tokens: " + err.Error())
		}
		b.vocab = v
	})
}

func (b *bpe) Count(text string) int64 {
	if len(text) <= exactLimit {
		return b.count(text)
	}
	cut := exactLimit
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return extrapolate(b.count(text[:cut]), cut, len(text)-cut)
}

// extrapolate adds to n, the tokens counted in counted bytes, the tokens
// of rest more bytes of like text, a margin higher.
func extrapolate(n int64, counted, rest int) int64 {
	if rest <= 0 {
		return n
	}
	if counted <= 0 {
		return n + int64(rest)
	}
	return n + int64(float64(rest)*float64(n)/float64(counted)*extrapolationMargin) + 1
}

func (b *bpe) count(text string) int64 {
	b.load()
	remember := len(text) <= memoText
	if remember {
		if n, ok := b.memo.get(text); ok {
			return n
		}
	}
	// text is often a view of a request's body, not a copy (floorscan,
	// CountRequest); counting keeps nothing of it, and the memo keeps a
	// copy of its own.
	n := countTokens(b.vocab, b.split, text)
	if remember {
		b.memo.put(strings.Clone(text), n)
	}
	return n
}

// Estimate bounds the tokens of a family whose tokenizer gw does not
// have (Anthropic, Gemini, Mistral, Llama, …): a token for each ASCII
// punctuation mark or symbol (tokenizers seldom merge them: JSON and code
// run near a token a mark) and one for every two other bytes of UTF-8
// text. Real tokenizers spend three to four and a half bytes a token on
// English prose, and about one token a character (three bytes) on CJK
// scripts, so the estimate is deliberately high: 1.5 to 2 times for
// prose, never low for any script.
type Estimate struct{}

func (Estimate) Exact() bool { return false }

func (Estimate) Count(text string) int64 {
	var marks, other int64
	for i := 0; i < len(text); i++ {
		if c := text[i]; c > ' ' && c < 0x7f && !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			marks++
		} else {
			other++
		}
	}
	return marks + (other+1)/2
}
