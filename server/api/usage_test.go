package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/wire"
)

// usageEvent builds one shippable event of the bootstrap organization.
func (e *env) usageEvent(at time.Time, model string, input, output int64, cost string) map[string]any {
	return map[string]any{
		"id": uuid.New(), "org_id": e.boot.Organization.ID, "workspace_id": e.boot.Workspace.ID, "owner_id": e.boot.User.ID,
		"model": model, "provider": strings.Split(model, "/")[0], "input_tokens": input, "output_tokens": output,
		"cache_read_tokens": 0, "cache_write_tokens": 0, "cost_usd": cost, "status": "ok", "latency_ms": 120,
		"occurred_at": at.UTC().Format(time.RFC3339Nano),
	}
}

func TestUsageIngestIsIdempotentAndStrict(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		now := time.Now()
		batch := []map[string]any{e.usageEvent(now, "openai/gpt-4o", 10, 20, "0.000225"), e.usageEvent(now, "openai/gpt-4o", 1, 1, "0.1")}
		res := decodeData[wire.UsageIngestResult](t, e.must("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": batch}))
		if res.Accepted != 2 || res.Duplicates != 0 {
			t.Fatalf("first ingest: %+v", res)
		}
		res = decodeData[wire.UsageIngestResult](t, e.must("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": batch}))
		if res.Accepted != 0 || res.Duplicates != 2 {
			t.Fatalf("replayed batch: %+v", res)
		}
		bad := e.usageEvent(now, "openai/gpt-4o", -1, 0, "1e3")
		bad["status"] = "weird"
		bad["extra"] = true
		st, raw := e.do("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{bad}})
		want := []string{"body.events.0.input_tokens:greater_than_equal", "body.events.0.cost_usd:string_pattern_mismatch",
			"body.events.0.status:literal_error", "body.events.0.extra:extra_forbidden"}
		if st != 422 || !containsAll(issueSet(t, raw), want) {
			t.Fatalf("bad event: %d %s", st, raw)
		}
		if st, _ := e.do("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{}}); st != 422 {
			t.Fatalf("empty batch: %d", st)
		}
		// An organization key cannot act for the data plane.
		orgKey := e.key("/api/v1/organizations/default", e.ownerKey, []string{"usage.ingest", "usage.read"}, nil)
		if st, _ := e.do("POST", "/api/v1/data-plane/usage-events", orgKey.Token, map[string]any{"events": batch}); st != 403 {
			t.Fatalf("org key ingesting: %d", st)
		}
	})
}

func TestUsageReport(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		now := time.Now().UTC()
		day := 24 * time.Hour
		events := []map[string]any{
			e.usageEvent(now.Add(-time.Minute), "openai/gpt-4o", 100, 50, "0.000750"),
			e.usageEvent(now.Add(-2*day), "anthropic/claude-haiku-4-5-20251001", 1000, 10, "0.00105"),
			e.usageEvent(now.Add(-8*day), "openai/gpt-4o", 7, 7, "0.5"), // previous 7-day period
			e.usageEvent(now.Add(-40*day), "openai/gpt-4o", 7, 7, "9"),  // outside both
		}
		e.must("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": events})

		raw := e.must("GET", "/api/v1/organizations/default/reports/usage?period=7d", e.ownerKey, nil)
		r := decodeData[wire.UsageReport](t, raw)
		if r.Totals.Requests != 2 || r.Totals.InputTokens != 1100 || r.Totals.OutputTokens != 60 || r.Totals.CostUSD != "0.0018" {
			t.Fatalf("totals: %+v", r.Totals)
		}
		if r.Comparison.Requests != 1 || r.Comparison.CostUSD != "0.5" {
			t.Fatalf("comparison: %+v", r.Comparison)
		}
		if len(r.Daily) != 7 || r.Daily[6].Requests != 1 || r.Daily[4].Requests != 1 || r.Period.Timezone != "UTC" {
			t.Fatalf("daily: %+v", r.Daily)
		}
		for _, member := range []string{"totals.cache_read_tokens", "comparison.cache_write_tokens", "daily.0.date", "period.previous_start_at", "updated_at"} {
			if jsonPath(t, raw, "data."+member) == nil {
				t.Errorf("report lacks %s: %s", member, raw)
			}
		}
		// Filters and time zones.
		r = decodeData[wire.UsageReport](t, e.must("GET", "/api/v1/organizations/default/reports/usage?period=30d&model_id=openai/gpt-4o&timezone=Asia/Kolkata", e.ownerKey, nil))
		if r.Totals.Requests != 2 || r.Period.Timezone != "Asia/Kolkata" || len(r.Daily) != 30 || r.Daily[0].Date.Format("15:04") != "00:00" {
			t.Fatalf("filtered: %+v", r.Totals)
		}
		if _, off := r.Daily[0].Date.Zone(); off != 19800 {
			t.Fatalf("days are not local midnights: %v", r.Daily[0].Date)
		}
		from := now.Add(-3 * day).Format(time.DateOnly)
		to := now.Format(time.DateOnly)
		r = decodeData[wire.UsageReport](t, e.must("GET", "/api/v1/organizations/default/reports/usage?start_date="+from+"&end_date="+to, e.ownerKey, nil))
		if r.Totals.Requests != 2 || len(r.Daily) != 4 {
			t.Fatalf("custom: %+v, %d days", r.Totals, len(r.Daily))
		}
		cases := map[string]string{
			"period=year":                       "query.period:literal_error",
			"timezone=Mars/Olympus":             "query.timezone:value_error",
			"workspace_id=nope":                 "query.workspace_id:uuid_parsing",
			"period=custom":                     "query.start_date:value_error",
			"period=custom&start_at=2026-01-01": "query.start_at:datetime_parsing",
			"period=custom&start_date=2026-02-01&end_date=2026-01-01": "query.start_date:value_error",
			"period=7d&start_date=2026-01-01&end_date=2026-01-02":     "query.period:value_error",
		}
		for q, want := range cases {
			st, raw := e.do("GET", "/api/v1/organizations/default/reports/usage?"+q, e.ownerKey, nil)
			if st != 422 || !containsAll(issueSet(t, raw), []string{want}) {
				t.Errorf("%s: %d %s", q, st, raw)
			}
		}
		b := decodeData[wire.UsageBreakdown](t, e.must("GET", "/api/v1/organizations/default/reports/usage/breakdown?by=model&period=7d", e.ownerKey, nil))
		if len(b.Rows) != 2 || b.Rows[0].Key != "anthropic/claude-haiku-4-5-20251001" || b.Rows[0].CostUSD != "0.00105" {
			t.Fatalf("breakdown: %+v", b)
		}
		if st, _ := e.do("GET", "/api/v1/organizations/default/reports/usage/breakdown?by=color", e.ownerKey, nil); st != 422 {
			t.Fatalf("bad dimension: %d", st)
		}
	})
}

func TestUsageEventsSurviveWorkspaceDeletionAndPage(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		ws := decodeData[wire.Workspace](t, e.must("POST", "/api/v1/organizations/default/workspaces", e.ownerKey, map[string]any{"name": "Temp"}))
		var batch []map[string]any
		for i := 0; i < 5; i++ {
			ev := e.usageEvent(time.Now().Add(-time.Duration(i)*time.Minute), "openai/gpt-4o", 1, 1, "0.001")
			ev["workspace_id"] = ws.ID
			batch = append(batch, ev)
		}
		e.must("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": batch})
		e.must("DELETE", "/api/v1/organizations/default/workspaces/temp", e.ownerKey, nil)
		var seen []string
		path := "/api/v1/organizations/default/usage-events?limit=2"
		for pages := 0; path != ""; pages++ {
			raw := e.must("GET", path, e.ownerKey, nil)
			for _, ev := range decodeData[[]wire.UsageEvent](t, raw) {
				seen = append(seen, ev.ID.String())
			}
			path = ""
			if next, ok := jsonPath(t, raw, "page.next_cursor").(string); ok {
				path = "/api/v1/organizations/default/usage-events?limit=2&cursor=" + next
			}
			if pages > 5 {
				t.Fatal("pagination does not end")
			}
		}
		if len(seen) != 5 || seen[0] != batch[0]["id"].(uuid.UUID).String() {
			t.Fatalf("events after workspace deletion: %v", seen)
		}
	})
}

func TestDataPlaneBundlesAndHeartbeats(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		// Polling is for an enrolled data plane (enrollment_test.go).
		dp, err := secrets.GenerateDataPlaneKey()
		if err != nil {
			t.Fatal(err)
		}
		e.must("POST", "/api/v1/data-plane/enrollments", e.ownerKey, map[string]any{"id": "dp-1", "public_key": dp.Public().String()})
		const poll = "/api/v1/data-plane/bundles?data_plane_id=dp-1"
		raw := e.must("GET", poll, e.ownerKey, nil)
		resp := e.doResp("GET", poll, e.ownerKey, nil)
		etag := resp.Header.Get("ETag")
		resp.Body.Close()
		if etag == "" || jsonPath(t, raw, "data.bundles") == nil {
			t.Fatalf("bundles: %s (etag %q)", raw, etag)
		}
		req, _ := http.NewRequest("GET", e.srv.URL+poll, nil)
		req.Header.Set("Authorization", "Bearer "+e.ownerKey)
		req.Header.Set("If-None-Match", etag)
		r2, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r2.Body.Close()
		if r2.StatusCode != 304 {
			t.Fatalf("unchanged bundles: %d", r2.StatusCode)
		}
		// A pending data plane holds no bundle (TestHeartbeatIsTheEnrolledPlanes).
		hb := map[string]any{"id": "dp-1", "version": "0.1.0", "bundle_versions": map[string]any{}, "spool_depth": 0}
		got := decodeData[wire.DataPlaneInstance](t, e.must("POST", "/api/v1/data-plane/heartbeats", e.ownerKey, hb))
		if got.Status != "healthy" || got.Enrollment != "pending" {
			t.Fatalf("heartbeat: %+v", got)
		}
		list := decodeData[[]wire.DataPlaneInstance](t, e.must("GET", "/api/v1/instance/data-planes", e.ownerKey, nil))
		if len(list) != 1 || list[0].ID != "dp-1" {
			t.Fatalf("data planes: %+v", list)
		}
		hb["bundle_versions"] = map[string]any{"not-a-uuid": 1}
		hb["id"] = "bad id!"
		if st, raw := e.do("POST", "/api/v1/data-plane/heartbeats", e.ownerKey, hb); st != 422 || !containsAll(issueSet(t, raw),
			[]string{"body.id:string_pattern_mismatch", "body.bundle_versions.not-a-uuid:uuid_parsing"}) {
			t.Fatalf("bad heartbeat: %d %s", st, raw)
		}
	})
}

// A workspace-scoped key reads its workspace's usage report at the
// workspace's URL; it cannot name another workspace there, nor read
// another workspace's report (issue 22, row 3).
func TestWorkspaceUsageReport(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		other := decodeData[wire.Workspace](t, e.must("POST", "/api/v1/organizations/default/workspaces", e.ownerKey, map[string]any{"name": "Other"}))
		wsKey := e.key("/api/v1/organizations/default/workspaces/default", e.ownerKey, []string{"usage.read"}, nil)
		base := "/api/v1/organizations/default/workspaces/default/reports/usage"
		r := decodeData[wire.UsageReport](t, e.must("GET", base+"?period=7d", wsKey.Token, nil))
		if r.Totals.CostUSD == "" {
			t.Fatalf("report: %+v", r)
		}
		b := decodeData[wire.UsageBreakdown](t, e.must("GET", base+"/breakdown?by=model", wsKey.Token, nil))
		if b.By != "model" {
			t.Fatalf("breakdown: %+v", b)
		}
		if code, body := e.do("GET", base+"?workspace_id="+other.ID.String(), wsKey.Token, nil); code != 422 || !strings.Contains(string(body), "workspace_id") {
			t.Fatalf("another workspace's id in the query: %d %s", code, body)
		}
		if code, _ := e.do("GET", "/api/v1/organizations/default/workspaces/other/reports/usage", wsKey.Token, nil); code != 403 {
			t.Fatalf("another workspace's report: %d", code)
		}
		// The organization's report stays out of the workspace key's reach.
		if code, _ := e.do("GET", "/api/v1/organizations/default/reports/usage", wsKey.Token, nil); code != 403 {
			t.Fatalf("the organization's report: %d", code)
		}
	})
}
