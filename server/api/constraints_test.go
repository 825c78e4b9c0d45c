package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/gw-gateway/gw/wire"
)

// TestCatalogModelConstraints: a model's request constraints are saved by
// a put and an import, shown, replaced by a later import, and refused by
// field (422, never 500) when wrong.
func TestCatalogModelConstraints(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		model := func(constraints map[string]any) map[string]any {
			return map[string]any{"id": "anthropic/gw-fable", "provider": "anthropic", "name": "Fable", "context_window": 200000, "max_output_tokens": 1000,
				"pricing":      map[string]any{"input_per_mtok": "3", "output_per_mtok": "15", "cache_read_per_mtok": "0.30", "cache_write_per_mtok": "3.75"},
				"capabilities": []string{"streaming", "tools"}, "modalities": []string{"text"}, "created": 1700000000, "constraints": constraints}
		}
		for _, c := range []struct {
			name        string
			constraints map[string]any
			loc         string
		}{
			{"an unknown member", map[string]any{"sampling": false}, "body:extra_forbidden"},
			{"a version that is no date", map[string]any{"anthropic_version": "latest"}, "body.constraints.anthropic_version:string_pattern_mismatch"},
		} {
			st, raw := e.do("POST", "/api/v1/instance/catalog/models", e.ownerKey, model(c.constraints))
			if st != http.StatusUnprocessableEntity || !containsAll(issueSet(t, raw), []string{c.loc}) {
				t.Errorf("%s: %d %s, want 422 %s", c.name, st, raw, c.loc)
			}
		}
		stored := func() *wire.ModelConstraints {
			t.Helper()
			var env struct {
				Data struct {
					Models []wire.CatalogModel `json:"models"`
				} `json:"data"`
			}
			raw := e.must("GET", "/api/v1/instance/catalog", e.ownerKey, nil)
			if json.Unmarshal(raw, &env) != nil {
				t.Fatalf("catalog: %s", raw)
			}
			for _, m := range env.Data.Models {
				if m.ID == "anthropic/gw-fable" {
					return m.Constraints
				}
			}
			t.Fatalf("the model is not in the catalog: %s", raw)
			return nil
		}
		got := decodeData[wire.CatalogModel](t, e.must("POST", "/api/v1/instance/catalog/models", e.ownerKey,
			model(map[string]any{"sampling_params": false, "forced_tool_choice": false, "anthropic_version": "2026-10-21"})))
		if c := got.Constraints; c == nil || c.SamplingParams == nil || *c.SamplingParams || c.ForcedToolChoice == nil || c.AnthropicVersion != "2026-10-21" {
			t.Fatalf("put answered %+v", got.Constraints)
		}
		if c := stored(); c == nil || c.AnthropicVersion != "2026-10-21" {
			t.Fatalf("stored %+v", c)
		}
		// An import replaces them: the model takes sampling parameters again.
		e.must("POST", "/api/v1/instance/catalog/import", e.ownerKey, map[string]any{"providers": []any{
			map[string]any{"id": "anthropic", "name": "Anthropic", "kind": "anthropic", "base_url": "https://api.anthropic.com/v1"}},
			"models": []any{model(map[string]any{"forced_tool_choice": false})}})
		if c := stored(); c == nil || c.SamplingParams != nil || c.ForcedToolChoice == nil || *c.ForcedToolChoice || c.AnthropicVersion != "" {
			t.Fatalf("after the import %+v", c)
		}
	})
}
