package catalog

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// randomPrice is a price string as an operator may write one: catalog-like
// prices, long fractions (past the ninth digit too, which the integer path
// hands to the decimals), trailing zeros, and prices near uint64's limit in
// nano-dollars.
func randomPrice(r *rand.Rand) string {
	switch r.IntN(6) {
	case 0:
		return []string{"0", "0.0", "5", "25", "0.50", "6.25", "0.075", "1.25", "0.000000001", "15.000000000000",
			"18446744073.709551615", "18446744073.709551616", "99999999999999999999.5", "0.0000000005"}[r.IntN(14)]
	case 1:
		return strconv.Itoa(r.IntN(200)) + "." + strconv.Itoa(r.IntN(1000))
	case 2:
		// Up to 12 fractional digits, so some are finer than 1e-9.
		n := 1 + r.IntN(12)
		var b strings.Builder
		for range n {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		return strconv.Itoa(r.IntN(100)) + "." + b.String()
	case 3:
		return strconv.FormatUint(r.Uint64N(18446744073), 10) + "." + strconv.Itoa(r.IntN(1_000_000_000))
	case 4:
		return strconv.FormatUint(r.Uint64(), 10)
	default:
		return "0." + strings.Repeat("0", r.IntN(9)) + strconv.Itoa(1+r.IntN(99999))
	}
}

func randomCount(r *rand.Rand) int64 {
	switch r.IntN(5) {
	case 0:
		return 0
	case 1:
		return r.Int64N(10_000)
	case 2:
		return r.Int64N(10_000_000)
	case 3:
		return r.Int64()
	default:
		// Odd halves hit the rounding ties: a count of 500,000 tokens at a
		// price of x.xxxxxxxx1 is an exact half nano-dollar.
		return 500_000 * (1 + r.Int64N(4))
	}
}

// TestCostNanoUSDIntegerMatchesDecimal holds the 128-bit integer pricing
// to the exact decimal computation it replaced on the request path: the
// same cost, or an error for the same inputs, on random prices and counts.
func TestCostNanoUSDIntegerMatchesDecimal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	integral := 0
	for i := range 200_000 {
		p := prices(randomPrice(r), randomPrice(r), randomPrice(r), randomPrice(r))
		pp, err := p.Parse()
		if err != nil {
			t.Fatalf("%+v: %v", p, err)
		}
		if pp.standard.integral {
			integral++
		}
		c := [4]int64{randomCount(r), randomCount(r), randomCount(r), randomCount(r)}
		if i%50 == 0 {
			c[r.IntN(4)] = -1 - r.Int64N(5)
		}
		got, gotErr := pp.CostNanoUSD(Tokens{Input: c[0], Output: c[1], CacheRead: c[2], CacheWrite: c[3]})
		want, wantErr := pp.standard.costNanoUSDDecimal([numClasses]int64{c[0], c[1], c[2], c[3], 0})
		if got != want || (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
			t.Fatalf("%+v × %v: %d, %v; decimals: %d, %v", p, c, got, gotErr, want, wantErr)
		}
	}
	if integral < 100_000/4 {
		t.Fatalf("only %d of 200,000 pricings took the integer path", integral)
	}
}

// TestCostNanoUSDRoundsHalfToEven pins the ties and the int64 edge.
func TestCostNanoUSDRoundsHalfToEven(t *testing.T) {
	one := func(price string, tokens int64) (int64, error) {
		pp, err := prices(price, "0", "0", "0").Parse()
		if err != nil {
			t.Fatal(err)
		}
		if !pp.standard.integral {
			t.Fatalf("%s: not integral", price)
		}
		return pp.CostNanoUSD(Tokens{Input: tokens})
	}
	for _, c := range []struct {
		price  string
		tokens int64
		want   int64
	}{
		{"0.000000001", 500_000, 0},   // 0.5 → 0
		{"0.000000001", 1_500_000, 2}, // 1.5 → 2
		{"0.000000001", 2_500_000, 2}, // 2.5 → 2
		{"0.000000001", 2_500_001, 3},
		{"0.000000001", 499_999, 0},
		{"0.000001", math.MaxInt64, 9_223_372_036_854_776}, // 9,223,372,036,854,775.807 → up
	} {
		got, err := one(c.price, c.tokens)
		if err != nil || got != c.want {
			t.Fatalf("%s × %d = %d, %v; want %d", c.price, c.tokens, got, err, c.want)
		}
	}
	if got, err := one("1", math.MaxInt64); err == nil {
		t.Fatalf("1 × MaxInt64 = %d, want an overflow error", got)
	}
}

func BenchmarkCostNanoUSD(b *testing.B) {
	pp, err := Pricing{InputPerMTok: "0.15", OutputPerMTok: "0.60", CacheReadPerMTok: "0.075", CacheWritePerMTok: "0"}.Parse()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decimal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = pp.standard.costNanoUSDDecimal([numClasses]int64{1900, 100, 300, 0, 0})
		}
	})
	b.Run("integer", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = pp.CostNanoUSD(Tokens{Input: 1900, Output: 100, CacheRead: 300})
		}
	})
}
