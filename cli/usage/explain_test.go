package usage

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
	"github.com/gw-gateway/gw/wire"
)

// explainedEvent is a request that fell back from a rate-limited model to
// one that wrote a cache for an hour, charged to a shared budget.
func explainedEvent() wire.UsageEvent {
	policy := uuid.MustParse("9a1f0c6e-2b1d-4c55-9a7e-3f0d2c1b4a10")
	return wire.UsageEvent{
		ID: uuid.MustParse("0d55f306-54d1-4eb5-bb1b-59a32dbf5d4f"), RequestID: ptr("req-7f3a9c"), Endpoint: ptr("chat.completions"),
		OccurredAt: time.Date(2026, 11, 26, 9, 30, 0, 0, time.UTC), Status: "ok", LatencyMS: 812,
		InferenceKeyID: ptr(uuid.New()), RequestedModel: "openai/gpt-4o-mini", Model: "anthropic/claude-haiku-4-5-20251001", Provider: "anthropic",
		InputTokens: 1200, OutputTokens: 310, CacheReadTokens: 4000, CacheWriteTokens: 2000, CacheWrite1hTokens: 1500,
		CostUSD: "0.006775", UsageSource: "upstream",
		Attempts: []wire.UsageAttempt{{Model: "openai/gpt-4o-mini", Provider: "openai", Failure: ptr("rate_limited"), LatencyMS: 95},
			{Model: "anthropic/claude-haiku-4-5-20251001", Provider: "anthropic", LatencyMS: 702}},
		Provenance: &wire.UsageProvenance{
			Prices:        &wire.UsagePrices{InputPerMTok: "1", OutputPerMTok: "5", CacheReadPerMTok: "0.10", CacheWritePerMTok: "1.25", CacheWrite1hPerMTok: "2"},
			BundleVersion: 42,
			Policies: []wire.UsagePolicy{{PolicyID: policy, PolicyName: "search-team", RuleIndex: 0, Action: "budget", Effect: "admit"},
				{PolicyID: policy, PolicyName: "search-team", RuleIndex: 1, Action: "fallback", Effect: "admit"}},
			Budgets: []wire.UsageBudget{{PolicyID: policy, PolicyName: "search-team", Counter: policy.String() + "/month/shared",
				Period: "month", Aggregation: "shared", AmountUSD: "100"}},
		},
	}
}

// The explanation's cost lines add up to the event's cost; docs/budgets.md
// shows this output.
func TestExplainEvent(t *testing.T) {
	var out bytes.Buffer
	if err := explainEvent(&out, explainedEvent(), "search-api", "ana@example.com"); err != nil {
		t.Fatal(err)
	}
	want := `request  req-7f3a9c (event 0d55f306-54d1-4eb5-bb1b-59a32dbf5d4f), chat.completions, 2026-11-26T09:30:00Z
status   ok, 812 ms
key      search-api, owned by ana@example.com
model    asked openai/gpt-4o-mini, answered by anthropic/claude-haiku-4-5-20251001 (anthropic)
bundle   version 42

policies that applied
  search-team  rule 0  budget    admit
  search-team  rule 1  fallback  admit

attempts
  1.  openai/gpt-4o-mini                   rate_limited  95 ms
  2.  anthropic/claude-haiku-4-5-20251001  answered      702 ms

tokens × prices (USD per million tokens), counted by upstream
  input           1200 × 1    = 0.0012
  output           310 × 5    = 0.00155
  cache read      4000 × 0.10 = 0.0004
  cache write      500 × 1.25 = 0.000625
  cache write 1h  1500 × 2    = 0.003
  total                       = 0.006775 USD

budgets charged
  search-team  100 USD a month  shared  9a1f0c6e-2b1d-4c55-9a7e-3f0d2c1b4a10/month/shared
`
	if out.String() != want {
		t.Fatalf("explanation:\n%s\nwant:\n%s", out.String(), want)
	}
}

// A request its budget refused names no model as having answered it
// (issue 28).
func TestExplainDeniedEvent(t *testing.T) {
	ev := explainedEvent()
	ev.Status, ev.Reason, ev.Attempts = "denied", ptr("budget_exceeded"), nil
	ev.InputTokens, ev.OutputTokens, ev.CacheReadTokens, ev.CacheWriteTokens, ev.CacheWrite1hTokens, ev.CostUSD = 0, 0, 0, 0, 0, "0"
	ev.Provenance.Prices, ev.Provenance.Budgets = nil, nil
	var out bytes.Buffer
	if err := explainEvent(&out, ev, "search-api", "ana@example.com"); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"status   denied (budget_exceeded)",
		"model    asked openai/gpt-4o-mini, refused for anthropic/claude-haiku-4-5-20251001 (anthropic) before any upstream call",
		"cost 0 USD: refused before any upstream call, nothing was billed"} {
		if !strings.Contains(got, want) {
			t.Fatalf("explanation lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "answered by") || strings.Contains(got, "no prices recorded") {
		t.Fatalf("a refused request explained as answered:\n%s", got)
	}
}

// An event whose cost is not its tokens × prices is reported, not
// explained away.
func TestExplainEventRefusesACostThatDoesNotAddUp(t *testing.T) {
	ev := explainedEvent()
	ev.CostUSD = "0.001"
	var out bytes.Buffer
	err := explainEvent(&out, ev, "k", "o")
	if err == nil || !strings.Contains(err.Error(), "is not its tokens × prices") {
		t.Fatalf("err %v", err)
	}
}

func TestUsageExplainFlags(t *testing.T) {
	cmdtest.RunFlagCases(t, NewCmdExplain, []cmdtest.FlagCase[ExplainOptions]{
		{Name: "request id", Args: []string{"req-1"}, Check: func(t *testing.T, o *ExplainOptions) {
			if o.RequestID != "req-1" || o.Output.Format != cmdutil.OutputTable {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "json", Args: []string{"req-1", "-o", "json"}, Check: func(t *testing.T, o *ExplainOptions) {
			if o.Output.Format != cmdutil.OutputJSON {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "no id", Args: []string{}, WantErr: "accepts 1 arg"},
		{Name: "bad output", Args: []string{"req-1", "-o", "xml"}, WantErr: "--output"},
	})
}

func ptr[T any](v T) *T { return &v }

// An answer of the response cache (issue 35) explains its saving, never
// a price line.
func TestExplainCacheHit(t *testing.T) {
	ev := explainedEvent()
	ev.Attempts, ev.CostUSD, ev.UsageSource, ev.CacheSavingUSD = nil, "0", wire.UsageSourceCache, ptr("0.006775")
	ev.Provenance.Prices = nil
	var out bytes.Buffer
	if err := explainEvent(&out, ev, "search-api", "ana@example.com"); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	want := "answered from the response cache: no upstream call\n  cost 0 USD; the upstream call would have cost 0.006775 USD (saved)\n"
	if !strings.Contains(got, want) || strings.Contains(got, "tokens × prices") {
		t.Fatalf("explanation:\n%s\nlacks:\n%s", got, want)
	}
}

// The service tier whose prices applied is named beside the total.
func TestExplainServiceTier(t *testing.T) {
	ev := explainedEvent()
	ev.Provenance.Prices.ServiceTier = "priority"
	var out bytes.Buffer
	if err := explainEvent(&out, ev, "search-api", "ana@example.com"); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.Contains(got, "USD (priority service tier)") {
		t.Fatalf("explanation lacks the service tier:\n%s", got)
	}
}

// A batch's line is named with its batch and the batch prices.
func TestExplainBatchPrices(t *testing.T) {
	ev := explainedEvent()
	ev.Provenance.Prices.PriceClass = wire.PriceClassBatch
	ev.BatchID = ptr("batch_0190a1b2c3d4")
	var out bytes.Buffer
	if err := explainEvent(&out, ev, "search-api", "ana@example.com"); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.Contains(got, "USD (batch prices of batch_0190a1b2c3d4)") {
		t.Fatalf("explanation lacks the batch prices:\n%s", got)
	}
}

// A line gw's runner sent names its batch and says its prices are the
// synchronous ones.
func TestExplainGatewayBatchLine(t *testing.T) {
	ev := explainedEvent()
	ev.BatchID = ptr("batch_0190a1b2c3d4")
	var out bytes.Buffer
	if err := explainEvent(&out, ev, "search-api", "ana@example.com"); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.Contains(got, "USD (a line of batch_0190a1b2c3d4 sent by gw: synchronous prices)") {
		t.Fatalf("explanation lacks the batch line:\n%s", got)
	}
}
