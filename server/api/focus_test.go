package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/usage"
	"github.com/gw-gateway/gw/wire"
)

// TestFocusExport stores events of several models, workspaces, tag sets
// and price classes, exports them as FOCUS 1.3 and 1.4 in JSON and CSV,
// validates every export against the column rules, and holds its sums to
// the usage report's to the nano-dollar, per day and in total.
func TestFocusExport(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		other := decodeData[wire.Workspace](t, e.must("POST", "/api/v1/organizations/default/workspaces", e.ownerKey,
			map[string]any{"name": "Research", "slug": "research"}))
		gpt := catalog.Pricing{InputPerMTok: "2.5", OutputPerMTok: "10", CacheReadPerMTok: "1.25", CacheWritePerMTok: "0"}
		claude := catalog.Pricing{InputPerMTok: "1", OutputPerMTok: "5", CacheReadPerMTok: "0.1", CacheWritePerMTok: "1.25", CacheWrite1hPerMTok: "2"}
		day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -3)
		var events []store.UsageEvent
		add := func(at time.Time, ws uuid.UUID, model string, p catalog.Pricing, tk catalog.Tokens, reasoning int64, tags store.Tags) {
			cost, err := p.CostNanoUSD(tk)
			if err != nil {
				t.Fatal(err)
			}
			pp, _ := p.Parse()
			a := pp.AppliedTo(tk)
			events = append(events, store.UsageEvent{ID: uuid.New(), OrgID: e.boot.Organization.ID, WorkspaceID: ws, Model: model,
				Provider: strings.Split(model, "/")[0], RequestedModel: model, InputTokens: tk.Input, OutputTokens: tk.Output,
				CacheReadTokens: tk.CacheRead, CacheWriteTokens: tk.CacheWrite, CacheWrite1hTokens: tk.CacheWrite1h, ReasoningTokens: reasoning,
				CostNanoUSD: cost, Status: "ok", OccurredAt: at, ReceivedAt: at, Bucket: store.UsageBucket(at), UsageSource: "upstream", Tags: tags,
				Provenance: &store.UsageProvenance{Prices: &wire.UsagePrices{InputPerMTok: a.InputPerMTok, OutputPerMTok: a.OutputPerMTok,
					CacheReadPerMTok: a.CacheReadPerMTok, CacheWritePerMTok: a.CacheWritePerMTok, CacheWrite1hPerMTok: a.CacheWrite1hPerMTok},
					Policies: []wire.UsagePolicy{}, Budgets: []wire.UsageBudget{}}})
		}
		ws := e.boot.Workspace.ID
		team := store.Tags{"team": "search"}
		for i := range 3 {
			at := day.Add(time.Duration(i)*26*time.Hour + 5*time.Minute)
			add(at, ws, "openai/gpt-4o", gpt, catalog.Tokens{Input: 1003 + int64(i), Output: 77, CacheRead: 333}, 21, team)
			add(at.Add(time.Minute), ws, "openai/gpt-4o", gpt, catalog.Tokens{Input: 7, Output: 3}, 0, nil)
			add(at.Add(2*time.Minute), other.ID, "anthropic/claude-haiku-4-5", claude,
				catalog.Tokens{Input: 11, Output: 5, CacheRead: 9, CacheWrite: 101, CacheWrite1h: 37}, 0, store.Tags{"team": "ml", "env": "prod"})
		}
		// A denied request: no tokens, no cost, no row.
		events = append(events, store.UsageEvent{ID: uuid.New(), OrgID: e.boot.Organization.ID, WorkspaceID: ws, Model: "openai/gpt-4o",
			Provider: "openai", RequestedModel: "openai/gpt-4o", Status: "denied", OccurredAt: day.Add(time.Hour), ReceivedAt: day.Add(time.Hour), Bucket: store.UsageBucket(day.Add(time.Hour))})
		if _, err := e.st.InsertUsageEvents(ctx, events); err != nil {
			t.Fatal(err)
		}
		from, to := day.Format(time.DateOnly), day.AddDate(0, 0, 3).Format(time.DateOnly)
		report := decodeData[wire.UsageReport](t, e.must("GET", "/api/v1/organizations/default/reports/usage?start_date="+from+"&end_date="+to, e.ownerKey, nil))
		want, _ := catalog.ParseNanoUSD(report.Totals.CostUSD)
		if want == 0 {
			t.Fatalf("the report counts nothing: %+v", report.Totals)
		}
		for _, version := range wire.FocusVersions {
			base := "/api/v1/organizations/default/reports/focus?start_date=" + from + "&end_date=" + to + "&version=" + version
			raw := e.must("GET", base, e.ownerKey, nil)
			if err := usage.ValidateFocusJSON(version, raw); err != nil {
				t.Fatalf("FOCUS %s JSON: %v", version, err)
			}
			rows := decodeData[[]map[string]any](t, raw)
			var total int64
			perDay := map[string]int64{}
			classes, wss, models := map[string]bool{}, map[string]bool{}, map[string]bool{}
			for _, r := range rows {
				n, err := catalog.ParseNanoUSD(decimal.RequireFromString(string(jsonNumber(r["BilledCost"]))).String())
				if err != nil {
					t.Fatal(err)
				}
				total += n
				perDay[r["ChargePeriodStart"].(string)[:10]] += n
				classes[strings.Split(r["SkuId"].(string), ":")[1]] = true
				wss[r["SubAccountName"].(string)], models[r["ResourceId"].(string)] = true, true
			}
			if total != want {
				t.Fatalf("FOCUS %s sums to %d nano-dollars, the usage report to %d", version, total, want)
			}
			for _, d := range report.Daily {
				got, _ := catalog.ParseNanoUSD(d.CostUSD)
				if perDay[d.Date.UTC().Format(time.DateOnly)] != got {
					t.Errorf("FOCUS %s day %s: %d, report %d", version, d.Date, perDay[d.Date.UTC().Format(time.DateOnly)], got)
				}
			}
			if len(classes) != 6 || len(wss) != 2 || len(models) != 2 {
				t.Fatalf("FOCUS %s: classes %v, workspaces %v, models %v", version, classes, wss, models)
			}
			providerCols := []string{"ServiceProviderName", "HostProviderName", "InvoiceIssuerName"}
			if version == "1.3" {
				providerCols = append(providerCols, "ProviderName", "PublisherName")
			} else {
				// Deprecated in 1.3, removed in 1.4.
				for _, col := range []string{"ProviderName", "PublisherName"} {
					if _, ok := rows[0][col]; ok {
						t.Errorf("FOCUS %s still has %s", version, col)
					}
				}
			}
			for _, col := range providerCols {
				if rows[0][col] != "openai" && rows[0][col] != "anthropic" {
					t.Errorf("FOCUS %s: %s is %v", version, col, rows[0][col])
				}
			}
			resp := e.doResp("GET", base+"&format=csv", e.ownerKey, nil)
			var b strings.Builder
			buf := make([]byte, 4096)
			for {
				n, err := resp.Body.Read(buf)
				b.Write(buf[:n])
				if err != nil {
					break
				}
			}
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") {
				t.Fatalf("CSV: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			if err := usage.ValidateFocusCSV(version, []byte(b.String())); err != nil {
				t.Fatalf("FOCUS %s CSV: %v", version, err)
			}
			if lines := strings.Count(b.String(), "\n"); lines != len(rows)+1 {
				t.Fatalf("CSV has %d lines for %d rows", lines, len(rows))
			}
		}
		for q, want := range map[string]string{
			"start_date=" + from: "query.end_date:missing",
			"start_date=" + from + "&end_date=" + to + "&version=2":  "query.version:literal_error",
			"start_date=" + from + "&end_date=" + to + "&format=xml": "query.format:literal_error",
			"start_date=" + to + "&end_date=" + from:                 "query.start_date:value_error",
		} {
			st, raw := e.do("GET", "/api/v1/organizations/default/reports/focus?"+q, e.ownerKey, nil)
			if st != 422 || !containsAll(issueSet(t, raw), []string{want}) {
				t.Errorf("%s: %d %s", q, st, raw)
			}
		}
	})
}

func jsonNumber(v any) json.Number {
	switch x := v.(type) {
	case float64:
		return json.Number(decimal.NewFromFloat(x).String())
	case json.Number:
		return x
	}
	return ""
}

// The FOCUS export is confined to its organization: another
// organization's events never appear in it, that organization's own
// export holds only them, and a key of one organization asking for the
// other's export is refused.
func TestFocusExportTenancy(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		now := time.Now().UTC()
		from, to := now.AddDate(0, 0, -1).Format(time.DateOnly), now.Format(time.DateOnly)
		e.must("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{
			e.usageEvent(now.Add(-time.Minute), "openai/gpt-4o", 1000, 10, "0.01")}})
		other := decodeData[wire.Organization](t, e.must("POST", "/api/v1/instance/organizations", e.ownerKey, map[string]any{"name": "Other", "slug": "other"}))
		otherWS := decodeData[wire.Workspace](t, e.must("POST", "/api/v1/organizations/other/workspaces", e.ownerKey, map[string]any{"name": "Theirs"}))
		theirs := e.usageEvent(now.Add(-time.Minute), "anthropic/claude-haiku-4-5-20251001", 2000, 20, "0.03")
		theirs["org_id"], theirs["workspace_id"] = other.ID, otherWS.ID
		e.must("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{theirs}})

		export := func(org string) []map[string]any {
			raw := e.must("GET", "/api/v1/organizations/"+org+"/reports/focus?start_date="+from+"&end_date="+to, e.ownerKey, nil)
			return decodeData[[]map[string]any](t, raw)
		}
		for org, want := range map[string]struct{ model, account string }{
			"default": {"openai/gpt-4o", e.boot.Workspace.ID.String()},
			"other":   {"anthropic/claude-haiku-4-5-20251001", otherWS.ID.String()},
		} {
			rows := export(org)
			if len(rows) == 0 {
				t.Fatalf("%s: no rows", org)
			}
			for _, r := range rows {
				if r["ResourceId"] != want.model || r["SubAccountId"] != want.account {
					t.Errorf("%s's export holds another tenant's row: %v", org, r)
				}
			}
		}
		otherKey := e.key("/api/v1/organizations/other", e.ownerKey, []string{"usage.read"}, nil)
		if code, _ := e.do("GET", "/api/v1/organizations/default/reports/focus?start_date="+from+"&end_date="+to, otherKey.Token, nil); code != 403 && code != 404 {
			t.Errorf("another organization's key read this one's export: %d", code)
		}
	})
}
