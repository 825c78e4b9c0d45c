package tokens

import "testing"

// Every token is found at its rank, whichever table holds it (one byte,
// two bytes, a short key, a long one's hash), and a string that is no
// token is not found, however close to one it is.
func TestVocabFindsEveryToken(t *testing.T) {
	for name, b := range map[string]*bpe{"o200k_base": o200k, "cl100k_base": cl100k} {
		b.load()
		v := b.vocab
		tokens := make(map[string]bool, len(v.ends))
		for r := range v.ends {
			tok := v.token(uint32(r))
			if tok == "" {
				continue
			}
			tokens[tok] = true
			if got, ok := v.rank(tok); !ok || got != uint32(r) {
				t.Fatalf("%s: %q found at %d, %v; its rank is %d", name, tok, got, ok, r)
			}
		}
		misses := 0
		for tok := range tokens {
			// The token with one byte more, or its last byte changed:
			// same lengths, same slots' neighbourhoods, mostly no token.
			for _, s := range []string{tok + "\x00", tok[:len(tok)-1] + string(tok[len(tok)-1]^0x01)} {
				if tokens[s] {
					continue
				}
				misses++
				if r, ok := v.rank(s); ok {
					t.Fatalf("%s: %q is no token, but was found at %d (%q)", name, s, r, v.token(r))
				}
			}
		}
		if _, ok := v.rank(""); ok {
			t.Errorf("%s: the empty string was found", name)
		}
		t.Logf("%s: %d tokens found, %d near misses refused", name, len(tokens), misses)
	}
}
