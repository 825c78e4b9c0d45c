package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// A remote data plane tags usage as the control plane's own does (issue
// 21): the key's tags come in its bundle, the header's with the request,
// and the event reaches the control plane through the spool and ingest.
func TestRemoteDataPlaneTagsUsage(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			cp := startServer(t, server.Config{Role: server.RoleAll, DB: storetest.Open(t, d), Keyring: keyring(t)})
			up := providerstest.NewOpenAI(t, "sk-upstream-tags")
			if _, err := cp.Owner.CreateCredential(ctx, client.OrgScope("default"), wire.ProviderCredentialCreate{
				Provider: "openai", Label: "fake", Secret: up.Key, BaseURL: up.BaseURL()}); err != nil {
				t.Fatal(err)
			}
			dp := remotePlane(t, cp.URL, dataPlaneToken(t, cp), "dp-tags", t.TempDir(), nil)
			enroll(t, cp, "dp-tags", nil)
			resp, raw := playgroundCall(t, cp.URL, "POST", "/api/v1/organizations/default/workspaces/default/inference-keys", cp.token,
				`{"name":"tagged","tags":{"team":"search"}}`)
			if resp.StatusCode != 200 {
				t.Fatalf("inference key: %d %s", resp.StatusCode, raw)
			}
			var key struct{ Data wire.InferenceKey }
			if err := json.Unmarshal([]byte(raw), &key); err != nil {
				t.Fatal(err)
			}
			send := func() int {
				req, _ := http.NewRequest("POST", dp.URL+"/inf/v1/chat/completions",
					strings.NewReader(`{"model":"`+gptMini+`","messages":[{"role":"user","content":"hi"}]}`))
				req.Header.Set("Authorization", "Bearer "+key.Data.Token)
				req.Header.Set("X-Gw-Tags", "team=ads, feature=chat")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			waitUntil(t, "the remote data plane to serve the key", func() bool { return send() == 200 })
			waitUntil(t, "the remote data plane's event at the control plane", func() bool {
				resp, raw := playgroundCall(t, cp.URL, "GET", "/api/v1/organizations/default/usage-events?limit=5", cp.token, "")
				if resp.StatusCode != 200 {
					t.Fatalf("events: %d %s", resp.StatusCode, raw)
				}
				var out struct{ Data []wire.UsageEvent }
				if err := json.Unmarshal([]byte(raw), &out); err != nil {
					t.Fatal(err)
				}
				for _, e := range out.Data {
					if e.Status == "ok" && e.Tags["team"] == "search" && e.Tags["feature"] == "chat" && len(e.Tags) == 2 {
						return true
					}
				}
				return false
			})
		})
	}
}

// A tag budget holds (issue 28): an untagged key naming the budget's tag
// in X-Gw-Tags is refused (400 tag_not_allowed) — with the budget's value
// or another team's —, the tagged key spends the budget until it is
// refused, and the usage report by the tag equals the budget's spend.
func TestTagBudgetHolds(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			cp := startServer(t, server.Config{Role: server.RoleAll, DB: storetest.Open(t, d), Keyring: keyring(t)})
			up := providerstest.NewOpenAI(t, "sk-upstream-tag-budget")
			up.SetDefault(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 10, Output: 100}})
			if _, err := cp.Owner.CreateCredential(ctx, client.OrgScope("default"), wire.ProviderCredentialCreate{
				Provider: "openai", Label: "fake", Secret: up.Key, BaseURL: up.BaseURL()}); err != nil {
				t.Fatal(err)
			}
			ads, err := cp.Owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "ads", Tags: map[string]string{"team": "ads"}})
			if err != nil {
				t.Fatal(err)
			}
			plain, err := cp.Owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "plain"})
			if err != nil {
				t.Fatal(err)
			}
			// About five requests' cost ($0.0000615 each: 10 in, 100 out on
			// gpt-4o-mini).
			tb, err := cp.Owner.CreateTagBudget(ctx, "default", "default", wire.TagBudgetCreate{TagKey: "team", TagValue: "ads",
				AmountUSD: "0.00032", Period: "day"})
			if err != nil {
				t.Fatal(err)
			}
			body := `{"model":"` + gptMini + `","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`
			waitUntil(t, "the plane to serve the tagged key", func() bool {
				return chat(t, cp.URL, plain.Token, body).StatusCode == 200
			})
			for _, h := range []string{"team=ads", "team=finance", "team=search, feature=chat"} {
				req, _ := http.NewRequest("POST", cp.URL+"/inf/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+plain.Token)
				req.Header.Set("X-Gw-Tags", h)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 400 || !strings.Contains(string(raw), `"code":"tag_not_allowed"`) {
					t.Fatalf("an untagged key with %s: %d %s", h, resp.StatusCode, raw)
				}
			}
			served := 0
			for range 20 {
				if chat(t, cp.URL, ads.Token, body, "X-Gw-Tags", "team=ads").StatusCode != 200 {
					break
				}
				served++
			}
			if served == 0 || served > 5 {
				t.Fatalf("the tagged key was served %d times on a budget of 5", served)
			}
			var report wire.UsageReport
			var spent string
			waitUntil(t, "the budget's spend to equal the report by tag", func() bool {
				if report, err = cp.Owner.UsageReport(ctx, "default", client.UsageQuery{Period: "today", Tags: []string{"team:ads"}}); err != nil {
					t.Fatal(err)
				}
				states, err := cp.Owner.ListBudgets(ctx, "default", "default")
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range states {
					if s.PolicyID == tb.PolicyID {
						spent = s.SpentUSD
					}
				}
				// The report counts the refusal too, at no cost.
				return report.Totals.Requests == int64(served)+1 && equalUSD(spent, report.Totals.CostUSD)
			})
			t.Logf("served %d; report %+v; budget spent %s", served, report.Totals, spent)
			if !lessOrEqualUSD(spent, "0.00032") {
				t.Fatalf("the budget spent %s of 0.00032", spent)
			}
		})
	}
}

func equalUSD(a, b string) bool {
	x, err1 := decimal.NewFromString(a)
	y, err2 := decimal.NewFromString(b)
	return err1 == nil && err2 == nil && x.Equal(y)
}

func lessOrEqualUSD(a, b string) bool {
	x, err1 := decimal.NewFromString(a)
	y, err2 := decimal.NewFromString(b)
	return err1 == nil && err2 == nil && x.LessThanOrEqual(y)
}
