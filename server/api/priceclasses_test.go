package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gw-gateway/gw/wire"
)

// TestCatalogServiceTiers: a model's service tiers are saved, shown and
// refused by field (422, never 500) when a tier name is unknown or a price
// is not a decimal; usage events carry service_tier through ingest.
func TestCatalogServiceTiers(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		tier := func(in string) map[string]any {
			return map[string]any{"input_per_mtok": in, "output_per_mtok": "20", "cache_read_per_mtok": "0.25", "cache_write_per_mtok": in}
		}
		model := func(tiers map[string]any) map[string]any {
			return map[string]any{"id": "openai/gw-tiered", "provider": "openai", "name": "Tiered", "context_window": 400000, "max_output_tokens": 1000,
				"pricing": map[string]any{"input_per_mtok": "1.25", "output_per_mtok": "10", "cache_read_per_mtok": "0.125", "cache_write_per_mtok": "1.25",
					"service_tiers": tiers},
				"capabilities": []string{"streaming"}, "modalities": []string{"text"}, "created": 1700000000}
		}
		for _, c := range []struct {
			name  string
			tiers map[string]any
			loc   string
		}{
			{"an unknown tier", map[string]any{"turbo": tier("2.50")}, "body.pricing.service_tiers.turbo:literal_error"},
			{"the default tier", map[string]any{"default": tier("2.50")}, "body.pricing.service_tiers.default:literal_error"},
			{"a price that is not a decimal", map[string]any{"flex": tier("0.6e0")}, "body.pricing.service_tiers.flex.input_per_mtok:string_pattern_mismatch"},
			{"a price finer than a nano-dollar", map[string]any{"priority": tier("2.0000000001")}, "body.pricing.service_tiers.priority.input_per_mtok:decimal_max_places"},
		} {
			st, raw := e.do("POST", "/api/v1/instance/catalog/models", e.ownerKey, model(c.tiers))
			if st != http.StatusUnprocessableEntity || !containsAll(issueSet(t, raw), []string{c.loc}) {
				t.Errorf("%s: %d %s, want 422 %s", c.name, st, raw, c.loc)
			}
		}
		if raw := e.must("GET", "/api/v1/instance/catalog", e.ownerKey, nil); strings.Contains(string(raw), "gw-tiered") {
			t.Fatal("a refused model was stored")
		}
		e.must("POST", "/api/v1/instance/catalog/models", e.ownerKey, model(map[string]any{"priority": tier("2.50"), "flex": tier("0.625")}))
		raw := e.must("GET", "/api/v1/instance/catalog", e.ownerKey, nil)
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
			if m.ID == "openai/gw-tiered" {
				found = true
				if m.Pricing.ServiceTiers["priority"].InputPerMTok != "2.50" || m.Pricing.ServiceTiers["flex"].InputPerMTok != "0.625" {
					t.Fatalf("stored tiers: %+v", m.Pricing.ServiceTiers)
				}
			}
		}
		if !found {
			t.Fatalf("the model is not in the catalog: %s", raw)
		}

		// Usage events carry the tier they were billed in.
		now := time.Now()
		ev := e.usageEvent(now, "openai/gpt-4o", 1000, 100, "0.004575")
		ev["request_id"], ev["service_tier"] = "req-tier-1", "priority"
		ev["provenance"] = map[string]any{"prices": map[string]any{"input_per_mtok": "2.50", "output_per_mtok": "20", "cache_read_per_mtok": "0.25",
			"cache_write_per_mtok": "2.50", "cache_write_1h_per_mtok": "2.50", "long_context": false, "service_tier": "priority"},
			"bundle_version": 1, "policies": []any{}, "budgets": []any{}}
		e.must("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{ev}})
		got := decodeData[[]wire.UsageEvent](t, e.must("GET", "/api/v1/organizations/default/usage-events?request_id=req-tier-1", e.ownerKey, nil))
		if len(got) != 1 || got[0].ServiceTier == nil || *got[0].ServiceTier != "priority" || got[0].Provenance == nil ||
			got[0].Provenance.Prices == nil || got[0].Provenance.Prices.ServiceTier != "priority" {
			t.Fatalf("events: %+v", got)
		}
		bad := e.usageEvent(now, "openai/gpt-4o", 10, 5, "0.1")
		bad["service_tier"] = "Priority Plus"
		st, raw := e.do("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{bad}})
		if st != http.StatusUnprocessableEntity || !containsAll(issueSet(t, raw), []string{"body.events.0.service_tier:string_pattern_mismatch"}) {
			t.Fatalf("a free-text service tier: %d %s", st, raw)
		}
	})
}
