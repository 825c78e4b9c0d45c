package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/wire"
)

// TestValuesGWCannotUseAreRefusedWhereSaved (issue 26 row 1, issue 27
// rows 3 and 8): money finer than a nano-dollar or beyond its maximum, and
// counts beyond theirs, are 422 naming the field on every path that saves
// them. Before, each was stored, and a budget's then answered GET …/budgets
// with a 500 and every request it held with 503 budget_unavailable.
func TestValuesGWCannotUseAreRefusedWhereSaved(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		budget := func(amount string) map[string]any {
			return map[string]any{"match": map[string]any{"kind": "all_requests"},
				"action": map[string]any{"kind": "budget", "amount_usd": amount, "period": "day", "aggregation": "shared"}}
		}
		prices := func(in, out string) map[string]any {
			return map[string]any{"match": map[string]any{"kind": "all_requests"},
				"action": map[string]any{"kind": "price_limit", "max_input_price_per_mtok": in, "max_output_price_per_mtok": out}}
		}
		outputCap := func(n int64) map[string]any {
			return map[string]any{"match": map[string]any{"kind": "all_requests"},
				"action": map[string]any{"kind": "request_limits", "max_output_tokens": n}}
		}
		existing := decodeData[wire.Policy](t, e.must("POST", wsBase+"/policies", e.ownerKey, policyBody("existing", budget("5"))))
		model := func(mutate func(m map[string]any)) map[string]any {
			m := map[string]any{"id": "openai/gw-money-model", "provider": "openai", "name": "Money", "context_window": 1000, "max_output_tokens": 100,
				"pricing":      map[string]any{"input_per_mtok": "1", "output_per_mtok": "2.5", "cache_read_per_mtok": "0.1", "cache_write_per_mtok": "1"},
				"capabilities": []string{"streaming"}, "modalities": []string{"text"}, "created": 1700000000}
			mutate(m)
			return m
		}
		pricing := func(m map[string]any) map[string]any { return m["pricing"].(map[string]any) }
		cases := []struct {
			name, method, path string
			body               any
			loc, typ, msg      string
		}{
			{"a policy's budget finer than a nano-dollar", "POST", wsBase + "/policies", policyBody("fine", budget("0.0000000001")),
				"body.definition.rules.0.action.amount_usd", "decimal_max_places", "no more than 9 decimal places"},
			{"a policy's budget beyond int64 nano-dollars", "POST", wsBase + "/policies", policyBody("huge", budget("9223372037")),
				"body.definition.rules.0.action.amount_usd", "less_than_equal", "less than or equal to 1000000000"},
			{"an edited budget", "PATCH", wsBase + "/policies/" + existing.ID.String(),
				map[string]any{"definition": policyBody("x", budget("1.234567890123"))["definition"]},
				"body.definition.rules.0.action.amount_usd", "decimal_max_places", "nano-dollars"},
			{"a price ceiling", "POST", wsBase + "/policies", policyBody("ceiling", prices("0.0000000001", "2.5")),
				"body.definition.rules.0.action.max_input_price_per_mtok", "decimal_max_places", "9 decimal places"},
			{"a price ceiling too large", "POST", wsBase + "/policies", policyBody("ceiling", prices("2.5", "1000000.5")),
				"body.definition.rules.0.action.max_output_price_per_mtok", "less_than_equal", "1000000"},
			{"an output cap", "POST", wsBase + "/policies", policyBody("cap", outputCap(9223372036854775807)),
				"body.definition.rules.0.action.max_output_tokens", "less_than_equal", "1000000000"},
			{"a tag budget finer than a nano-dollar", "POST", wsBase + "/tag-budgets",
				map[string]any{"tag_key": "team", "tag_value": "x", "amount_usd": "1.234567890123", "period": "month"},
				"body.amount_usd", "decimal_max_places", "no more than 9 decimal places"},
			{"a tag budget beyond int64 nano-dollars", "POST", wsBase + "/tag-budgets",
				map[string]any{"tag_key": "team", "tag_value": "x", "amount_usd": "9223372037", "period": "month"},
				"body.amount_usd", "less_than_equal", "1000000000"},
			{"a workspace RPM of 2^63-1", "PATCH", wsBase + "/settings",
				map[string]any{"rate_limits": map[string]any{"requests_per_minute": int64(9223372036854775807)}},
				"body.rate_limits.requests_per_minute", "less_than_equal", "1000000000000"},
			{"a key's TPM", "POST", wsBase + "/inference-keys",
				map[string]any{"name": "k", "rate_limits": map[string]any{"tokens_per_minute": int64(1000000000001)}},
				"body.rate_limits.tokens_per_minute", "less_than_equal", "1000000000000"},
			{"a catalog price finer than a nano-dollar", "POST", "/api/v1/instance/catalog/models",
				model(func(m map[string]any) { pricing(m)["input_per_mtok"] = "0.0000000001" }),
				"body.pricing.input_per_mtok", "decimal_max_places", "9 decimal places"},
			{"a one-hour cache write price", "POST", "/api/v1/instance/catalog/models",
				model(func(m map[string]any) { pricing(m)["cache_write_1h_per_mtok"] = "2000000" }),
				"body.pricing.cache_write_1h_per_mtok", "less_than_equal", "1000000"},
			{"a long-context price", "POST", "/api/v1/instance/catalog/models",
				model(func(m map[string]any) {
					pricing(m)["long_context"] = map[string]any{"above_input_tokens": 200000, "input_per_mtok": "2", "output_per_mtok": "4",
						"cache_read_per_mtok": "0.00000000025", "cache_write_per_mtok": "2"}
				}),
				"body.pricing.long_context.cache_read_per_mtok", "decimal_max_places", "nano-dollars"},
			{"a context window", "POST", "/api/v1/instance/catalog/models",
				model(func(m map[string]any) { m["context_window"], m["max_output_tokens"] = int64(9223372036854775807), 100 }),
				"body.context_window", "less_than_equal", "1000000000"},
			{"an imported price", "POST", "/api/v1/instance/catalog/import",
				map[string]any{"providers": []any{map[string]any{"id": "local", "name": "Local", "kind": "openai-compatible"}},
					"models": []any{model(func(m map[string]any) {
						m["id"], m["provider"] = "local/gw-money-model", "local"
						pricing(m)["output_per_mtok"] = "1.0000000001"
					})}},
				"body.models.0.pricing.output_per_mtok", "decimal_max_places", "9 decimal places"},
		}
		for _, c := range cases {
			st, raw := e.do(c.method, c.path, e.ownerKey, c.body)
			if st != 422 || !containsAll(issueSet(t, raw), []string{c.loc + ":" + c.typ}) || !strings.Contains(string(raw), c.msg) {
				t.Errorf("%s: %d %s, want 422 %s:%s saying %q", c.name, st, raw, c.loc, c.typ, c.msg)
			}
		}
		// Nothing of it was stored.
		ps := decodeData[[]wire.Policy](t, e.must("GET", wsBase+"/policies", e.ownerKey, nil))
		if len(ps) != 1 || !strings.Contains(string(ps[0].Definition), `"amount_usd":"5"`) {
			t.Errorf("policies after the refusals: %+v", ps)
		}
		if tb := decodeData[[]wire.TagBudget](t, e.must("GET", wsBase+"/tag-budgets", e.ownerKey, nil)); len(tb) != 0 {
			t.Errorf("tag budgets after the refusals: %+v", tb)
		}
		if raw := e.must("GET", "/api/v1/instance/catalog", e.ownerKey, nil); strings.Contains(string(raw), "gw-money-model") {
			t.Error("the refused model was stored")
		}
		// The bounds themselves are taken.
		e.must("POST", wsBase+"/policies", e.ownerKey, policyBody("at the bounds", budget("1000000000"), budget("0.000000001"),
			prices("1000000", "0.000000001"), outputCap(1000000000)))
		e.must("PATCH", wsBase+"/settings", e.ownerKey, map[string]any{"rate_limits": map[string]any{"requests_per_minute": 1000000000000}})
		e.must("POST", "/api/v1/instance/catalog/models", e.ownerKey, model(func(m map[string]any) { pricing(m)["input_per_mtok"] = "1000000.000000000" }))
	})
}

// TestBudgetStoredByAnOlderVersion: a budget amount an older version stored
// finer than a nano-dollar or beyond int64 nano-dollars lists (it answered
// 500 before) as the amount enforced instead, rounded down, with a warning
// that says what was stored and how to fix it.
func TestBudgetStoredByAnOlderVersion(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		for name, amount := range map[string]string{"fine": "1.234567890123", "huge": "9223372037", "good": "12.50"} {
			def := `{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"all_requests"},"action":{"kind":"budget","amount_usd":"` +
				amount + `","period":"day","aggregation":"shared"}}]}`
			now := store.Now()
			if err := e.st.CreatePolicy(ctx, &store.Policy{ID: uuid.New(), OrgID: e.boot.Organization.ID, WorkspaceID: e.boot.Workspace.ID,
				Name: name, Enabled: true, Definition: def, CreatedAt: now, UpdatedAt: now}); err != nil {
				t.Fatal(err)
			}
		}
		raw := e.must("GET", wsBase+"/budgets", e.ownerKey, nil)
		got := map[string]wire.BudgetState{}
		for _, b := range decodeData[[]wire.BudgetState](t, raw) {
			got[b.PolicyName] = b
		}
		for name, want := range map[string]struct{ amount, warning string }{
			"fine": {"1.23456789", "the stored amount 1.234567890123 is finer than a nano-dollar or beyond what gw counts; 1.23456789 USD is enforced instead"},
			"huge": {"9223372036.854775807", "the stored amount 9223372037 is finer than a nano-dollar or beyond what gw counts; 9223372036.854775807 USD is enforced"},
			"good": {"12.5", ""},
		} {
			b, ok := got[name]
			warning := ""
			if ok && b.Warning != nil {
				warning = *b.Warning
			}
			if !ok || b.AmountUSD != want.amount || b.RemainingUSD != want.amount || !strings.HasPrefix(warning, want.warning) || (want.warning == "") != (b.Warning == nil) {
				t.Errorf("%s: %+v (warning %q)", name, b, warning)
			}
		}
		// The member is always there, null when all is well.
		var rows []map[string]any
		_ = json.Unmarshal([]byte(jsonField(t, raw, "data")), &rows)
		for _, r := range rows {
			if _, ok := r["warning"]; !ok {
				t.Errorf("no warning member: %v", r)
			}
		}
		// Saving it again with a valid amount clears the warning.
		for _, p := range decodeData[[]wire.Policy](t, e.must("GET", wsBase+"/policies", e.ownerKey, nil)) {
			if p.Name == "fine" {
				e.must("PATCH", wsBase+"/policies/"+p.ID.String(), e.ownerKey, map[string]any{"definition": policyBody("x", map[string]any{
					"match": map[string]any{"kind": "all_requests"}, "action": map[string]any{"kind": "budget", "amount_usd": "1.23456789", "period": "day", "aggregation": "shared"}})["definition"]})
			}
		}
		for _, b := range decodeData[[]wire.BudgetState](t, e.must("GET", wsBase+"/budgets", e.ownerKey, nil)) {
			if b.PolicyName == "fine" && (b.Warning != nil || b.AmountUSD != "1.23456789") {
				t.Errorf("saved again: %+v", b)
			}
		}
	})
}

// jsonField is one member of a JSON object, raw.
func jsonField(t *testing.T, raw []byte, name string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return string(m[name])
}
