package catalog

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// A batch line is priced at the catalog's own batch prices, else at the
// kind's published discount (exact decimals, the long-context tier too),
// else at the normal prices; service tiers never apply to it.
func TestBatchPrices(t *testing.T) {
	explicit := gpt56()
	explicit.Batch = &BatchPricing{InputPerMTok: "2", OutputPerMTok: "12", CacheReadPerMTok: "0.2"}
	tests := []struct {
		name    string
		p       Pricing
		kind    Kind
		t       Tokens
		want    int64
		applied Applied
	}{
		{"catalog batch prices, cache writes at the base price", explicit, KindOpenAI, Tokens{Input: 1000, Output: 100, CacheRead: 300, CacheWrite: 10},
			1000*2000 + 100*12_000 + 300*200 + 10*6250, Applied{false, "2", "12", "0.2", "6.25", "6.25", ""}},
		{"catalog batch prices hold past the long-context threshold", explicit, KindOpenAI, Tokens{Input: 300_000, Output: 10},
			300_000*2000 + 10*12_000, Applied{false, "2", "12", "0.2", "6.25", "6.25", ""}},
		{"openai: half of every price", gpt5(), KindOpenAI, Tokens{Input: 1000, Output: 100, CacheRead: 300},
			1000*625 + 100*5000 + 300*62.5, Applied{false, "0.625", "5", "0.0625", "0.625", "0.625", ""}},
		{"anthropic: half, long context too", gpt56(), KindAnthropic, Tokens{Input: 272_001, Output: 10},
			272_001*5000 + 10*22_500, Applied{true, "5", "22.5", "0.5", "6.25", "6.25", ""}},
		{"bedrock: half", gpt5(), KindBedrock, Tokens{Input: 3}, 3 * 625, Applied{false, "0.625", "5", "0.0625", "0.625", "0.625", ""}},
		{"a kind without a published discount: the normal prices", gpt5(), KindOpenAICompatible, Tokens{Input: 1000, Output: 100},
			1000*1250 + 100*10_000, Applied{false, "1.25", "10", "0.125", "1.25", "1.25", ""}},
		{"half a nano-dollar per million tokens stays exact", Pricing{InputPerMTok: "0.000000001", OutputPerMTok: "0", CacheReadPerMTok: "0", CacheWritePerMTok: "0"},
			KindVertex, Tokens{Input: 3_000_000}, 2, Applied{false, "0.0000000005", "0", "0", "0", "0", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pp, err := tc.p.Parse()
			if err != nil {
				t.Fatal(err)
			}
			bp := pp.ForBatch(tc.kind)
			if bp.PriceClass() != PriceClassBatch || bp.ServiceTier() != "" {
				t.Errorf("class %q tier %q", bp.PriceClass(), bp.ServiceTier())
			}
			got, err := bp.CostNanoUSD(tc.t)
			if err != nil || got != tc.want {
				t.Errorf("cost = %d, %v; want %d", got, err, tc.want)
			}
			if a := bp.AppliedTo(tc.t); a != tc.applied {
				t.Errorf("applied = %+v; want %+v", a, tc.applied)
			}
			if pp.PriceClass() != "" {
				t.Error("the synchronous pricing names a price class")
			}
		})
	}
	// The batch bound is the batch prices, below the synchronous one.
	pp, _ := gpt5().Parse()
	if b, s := pp.ForBatch(KindOpenAI).Ceil(), pp.Ceil(); b.Input != 625_000_000 || b.Output >= s.Output {
		t.Errorf("batch ceil %+v, synchronous %+v", b, s)
	}
}

func TestBatchPricingValidation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		batch BatchPricing
		typ   string
		field string
	}{
		{"missing", BatchPricing{InputPerMTok: "1", OutputPerMTok: "2"}, "missing", "cache_read_per_mtok"},
		{"not a decimal", BatchPricing{InputPerMTok: "1e0", OutputPerMTok: "2", CacheReadPerMTok: "0.1"}, "string_pattern_mismatch", "input_per_mtok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validDoc()
			b := tc.batch
			c.Models[0].Pricing.Batch = &b
			_, err := Parse(encode(t, c))
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) != 1 {
				t.Fatalf("err = %v; want one problem", err)
			}
			if pr := ve.Problems[0]; pr.Type != tc.typ || !reflect.DeepEqual(pr.Loc, []any{"models", 0, "pricing", "batch", tc.field}) {
				t.Errorf("problem = %s %v (%s)", pr.Type, pr.Loc, pr.Msg)
			}
			if _, err := c.Models[0].Pricing.Parse(); err == nil {
				t.Error("Pricing.Parse took what the validator refuses")
			}
		})
	}
	// An unknown member of pricing.batch is refused (the strict decoder).
	c := validDoc()
	c.Models[0].Pricing.Batch = &BatchPricing{InputPerMTok: "1", OutputPerMTok: "2", CacheReadPerMTok: "0.1"}
	doc := bytes.Replace(encode(t, c), []byte(`"batch":{`), []byte(`"batch":{"cache_write_per_mtok":"1",`), 1)
	if _, err := Parse(doc); err == nil || !strings.Contains(err.Error(), "cache_write_per_mtok") {
		t.Errorf("an unknown member of pricing.batch: %v", err)
	}
	c = validDoc()
	c.Models[0].Pricing.Batch = &BatchPricing{InputPerMTok: "1", OutputPerMTok: "2", CacheReadPerMTok: "0.0000000001"}
	parsed, err := Parse(encode(t, c))
	if err != nil {
		t.Fatal(err)
	}
	var ve *ValidationError
	if err := CheckStorable(parsed); !errors.As(err, &ve) || ve.Problems[0].Type != "decimal_max_places" {
		t.Errorf("CheckStorable = %v", err)
	}
	// It round-trips and clones deeply.
	c = validDoc()
	c.Models[0].Pricing.Batch = &BatchPricing{InputPerMTok: "1", OutputPerMTok: "2", CacheReadPerMTok: "0.1"}
	parsed, err = Parse(encode(t, c))
	if err != nil {
		t.Fatal(err)
	}
	cl := parsed.Clone()
	for i := range cl.Models {
		if cl.Models[i].Pricing.Batch != nil {
			cl.Models[i].Pricing.Batch.InputPerMTok = "9"
		}
	}
	for _, m := range parsed.Models {
		if b := m.Pricing.Batch; b != nil && b.InputPerMTok != "1" {
			t.Error("Clone shares the batch prices")
		}
	}
}
