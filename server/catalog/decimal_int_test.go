package catalog

import (
	"math/rand/v2"
	"testing"
)

// TestIsDecimalIsThePattern holds isDecimal to DecimalPattern, on chosen
// strings and on random ones over the characters that matter.
func TestIsDecimalIsThePattern(t *testing.T) {
	cases := []string{"", "0", "2.50", "10", ".5", "5.", "1.2.3", "-1", "+1", "1e3", " 1", "1 ", "١", "0.000000001",
		"12345678901234567890", "1..2", ".", "00.00", "1,5", "\n1", "1\n"}
	const alphabet = "0123456789.-e \n٣"
	r := rand.New(rand.NewPCG(33, 33))
	for range 20000 {
		b := make([]byte, r.IntN(8))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		if got, want := isDecimal(s), decimalRE.MatchString(s); got != want {
			t.Fatalf("isDecimal(%q) = %v, the pattern says %v", s, got, want)
		}
	}
}

func FuzzIsDecimal(f *testing.F) {
	for _, s := range []string{"2.50", "1.", ".1", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isDecimal(s), decimalRE.MatchString(s); got != want {
			t.Fatalf("isDecimal(%q) = %v, the pattern says %v", s, got, want)
		}
	})
}
