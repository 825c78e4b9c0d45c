package catalog

import (
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCostNanoUSD(t *testing.T) {
	opus45 := Pricing{InputPerMTok: "5", OutputPerMTok: "25", CacheReadPerMTok: "0.50", CacheWritePerMTok: "6.25"}
	flat := func(price string) Pricing { return prices(price, price, price, price) }
	tests := []struct {
		name                 string
		p                    Pricing
		in, out, read, write int64
		want                 int64
	}{
		{"nothing", opus45, 0, 0, 0, 0, 0},
		{"free model", flat("0"), 1_000_000, 1_000_000, 1_000_000, 1_000_000, 0},
		{"gpt-4o request", prices("2.50", "10.00", "1.25", "2.50"), 1000, 500, 0, 0, 7_500_000},
		{"all four categories", opus45, 1234, 5678, 91011, 1213, 201_206_750},
		{"one million tokens is the list price", opus45, 0, 1_000_000, 0, 0, 25_000_000_000},
		{"a nano-dollar per token", flat("0.001"), 1, 0, 0, 0, 1},
		{"tenths of a cent per million sum exactly", prices("0.1", "0.2", "0", "0"), 1, 1, 0, 0, 300},
		{"half rounds to even, down", flat("0.0025"), 1, 0, 0, 0, 2},     // 2.5 → 2
		{"half rounds to even, up", flat("0.0035"), 1, 0, 0, 0, 4},       // 3.5 → 4
		{"half of a nano rounds to zero", flat("0.0005"), 1, 0, 0, 0, 0}, // 0.5 → 0
		{"one and a half rounds to two", flat("0.0015"), 1, 0, 0, 0, 2},
		{"odd half from a cache price", flat("0.0375"), 1, 0, 0, 0, 38},   // 37.5 → 38
		{"even half from a cache price", flat("0.0375"), 3, 0, 0, 0, 112}, // 112.5 → 112
		{"just above half rounds up", flat("0.00051"), 1, 0, 0, 0, 1},
		{"just below half rounds down", flat("0.00049"), 1, 0, 0, 0, 0},
		{"above half by far less than a float can see", flat("0.00250000000000000000001"), 1, 0, 0, 0, 3},
		{"the sum is rounded once, not each term", prices("0.0025", "0.0025", "0", "0"), 1, 1, 0, 0, 5}, // 2.5+2.5, not 2+2
		{"sub-nano prices accumulate", flat("0.0000001"), 15_000, 0, 0, 0, 2},                           // 1.5 → 2
		{"sub-nano prices round to even", flat("0.0000001"), 5_000, 0, 0, 0, 0},                         // 0.5 → 0
		{"many digits", prices("0.123456789", "0", "0", "0"), 1_000, 0, 0, 0, 123_457},                  // 123456.789
		{"large counts", flat("75"), 1_000_000_000, 0, 0, 0, 75_000_000_000_000},
		{"near the int64 limit", flat("1000"), 9_223_372_036_854, 0, 0, 0, 9_223_372_036_854_000_000},
		{"exactly the int64 limit", flat("0.001"), math.MaxInt64, 0, 0, 0, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.p.CostNanoUSD(Tokens{Input: tt.in, Output: tt.out, CacheRead: tt.read, CacheWrite: tt.write})
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %d nano-USD, want %d", got, tt.want)
			}
		})
	}
}

func TestCostNanoUSDErrors(t *testing.T) {
	good := prices("1", "2", "0.1", "1.25")
	tests := []struct {
		name                 string
		p                    Pricing
		in, out, read, write int64
		want                 string
	}{
		{"negative input", good, -1, 0, 0, 0, "negative token count -1 for input_per_mtok"},
		{"negative cache write", good, 0, 0, 0, -5, "negative token count -5 for cache_write_per_mtok"},
		{"exponent price", prices("1e3", "2", "0", "0"), 1, 0, 0, 0, `pricing.input_per_mtok: "1e3" is not a decimal string`},
		{"empty price, even with no tokens of it", prices("1", "2", "", "0"), 1, 0, 0, 0, "pricing.cache_read_per_mtok: is required"},
		{"negative price", prices("1", "-2", "0", "0"), 1, 1, 0, 0, `pricing.output_per_mtok: "-2" is not a decimal string`},
		{"overflow", prices("1000", "0", "0", "0"), math.MaxInt64, 0, 0, 0, "does not fit in int64"},
		{"overflow by summing", prices("1000", "1000", "0", "0"), 9_223_372_036_854, 9_223_372_036_854, 0, 0, "does not fit in int64"},
		{"one nano past the limit", prices("0.001", "0.001", "0", "0"), math.MaxInt64, 1, 0, 0, "does not fit in int64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.p.CostNanoUSD(Tokens{Input: tt.in, Output: tt.out, CacheRead: tt.read, CacheWrite: tt.write})
			if err == nil {
				t.Fatalf("got %d, want an error", got)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestFormatNanoUSD(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0"},
		{1, "0.000000001"},
		{10, "0.00000001"},
		{123_450, "0.00012345"},
		{7_500_000, "0.0075"},
		{1_000_000_000, "1"},
		{1_500_000_000, "1.5"},
		{25_000_000_000, "25"},
		{201_206_750, "0.20120675"},
		{-5, "-0.000000005"},
		{-2_000_000_000, "-2"},
		{math.MaxInt64, "9223372036.854775807"},
		{math.MinInt64, "-9223372036.854775808"},
	}
	for _, tt := range tests {
		if got := FormatNanoUSD(tt.n); got != tt.want {
			t.Errorf("FormatNanoUSD(%d) = %q, want %q", tt.n, got, tt.want)
		}
		if back, err := ParseNanoUSD(tt.want); err != nil || back != tt.n {
			t.Errorf("ParseNanoUSD(%q) = %d, %v; want %d", tt.want, back, err, tt.n)
		}
	}
}

func TestParseNanoUSD(t *testing.T) {
	ok := []struct {
		s    string
		want int64
	}{
		{"0", 0},
		{"0.0", 0},
		{"-0", 0},
		{"12", 12_000_000_000},
		{"0.25", 250_000_000},
		{"1.500000000000", 1_500_000_000},
		{"0.000000001", 1},
		{"007.5", 7_500_000_000},
	}
	for _, tt := range ok {
		if got, err := ParseNanoUSD(tt.s); err != nil || got != tt.want {
			t.Errorf("ParseNanoUSD(%q) = %d, %v; want %d", tt.s, got, err, tt.want)
		}
	}
	bad := []struct{ s, want string }{
		{"", "not a decimal USD amount"},
		{"1e3", "not a decimal USD amount"},
		{"+1", "not a decimal USD amount"},
		{"1.", "not a decimal USD amount"},
		{"--1", "not a decimal USD amount"},
		{"$1", "not a decimal USD amount"},
		{"0.0000000001", "finer than a nano-dollar"},
		{"0.0000000015", "finer than a nano-dollar"},
		{"9223372036.854775808", "does not fit"},
		{"-9223372036.854775809", "does not fit"},
		{"99999999999999999999", "does not fit"},
	}
	for _, tt := range bad {
		if got, err := ParseNanoUSD(tt.s); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseNanoUSD(%q) = %d, %v; want an error containing %q", tt.s, got, err, tt.want)
		}
	}
}

func FuzzNanoUSDRoundTrip(f *testing.F) {
	for _, n := range []int64{0, 1, -1, 999_999_999, 1_000_000_000, math.MaxInt64, math.MinInt64} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n int64) {
		s := FormatNanoUSD(n)
		back, err := ParseNanoUSD(s)
		if err != nil || back != n {
			t.Fatalf("%d → %q → %d, %v", n, s, back, err)
		}
	})
}

// TestNoFloatingPoint keeps float types, float literals and float
// conversions out of the package: every value here is either a price, a
// token count or a cost, and all three must stay exact.
func TestNoFloatingPoint(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Ident:
				if n.Name == "float32" || n.Name == "float64" || n.Name == "complex64" || n.Name == "complex128" {
					t.Errorf("%s: %s", fset.Position(n.Pos()), n.Name)
				}
			case *ast.SelectorExpr:
				if strings.Contains(n.Sel.Name, "Float") {
					t.Errorf("%s: %s", fset.Position(n.Pos()), n.Sel.Name)
				}
			case *ast.BasicLit:
				if n.Kind == token.FLOAT || n.Kind == token.IMAG {
					t.Errorf("%s: float literal %s", fset.Position(n.Pos()), n.Value)
				}
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("no source files found")
	}
}

// prices is a standard tier of four prices, the catalog's required ones.
func prices(input, output, cacheRead, cacheWrite string) Pricing {
	return Pricing{InputPerMTok: input, OutputPerMTok: output, CacheReadPerMTok: cacheRead, CacheWritePerMTok: cacheWrite}
}

// TestCostNanoUSDCacheTTLAndLongContext prices (a price of $p per million
// tokens is p × 1,000 nano-dollars a token) the classes the providers
// bill beyond the four: one-hour cache writes and the long-context tier.
func TestCostNanoUSDCacheTTLAndLongContext(t *testing.T) {
	sonnet := prices("3", "15", "0.30", "3.75")
	sonnet.CacheWrite1hPerMTok = "6"
	sonnet.LongContext = &LongContextPricing{AboveInputTokens: 200_000, InputPerMTok: "6", OutputPerMTok: "22.50",
		CacheReadPerMTok: "0.60", CacheWritePerMTok: "7.50", CacheWrite1hPerMTok: "12"}
	no1h := prices("3", "15", "0.30", "3.75")
	gemini := prices("1.25", "10", "0.125", "1.25")
	gemini.LongContext = &LongContextPricing{AboveInputTokens: 200_000, InputPerMTok: "2.50", OutputPerMTok: "15", CacheReadPerMTok: "0.25", CacheWritePerMTok: "2.50"}
	tests := []struct {
		name    string
		p       Pricing
		t       Tokens
		want    int64
		applied Applied
	}{
		{"1h writes at their price", sonnet, Tokens{Input: 10, Output: 100, CacheWrite: 2000, CacheWrite1h: 1500},
			10*3000 + 100*15_000 + 500*3750 + 1500*6000, Applied{false, "3", "15", "0.30", "3.75", "6", ""}},
		{"1h writes without a 1h price cost the 5-minute price", no1h, Tokens{CacheWrite: 2000, CacheWrite1h: 2000}, 2000 * 3750,
			Applied{false, "3", "15", "0.30", "3.75", "3.75", ""}},
		{"at the threshold: standard", gemini, Tokens{Input: 200_000, Output: 1000}, 200_000*1250 + 1000*10_000,
			Applied{false, "1.25", "10", "0.125", "1.25", "1.25", ""}},
		{"one past: the whole request at the long tier", gemini, Tokens{Input: 200_001, Output: 1000}, 200_001*2500 + 1000*15_000,
			Applied{true, "2.50", "15", "0.25", "2.50", "2.50", ""}},
		{"cache reads count toward the threshold", gemini, Tokens{Input: 1000, CacheRead: 250_000}, 1000*2500 + 250_000*250,
			Applied{true, "2.50", "15", "0.25", "2.50", "2.50", ""}},
		{"long tier with 1h writes", sonnet, Tokens{Input: 150_000, CacheWrite: 100_000, CacheWrite1h: 100_000, Output: 10},
			150_000*6000 + 100_000*12_000 + 10*22_500, Applied{true, "6", "22.50", "0.60", "7.50", "12", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pp, err := tt.p.Parse()
			if err != nil {
				t.Fatal(err)
			}
			got, err := pp.CostNanoUSD(tt.t)
			if err != nil || got != tt.want {
				t.Fatalf("cost %d, %v; want %d", got, err, tt.want)
			}
			if a := pp.AppliedTo(tt.t); a != tt.applied {
				t.Fatalf("applied %+v, want %+v", a, tt.applied)
			}
		})
	}
	if _, err := sonnet.CostNanoUSD(Tokens{CacheWrite: 10, CacheWrite1h: 11}); err == nil {
		t.Fatal("more 1h writes than writes: want an error")
	}
	pp, _ := sonnet.Parse()
	if c := pp.Ceil(); c != (CeilPrices{3e9, 15e9, 3e8, 3.75e9, 6e9}) {
		t.Fatalf("ceil %+v", c)
	}
	if above, c, ok := pp.LongContextCeil(); !ok || above != 200_000 || c != (CeilPrices{6e9, 22.5e9, 6e8, 7.5e9, 12e9}) {
		t.Fatalf("long ceil %d %+v %v", above, c, ok)
	}
	if c, _ := no1h.Parse(); c.Ceil().CacheWrite1h != 3.75e9 {
		t.Fatalf("without a 1-hour price, a 1-hour write costs the 5-minute one: %+v", c.Ceil())
	}
}

// TestBudgetNanoUSD: a budget amount reads as itself when it is whole
// nano-dollars within int64; one an older version stored finer or larger
// reads rounded down to a nano-dollar, at most math.MaxInt64, and never
// fails.
func TestBudgetNanoUSD(t *testing.T) {
	cases := []struct {
		in    string
		n     int64
		exact bool
	}{
		{"12.5", 12_500_000_000, true},
		{"0", 0, true},
		{"0.000000001", 1, true},
		{"1.0000000000", 1_000_000_000, true}, // zeros past the ninth place change nothing
		{"0.0000000001", 0, false},
		{"1.234567890123", 1_234_567_890, false},
		{"0.9999999999", 999_999_999, false}, // down, never up
		{"9223372036.854775807", math.MaxInt64, true},
		{"9223372036.854775808", math.MaxInt64, false},
		{"9223372037", math.MaxInt64, false},
		{"99999999999999999999999999999999999999.5", math.MaxInt64, false},
		{"000000000000000000000000000000000000001.5", 1_500_000_000, false}, // longer than ParseNanoUSD reads
	}
	for _, c := range cases {
		n, exact, err := BudgetNanoUSD(c.in)
		if err != nil || n != c.n || exact != c.exact {
			t.Errorf("%q: %d %v %v, want %d %v", c.in, n, exact, err, c.n, c.exact)
		}
	}
	for _, bad := range []string{"", "-1", "1e3", "x"} {
		if _, _, err := BudgetNanoUSD(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
