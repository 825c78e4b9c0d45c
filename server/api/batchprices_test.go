package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gw-gateway/gw/wire"
)

// TestCatalogBatchPrices: a model's batch prices are saved, shown and
// refused by field (422, never 500) when a price is missing, not a
// decimal, or an unknown member; usage events carry batch_id and the
// batch price class through ingest, and a batch id that is not gw's is
// refused.
func TestCatalogBatchPrices(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		model := func(batch any) map[string]any {
			return map[string]any{"id": "openai/gw-batched", "provider": "openai", "name": "Batched", "context_window": 400000, "max_output_tokens": 1000,
				"pricing": map[string]any{"input_per_mtok": "1.25", "output_per_mtok": "10", "cache_read_per_mtok": "0.125", "cache_write_per_mtok": "1.25",
					"batch": batch},
				"capabilities": []string{"streaming"}, "modalities": []string{"text"}, "created": 1700000000}
		}
		for _, c := range []struct {
			name  string
			batch map[string]any
			loc   string
		}{
			{"a missing price", map[string]any{"input_per_mtok": "0.625", "output_per_mtok": "5"}, "body.pricing.batch.cache_read_per_mtok:missing"},
			{"a price that is not a decimal", map[string]any{"input_per_mtok": "0.6e0", "output_per_mtok": "5", "cache_read_per_mtok": "0.0625"},
				"body.pricing.batch.input_per_mtok:string_pattern_mismatch"},
			{"a price finer than a nano-dollar", map[string]any{"input_per_mtok": "0.6250000001", "output_per_mtok": "5", "cache_read_per_mtok": "0.0625"},
				"body.pricing.batch.input_per_mtok:decimal_max_places"},
		} {
			st, raw := e.do("POST", "/api/v1/instance/catalog/models", e.ownerKey, model(c.batch))
			if st != http.StatusUnprocessableEntity || !containsAll(issueSet(t, raw), []string{c.loc}) {
				t.Errorf("%s: %d %s, want 422 %s", c.name, st, raw, c.loc)
			}
		}
		st, raw := e.do("POST", "/api/v1/instance/catalog/models", e.ownerKey,
			model(map[string]any{"input_per_mtok": "0.625", "output_per_mtok": "5", "cache_read_per_mtok": "0.0625", "cache_write_per_mtok": "1"}))
		if st != http.StatusUnprocessableEntity {
			t.Errorf("an unknown member of pricing.batch: %d %s", st, raw)
		}
		if raw := e.must("GET", "/api/v1/instance/catalog", e.ownerKey, nil); strings.Contains(string(raw), "gw-batched") {
			t.Fatal("a refused model was stored")
		}
		e.must("POST", "/api/v1/instance/catalog/models", e.ownerKey,
			model(map[string]any{"input_per_mtok": "0.625", "output_per_mtok": "5", "cache_read_per_mtok": "0.0625"}))
		raw = e.must("GET", "/api/v1/instance/catalog", e.ownerKey, nil)
		var cat struct {
			Models []wire.CatalogModel `json:"models"`
		}
		var env struct {
			Data json.RawMessage `json:"data"`
		}
		if json.Unmarshal(raw, &env) != nil || json.Unmarshal(env.Data, &cat) != nil {
			t.Fatalf("catalog: %s", raw)
		}
		found := false
		for _, m := range cat.Models {
			switch m.ID {
			case "openai/gw-batched":
				found = true
				if b := m.Pricing.Batch; b == nil || b.InputPerMTok != "0.625" || b.OutputPerMTok != "5" || b.CacheReadPerMTok != "0.0625" {
					t.Fatalf("stored batch prices: %+v", b)
				}
			case "openai/gpt-4o":
				if m.Pricing.Batch != nil {
					t.Errorf("the default catalog's gpt-4o shows batch prices of its own: %+v", m.Pricing.Batch)
				}
			}
		}
		if !found {
			t.Fatalf("the model is not in the catalog: %s", raw)
		}

		// Usage events carry the batch and the batch price class.
		now := time.Now()
		ev := e.usageEvent(now, "openai/gpt-4o", 1000, 100, "0.00175")
		ev["request_id"], ev["batch_id"] = "req-batch-1", "batch_0190a1b2c3d4e5f6"
		ev["provenance"] = map[string]any{"prices": map[string]any{"input_per_mtok": "1.25", "output_per_mtok": "5", "cache_read_per_mtok": "0.625",
			"cache_write_per_mtok": "1.25", "cache_write_1h_per_mtok": "1.25", "long_context": false, "price_class": "batch"},
			"bundle_version": 1, "policies": []any{}, "budgets": []any{}}
		e.must("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{ev}})
		got := decodeData[[]wire.UsageEvent](t, e.must("GET", "/api/v1/organizations/default/usage-events?request_id=req-batch-1", e.ownerKey, nil))
		if len(got) != 1 || got[0].BatchID == nil || *got[0].BatchID != "batch_0190a1b2c3d4e5f6" || got[0].Provenance == nil ||
			got[0].Provenance.Prices == nil || got[0].Provenance.Prices.PriceClass != wire.PriceClassBatch {
			t.Fatalf("events: %+v", got)
		}
		for _, c := range []struct {
			name string
			edit func(ev map[string]any)
			loc  string
		}{
			{"a batch id that is not gw's", func(ev map[string]any) { ev["batch_id"] = "msgbatch_01 ; drop" }, "body.events.0.batch_id:string_pattern_mismatch"},
			{"an unknown price class", func(ev map[string]any) {
				ev["provenance"] = map[string]any{"prices": map[string]any{"input_per_mtok": "1", "output_per_mtok": "1", "cache_read_per_mtok": "1",
					"cache_write_per_mtok": "1", "cache_write_1h_per_mtok": "1", "long_context": false, "price_class": "discount"},
					"bundle_version": 1, "policies": []any{}, "budgets": []any{}}
			}, "body.events.0.provenance.prices.price_class:literal_error"},
		} {
			bad := e.usageEvent(now, "openai/gpt-4o", 10, 5, "0.1")
			c.edit(bad)
			st, raw := e.do("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{bad}})
			if st != http.StatusUnprocessableEntity || !containsAll(issueSet(t, raw), []string{c.loc}) {
				t.Errorf("%s: %d %s, want 422 %s", c.name, st, raw, c.loc)
			}
		}
	})
}
