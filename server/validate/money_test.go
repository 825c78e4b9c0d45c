package validate_test

import (
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/validate"
)

func TestMoneyRule(t *testing.T) {
	cases := []struct {
		rule validate.MoneyRule
		in   string
		typ  string // "" accepted
	}{
		{validate.BudgetUSD, "0", ""},
		{validate.BudgetUSD, "12.50", ""},
		{validate.BudgetUSD, "0.000000001", ""},
		{validate.BudgetUSD, "1.234567890", ""},
		{validate.BudgetUSD, "1000000000", ""},
		{validate.BudgetUSD, "1000000000.000000000", ""},
		{validate.BudgetUSD, "0001000000000", ""},
		{validate.BudgetUSD, "0.0000000001", "decimal_max_places"},
		{validate.BudgetUSD, "1.234567890123", "decimal_max_places"},
		// Trailing zeros count: the text is what is stored and shown.
		{validate.BudgetUSD, "1.0000000000", "decimal_max_places"},
		{validate.BudgetUSD, "1000000000.000000001", "less_than_equal"},
		{validate.BudgetUSD, "1000000001", "less_than_equal"},
		{validate.BudgetUSD, "9223372037", "less_than_equal"},
		{validate.BudgetUSD, "99999999999999999999999999999999", "less_than_equal"},
		{validate.BudgetUSD, "000000000000000000000000000000001", "string_too_long"},
		{validate.BudgetUSD, "-5", "string_pattern_mismatch"},
		{validate.BudgetUSD, "1e3", "string_pattern_mismatch"},
		{validate.BudgetUSD, "", "string_pattern_mismatch"},
		{validate.BudgetUSD, "1.", "string_pattern_mismatch"},
		{validate.BudgetUSD, "١", "string_pattern_mismatch"},
		{validate.PricePerMTokUSD, "1000000", ""},
		{validate.PricePerMTokUSD, "2.50", ""},
		{validate.PricePerMTokUSD, "1000000.5", "less_than_equal"},
		{validate.PricePerMTokUSD, "0.0000000005", "decimal_max_places"},
	}
	for _, c := range cases {
		typ, msg, _ := c.rule.Problem(c.in)
		if typ != c.typ {
			t.Errorf("%v %q: %q (%s), want %q", c.rule.Max, c.in, typ, msg, c.typ)
		}
		var errs validate.Errors
		if ok := c.rule.Check(c.in, validate.Loc{"body", "amount_usd"}, &errs); ok != (c.typ == "") || errs.Len() != boolInt(!ok) {
			t.Errorf("%q: Check %v with %d issues", c.in, ok, errs.Len())
		}
	}
	// The message says why and what the bound is.
	if _, msg, _ := validate.BudgetUSD.Problem("0.0000000001"); !strings.Contains(msg, "no more than 9 decimal places") {
		t.Errorf("decimals message: %s", msg)
	}
	if _, msg, ctx := validate.BudgetUSD.Problem("9223372037"); !strings.Contains(msg, "less than or equal to 1000000000") || ctx["le"] != "1000000000" {
		t.Errorf("maximum message: %s %v", msg, ctx)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// FuzzMoneyRule: the rule accepts exactly the decimals of at most nine
// places up to its maximum, and whatever it accepts is a whole number of
// nano-dollars that int64 holds (catalog.ParseNanoUSD, what budgets and
// costs are computed with).
func FuzzMoneyRule(f *testing.F) {
	for _, s := range []string{"0", "12.50", "1000000000", "1000000000.000000001", "0.0000000001", "9223372037", "1e3", "-1", "00.10", "1000000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, rule := range []validate.MoneyRule{validate.BudgetUSD, validate.PricePerMTokUSD} {
			typ, _, _ := rule.Problem(s)
			want := ""
			d, err := decimal.NewFromString(s)
			_, frac, _ := strings.Cut(s, ".")
			switch {
			case len(s) > 32:
				want = "string_too_long"
			case !catalog.ValidPrice(s) || err != nil:
				want = "string_pattern_mismatch"
			case len(frac) > validate.MaxMoneyDecimals:
				want = "decimal_max_places"
			case d.GreaterThan(decimal.NewFromInt(rule.Max)):
				want = "less_than_equal"
			}
			if typ != want {
				t.Fatalf("%v %q: %q, want %q", rule.Max, s, typ, want)
			}
			if typ == "" {
				n, err := catalog.ParseNanoUSD(s)
				if err != nil || n < 0 || n > rule.Max*catalog.NanoPerUSD {
					t.Fatalf("%q accepted but reads as %d nano-dollars (%v)", s, n, err)
				}
			}
		}
	})
}
