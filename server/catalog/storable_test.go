package catalog

import (
	"errors"
	"reflect"
	"testing"
)

// TestCheckStorable: New admits these catalogs (one an older version
// stored must keep loading), and CheckStorable names every price or count
// gw should not save, at its place, long-context tier and one-hour writes
// included.
func TestCheckStorable(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(m *Model)
		want   []string // loc:type of the first model, models[0] being the gpt-4o entry before sorting
	}{
		{"valid", func(*Model) {}, nil},
		{"the largest price and count", func(m *Model) {
			m.Pricing.OutputPerMTok, m.ContextWindow, m.MaxOutputTokens = "1000000", 1_000_000_000, 1_000_000_000
		}, nil},
		{"a price finer than a nano-dollar", func(m *Model) { m.Pricing.InputPerMTok = "0.0000000001" },
			[]string{"pricing.input_per_mtok:decimal_max_places"}},
		{"a price too large", func(m *Model) { m.Pricing.CacheReadPerMTok = "1000000.5" },
			[]string{"pricing.cache_read_per_mtok:less_than_equal"}},
		{"one-hour writes", func(m *Model) { m.Pricing.CacheWrite1hPerMTok = "3.1234567891" },
			[]string{"pricing.cache_write_1h_per_mtok:decimal_max_places"}},
		{"counts", func(m *Model) { m.ContextWindow, m.MaxOutputTokens = 9_000_000_000, 2_000_000_000 },
			[]string{"context_window:less_than_equal", "max_output_tokens:less_than_equal"}},
		{"the long-context tier", func(m *Model) {
			m.Pricing.LongContext = &LongContextPricing{AboveInputTokens: 5_000_000_000, InputPerMTok: "5", OutputPerMTok: "20000000",
				CacheReadPerMTok: "0.0000000001", CacheWritePerMTok: "6", CacheWrite1hPerMTok: "99999999"}
		}, []string{"pricing.long_context.above_input_tokens:less_than_equal", "pricing.long_context.output_per_mtok:less_than_equal",
			"pricing.long_context.cache_read_per_mtok:decimal_max_places", "pricing.long_context.cache_write_1h_per_mtok:less_than_equal"}},
	}
	for _, c := range cases {
		doc := validDoc()
		c.mutate(&doc.Models[0])
		cat, err := New(doc.Providers, doc.Models)
		if err != nil {
			t.Fatalf("%s: New refuses it: %v", c.name, err)
		}
		// Sorted, the gpt-4o entry is models[1].
		err = CheckStorable(cat)
		var got []string
		var ve *ValidationError
		if errors.As(err, &ve) {
			for _, p := range ve.Problems {
				if p.Loc[0] != "models" || p.Loc[1] != 1 || p.ID != "openai/gpt-4o" || p.Msg == "" {
					t.Errorf("%s: problem %+v", c.name, p)
				}
				got = append(got, formatPath(p.Loc[2:])+":"+p.Type)
			}
		} else if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %v\nwant %v", c.name, got, c.want)
		}
	}
}

// TestDefaultCatalogIsStorable: what gw ships, it could save.
func TestDefaultCatalogIsStorable(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckStorable(c); err != nil {
		t.Fatal(err)
	}
}
