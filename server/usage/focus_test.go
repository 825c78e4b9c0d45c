package usage_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/usage"
	"github.com/gw-gateway/gw/wire"
)

func pricedEvent(t *testing.T, at time.Time, ws uuid.UUID, model string, p catalog.Pricing, tk catalog.Tokens, reasoning int64, tags store.Tags) store.UsageEvent {
	t.Helper()
	cost, err := p.CostNanoUSD(tk)
	if err != nil {
		t.Fatal(err)
	}
	pp, _ := p.Parse()
	a := pp.AppliedTo(tk)
	return store.UsageEvent{ID: uuid.New(), WorkspaceID: ws, Model: model, Provider: strings.Split(model, "/")[0],
		InputTokens: tk.Input, OutputTokens: tk.Output, CacheReadTokens: tk.CacheRead, CacheWriteTokens: tk.CacheWrite,
		CacheWrite1hTokens: tk.CacheWrite1h, ReasoningTokens: reasoning, CostNanoUSD: cost, OccurredAt: at, Tags: tags,
		Provenance: &store.UsageProvenance{Prices: &wire.UsagePrices{InputPerMTok: a.InputPerMTok, OutputPerMTok: a.OutputPerMTok,
			CacheReadPerMTok: a.CacheReadPerMTok, CacheWritePerMTok: a.CacheWritePerMTok, CacheWrite1hPerMTok: a.CacheWrite1hPerMTok}}}
}

// TestFocusChargesSplitExactly: each event's classes add up to its cost
// to the nano-dollar, the rounding remainder in the input class.
func TestFocusChargesSplitExactly(t *testing.T) {
	at := time.Date(2026, 11, 3, 13, 0, 0, 0, time.UTC)
	ws := uuid.New()
	odd := catalog.Pricing{InputPerMTok: "0.1234", OutputPerMTok: "0.5678", CacheReadPerMTok: "0.0123", CacheWritePerMTok: "0.1875", CacheWrite1hPerMTok: "0.3333"}
	cases := []struct {
		name  string
		event store.UsageEvent
		want  map[string][2]int64 // class → tokens, nano-dollars
	}{
		{"every class, no remainder", pricedEvent(t, at, ws, "anthropic/claude", catalog.Pricing{InputPerMTok: "1", OutputPerMTok: "5",
			CacheReadPerMTok: "0.1", CacheWritePerMTok: "1.25", CacheWrite1hPerMTok: "2"},
			catalog.Tokens{Input: 1000, Output: 200, CacheRead: 100, CacheWrite: 40, CacheWrite1h: 10}, 50, nil),
			map[string][2]int64{"input": {1000, 1000_000}, "output": {150, 750_000}, "reasoning": {50, 250_000},
				"cached_input": {100, 10_000}, "cache_write": {30, 37_500}, "cache_write_1h": {10, 20_000}}},
		// In nano-dollars: 7 × 123.4 = 863.8, 3 × 567.8 = 1703.4, 12.3,
		// 187.5 and 333.3 sum to 3100.3, charged 3100; the shares rounded
		// down sum to 3098, and the remainder 2 goes to input.
		{"remainder to input", pricedEvent(t, at, ws, "openai/mini", odd, catalog.Tokens{Input: 7, Output: 3, CacheRead: 1, CacheWrite: 2, CacheWrite1h: 1}, 0, nil),
			map[string][2]int64{"input": {7, 865}, "output": {3, 1703}, "cached_input": {1, 12}, "cache_write": {1, 187}, "cache_write_1h": {1, 333}}},
		{"a cache hit at $0: every class at 0", func() store.UsageEvent {
			e := pricedEvent(t, at, ws, "openai/mini", odd, catalog.Tokens{Input: 7, Output: 3}, 0, nil)
			e.CostNanoUSD = 0
			return e
		}(), map[string][2]int64{"input": {7, 0}, "output": {3, 0}}},
		// Charged 1000 where the prices say 863.8 + 1703.4 = 2567.2: the
		// shares are 336.47… and 663.52…, rounded down to 336 and 663,
		// the remainder 1 to input.
		{"charged below its prices: shared in proportion", func() store.UsageEvent {
			e := pricedEvent(t, at, ws, "openai/mini", odd, catalog.Tokens{Input: 7, Output: 3}, 0, nil)
			e.CostNanoUSD = 1000
			return e
		}(), map[string][2]int64{"input": {7, 337}, "output": {3, 663}}},
		{"no recorded prices: the cost in input", store.UsageEvent{ID: uuid.New(), WorkspaceID: ws, Model: "x/old", Provider: "x",
			InputTokens: 5, OutputTokens: 5, CostNanoUSD: 123, OccurredAt: at},
			map[string][2]int64{"input": {5, 123}, "output": {5, 0}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			charges, err := usage.FocusCharges(usage.FocusExport{Events: []store.UsageEvent{c.event}})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][2]int64{}
			var sum int64
			for _, ch := range charges {
				got[ch.Class] = [2]int64{ch.Tokens, ch.BilledNanoUSD}
				sum += ch.BilledNanoUSD
			}
			if sum != c.event.CostNanoUSD {
				t.Fatalf("charges sum to %d, the event cost %d", sum, c.event.CostNanoUSD)
			}
			if len(got) != len(c.want) {
				t.Fatalf("classes %v, want %v", got, c.want)
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("%s: %v, want %v", k, got[k], v)
				}
			}
		})
	}
}

// TestFocusChargesGroup: one row per day, workspace, model, class, unit
// price and tag set; events of the same key add up.
func TestFocusChargesGroup(t *testing.T) {
	p := catalog.Pricing{InputPerMTok: "2.5", OutputPerMTok: "10", CacheReadPerMTok: "1.25", CacheWritePerMTok: "0"}
	long := catalog.Pricing{InputPerMTok: "5", OutputPerMTok: "15", CacheReadPerMTok: "2.5", CacheWritePerMTok: "0"}
	ws := uuid.New()
	d1 := time.Date(2026, 11, 30, 23, 59, 0, 0, time.UTC)
	tk := catalog.Tokens{Input: 10, Output: 10}
	events := []store.UsageEvent{
		pricedEvent(t, d1, ws, "openai/gpt", p, tk, 0, store.Tags{"team": "a"}),
		pricedEvent(t, d1.Add(-time.Hour), ws, "openai/gpt", p, tk, 0, store.Tags{"team": "a"}),
		pricedEvent(t, d1, ws, "openai/gpt", p, tk, 0, store.Tags{"team": "b"}),
		pricedEvent(t, d1, ws, "openai/gpt", long, tk, 0, store.Tags{"team": "a"}),
		pricedEvent(t, d1.Add(2*time.Minute), ws, "openai/gpt", p, tk, 0, store.Tags{"team": "a"}), // December
	}
	charges, err := usage.FocusCharges(usage.FocusExport{OrgID: uuid.New(), OrgName: "Acme", Events: events})
	if err != nil {
		t.Fatal(err)
	}
	// 4 keys × input and output.
	if len(charges) != 8 || charges[0].Tokens != 20 || charges[0].Tags != `{"team":"a"}` {
		t.Fatalf("charges: %+v", charges)
	}
	for _, version := range wire.FocusVersions {
		header, rows, err := usage.FocusTable(version, charges)
		if err != nil {
			t.Fatal(err)
		}
		if err := usage.ValidateFocusTable(version, header, rows); err != nil {
			t.Fatalf("FOCUS %s: %v", version, err)
		}
		last := rows[len(rows)-1]
		at := map[string]int{}
		for i, h := range header {
			at[h] = i
		}
		if *last[at["ChargePeriodStart"]] != "2026-12-01T00:00:00Z" || *last[at["BillingPeriodStart"]] != "2026-12-01T00:00:00Z" ||
			*last[at["BillingPeriodEnd"]] != "2027-01-01T00:00:00Z" || *last[at["ListUnitPrice"]] != "0.00001" {
			t.Fatalf("the December row: %v", deref(last))
		}
	}
}

func deref(row []*string) []string {
	out := make([]string, len(row))
	for i, v := range row {
		if v != nil {
			out[i] = *v
		}
	}
	return out
}

// TestValidateFocusRefuses: the validator finds what the column
// definitions forbid.
func TestValidateFocusRefuses(t *testing.T) {
	p := catalog.Pricing{InputPerMTok: "2.5", OutputPerMTok: "10", CacheReadPerMTok: "1.25", CacheWritePerMTok: "0"}
	ev := pricedEvent(t, time.Date(2026, 11, 3, 1, 0, 0, 0, time.UTC), uuid.New(), "openai/gpt", p, catalog.Tokens{Input: 10}, 0, nil)
	charges, err := usage.FocusCharges(usage.FocusExport{OrgID: uuid.New(), OrgName: "Acme", Events: []store.UsageEvent{ev}})
	if err != nil {
		t.Fatal(err)
	}
	s := func(v string) *string { return &v }
	cases := []struct {
		name, version, column string
		value                 *string
		drop                  bool
		want                  string
	}{
		{"missing column", "1.3", "ServiceProviderName", nil, true, "ServiceProviderName is required"},
		{"unknown column", "1.4", "", nil, false, ""},
		{"null not allowed", "1.3", "BilledCost", nil, false, "BilledCost must not be null"},
		{"decimal with exponent", "1.3", "BilledCost", s("1e-9"), false, "not a decimal"},
		{"local time", "1.4", "ChargePeriodStart", s("2026-11-03T00:00:00+01:00"), false, "not an ISO 8601 UTC"},
		{"unknown category", "1.3", "ChargeCategory", s("Refund"), false, "ChargeCategory \"Refund\" is not one of"},
		{"bad currency", "1.3", "BillingCurrency", s("usd"), false, "not an ISO 4217"},
		{"tags not an object", "1.4", "Tags", s(`["a"]`), false, "not a JSON object"},
		{"unit without quantity", "1.3", "PricingQuantity", nil, false, "PricingQuantity and PricingUnit"},
		{"list cost off", "1.3", "ListCost", s("1"), false, "ListCost 1 is not ListUnitPrice × PricingQuantity"},
		{"subcategory of another", "1.3", "ServiceSubcategory", s("Bots2"), false, "not a subcategory"},
		{"charge period outside", "1.3", "ChargePeriodEnd", s("2026-12-02T00:00:00Z"), false, "within the billing period"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			header, rows, err := usage.FocusTable(c.version, charges)
			if err != nil {
				t.Fatal(err)
			}
			if c.column == "" {
				// A column of no FOCUS version is refused, a custom x_ one
				// taken.
				h := append(header[:len(header):len(header)], "Color")
				r := [][]*string{append(rows[0][:len(rows[0]):len(rows[0])], s("blue"))}
				if err := usage.ValidateFocusTable(c.version, h, r); err == nil || !strings.Contains(err.Error(), "Color is not a FOCUS 1.4 column") {
					t.Fatalf("got %v", err)
				}
				h[len(h)-1] = "x_Color"
				if err := usage.ValidateFocusTable(c.version, h, r); err != nil {
					t.Fatalf("a custom column: %v", err)
				}
				return
			}
			for i, h := range header {
				if h == c.column {
					if c.drop {
						header = append(header[:i:i], header[i+1:]...)
						rows[0] = append(rows[0][:i:i], rows[0][i+1:]...)
					} else {
						rows[0][i] = c.value
					}
				}
			}
			err = usage.ValidateFocusTable(c.version, header, rows)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

// TestFocusBatchClass: a batch line's tokens are rows of their own batch
// classes at the batch prices, apart from the synchronous rows of the
// same model and day, the sums exact and every version's rules kept.
func TestFocusBatchClass(t *testing.T) {
	p := catalog.Pricing{InputPerMTok: "2.5", OutputPerMTok: "10", CacheReadPerMTok: "1.25", CacheWritePerMTok: "2.5"}
	pp, err := p.Parse()
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 3, 13, 0, 0, 0, time.UTC)
	ws := uuid.New()
	tk := catalog.Tokens{Input: 1000, Output: 100, CacheRead: 10}
	sync := pricedEvent(t, at, ws, "openai/gpt-4o", p, tk, 0, nil)
	bp := pp.ForBatch(catalog.KindOpenAI)
	cost, err := bp.CostNanoUSD(tk)
	if err != nil {
		t.Fatal(err)
	}
	a := bp.AppliedTo(tk)
	batch := sync
	batch.ID, batch.CostNanoUSD = uuid.New(), cost
	batch.Provenance = &store.UsageProvenance{Prices: &wire.UsagePrices{InputPerMTok: a.InputPerMTok, OutputPerMTok: a.OutputPerMTok,
		CacheReadPerMTok: a.CacheReadPerMTok, CacheWritePerMTok: a.CacheWritePerMTok, CacheWrite1hPerMTok: a.CacheWrite1hPerMTok,
		PriceClass: wire.PriceClassBatch}}
	charges, err := usage.FocusCharges(usage.FocusExport{OrgID: uuid.New(), OrgName: "Acme", Events: []store.UsageEvent{sync, batch}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]int64{}
	var sum int64
	for _, c := range charges {
		got[c.Class] = [2]int64{c.Tokens, c.BilledNanoUSD}
		sum += c.BilledNanoUSD
	}
	want := map[string][2]int64{"input": {1000, 2_500_000}, "output": {100, 1_000_000}, "cached_input": {10, 12_500},
		"batch_input": {1000, 1_250_000}, "batch_output": {100, 500_000}, "batch_cached_input": {10, 6_250}}
	if len(got) != len(want) || sum != sync.CostNanoUSD+batch.CostNanoUSD {
		t.Fatalf("classes %v (sum %d), want %v", got, sum, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %v, want %v", k, got[k], v)
		}
	}
	for _, version := range wire.FocusVersions {
		header, rows, err := usage.FocusTable(version, charges)
		if err != nil {
			t.Fatal(err)
		}
		if err := usage.ValidateFocusTable(version, header, rows); err != nil {
			t.Fatalf("FOCUS %s: %v", version, err)
		}
		col := map[string]int{}
		for i, h := range header {
			col[h] = i
		}
		found := false
		for _, r := range rows {
			if d := r[col["ChargeDescription"]]; d != nil && strings.HasPrefix(*d, "Batch input tokens of openai/gpt-4o") {
				found = *r[col["ListUnitPrice"]] == "0.00000125"
			}
		}
		if !found {
			t.Errorf("FOCUS %s: no batch input row at the batch price", version)
		}
	}
}
