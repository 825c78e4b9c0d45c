package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/wire"
)

// The attribution members travel through ingest and come back in the
// list; events without them (older data planes) are still taken.
func TestUsageIngestCarriesAttribution(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		now := time.Now()
		full := e.usageEvent(now, "anthropic/claude-haiku-4-5-20251001", 10, 2, "0.00002")
		full["request_id"] = full["id"].(uuid.UUID).String()
		full["endpoint"] = "chat.completions"
		full["reason"] = nil
		full["requested_model"] = "openai/gpt-4o"
		full["attempts"] = []any{
			map[string]any{"model": "openai/gpt-4o", "provider": "openai", "failure": "rate_limited", "latency_ms": 31},
			map[string]any{"model": "anthropic/claude-haiku-4-5-20251001", "provider": "anthropic", "failure": nil, "latency_ms": 400},
		}
		old := e.usageEvent(now.Add(-time.Second), "openai/gpt-4o", 1, 1, "0.1")
		e.must("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{full, old}})
		events := decodeData[[]wire.UsageEvent](t, e.must("GET", "/api/v1/organizations/default/usage-events", e.ownerKey, nil))
		if len(events) != 2 {
			t.Fatalf("%d events", len(events))
		}
		got, legacy := events[0], events[1]
		if got.RequestedModel != "openai/gpt-4o" || got.Model != "anthropic/claude-haiku-4-5-20251001" || got.Reason != nil ||
			got.Endpoint == nil || *got.Endpoint != "chat.completions" || len(got.Attempts) != 2 ||
			got.Attempts[0].Failure == nil || *got.Attempts[0].Failure != "rate_limited" || got.Attempts[1].Failure != nil || got.Attempts[1].LatencyMS != 400 {
			t.Fatalf("event %+v", got)
		}
		if legacy.RequestedModel != "openai/gpt-4o" || legacy.RequestID != nil || legacy.Attempts == nil || len(legacy.Attempts) != 0 {
			t.Fatalf("an older data plane's event %+v", legacy)
		}

		bad := e.usageEvent(now, "openai/gpt-4o", 1, 1, "0.1")
		bad["status"] = "error"
		bad["reason"] = "The upstream said: Incorrect API key sk-live-123"
		bad["endpoint"] = 7
		bad["attempts"] = []any{map[string]any{"model": "", "provider": "openai", "failure": "exploded", "latency_ms": -1}, "x"}
		st, raw := e.do("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{bad}})
		want := []string{"body.events.0.reason:string_pattern_mismatch", "body.events.0.endpoint:string_type",
			"body.events.0.attempts.1:model_type"}
		if st != 422 || !containsAll(issueSet(t, raw), want) {
			t.Fatalf("bad attribution: %d %s", st, raw)
		}
		rules := e.usageEvent(now, "openai/gpt-4o", 1, 1, "0.1")
		rules["reason"] = "rate_limited" // a reason on an ok event
		rules["attempts"] = []any{map[string]any{"model": "", "provider": "openai", "failure": "exploded", "latency_ms": -1}}
		st, raw = e.do("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{rules}})
		want = []string{"body.events.0.reason:value_error", "body.events.0.attempts.0.model:string_too_short",
			"body.events.0.attempts.0.failure:literal_error", "body.events.0.attempts.0.latency_ms:greater_than_equal"}
		if st != 422 || !containsAll(issueSet(t, raw), want) {
			t.Fatalf("attribution rules: %d %s", st, raw)
		}
	})
}

// The events list filters by the report's names; a bad value is a 422 at
// its query parameter, and a cursor belongs to its filter.
func TestUsageEventsListFilters(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		now := time.Now().UTC()
		keyA, keyB := uuid.New(), uuid.New()
		var batch []map[string]any
		for i := 0; i < 6; i++ {
			ev := e.usageEvent(now.Add(-time.Duration(i)*time.Minute), "openai/gpt-4o", 1, 1, "0.001")
			ev["inference_key_id"] = keyA
			switch i % 3 {
			case 1:
				ev["status"], ev["reason"] = "error", "rate_limited"
				ev["model"], ev["provider"] = "anthropic/claude-haiku-4-5-20251001", "anthropic"
			case 2:
				ev["status"], ev["reason"] = "denied", "policy_denied"
				ev["inference_key_id"] = keyB
			}
			batch = append(batch, ev)
		}
		e.must("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": batch})
		list := func(q url.Values) []wire.UsageEvent {
			t.Helper()
			return decodeData[[]wire.UsageEvent](t, e.must("GET", "/api/v1/organizations/default/usage-events?"+q.Encode(), e.ownerKey, nil))
		}
		for _, tc := range []struct {
			q    url.Values
			want int
		}{
			{url.Values{}, 6},
			{url.Values{"status": {"error"}}, 2},
			{url.Values{"status": {"denied"}, "inference_key_id": {keyB.String()}}, 2},
			{url.Values{"inference_key_id": {keyA.String()}}, 4},
			{url.Values{"model_id": {"anthropic/claude-haiku-4-5-20251001"}}, 2},
			{url.Values{"provider_id": {"openai"}, "status": {"ok"}}, 2},
			{url.Values{"start_at": {now.Add(-150 * time.Second).Format(time.RFC3339Nano)}}, 3},
			{url.Values{"end_at": {now.Add(-150 * time.Second).Format(time.RFC3339Nano)}, "status": {"ok"}}, 1},
		} {
			if got := list(tc.q); len(got) != tc.want {
				t.Fatalf("%s: %d events, want %d", tc.q.Encode(), len(got), tc.want)
			}
		}
		// The workspace's list takes the same filters.
		ws := decodeData[[]wire.UsageEvent](t, e.must("GET", "/api/v1/organizations/default/workspaces/"+e.boot.Workspace.Slug+"/usage-events?status=denied", e.ownerKey, nil))
		if len(ws) != 2 {
			t.Fatalf("workspace, denied: %d", len(ws))
		}

		st, raw := e.do("GET", "/api/v1/organizations/default/usage-events?status=weird&inference_key_id=nope&start_at=yesterday&end_at=2020-01-01T00:00:00Z&model_id=", e.ownerKey, nil)
		want := []string{"query.status:literal_error", "query.inference_key_id:uuid_parsing", "query.start_at:datetime_parsing",
			"query.model_id:string_too_short"}
		if st != http.StatusUnprocessableEntity || !containsAll(issueSet(t, raw), want) {
			t.Fatalf("bad filters: %d %s", st, raw)
		}
		st, raw = e.do("GET", "/api/v1/organizations/default/usage-events?start_at=2026-01-02T00:00:00Z&end_at=2026-01-01T00:00:00Z", e.ownerKey, nil)
		if st != http.StatusUnprocessableEntity || !containsAll(issueSet(t, raw), []string{"query.end_at:value_error"}) {
			t.Fatalf("an empty range: %d %s", st, raw)
		}

		// Paging through a filter, and a cursor used with another filter.
		raw = e.must("GET", "/api/v1/organizations/default/usage-events?status=ok&limit=1", e.ownerKey, nil)
		next, ok := jsonPath(t, raw, "page.next_cursor").(string)
		if !ok {
			t.Fatalf("no next page: %s", raw)
		}
		page2 := decodeData[[]wire.UsageEvent](t, e.must("GET", "/api/v1/organizations/default/usage-events?status=ok&limit=1&cursor="+next, e.ownerKey, nil))
		if len(page2) != 1 || page2[0].Status != "ok" {
			t.Fatalf("second page %+v", page2)
		}
		for _, other := range []string{"status=error", "", "status=ok&model_id=openai/gpt-4o"} {
			if st, raw := e.do("GET", "/api/v1/organizations/default/usage-events?limit=1&cursor="+next+"&"+other, e.ownerKey, nil); st != http.StatusUnprocessableEntity ||
				!strings.Contains(string(raw), "invalid cursor") {
				t.Fatalf("cursor with filter %q: %d %s", other, st, raw)
			}
		}
	})
}

// Reports filter and break down by the model asked for.
func TestUsageByRequestedModel(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		now := time.Now()
		a := e.usageEvent(now.Add(-time.Minute), "anthropic/claude-haiku-4-5-20251001", 1, 1, "0.5")
		a["requested_model"] = "openai/gpt-4o"
		b := e.usageEvent(now.Add(-time.Minute), "openai/gpt-4o", 1, 1, "0.25")
		e.must("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{a, b}})
		bd := decodeData[wire.UsageBreakdown](t, e.must("GET", "/api/v1/organizations/default/reports/usage/breakdown?by=requested_model&period=today", e.ownerKey, nil))
		if len(bd.Rows) != 1 || bd.Rows[0].Key != "openai/gpt-4o" || bd.Rows[0].Requests != 2 || bd.Rows[0].CostUSD != "0.75" {
			t.Fatalf("by requested model: %+v", bd)
		}
		r := decodeData[wire.UsageReport](t, e.must("GET", "/api/v1/organizations/default/reports/usage?period=today&requested_model_id=openai/gpt-4o&model_id=anthropic/claude-haiku-4-5-20251001", e.ownerKey, nil))
		if r.Totals.Requests != 1 || r.Totals.CostUSD != "0.5" {
			t.Fatalf("asked for gpt-4o, answered by haiku: %+v", r.Totals)
		}
	})
}

// The metering members (who counted, the parts of the counts, the
// provenance) travel through ingest and come back; gw usage explain finds
// a request's event by its request id, in its own organization only.
func TestUsageMeteringMembersAndRequestIDs(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		now := time.Now()
		ev := e.usageEvent(now, "anthropic/claude-haiku-4-5-20251001", 1000, 100, "0.0018")
		ev["request_id"], ev["usage_source"], ev["reasoning_tokens"] = "req-explain-1", "estimated", 40
		ev["cache_write_tokens"], ev["cache_write_1h_tokens"] = 200, 150
		policyID := uuid.New()
		ev["provenance"] = map[string]any{
			"prices": map[string]any{"input_per_mtok": "1", "output_per_mtok": "5", "cache_read_per_mtok": "0.10",
				"cache_write_per_mtok": "1.25", "cache_write_1h_per_mtok": "2", "long_context": false},
			"bundle_version": 7,
			"policies":       []any{map[string]any{"policy_id": policyID, "policy_name": "team", "rule_index": 1, "action": "budget", "effect": "admit"}},
			"budgets": []any{map[string]any{"policy_id": policyID, "policy_name": "team", "counter": policyID.String() + "/day/shared",
				"period": "day", "aggregation": "shared", "amount_usd": "10"}},
		}
		other := e.usageEvent(now.Add(-time.Second), "openai/gpt-4o", 1, 1, "0.1")
		other["request_id"] = "req-explain-2"
		e.must("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{ev, other}})

		for _, path := range []string{"/api/v1/organizations/default/usage-events?request_id=req-explain-1",
			"/api/v1/organizations/default/workspaces/default/usage-events?request_id=req-explain-1"} {
			got := decodeData[[]wire.UsageEvent](t, e.must("GET", path, e.ownerKey, nil))
			if len(got) != 1 {
				t.Fatalf("%s: %d events", path, len(got))
			}
			g := got[0]
			p := g.Provenance
			if g.UsageSource != "estimated" || g.ReasoningTokens != 40 || g.CacheWrite1hTokens != 150 || p == nil || p.Prices == nil ||
				p.Prices.CacheWrite1hPerMTok != "2" || p.BundleVersion != 7 || len(p.Policies) != 1 || p.Policies[0].Action != "budget" ||
				len(p.Budgets) != 1 || p.Budgets[0].AmountUSD != "10" {
				t.Fatalf("%s: %+v %+v", path, g, p)
			}
		}
		if got := decodeData[[]wire.UsageEvent](t, e.must("GET", "/api/v1/organizations/default/usage-events?request_id=req-none", e.ownerKey, nil)); len(got) != 0 {
			t.Fatalf("an unknown request id found %d events", len(got))
		}
		// Another organization's member sees none of these by their ids.
		e.must("POST", "/api/v1/instance/organizations", e.ownerKey, map[string]any{"name": "Globex", "slug": "globex"})
		outsider := e.key("/api/v1/organizations/globex", e.ownerKey, []string{"usage.read"}, nil).Token
		if st, raw := e.do("GET", "/api/v1/organizations/default/usage-events?request_id=req-explain-1", outsider, nil); st != http.StatusForbidden {
			t.Fatalf("another tenant's key: %d %s", st, raw)
		}
		if st, raw := e.do("GET", "/api/v1/organizations/default/usage-events?request_id="+strings.Repeat("x", 101), e.ownerKey, nil); st != 422 ||
			!strings.Contains(string(raw), "request_id") {
			t.Fatalf("too long a request id: %d %s", st, raw)
		}

		bad := e.usageEvent(now, "openai/gpt-4o", 10, 5, "0.1")
		bad["usage_source"], bad["reasoning_tokens"], bad["cache_write_1h_tokens"] = "guessed", 6, 1
		bad["provenance"] = map[string]any{"prices": map[string]any{"input_per_mtok": "1e3", "output_per_mtok": "1", "cache_read_per_mtok": "1",
			"cache_write_per_mtok": "1", "cache_write_1h_per_mtok": "1", "long_context": false}, "bundle_version": -1,
			"policies": []any{map[string]any{"policy_id": uuid.New(), "policy_name": "p", "rule_index": 0, "action": "Drop Tables", "effect": "admit"}},
			"budgets":  []any{}}
		st, raw := e.do("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{bad}})
		want := []string{"body.events.0.usage_source:literal_error", "body.events.0.reasoning_tokens:less_than_equal",
			"body.events.0.cache_write_1h_tokens:less_than_equal", "body.events.0.provenance.prices.input_per_mtok:string_pattern_mismatch",
			"body.events.0.provenance.bundle_version:greater_than_equal", "body.events.0.provenance.policies.0.action:string_pattern_mismatch"}
		if st != 422 || !containsAll(issueSet(t, raw), want) {
			t.Fatalf("bad metering members: %d %s", st, raw)
		}
		unknown := e.usageEvent(now, "openai/gpt-4o", 10, 5, "0.1")
		unknown["provenance"] = map[string]any{"bundle_version": 1, "policies": []any{}, "budgets": []any{}, "secret": "x"}
		if st, raw := e.do("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{unknown}}); st != 422 ||
			!strings.Contains(string(raw), "provenance") {
			t.Fatalf("an unknown provenance member: %d %s", st, raw)
		}
	})
}
