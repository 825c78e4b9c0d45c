package catalog

import (
	"fmt"
	"strings"

	"github.com/gw-gateway/gw/server/validate"
)

// CheckStorable refuses what New admits but gw should not save: a price
// with more than nine decimal places or above validate.PricePerMTokUSD,
// and a token count (context window, output maximum, long-context
// threshold) above validate.MaxTokenSetting. Prices that fine or that
// large are still priced (exactly, through decimals) when a catalog an
// older version stored is loaded, which is why New does not refuse them;
// but no one means a price finer than a nano-dollar per million tokens,
// and a price or count that large makes a request's cost bound overflow
// int64 nano-dollars, which refuses every budgeted request. Every path
// that saves a catalog (import, one provider or model) calls it; the
// result is nil or a *ValidationError listing every problem.
func CheckStorable(c *Catalog) error {
	var ps problemList
	for i, m := range c.Models {
		at := func(field ...any) []any { return append([]any{"models", i}, field...) }
		tokens := func(n int64, loc ...any) {
			if n > validate.MaxTokenSetting {
				ps.add(m.ID, "less_than_equal", fmt.Sprintf("%d is more than %d, the largest token count gw takes", n, validate.MaxTokenSetting), at(loc...)...)
			}
		}
		tokens(m.ContextWindow, "context_window")
		tokens(m.MaxOutputTokens, "max_output_tokens")
		prices := []priceField{}
		for _, f := range m.Pricing.fields() {
			prices = append(prices, priceField{"pricing." + f.name, f.value})
		}
		prices = append(prices, priceField{"pricing.cache_write_1h_per_mtok", m.Pricing.CacheWrite1hPerMTok})
		if lc := m.Pricing.LongContext; lc != nil {
			tokens(lc.AboveInputTokens, "pricing", "long_context", "above_input_tokens")
			for _, f := range lc.fields() {
				prices = append(prices, priceField{"pricing.long_context." + f.name, f.value})
			}
			prices = append(prices, priceField{"pricing.long_context.cache_write_1h_per_mtok", lc.CacheWrite1hPerMTok})
		}
		for _, name := range sortedTierNames(m.Pricing.ServiceTiers) {
			t := m.Pricing.ServiceTiers[name]
			pre := "pricing.service_tiers." + name + "."
			for _, f := range t.pricing().fields() {
				prices = append(prices, priceField{pre + f.name, f.value})
			}
			prices = append(prices, priceField{pre + "cache_write_1h_per_mtok", t.CacheWrite1hPerMTok})
			if lc := t.LongContext; lc != nil {
				tokens(lc.AboveInputTokens, "pricing", "service_tiers", name, "long_context", "above_input_tokens")
				for _, f := range lc.fields() {
					prices = append(prices, priceField{pre + "long_context." + f.name, f.value})
				}
				prices = append(prices, priceField{pre + "long_context.cache_write_1h_per_mtok", lc.CacheWrite1hPerMTok})
			}
		}
		if b := m.Pricing.Batch; b != nil {
			prices = append(prices, priceField{"pricing.batch.input_per_mtok", b.InputPerMTok},
				priceField{"pricing.batch.output_per_mtok", b.OutputPerMTok}, priceField{"pricing.batch.cache_read_per_mtok", b.CacheReadPerMTok})
		}
		for _, f := range prices {
			if f.value == "" || !ValidPrice(f.value) {
				continue // absent (optional) or refused by New already
			}
			switch typ, _, _ := validate.PricePerMTokUSD.Problem(f.value); typ {
			case "decimal_max_places":
				ps.add(m.ID, typ, fmt.Sprintf("%q has more than %d decimal places; gw counts money in nano-dollars (0.000000001 USD)",
					f.value, validate.MaxMoneyDecimals), at(splitPath(f.name)...)...)
			case "":
			default:
				ps.add(m.ID, typ, fmt.Sprintf("%q is more than %d, the largest price per million tokens gw takes, in USD",
					f.value, validate.PricePerMTokUSD.Max), at(splitPath(f.name)...)...)
			}
		}
	}
	if len(ps) > 0 {
		return &ValidationError{Problems: ps}
	}
	return nil
}

// splitPath turns "pricing.long_context.input_per_mtok" into its parts.
func splitPath(p string) []any {
	var out []any
	for _, part := range strings.Split(p, ".") {
		out = append(out, part)
	}
	return out
}
