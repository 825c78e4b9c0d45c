package store

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/wire"
)

var jsonStrings = []string{"", "openai/gpt-4o-mini", `quote " back \ slash`, "<b>&amp;</b>", "tab\tnl\ncr\rbs\bff\f", "\x00\x01\x1f\x7f",
	"é ü 日本", "\u2028\u2029", "bad \xff utf8 \xc3", "emoji 🙂", "\xed\xa0\x80"}

func TestUsageJSONIsMarshals(t *testing.T) {
	failure := "timeout"
	odd := jsonStrings[3] + jsonStrings[8]
	attempts := [][]wire.UsageAttempt{{}, {{Model: "m", Provider: "p", LatencyMS: 12}},
		{{Model: odd, Provider: jsonStrings[2], Failure: &failure, LatencyMS: -1}, {Model: "b", Provider: "c", Failure: &odd}}}
	for _, as := range attempts {
		want, _ := json.Marshal(as)
		if got := appendAttemptsJSON(nil, as); string(got) != string(want) {
			t.Errorf("attempts:\n got %s\nwant %s", got, want)
		}
	}
	id := uuid.New()
	provenances := []wire.UsageProvenance{{},
		{Policies: []wire.UsagePolicy{}, Budgets: []wire.UsageBudget{}},
		{Prices: &wire.UsagePrices{InputPerMTok: "0.15", OutputPerMTok: "0.6", CacheReadPerMTok: "0", CacheWritePerMTok: "1", CacheWrite1hPerMTok: "2", LongContext: true},
			BundleVersion: 1 << 40, OverBound: true, UpstreamUsage: &wire.UsageCounts{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: -4},
			Policies: []wire.UsagePolicy{{PolicyID: id, PolicyName: odd, RuleIndex: 3, Action: "allow", Effect: "deny"}, {}},
			Budgets:  []wire.UsageBudget{{PolicyID: id, PolicyName: "b", Counter: "c:" + odd, Period: "day", Aggregation: "per_key", AmountUSD: "10"}, {}}},
		{Prices: &wire.UsagePrices{InputPerMTok: "2.50", OutputPerMTok: "20", CacheReadPerMTok: "0.25", CacheWritePerMTok: "2.50", CacheWrite1hPerMTok: "2.50", ServiceTier: "priority"}},
		{Prices: &wire.UsagePrices{InputPerMTok: "1.25", OutputPerMTok: "5", CacheReadPerMTok: "0.0625", CacheWritePerMTok: "2.50", CacheWrite1hPerMTok: "2.50", PriceClass: "batch"}},
	}
	for _, p := range provenances {
		want, _ := json.Marshal(&p)
		if got := appendProvenanceJSON(nil, &p); string(got) != string(want) {
			t.Errorf("provenance:\n got %s\nwant %s", got, want)
		}
	}
}

func FuzzUsageJSONString(f *testing.F) {
	for _, s := range jsonStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("%q:\n got %s\nwant %s", s, got, want)
		}
	})
}

func TestUsageJSONString(t *testing.T) {
	for _, s := range jsonStrings {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("%q:\n got %s\nwant %s", s, got, want)
		}
	}
}

// TestUsageJSONCoversTheTypes fails when a type the hand-written JSON
// writes gains, loses or renames a member: update usage_json.go with it.
func TestUsageJSONCoversTheTypes(t *testing.T) {
	for typ, want := range map[reflect.Type][]string{
		reflect.TypeFor[wire.UsageAttempt]():    {"model", "provider", "failure", "latency_ms"},
		reflect.TypeFor[wire.UsageProvenance](): {"prices", "bundle_version", "policies", "budgets", "over_bound,omitempty", "upstream_usage,omitempty"},
		reflect.TypeFor[wire.UsagePrices]():     {"input_per_mtok", "output_per_mtok", "cache_read_per_mtok", "cache_write_per_mtok", "cache_write_1h_per_mtok", "long_context", "service_tier,omitempty", "price_class,omitempty"},
		reflect.TypeFor[wire.UsagePolicy]():     {"policy_id", "policy_name", "rule_index", "action", "effect"},
		reflect.TypeFor[wire.UsageBudget]():     {"policy_id", "policy_name", "counter", "period", "aggregation", "amount_usd"},
		reflect.TypeFor[wire.UsageCounts]():     {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"},
	} {
		var got []string
		for i := range typ.NumField() {
			got = append(got, typ.Field(i).Tag.Get("json"))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%v's members are %q; usage_json.go writes %q", typ, got, want)
		}
	}
}
