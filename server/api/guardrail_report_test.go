package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gw-gateway/gw/wire"
)

// The guardrail report (issue 32) counts each guardrail's outcomes per
// stage over the period, with the detectors named, on both databases:
// the organization's and a workspace's, filtered like the usage report;
// another organization's events never count, and its slug answers 404.
func TestGuardrailReport(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		now := time.Now().UTC()
		gr := decodeData[wire.Guardrail](t, e.must("POST", "/api/v1/organizations/default/workspaces/default/guardrails", e.ownerKey,
			map[string]any{"name": "no-secrets", "target": map[string]any{"kind": "workspace"}, "stages": []string{"input", "output"}, "action": "block", "on_error": "fail_closed",
				"detectors": []any{map[string]any{"kind": "secrets"}}}))
		id := gr.ID.String()
		rec := func(stage, outcome string, detectors ...string) map[string]any {
			if detectors == nil {
				detectors = []string{}
			}
			return map[string]any{"id": id, "name": "old-name", "stage": stage, "outcome": outcome, "detectors": detectors}
		}
		ev := func(at time.Time, model string, recs ...map[string]any) map[string]any {
			m := e.usageEvent(at, model, 1, 1, "0.01")
			m["guardrails"] = recs
			return m
		}
		gone := map[string]any{"id": "0b8e7c1e-0000-4000-8000-0000000000aa", "name": "retired", "stage": "input", "outcome": "redacted",
			"detectors": []string{"pii"}}
		events := []map[string]any{
			ev(now.Add(-time.Minute), "openai/gpt-4o", rec("input", "blocked", "secrets")),
			ev(now.Add(-2*time.Minute), "openai/gpt-4o", rec("input", "blocked", "secrets")),
			ev(now.Add(-3*time.Minute), "openai/gpt-4o", rec("input", "passed"), rec("output", "errored", "secrets")),
			ev(now.Add(-4*time.Minute), "anthropic/claude-haiku-4-5-20251001", rec("input", "skipped"), gone),
			ev(now.Add(-40*24*time.Hour), "openai/gpt-4o", rec("input", "blocked", "secrets")), // outside the period
			e.usageEvent(now.Add(-time.Minute), "openai/gpt-4o", 1, 1, "0.01"),                 // no guardrail applied
		}
		e.must("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": events})
		// Another organization's events, with the same guardrail id.
		other := decodeData[wire.Organization](t, e.must("POST", "/api/v1/instance/organizations", e.ownerKey, map[string]any{"name": "Other", "slug": "other"}))
		theirs := ev(now.Add(-time.Minute), "openai/gpt-4o", rec("input", "blocked", "secrets"))
		otherWS := decodeData[wire.Workspace](t, e.must("POST", "/api/v1/organizations/other/workspaces", e.ownerKey, map[string]any{"name": "Theirs"}))
		theirs["org_id"], theirs["workspace_id"] = other.ID, otherWS.ID
		e.must("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{theirs}})

		r := decodeData[wire.GuardrailReport](t, e.must("GET", "/api/v1/organizations/default/reports/guardrails?period=7d", e.ownerKey, nil))
		if len(r.Rows) != 3 {
			t.Fatalf("rows: %+v", r.Rows)
		}
		in, out, retired := r.Rows[0], r.Rows[2], r.Rows[1]
		if in.GuardrailID != id || in.Name != "no-secrets" || in.Deleted || in.Stage != "input" || in.Requests != 4 || in.Blocked != 2 ||
			in.Passed != 1 || in.Skipped != 1 || in.Detectors["secrets"] != 2 {
			t.Errorf("input row: %+v", in)
		}
		if retired.Name != "retired" || !retired.Deleted || retired.Redacted != 1 || retired.Detectors["pii"] != 1 {
			t.Errorf("a deleted guardrail's row: %+v", retired)
		}
		if out.Stage != "output" || out.Errored != 1 || out.Requests != 1 {
			t.Errorf("output row: %+v", out)
		}
		// The usage report's filters apply.
		r = decodeData[wire.GuardrailReport](t, e.must("GET", "/api/v1/organizations/default/reports/guardrails?period=7d&provider_id=anthropic", e.ownerKey, nil))
		if len(r.Rows) != 2 || r.Rows[0].Requests+r.Rows[1].Requests != 2 {
			t.Errorf("filtered by provider: %+v", r.Rows)
		}
		// The workspace's own report, with a workspace key holding usage.read.
		wsKey := e.key("/api/v1/organizations/default/workspaces/default", e.ownerKey, []string{"usage.read"}, nil)
		r = decodeData[wire.GuardrailReport](t, e.must("GET", "/api/v1/organizations/default/workspaces/default/reports/guardrails?period=30d", wsKey.Token, nil))
		if len(r.Rows) != 3 || r.Period.Timezone != "UTC" {
			t.Errorf("workspace report: %+v", r)
		}
		if code, _ := e.do("GET", "/api/v1/organizations/default/reports/guardrails", wsKey.Token, nil); code != 403 {
			t.Errorf("the organization's report with a workspace key: %d", code)
		}
		// The other organization sees only its own event.
		r = decodeData[wire.GuardrailReport](t, e.must("GET", "/api/v1/organizations/other/reports/guardrails?period=7d", e.ownerKey, nil))
		if len(r.Rows) != 1 || r.Rows[0].Requests != 1 || !r.Rows[0].Deleted {
			t.Errorf("the other organization's report: %+v", r.Rows)
		}
		// Bad input is a 422 naming it; another tenant's slug is a 404.
		if code, raw := e.do("GET", "/api/v1/organizations/default/reports/guardrails?period=year", e.ownerKey, nil); code != 422 || !strings.Contains(string(raw), "period") {
			t.Errorf("bad period: %d %s", code, raw)
		}
		orgKey := e.key("/api/v1/organizations/other", e.ownerKey, []string{"usage.read"}, nil)
		if code, _ := e.do("GET", "/api/v1/organizations/default/reports/guardrails", orgKey.Token, nil); code != 403 && code != 404 {
			t.Errorf("another organization's report: %d", code)
		}
	})
}
