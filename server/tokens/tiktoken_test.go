package tokens

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dlclark/regexp2/v2"
	"github.com/tiktoken-go/tokenizer"
)

// The references gw's counting is held to, for every text:
//
//   - the split: OpenAI's patterns, as regexp2's backtracking interpreter
//     matches them;
//   - the tokens: tiktoken-go, wherever its matcher (code regexp2cg
//     generated for the same patterns, which tiktoken-go registers) splits
//     as the pattern does. It does not in two cases, where gw follows the
//     pattern: a whitespace run with a line end and more whitespace after
//     it (\s*[\r\n]+ is given back to the run's first line end, not its
//     last) and DEL (U+007F), which is in none of its classes, so that it
//     is dropped, never counted. There the merges of each piece are held
//     to tiktoken-go's instead.
var references = []struct {
	name    string
	ours    *bpe
	enc     tokenizer.Encoding
	pattern string
}{
	{"o200k_base", o200k, tokenizer.O200kBase, `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`},
	{"cl100k_base", cl100k, tokenizer.Cl100kBase, `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`},
}

// reference is one encoding's references.
type reference struct {
	name                   string
	ours                   *bpe
	codec                  tokenizer.Codec
	generated, interpreted *regexp2.Regexp
}

func loadReferences(t testing.TB) []reference {
	var refs []reference
	for _, r := range references {
		codec, err := tokenizer.Get(r.enc)
		if err != nil {
			t.Fatal(err)
		}
		r.ours.load()
		refs = append(refs, reference{name: r.name, ours: r.ours, codec: codec,
			// The pattern as tiktoken-go compiles it finds its generated
			// code; the same pattern in a group does not.
			generated:   regexp2.MustCompile(r.pattern, regexp2.None),
			interpreted: regexp2.MustCompile("(?:"+r.pattern+")", regexp2.None)})
	}
	return refs
}

func matches(t testing.TB, re *regexp2.Regexp, text string) []string {
	var out []string
	m, err := re.FindStringMatch(text)
	for ; err == nil && m != nil; m, err = re.FindNextMatch(m) {
		out = append(out, m.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func ourPieces(split func(string, int) int, text string) []string {
	var out []string
	for i := 0; i < len(text); {
		j := split(text, i)
		out = append(out, text[i:j])
		i = j
	}
	return out
}

func encode(t testing.TB, c tokenizer.Codec, text string) []uint32 {
	ids, _, err := c.Encode(text)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]uint32, len(ids))
	for i, id := range ids {
		out[i] = uint32(id)
	}
	return out
}

// check holds text's split and tokens to ref's references, and says
// whether tiktoken-go's matcher split it as the pattern does.
func (ref reference) check(t testing.TB, text string) bool {
	want := matches(t, ref.interpreted, text)
	got := ourPieces(ref.ours.split, text)
	if !slices.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s: %q: pieces differ at %d: ours %q, the pattern's %q", ref.name, excerpt(text), i,
			got[i:min(len(got), i+3)], want[i:min(len(want), i+3)])
	}
	tokens := appendTokens(nil, ref.ours.vocab, ref.ours.split, text)
	if n := countTokens(ref.ours.vocab, ref.ours.split, text); n != int64(len(tokens)) {
		t.Fatalf("%s: %q: counted %d, %d tokens", ref.name, excerpt(text), n, len(tokens))
	}
	if slices.Equal(matches(t, ref.generated, text), want) {
		if lib := encode(t, ref.codec, text); !slices.Equal(tokens, lib) {
			t.Fatalf("%s: %q: tokens %v, tiktoken-go's %v", ref.name, excerpt(text), tokens, lib)
		}
		return true
	}
	// tiktoken-go splits otherwise: each piece's merges against its own,
	// where its matcher keeps the piece whole.
	for _, p := range want {
		if slices.Equal(matches(t, ref.generated, p), []string{p}) {
			if ours, lib := appendTokens(nil, ref.ours.vocab, ref.ours.split, p), encode(t, ref.codec, p); !slices.Equal(ours, lib) {
				t.Fatalf("%s: piece %q: tokens %v, tiktoken-go's %v", ref.name, p, ours, lib)
			}
		}
	}
	return false
}

// tokenSamples are texts that exercise each alternative of both split
// patterns and their edges: cases and contractions, marks, scripts
// without case, digits of other scripts, every kind of whitespace and
// line end, bytes that are not UTF-8, long runs that the merges heap.
var tokenSamples = []string{
	"", "a", " ", "\n", "Hello, world!", "The quick brown fox jumps over the lazy dog.",
	"I'm, you're, they've, he'll, she'd, it's, don't; I'M, YOU'RE, THEY'VE, HE'LL, SHE'D, IT'S, DON'T, 'ſ 'Ll 'lL",
	"HTTPServer XMLHttpRequest iPhone McDonald's camelCaseWords SCREAMING_SNAKE_CASE",
	"ǅungla ǈubav ᾈ Ǆ ǅ ǆ", // title case letters
	"naïve café résumé Ångström e\u0301 a\u0308\u0308 \u0301\u0301x ̃",
	"日本語のテキスト、中文文本。한국어 텍스트 ไทย العربية עברית हिन्दी ᐃᓄᒃᑎᑐᑦ",
	"ʰʲʷ ˈsʌmθɪŋ ꜱᴍᴀʟʟ ᵃᵇᶜ", // modifier letters
	"123 4567 89012 ٣٤٥ ६७८ ⅫⅣ ½¾ ①②③ 1,000,000 3.14159 0x1F",
	"a  b   c    d\t\te \u00a0f\u3000g\u2028h\u2029i\u0085j\u200bk\u2003l",
	"line\nline\r\nline\n\n\nline\r\r\n  \n  \n\t\nend\n", "  trailing   ", "\n\n", " \n ", "x\n\n  y",
	"path/to/file.go // comment\n/* block */ a/b//c ///", "{\"key\": [1, 2, {\"k\": null}]}\n",
	"!!!??? ... --- === +++ *** ### @@@ $$$ %%% ^^^ &&& ((( ))) [[[ ]]] {{{ }}} <<< >>> ||| \\\\\\ ~~~ ```",
	"emoji 😀😃😄😁 👩‍👩‍👧‍👦 🇫🇷 ❤️ ✔︎", "mixed: abc123def 12ab 1a2b3c ab12 A1 ½a a½",
	"'s 's' ''s '\n's x's X'S x'Re x'rE", "$'s .'s ,a .A -Ab _aB",
	strings.Repeat("=", 300), strings.Repeat(" ", 300) + "x", strings.Repeat("ab", 200), strings.Repeat("\n", 100),
	strings.Repeat("0123456789", 20), strings.Repeat("É", 150), strings.Repeat("🙂", 80),
	"bad \xff\xfe bytes \xc3 cut \xe2\x82 and \xf0\x9f\x98", "\xff", "a\xffb", "\xc5", "'\xc5", "'\xc5\xbf",
	"\u0000\u0001\u001f\u007f control", "\ufeffBOM", "\ufffd replacement",
}

// corpus is tokenSamples and the repository's documentation and code.
func corpus(t testing.TB) []string {
	texts := slices.Clone(tokenSamples)
	for _, glob := range []string{"../../docs/*.md", "../../README.md", "*.go", "../providers/*.go"} {
		files, _ := filepath.Glob(glob)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			texts = append(texts, string(b))
		}
	}
	return texts
}

func TestCountMatchesTiktoken(t *testing.T) {
	texts := corpus(t)
	if len(texts) < len(tokenSamples)+20 {
		t.Fatalf("only %d texts: the corpus's files were not found", len(texts))
	}
	for _, ref := range loadReferences(t) {
		same := 0
		for _, text := range texts {
			if ref.check(t, text) {
				same++
			}
		}
		t.Logf("%s: %d of %d texts split by tiktoken-go as by the pattern", ref.name, same, len(texts))
		if same < len(tokenSamples)/2 {
			t.Fatalf("%s: only %d of %d texts compared whole with tiktoken-go", ref.name, same, len(texts))
		}
	}
}

// Where tiktoken-go's matcher strays from the pattern, gw counts as the
// pattern says (and OpenAI's tiktoken, a backtracking matcher, splits).
func TestCountWhereTiktokenGoStrays(t *testing.T) {
	for _, c := range []struct {
		text   string
		pieces []string
	}{
		{"a\x7fb", []string{"a", "\x7fb"}},
		{"x\n  \n\ty", []string{"x", "\n  \n", "\ty"}},
		{"x\r\n\r\n  end", []string{"x", "\r\n\r\n", " ", " end"}},
	} {
		if got := ourPieces(o200kPiece, c.text); !slices.Equal(got, c.pieces) {
			t.Errorf("%q: pieces %q, want %q", c.text, got, c.pieces)
		}
	}
	for _, ref := range loadReferences(t) {
		if ref.check(t, "a\x7fb") {
			t.Errorf("%s: tiktoken-go now splits DEL as the pattern does: the note in this file is out of date", ref.name)
		}
	}
}

func excerpt(s string) string {
	if len(s) > 80 {
		s = s[:80]
	}
	return strings.ToValidUTF8(s, "?")
}

// FuzzCountMatchesTiktoken: any text, both encodings, the pattern's split
// and tiktoken-go's tokens.
func FuzzCountMatchesTiktoken(f *testing.F) {
	for _, s := range tokenSamples {
		f.Add(s)
	}
	refs := loadReferences(f)
	f.Fuzz(func(t *testing.T, text string) {
		for _, ref := range refs {
			ref.check(t, text)
		}
	})
}
