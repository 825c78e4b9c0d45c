package dataplane_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/shopspring/decimal"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// batchMeteringCases are TestBatchMetering's cases and the batch rows of
// docs/metering.md's conformance table (batchRows): a line run on the
// provider's batch API (native), one event at the batch prices of the
// tokens reported, and by gw (gateway), one event at the synchronous
// prices its upstream billed (gw sent it as a synchronous request), at
// OpenAI and Anthropic; a line the provider errors costs nothing.
var batchMeteringCases = []struct {
	name   string
	native bool
	// model is gptMini (an OpenAI batch of chat completions) or haiku (an
	// Anthropic message batch).
	model string
	reply providerstest.Reply
	// status is the event's; cost its cost_usd ("" for none at all).
	status, cost, doc string
}{
	// gpt-4o-mini at half price: 1,000 × $0.075 + 300 × $0.0375 + 100 ×
	// $0.30 per MTok; gw's runner at the full price, 1,000 × $0.15 + 300 ×
	// $0.075 + 100 × $0.60.
	{"batch line on OpenAI's Batch API", true, gptMini, providerstest.Reply{Text: "ok", Usage: usual}, "ok", "0.00011625",
		"1,000 input, 300 cached, 100 output as the output file reports them"},
	{"batch line gw runs itself", false, gptMini, providerstest.Reply{Text: "ok", Usage: usual}, "ok", "0.0002325",
		"the answer's counts, as a synchronous request's"},
	// Claude Haiku 4.5 at half price: 1,000 × $0.50 + 100 × $2.50 + 300
	// × $0.05 + 40 × $0.625; gw's runner at the full price, 1,000 × $1 +
	// 100 × $5 + 300 × $0.10 + 40 × $1.25.
	{"message batch request on Anthropic's Message Batches", true, haiku,
		providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 1000, Output: 100, CacheRead: 300, CacheWrite: 40}}, "ok", "0.00079",
		"1,000 input, 300 cache read, 40 cache write, 100 output as the results report them"},
	{"message batch request gw runs itself", false, haiku,
		providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 1000, Output: 100, CacheRead: 300, CacheWrite: 40}}, "ok", "0.00158",
		"the answer's counts, as a synchronous request's"},
	{"batch line the provider's batch errors", true, gptMini, providerstest.Reply{Status: http.StatusBadRequest, Message: "refused"}, "error", "0",
		"in the error file; nothing billed"},
}

// batchRows renders batchMeteringCases as conformance table rows.
func batchRows() string {
	var b strings.Builder
	for _, c := range batchMeteringCases {
		where := map[bool]string{true: "native", false: "gateway"}[c.native]
		cells := "batch chat.completions × openai: gpt-4o-mini"
		if c.model == haiku {
			cells = "message batch × anthropic: claude-haiku-4-5"
		}
		reason := ""
		if c.status != "ok" {
			reason = ", `upstream_error`"
		}
		prices := "at the batch prices; `batch_id`, `price_class` `batch`"
		if !c.native {
			prices = "at the synchronous prices its upstream billed; `batch_id`, no `price_class`"
		}
		fmt.Fprintf(&b, "| %s (%s) | no | %s | %s%s | `upstream` | %s; $%s %s |\n",
			c.name, where, cells, c.status, reason, c.doc, c.cost, prices)
	}
	return b.String()
}

// TestBatchMetering runs batchMeteringCases: each line one usage event,
// at the batch prices of what the provider reported when its batch API
// ran it, at the synchronous prices when gw did (docs/metering.md, the
// conformance table's batch rows).
func TestBatchMetering(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		for _, native := range []bool{true, false} {
			if !native {
				gatewayBatches(t, e)
			}
			e.sync(t)
			run := runner(t, e.plane)
			for i, c := range batchMeteringCases {
				if c.native != native {
					continue
				}
				marker := fmt.Sprintf("case%d", i)
				e.openai.ReplyWhen(marker, c.reply)
				e.anthropic.ReplyWhen(marker, c.reply)
				e.usage.reset()
				var id string
				if c.model == haiku {
					ac := e.anthropicClient()
					b, err := ac.Messages.Batches.New(context.Background(), anthropic.MessageBatchNewParams{Requests: []anthropic.MessageBatchNewParamsRequest{
						{CustomID: "x", Params: anthropic.MessageBatchNewParamsRequestParams{Model: anthropic.Model(haiku), MaxTokens: 200,
							Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(marker))}}}}})
					if err != nil {
						t.Fatal(err)
					}
					id = b.ID
					waitMessageBatch(t, ac, id)
				} else {
					line := `{"custom_id":"x","method":"POST","url":"/v1/chat/completions","body":{"model":"` + gptMini +
						`","max_tokens":200,"messages":[{"role":"user","content":"` + marker + `"}]}}` + "\n"
					status, body := submit(t, e, fileID(t, e.srv.URL, e.token, line))
					if status != 200 {
						t.Fatalf("%s: submission %d %s", c.name, status, body)
					}
					var b struct{ ID string }
					_ = json.Unmarshal(body, &b)
					id = b.ID
					waitBatch(t, e.sdk(), id, openai.BatchStatusCompleted)
				}
				evs := e.usage.snapshot()
				if len(evs) != 1 || evs[0].BatchID == nil || *evs[0].BatchID != id {
					t.Fatalf("%s: %d events, want one naming %s: %+v", c.name, len(evs), id, evs)
				}
				ev := evs[0]
				var prov struct{ Prices wire.UsagePrices }
				raw, _ := json.Marshal(ev.Provenance)
				_ = json.Unmarshal(raw, &prov)
				class := map[bool]string{true: wire.PriceClassBatch, false: ""}[c.native]
				if ev.Status != c.status || !decimal.RequireFromString(ev.CostUSD).Equal(decimal.RequireFromString(c.cost)) ||
					ev.UsageSource != wire.UsageSourceUpstream || prov.Prices.PriceClass != class {
					t.Fatalf("%s: %s %s (%s, %s), want %s $%s", c.name, ev.Status, ev.CostUSD, ev.UsageSource, raw, c.status, c.cost)
				}
			}
			run()
		}
	})
}
