package providers

import (
	"strings"
	"testing"
)

// skipStringByBytes is skipValue's string case as it was, a byte at a
// time: the reference for the vectorized one.
func skipStringByBytes(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return min(i, len(b))
}

// FuzzSkipString: skipValue ends a string where the byte-at-a-time scan
// does, for any bytes after the opening quote (escaped quotes, runs of
// backslashes, a backslash last, no closing quote).
func FuzzSkipString(f *testing.F) {
	for _, s := range []string{`"abc"`, `"a\"b"`, `"a\\"`, `"a\\\"b"x`, `"\`, `"abc`, `"a\\\\\"\\"rest"`, `""`,
		`"` + strings.Repeat(`x\n`, 500) + `"`, `"\"\"\""`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != '"' {
			b = append([]byte{'"'}, b...)
		}
		if got, want := skipValue(b, 0), skipStringByBytes(b, 0); got != want {
			t.Fatalf("%q: ends at %d, want %d", b, got, want)
		}
	})
}
