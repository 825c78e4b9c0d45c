package dataplane_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
)

const gpt5, gpt54 = "openai/gpt-5", "openai/gpt-5.4"

var usual = providerstest.Usage{Input: 1000, Output: 100, CacheRead: 300}

// priceClassCases are TestPriceClasses' cases, and the price-class rows of
// docs/metering.md's conformance table (priceClassRows).
var priceClassCases = []struct {
	name, model, endpoint string
	stream                bool
	asked, answered       string
	usage                 providerstest.Usage
	// cost is the event's cost_usd; tier its service_tier ("" for
	// null); class the provenance's prices.service_tier; long the
	// long-context flag.
	cost, tier, class string
	long              bool
}{
	// 1,000 × $2.50 + 100 × $20 + 300 × $0.25 per MTok.
	{"priority asked and confirmed", gpt5, "chat", false, "priority", "priority", usual, "0.004575", "priority", "priority", false},
	// 1,000 × $0.625 + 100 × $5 + 300 × $0.0625.
	{"flex asked and confirmed, streamed", gpt5, "chat", true, "flex", "flex", usual, "0.00114375", "flex", "flex", false},
	{"the answer names a dearer tier than asked", gpt5, "chat", false, "flex", "priority", usual, "0.004575", "priority", "priority", false},
	// 1,000 × $1.25 + 100 × $10 + 300 × $0.125: priority was asked,
	// the answer says it ran at default.
	{"the answer names a cheaper tier than asked", gpt5, "chat", true, "priority", "default", usual, "0.0022875", "default", "", false},
	{"no tier named", gpt5, "chat", false, "", "", usual, "0.0022875", "", "", false},
	{"the answer names none: the tier asked for", gpt5, "chat", false, "flex", "", usual, "0.00114375", "flex", "flex", false},
	{"auto asked, nothing confirmed", gpt5, "chat", false, "auto", "", usual, "0.0022875", "", "", false},
	// OpenAI's explicit cache writes at the cache-write price: 1,000 ×
	// $1.25 + 4,000 × $1.25 + 10 × $10.
	{"OpenAI cache writes (4,000 in `prompt_tokens_details.cache_write_tokens`) at the cache-write price", gpt5, "chat", false, "", "", providerstest.Usage{Input: 1000, CacheWrite: 4000, Output: 10}, "0.00635", "", "", false},
	{"OpenAI cache writes (`input_tokens_details.cache_write_tokens`)", gpt5, "responses", true, "", "", providerstest.Usage{Input: 1000, CacheWrite: 4000, Output: 10}, "0.00635", "", "", false},
	// 300,000 × $5 + 1,000 × $22.50: above 272k the whole request.
	{"above 272k input tokens (300,000): the whole request at the long-context prices", gpt54, "chat", false, "", "default", providerstest.Usage{Input: 300_000, Output: 1000}, "1.5225", "default", "", true},
	// 272,000 × $2.50 + 1,000 × $15: at the threshold, standard.
	{"272k input tokens exactly: the standard prices", gpt54, "chat", true, "", "", providerstest.Usage{Input: 200_000, CacheRead: 72_000, Output: 1000}, "0.533", "", "", false},
	// Flex above 272k: 300,000 × $2.50 + 1,000 × $11.25.
	{"above 272k at flex: the flex tier's long context", gpt54, "responses", false, "flex", "flex", providerstest.Usage{Input: 300_000, Output: 1000}, "0.76125", "flex", "flex", true},
}

// priceClassRows renders priceClassCases as rows of docs/metering.md's
// conformance table.
func priceClassRows() string {
	var b strings.Builder
	for _, c := range priceClassCases {
		stream := map[bool]string{false: "no", true: "yes"}[c.stream]
		endpoint := map[string]string{"chat": "chat.completions", "responses": "responses"}[c.endpoint]
		named := "asked " + orNone(c.asked) + ", answered " + orNone(c.answered)
		tier := "null"
		if c.tier != "" {
			tier = "`" + c.tier + "`"
		}
		class := "the base prices"
		if c.class != "" {
			class = "the `" + c.class + "` tier's prices"
		}
		if c.long {
			class += ", long context"
		}
		fmt.Fprintf(&b, "| %s | %s | %s × openai: %s | ok | `upstream` | %s; $%s at %s; `service_tier` %s |\n",
			c.name, stream, endpoint, strings.TrimPrefix(c.model, "openai/"), named, c.cost, class, tier)
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return "`" + s + "`"
}

// TestPriceClasses bills each of the 2026 price classes through the fake
// OpenAI upstream with the default catalog's figures, and checks the event,
// its provenance and the stored row on both databases: the service tier
// the answer names (over the one asked for, dearer or cheaper), the one
// asked for when the answer names none, OpenAI's explicit cache writes,
// and GPT-5.4's long context above 272,000 input tokens (docs/metering.md,
// the conformance table's price-class rows).
func TestPriceClasses(t *testing.T) {
	cases := priceClassCases
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e, stored := meteredEnv(t, db)
		for _, c := range cases {
			e.openai.Enqueue(providerstest.Reply{Text: "priced", Usage: c.usage, ServiceTier: c.answered})
			tier := ""
			if c.asked != "" {
				tier = fmt.Sprintf(`,"service_tier":%q`, c.asked)
			}
			path, body := "/inf/v1/chat/completions", fmt.Sprintf(`{"model":%q,"stream":%v%s,"messages":[{"role":"user","content":"price me"}]}`, c.model, c.stream, tier)
			if c.stream && c.endpoint == "chat" {
				body = fmt.Sprintf(`{"model":%q,"stream":true,"stream_options":{"include_usage":true}%s,"messages":[{"role":"user","content":"price me"}]}`, c.model, tier)
			}
			if c.endpoint == "responses" {
				path, body = "/inf/v1/responses", fmt.Sprintf(`{"model":%q,"stream":%v%s,"input":"price me"}`, c.model, c.stream, tier)
			}
			req, _ := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+e.token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d %s", c.name, resp.StatusCode, raw)
			}
			if up := e.openai.Last(t); c.asked != "" && up.Body["service_tier"] != c.asked {
				t.Fatalf("%s: the upstream was asked %v", c.name, up.Body["service_tier"])
			}
			ev := e.usage.last(t, len(e.usage.snapshot()))
			p := ev.Provenance
			if ev.Status != "ok" || ev.CostUSD != c.cost || tierOf(ev.ServiceTier) != c.tier || p == nil || p.Prices == nil ||
				p.Prices.ServiceTier != c.class || p.Prices.LongContext != c.long || ev.CacheWriteTokens != c.usage.CacheWrite ||
				ev.InputTokens != c.usage.Input {
				t.Fatalf("%s: event %+v (service tier %q), prices %+v", c.name, ev, tierOf(ev.ServiceTier), p)
			}
			if c.tier == "" && ev.ServiceTier != nil {
				t.Fatalf("%s: service tier %q, want null", c.name, *ev.ServiceTier)
			}
			found := false
			for _, row := range stored() {
				if row.ID != ev.ID {
					continue
				}
				found = true
				if tierOf(row.ServiceTier) != c.tier || (c.tier == "") != (row.ServiceTier == nil) || row.CacheWriteTokens != c.usage.CacheWrite ||
					row.Provenance == nil || row.Provenance.Prices == nil || row.Provenance.Prices.ServiceTier != c.class {
					t.Fatalf("%s: stored %+v (service tier %q)", c.name, row, tierOf(row.ServiceTier))
				}
			}
			if !found {
				t.Fatalf("%s: event %s not stored", c.name, ev.ID)
			}
		}
	})
}

// tierOf is a service tier as the cases write it: "" for null.
func tierOf(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// A request's reservation bounds the tier it asks for: a budget with room
// for budgetRequest's bound at gpt-4o-mini's standard prices ($0.000052351)
// but not at its priority prices ($0.25 / $1 per MTok: $0.000087251)
// refuses the request that asks for priority and admits the one that
// does not.
func TestBudgetBoundsTheServiceTierAskedFor(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.policy(t, budgetRule("0.00006", "month", "per_key"))
		e.sync(t)
		e.openai.SetDefault(budgetReply)
		priority := strings.Replace(budgetRequest, `{`, `{"service_tier":"priority",`, 1)
		resp := e.post(t, priority)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusPaymentRequired {
			t.Fatalf("a priority request beyond the budget's room at priority prices: %d", resp.StatusCode)
		}
		resp = e.post(t, budgetRequest)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("a standard request within the budget: %d", resp.StatusCode)
		}
		if ev := e.usage.last(t, len(e.usage.snapshot())); ev.ServiceTier != nil || ev.CostUSD != "0.0000495" {
			t.Fatalf("standard request's event: %+v", ev)
		}
	})
}
