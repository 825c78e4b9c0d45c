package wire

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
)

var jsonStrings = []string{"", "openai/gpt-4o-mini", `quote " back \ slash`, "<b>&amp;</b>", "tab\tnl\ncr\rbs\bff\f", "\x00\x01\x1f\x7f",
	"é ü 日本", "\u2028\u2029", "bad \xff utf8 \xc3", "emoji 🙂", "\xed\xa0\x80"}

func TestUsageJSONIsMarshals(t *testing.T) {
	failure := "timeout"
	odd := jsonStrings[3] + jsonStrings[8]
	attempts := [][]UsageAttempt{{}, {{Model: "m", Provider: "p", LatencyMS: 12}},
		{{Model: odd, Provider: jsonStrings[2], Failure: &failure, LatencyMS: -1}, {Model: "b", Provider: "c", Failure: &odd}}}
	for _, as := range attempts {
		want, _ := json.Marshal(as)
		if got := AppendUsageAttemptsJSON(nil, as); string(got) != string(want) {
			t.Errorf("attempts:\n got %s\nwant %s", got, want)
		}
	}
	id := uuid.New()
	provenances := []UsageProvenance{{},
		{Policies: []UsagePolicy{}, Budgets: []UsageBudget{}},
		{Prices: &UsagePrices{InputPerMTok: "0.15", OutputPerMTok: "0.6", CacheReadPerMTok: "0", CacheWritePerMTok: "1", CacheWrite1hPerMTok: "2", LongContext: true},
			BundleVersion: 1 << 40, OverBound: true, UpstreamUsage: &UsageCounts{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: -4},
			Policies: []UsagePolicy{{PolicyID: id, PolicyName: odd, RuleIndex: 3, Action: "allow", Effect: "deny"}, {}},
			Budgets:  []UsageBudget{{PolicyID: id, PolicyName: "b", Counter: "c:" + odd, Period: "day", Aggregation: "per_key", AmountUSD: "10"}, {}}},
		{Prices: &UsagePrices{InputPerMTok: "2.50", OutputPerMTok: "20", CacheReadPerMTok: "0.25", CacheWritePerMTok: "2.50", CacheWrite1hPerMTok: "2.50", ServiceTier: "priority"}},
		{Prices: &UsagePrices{InputPerMTok: "1.25", OutputPerMTok: "5", CacheReadPerMTok: "0.0625", CacheWritePerMTok: "2.50", CacheWrite1hPerMTok: "2.50", PriceClass: "batch"}},
	}
	for _, p := range provenances {
		want, _ := json.Marshal(&p)
		if got := AppendUsageProvenanceJSON(nil, &p); string(got) != string(want) {
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
// writes gains, loses or renames a member: update usagejson.go with it,
// and for UsageProvenance, UsagePrices or their lists also
// provenancecache.go (cachedProvenance.is says when a provenance is the
// cached one).
func TestUsageJSONCoversTheTypes(t *testing.T) {
	for typ, want := range map[reflect.Type][]string{
		reflect.TypeFor[UsageAttempt]():    {"model", "provider", "failure", "latency_ms"},
		reflect.TypeFor[UsageProvenance](): {"prices", "bundle_version", "policies", "budgets", "over_bound,omitempty", "upstream_usage,omitempty"},
		reflect.TypeFor[UsagePrices]():     {"input_per_mtok", "output_per_mtok", "cache_read_per_mtok", "cache_write_per_mtok", "cache_write_1h_per_mtok", "long_context", "service_tier,omitempty", "price_class,omitempty"},
		reflect.TypeFor[UsagePolicy]():     {"policy_id", "policy_name", "rule_index", "action", "effect"},
		reflect.TypeFor[UsageBudget]():     {"policy_id", "policy_name", "counter", "period", "aggregation", "amount_usd"},
		reflect.TypeFor[UsageCounts]():     {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"},
		reflect.TypeFor[GuardrailRecord](): {"id", "name", "stage", "outcome", "detectors"},
		reflect.TypeFor[UsageEventIn](): {"id", "org_id", "workspace_id", "inference_key_id,omitempty", "management_key_id,omitempty",
			"owner_id,omitempty", "model", "provider", "provider_credential_id,omitempty", "input_tokens", "output_tokens",
			"cache_read_tokens", "cache_write_tokens", "cost_usd", "status", "latency_ms", "occurred_at", "request_id,omitempty",
			"endpoint,omitempty", "reason,omitempty", "requested_model,omitempty", "attempts,omitempty", "usage_source,omitempty",
			"reasoning_tokens,omitempty", "cache_write_1h_tokens,omitempty", "provenance,omitempty", "service_tier,omitempty",
			"batch_id,omitempty", "tags,omitempty", "guardrails,omitempty", "tool_arguments,omitempty", "tool_arguments_bytes,omitempty",
			"cache_saving_usd,omitempty"},
	} {
		var got []string
		for i := range typ.NumField() {
			got = append(got, typ.Field(i).Tag.Get("json"))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%v's members are %q; usagejson.go writes %q (and provenancecache.go compares a provenance's)", typ, got, want)
		}
	}
}

// usageEventsForJSON are events with every member set and none, text
// json.Marshal escapes, times with and without nanoseconds and zones, and
// the cases AppendUsageEventInJSON leaves to json.Marshal.
func usageEventsForJSON() []UsageEventIn {
	s := func(v string) *string { return &v }
	u := func() *uuid.UUID { id := uuid.New(); return &id }
	failure := "timeout"
	full := UsageEventIn{ID: uuid.New(), OrgID: uuid.New(), WorkspaceID: uuid.New(), InferenceKeyID: u(), ManagementKeyID: u(), OwnerID: u(),
		Model: jsonStrings[3], Provider: jsonStrings[8], ProviderCredentialID: u(), InputTokens: 1 << 50, OutputTokens: -2, CacheReadTokens: 3,
		CacheWriteTokens: 4, CostUSD: "0.000000001", Status: "error", LatencyMS: 5,
		OccurredAt: time.Date(2026, 11, 29, 9, 8, 7, 123456789, time.FixedZone("x", -(3*3600+30*60))),
		RequestID:  s("req-" + jsonStrings[2]), Endpoint: s("chat.completions"), Reason: s(""), RequestedModel: "auto",
		Attempts: []UsageAttempt{{Model: "a", Provider: "b", Failure: &failure, LatencyMS: 7}}, UsageSource: "estimated",
		ReasoningTokens: 8, CacheWrite1hTokens: 9,
		Provenance:  &UsageProvenance{BundleVersion: 3, Policies: []UsagePolicy{{PolicyID: uuid.New(), PolicyName: jsonStrings[6]}}},
		ServiceTier: s("priority"), BatchID: s("batch_abc"), Tags: map[string]string{"z": "1", "<a>": jsonStrings[7], "m": ""},
		Guardrails:         []GuardrailRecord{{ID: "g", Name: "pii", Stage: "input", Outcome: "redacted", Detectors: []string{"email", jsonStrings[5]}}, {ID: "h"}},
		ToolArgumentsBytes: 10, CacheSavingUSD: s("0.5")}
	empty := UsageEventIn{OccurredAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Attempts: []UsageAttempt{}, Tags: map[string]string{},
		Guardrails: []GuardrailRecord{}}
	zero := UsageEventIn{}
	withArgs := full
	withArgs.ToolArguments = json.RawMessage(`{ "q" : "<b>" }`)
	farYear := empty
	farYear.OccurredAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	oddZone := empty
	oddZone.OccurredAt = time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("lmt", 3600+30))
	return []UsageEventIn{full, empty, zero, withArgs, farYear, oddZone}
}

func TestUsageEventInJSONIsMarshals(t *testing.T) {
	for i, e := range usageEventsForJSON() {
		want, werr := json.Marshal(&e)
		got, err := AppendUsageEventInJSON([]byte("prefix"), &e)
		if (err != nil) != (werr != nil) || (err == nil && string(got) != "prefix"+string(want)) {
			t.Errorf("event %d:\n got %s (%v)\nwant %s (%v)", i, got, err, want, werr)
		}
	}
}

func FuzzUsageEventInJSON(f *testing.F) {
	for _, s := range jsonStrings {
		f.Add(s, s, int64(len(s)), int64(1700000000), 123)
	}
	f.Fuzz(func(t *testing.T, text, key string, n, unix int64, nanos int) {
		for _, e := range usageEventsForJSON()[:2] {
			e.Model, e.RequestedModel, e.CostUSD, e.InputTokens, e.ReasoningTokens = text, text, key, n, n
			e.OccurredAt = time.Unix(unix%(1<<36), int64(nanos)).In(time.FixedZone("f", int(n%50000)))
			e.Tags = map[string]string{key: text, text: key}
			if e.Provenance != nil {
				e.Provenance.Policies[0].PolicyName = text
			}
			want, werr := json.Marshal(&e)
			got, err := AppendUsageEventInJSON(nil, &e)
			if (err != nil) != (werr != nil) || (err == nil && string(got) != string(want)) {
				t.Fatalf("\n got %s (%v)\nwant %s (%v)", got, err, want, werr)
			}
		}
	})
}

// BenchmarkUsageEventInJSON: an event shaped like the load harness's (a
// key under policies and a budget), hand-written against json.Marshal.
func BenchmarkUsageEventInJSON(b *testing.B) {
	key, owner, cred, pol := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	rid, ep, model := uuid.NewString(), "chat.completions", "openai/gpt-4o-mini"
	e := UsageEventIn{ID: uuid.New(), OrgID: uuid.New(), WorkspaceID: uuid.New(), InferenceKeyID: &key, OwnerID: &owner,
		Model: model, Provider: "openai", ProviderCredentialID: &cred, InputTokens: 19, OutputTokens: 10,
		CostUSD: "0.00000885", Status: "ok", LatencyMS: 1, OccurredAt: time.Now().UTC(), RequestID: &rid, Endpoint: &ep,
		RequestedModel: model, Attempts: []UsageAttempt{{Model: model, Provider: "openai", LatencyMS: 1}},
		Provenance: &UsageProvenance{BundleVersion: 7,
			Prices: &UsagePrices{InputPerMTok: "0.15", OutputPerMTok: "0.6", CacheReadPerMTok: "0.075", CacheWritePerMTok: "0", CacheWrite1hPerMTok: "0"},
			Policies: []UsagePolicy{{PolicyID: pol, PolicyName: "allowlist", Action: "allow", Effect: "allow"},
				{PolicyID: pol, PolicyName: "limits", Action: "limit", Effect: "limit"}},
			Budgets: []UsageBudget{{PolicyID: pol, PolicyName: "budget", Counter: "budget:shared", Period: "day", Aggregation: "shared", AmountUSD: "1000000"}}}}
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 2048)
		for b.Loop() {
			buf, _ = AppendUsageEventInJSON(buf[:0], &e)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(&e)
		}
	})
}
