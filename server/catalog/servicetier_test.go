package catalog

import (
	"errors"
	"reflect"
	"testing"
)

// gpt5 is GPT-5 with OpenAI's priority and flex prices.
func gpt5() Pricing {
	return Pricing{InputPerMTok: "1.25", OutputPerMTok: "10", CacheReadPerMTok: "0.125", CacheWritePerMTok: "1.25",
		ServiceTiers: map[string]ServiceTierPricing{
			"priority": {InputPerMTok: "2.50", OutputPerMTok: "20", CacheReadPerMTok: "0.25", CacheWritePerMTok: "2.50"},
			"flex":     {InputPerMTok: "0.625", OutputPerMTok: "5", CacheReadPerMTok: "0.0625", CacheWritePerMTok: "0.625"},
		}}
}

// gpt56 has explicit cache writes at 1.25 × input and a long-context tier
// above 272,000 input tokens, in the base pricing and in priority.
func gpt56() Pricing {
	return Pricing{InputPerMTok: "5", OutputPerMTok: "30", CacheReadPerMTok: "0.50", CacheWritePerMTok: "6.25",
		LongContext: &LongContextPricing{AboveInputTokens: 272_000, InputPerMTok: "10", OutputPerMTok: "45", CacheReadPerMTok: "1", CacheWritePerMTok: "12.50"},
		ServiceTiers: map[string]ServiceTierPricing{
			"priority": {InputPerMTok: "10", OutputPerMTok: "60", CacheReadPerMTok: "1", CacheWritePerMTok: "12.50",
				LongContext: &LongContextPricing{AboveInputTokens: 272_000, InputPerMTok: "20", OutputPerMTok: "90", CacheReadPerMTok: "2", CacheWritePerMTok: "25"}},
		}}
}

func TestServiceTierPrices(t *testing.T) {
	tests := []struct {
		name    string
		p       Pricing
		tier    string
		t       Tokens
		want    int64
		applied Applied
	}{
		{"standard", gpt5(), "", Tokens{Input: 1000, Output: 100, CacheRead: 300}, 1000*1250 + 100*10_000 + 300*125,
			Applied{false, "1.25", "10", "0.125", "1.25", "1.25", ""}},
		{"default names the base pricing", gpt5(), "default", Tokens{Input: 1000}, 1000 * 1250,
			Applied{false, "1.25", "10", "0.125", "1.25", "1.25", ""}},
		{"priority", gpt5(), "priority", Tokens{Input: 1000, Output: 100, CacheRead: 300}, 1000*2500 + 100*20_000 + 300*250,
			Applied{false, "2.50", "20", "0.25", "2.50", "2.50", "priority"}},
		{"flex", gpt5(), "flex", Tokens{Input: 1000, Output: 100, CacheRead: 300}, 1000*625 + 100*5000 + 300*62.5,
			Applied{false, "0.625", "5", "0.0625", "0.625", "0.625", "flex"}},
		{"a tier the catalog does not price is standard", gpt5(), "scale", Tokens{Input: 1000}, 1000 * 1250,
			Applied{false, "1.25", "10", "0.125", "1.25", "1.25", ""}},
		{"explicit cache writes at their price", gpt56(), "", Tokens{Input: 1000, CacheWrite: 4000, Output: 10}, 1000*5000 + 4000*6250 + 10*30_000,
			Applied{false, "5", "30", "0.50", "6.25", "6.25", ""}},
		{"272k exactly: standard", gpt56(), "", Tokens{Input: 200_000, CacheRead: 72_000}, 200_000*5000 + 72_000*500,
			Applied{false, "5", "30", "0.50", "6.25", "6.25", ""}},
		{"one past 272k: long context", gpt56(), "", Tokens{Input: 200_000, CacheRead: 72_000, CacheWrite: 1, Output: 10},
			200_000*10_000 + 72_000*1000 + 12_500 + 10*45_000, Applied{true, "10", "45", "1", "12.50", "12.50", ""}},
		{"priority past 272k: the tier's long context", gpt56(), "priority", Tokens{Input: 272_001, Output: 10},
			272_001*20_000 + 10*90_000, Applied{true, "20", "90", "2", "25", "25", "priority"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pp, err := tc.p.Parse()
			if err != nil {
				t.Fatal(err)
			}
			tp := pp.ForServiceTier(tc.tier)
			got, err := tp.CostNanoUSD(tc.t)
			if err != nil || got != tc.want {
				t.Errorf("cost = %d, %v; want %d", got, err, tc.want)
			}
			if a := tp.AppliedTo(tc.t); a != tc.applied {
				t.Errorf("applied = %+v; want %+v", a, tc.applied)
			}
		})
	}
}

// The bound a reservation is made with is the dearest tier, whatever tier
// the request asked for: the answer may name a dearer one.
func TestServiceTierCeilIsTheDearest(t *testing.T) {
	pp, err := gpt5().Parse()
	if err != nil {
		t.Fatal(err)
	}
	want := CeilPrices{Input: 2_500_000_000, Output: 20_000_000_000, CacheRead: 250_000_000, CacheWrite: 2_500_000_000, CacheWrite1h: 2_500_000_000}
	if got := pp.Ceil(); got != want {
		t.Errorf("Ceil = %+v; want %+v", got, want)
	}
	if _, _, ok := pp.LongContextCeil(); ok {
		t.Error("no tier has a long context")
	}
	pp, err = gpt56().Parse()
	if err != nil {
		t.Fatal(err)
	}
	above, long, ok := pp.LongContextCeil()
	if !ok || above != 272_000 || long.Input != 20_000_000_000 || long.Output != 90_000_000_000 || long.CacheWrite != 25_000_000_000 {
		t.Errorf("LongContextCeil = %d %+v %v", above, long, ok)
	}
	// A tier with a lower threshold lowers the bound's threshold, and the
	// standard prices of every tier stay below the bound above it.
	p := gpt5()
	p.ServiceTiers["flex"] = ServiceTierPricing{InputPerMTok: "0.625", OutputPerMTok: "5", CacheReadPerMTok: "0.0625", CacheWritePerMTok: "0.625",
		LongContext: &LongContextPricing{AboveInputTokens: 100_000, InputPerMTok: "1.25", OutputPerMTok: "7.5", CacheReadPerMTok: "0.125", CacheWritePerMTok: "1.25"}}
	pp, err = p.Parse()
	if err != nil {
		t.Fatal(err)
	}
	above, long, ok = pp.LongContextCeil()
	if !ok || above != 100_000 || long != want {
		t.Errorf("LongContextCeil = %d %+v %v; want 100000 %+v", above, long, ok, want)
	}
}

func TestServiceTierValidation(t *testing.T) {
	tests := []struct {
		name string
		edit func(p *Pricing)
		typ  string
		loc  []any
	}{
		{"unknown tier", func(p *Pricing) { p.ServiceTiers["turbo"] = p.ServiceTiers["flex"] },
			"literal_error", []any{"models", 0, "pricing", "service_tiers", "turbo"}},
		{"default is the base pricing", func(p *Pricing) { p.ServiceTiers["default"] = p.ServiceTiers["flex"] },
			"literal_error", []any{"models", 0, "pricing", "service_tiers", "default"}},
		{"non-decimal price", func(p *Pricing) {
			f := p.ServiceTiers["flex"]
			f.OutputPerMTok = "5e0"
			p.ServiceTiers["flex"] = f
		}, "string_pattern_mismatch", []any{"models", 0, "pricing", "service_tiers", "flex", "output_per_mtok"}},
		{"missing price", func(p *Pricing) {
			f := p.ServiceTiers["priority"]
			f.CacheReadPerMTok = ""
			p.ServiceTiers["priority"] = f
		}, "missing", []any{"models", 0, "pricing", "service_tiers", "priority", "cache_read_per_mtok"}},
		{"bad long-context threshold", func(p *Pricing) {
			f := p.ServiceTiers["priority"]
			f.LongContext = &LongContextPricing{AboveInputTokens: 0, InputPerMTok: "1", OutputPerMTok: "1", CacheReadPerMTok: "1", CacheWritePerMTok: "1"}
			p.ServiceTiers["priority"] = f
		}, "greater_than", []any{"models", 0, "pricing", "service_tiers", "priority", "long_context", "above_input_tokens"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := validDoc()
			p := gpt5()
			tc.edit(&p)
			c.Models[0].Pricing = p
			_, err := Parse(encode(t, c))
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) != 1 {
				t.Fatalf("err = %v; want one problem", err)
			}
			pr := ve.Problems[0]
			if pr.Type != tc.typ || !reflect.DeepEqual(pr.Loc, tc.loc) {
				t.Errorf("problem = %s %v (%s); want %s %v", pr.Type, pr.Loc, pr.Msg, tc.typ, tc.loc)
			}
			if _, err := p.Parse(); err == nil {
				t.Error("Pricing.Parse took what the validator refuses")
			}
		})
	}
	// Too fine a price is refused when saved.
	c := validDoc()
	p := gpt5()
	f := p.ServiceTiers["flex"]
	f.InputPerMTok = "0.0000000001"
	p.ServiceTiers["flex"] = f
	c.Models[0].Pricing = p
	parsed, err := Parse(encode(t, c))
	if err != nil {
		t.Fatal(err)
	}
	var ve *ValidationError
	if err := CheckStorable(parsed); !errors.As(err, &ve) || ve.Problems[0].Type != "decimal_max_places" ||
		!reflect.DeepEqual(ve.Problems[0].Loc, []any{"models", 1, "pricing", "service_tiers", "flex", "input_per_mtok"}) {
		t.Errorf("CheckStorable = %v", err)
	}
	// A catalog with tiers round-trips and clones deeply.
	c = validDoc()
	c.Models[0].Pricing = gpt5()
	parsed, err = Parse(encode(t, c))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := parsed.Model("openai/gpt-4o")
	if !reflect.DeepEqual(m.Pricing, gpt5()) {
		t.Errorf("round trip: %+v", m.Pricing)
	}
	cl := parsed.Clone()
	cl.Models[1].Pricing.ServiceTiers["flex"] = ServiceTierPricing{}
	if m, _ := parsed.Model("openai/gpt-4o"); m.Pricing.ServiceTiers["flex"].InputPerMTok != "0.625" {
		t.Error("Clone shares the tiers")
	}
}

// The default catalog carries OpenAI's published tiers and GPT-5.4's
// long context above 272,000 input tokens.
func TestDefaultCatalogPriceClasses(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"openai/gpt-5": "2.50", "openai/gpt-5.1": "2.50", "openai/gpt-4o-mini": "0.25", "openai/gpt-5.4": "5.00"} {
		m, ok := c.Model(id)
		if !ok || m.Pricing.ServiceTiers["priority"].InputPerMTok != want {
			t.Errorf("%s: priority %+v", id, m.Pricing.ServiceTiers)
		}
	}
	m, _ := c.Model("openai/gpt-5.4")
	pp, err := m.Pricing.Parse()
	if err != nil || m.Pricing.LongContext == nil || m.Pricing.LongContext.AboveInputTokens != 272_000 {
		t.Fatalf("gpt-5.4: %v %+v", err, m.Pricing.LongContext)
	}
	// 300,000 flex tokens: the flex tier's long context, $2.50 / MTok.
	if got, _ := pp.ForServiceTier("flex").CostNanoUSD(Tokens{Input: 300_000}); got != 750_000_000 {
		t.Errorf("flex above 272k = %d", got)
	}
}

// A request's bound covers the base prices and the tier it asks for (the
// answer may name either), no more.
func TestAskedBoundsTheTierAskedFor(t *testing.T) {
	pp, err := gpt5().Parse()
	if err != nil {
		t.Fatal(err)
	}
	base := CeilPrices{Input: 1_250_000_000, Output: 10_000_000_000, CacheRead: 125_000_000, CacheWrite: 1_250_000_000, CacheWrite1h: 1_250_000_000}
	priority := CeilPrices{Input: 2_500_000_000, Output: 20_000_000_000, CacheRead: 250_000_000, CacheWrite: 2_500_000_000, CacheWrite1h: 2_500_000_000}
	for tier, want := range map[string]CeilPrices{"": base, "default": base, "auto": base, "flex": base, "priority": priority} {
		if got := pp.Asked(tier).Ceil(); got != want {
			t.Errorf("Asked(%q).Ceil() = %+v; want %+v", tier, got, want)
		}
	}
	pp, err = gpt56().Parse()
	if err != nil {
		t.Fatal(err)
	}
	if above, long, ok := pp.Asked("").LongContextCeil(); !ok || above != 272_000 || long.Input != 10_000_000_000 {
		t.Errorf("Asked(\"\").LongContextCeil() = %d %+v %v", above, long, ok)
	}
	if _, long, _ := pp.Asked("priority").LongContextCeil(); long.Input != 20_000_000_000 || long.Output != 90_000_000_000 {
		t.Errorf("Asked(priority).LongContextCeil() = %+v", long)
	}
}
