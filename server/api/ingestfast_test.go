package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/wire"
)

// shippedEvent is an event as a current data plane records it, every
// member set: a fallback after a rate limit, under four policies and a
// budget, tagged, guarded.
func shippedEvent(i int) wire.UsageEventIn {
	id := func(n int) uuid.UUID { return uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "%d/%d", i, n)) }
	key, cred, owner := id(3), id(4), id(5)
	str := func(s string) *string { return &s }
	limited := "rate_limited"
	policy := id(6)
	return wire.UsageEventIn{
		ID: id(0), OrgID: id(1), WorkspaceID: id(2), InferenceKeyID: &key, ProviderCredentialID: &cred, OwnerID: &owner,
		Model: "openai/gpt-4o-mini", Provider: "openai", InputTokens: int64(100 + i), OutputTokens: 20, CacheReadTokens: 64,
		CacheWriteTokens: 8, CostUSD: "0.000123456", Status: "ok", LatencyMS: 412,
		OccurredAt: time.Date(2026, 11, 29, 9, 30, 0, 123456789, time.UTC).Add(time.Duration(i) * time.Millisecond),
		RequestID:  str(fmt.Sprintf("req_%08d", i)), Endpoint: str("chat.completions"), RequestedModel: "openai/gpt-4o",
		Attempts:    []wire.UsageAttempt{{Model: "openai/gpt-4o", Provider: "openai", Failure: &limited, LatencyMS: 12}, {Model: "openai/gpt-4o-mini", Provider: "openai", LatencyMS: 400}},
		UsageSource: wire.UsageSourceUpstream, ReasoningTokens: 5, CacheWrite1hTokens: 2, ServiceTier: str("default"),
		Provenance: &wire.UsageProvenance{
			Prices:        &wire.UsagePrices{InputPerMTok: "0.15", OutputPerMTok: "0.6", CacheReadPerMTok: "0.075", CacheWritePerMTok: "0.15", CacheWrite1hPerMTok: "0.3", ServiceTier: "priority"},
			BundleVersion: 7,
			Policies: []wire.UsagePolicy{{PolicyID: policy, PolicyName: "models & <limits>", RuleIndex: 0, Action: "allow", Effect: "allowed"},
				{PolicyID: policy, PolicyName: "fallback", RuleIndex: 2, Action: "fallback", Effect: "fell_back"}},
			Budgets:       []wire.UsageBudget{{PolicyID: id(7), PolicyName: "daily", Counter: "ws:" + id(2).String(), Period: "day", Aggregation: "shared", AmountUSD: "1000"}},
			OverBound:     true,
			UpstreamUsage: &wire.UsageCounts{InputTokens: 90, OutputTokens: 18},
		},
		Tags:       map[string]string{"team": "search", "env": "prod é"},
		Guardrails: []wire.GuardrailRecord{{ID: "pii", Name: "PII « mask »", Stage: "input", Outcome: "redacted", Detectors: []string{"email", "phone"}}, {ID: "kw", Name: "words", Stage: "output", Outcome: "passed", Detectors: []string{}}},
	}
}

// olderEvent is an event of a data plane from before attribution and
// metering: the required members only.
func olderEvent(i int) wire.UsageEventIn {
	e := shippedEvent(i)
	return wire.UsageEventIn{ID: e.ID, OrgID: e.OrgID, WorkspaceID: e.WorkspaceID, Model: e.Model, Provider: e.Provider,
		InputTokens: e.InputTokens, OutputTokens: 1, CostUSD: "0", Status: "ok", OccurredAt: e.OccurredAt}
}

// deniedEvent is refused before any upstream call: no prices, no
// policies or budgets listed (json.Marshal writes their nil as null).
func deniedEvent(i int) wire.UsageEventIn {
	e := olderEvent(i)
	reason, endpoint := "policy_denied", "chat.completions"
	e.Status, e.Reason, e.Endpoint, e.Attempts = "denied", &reason, &endpoint, []wire.UsageAttempt{}
	e.Provenance = &wire.UsageProvenance{BundleVersion: 3}
	e.Tags, e.Guardrails = map[string]string{}, []wire.GuardrailRecord{}
	return e
}

// toolEvent is an MCP tool call's event with its arguments.
func toolEvent(i int) wire.UsageEventIn {
	e := olderEvent(i)
	endpoint := "mcp"
	e.Model, e.Provider, e.Endpoint = "mcp/up/echo", "mcp", &endpoint
	e.ToolArguments = json.RawMessage(`{"q":"is:open <b>","n":2,"z":1.50,"a":[true,null,{"y":"é\u2028"}]}`)
	e.ToolArgumentsBytes = 64
	return e
}

// cachedEvent was answered by the response cache.
func cachedEvent(i int) wire.UsageEventIn {
	e := olderEvent(i)
	saving, batch := "0.0042", "batch_abc123"
	e.UsageSource, e.CacheSavingUSD, e.BatchID = wire.UsageSourceCache, &saving, &batch
	return e
}

// shippedBatch is a body as a data plane sends it: json.Marshal of
// wire.UsageIngest, events of every kind.
func shippedBatch(t testing.TB, n int) []byte {
	events := make([]wire.UsageEventIn, n)
	kinds := []func(int) wire.UsageEventIn{shippedEvent, shippedEvent, shippedEvent, olderEvent, deniedEvent, toolEvent, cachedEvent}
	for i := range events {
		events[i] = kinds[i%len(kinds)](i)
	}
	body, err := json.Marshal(wire.UsageIngest{Events: events})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// checkFastPath holds decodeUsageIngest to its contract on one body: it
// never takes a body readUsageIngest refuses, and takes every body it
// takes with the same events. It says whether the one pass took the body.
func checkFastPath(t testing.TB, body []byte) (fast bool, slowErr error) {
	t.Helper()
	got, ok := decodeUsageIngest(body)
	want, slowErr := readUsageIngest(body)
	if !ok {
		return false, slowErr
	}
	if slowErr != nil {
		t.Fatalf("the one pass took a body the generic reading refuses (%v):\n%s", slowErr, body)
	}
	if !reflect.DeepEqual(got, want) {
		for i := range min(len(got), len(want)) {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("event %d differs:\none pass %#v\ngeneric  %#v\nbody %s", i, got[i], want[i], body)
			}
		}
		t.Fatalf("%d events by the one pass, %d by the generic reading:\n%s", len(got), len(want), body)
	}
	return true, nil
}

func TestUsageIngestFastPathTakesShippedBatches(t *testing.T) {
	for _, n := range []int{1, 7, 1000} {
		body := shippedBatch(t, n)
		if fast, err := checkFastPath(t, body); !fast {
			t.Fatalf("a shipped batch of %d took the generic reading (%v)", n, err)
		}
	}
	// As a data plane ships its spool: the lines written by
	// wire.AppendUsageEventInJSON, joined as client.IngestUsageLines joins
	// them.
	lines := []byte(`{"events":[`)
	for i := range 7 {
		if i > 0 {
			lines = append(lines, ',')
		}
		e := []func(int) wire.UsageEventIn{shippedEvent, olderEvent, deniedEvent, toolEvent, cachedEvent}[i%5](i)
		var err error
		if lines, err = wire.AppendUsageEventInJSON(lines, &e); err != nil {
			t.Fatal(err)
		}
	}
	lines = append(lines, "]}"...)
	if fast, err := checkFastPath(t, lines); !fast {
		t.Fatalf("spool lines took the generic reading (%v)", err)
	}
	// The events are what the data plane sent.
	body := shippedBatch(t, 7)
	got, _ := decodeUsageIngest(body)
	var sent wire.UsageIngest
	if err := json.Unmarshal(body, &sent); err != nil {
		t.Fatal(err)
	}
	for i := range sent.Events {
		sent.Events[i].OccurredAt = sent.Events[i].OccurredAt.UTC()
	}
	if !reflect.DeepEqual(got[0], sent.Events[0]) || got[5].ToolArguments == nil {
		t.Fatalf("decoded %#v\nsent %#v", got[0], sent.Events[0])
	}
}

// TestUsageIngestFastPathAllocations holds the one pass's allocations: a
// 1,000-event shipped batch took 373,700 the generic way and takes 18,650
// in one pass (the events' own strings, pointers, slices and maps, and
// the tool calls' generic re-encoding).
func TestUsageIngestFastPathAllocations(t *testing.T) {
	body := shippedBatch(t, 1000)
	allocs := testing.AllocsPerRun(5, func() {
		if _, ok := decodeUsageIngest(body); !ok {
			t.Fatal("the one pass gave up on a shipped batch")
		}
	})
	if allocs > 20000 {
		t.Fatalf("%.0f allocations for 1,000 shipped events, want at most 20,000", allocs)
	}
}

// TestUsageIngestFastPathTraps: each way a body can differ from what
// data planes send, with what the generic reading does with it; the one
// pass takes it only where it reads it the same.
func TestUsageIngestFastPathTraps(t *testing.T) {
	one := func(e wire.UsageEventIn) string {
		b, err := json.Marshal(wire.UsageIngest{Events: []wire.UsageEventIn{e}})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	full, older, denied, tool := one(shippedEvent(1)), one(olderEvent(2)), one(deniedEvent(3)), one(toolEvent(4))
	edit := func(body, old, new string) string {
		t.Helper()
		if !strings.Contains(body, old) {
			t.Fatalf("%q not in %s", old, body)
		}
		return strings.Replace(body, old, new, 1)
	}
	cases := []struct {
		name   string
		body   string
		fast   bool // the one pass takes it
		slowOK bool // the generic reading takes it
	}{
		{"every member", full, true, true},
		{"an older plane's event", older, true, true},
		{"denied: null prices, policies and budgets", denied, true, true},
		{"tool arguments re-encoded", tool, true, true},
		{"whitespace around and inside", " \n\t{ \"events\" :\r\n" + strings.ReplaceAll(full[len(`{"events":`):], `,"`, ` , "`) + "\n", true, true},
		{"member name in another case", edit(full, `"model":`, `"Model":`), false, false},
		{"provenance member in another case", edit(full, `"prices":`, `"Prices":`), false, true},
		{"provenance member in another case twice", edit(full, `"bundle_version":7`, `"bundle_version":7,"Bundle_Version":9`), false, true},
		{"event member twice", edit(full, `"model":`, `"model":"x/y","model":`), false, true},
		{"events twice", `{"events":[],` + full[1:], false, true},
		{"attempt member twice", edit(full, `"latency_ms":12`, `"latency_ms":12,"latency_ms":13`), false, true},
		{"tag twice", edit(full, `"team":"search"`, `"team":"x","team":"search"`), false, true},
		{"null model", edit(full, `"model":"openai/gpt-4o-mini"`, `"model":null`), false, false},
		{"null count", edit(full, `"input_tokens":101`, `"input_tokens":null`), false, false},
		{"null id", edit(older, `"id":"`, `"id":null,"x":"`), false, false},
		{"null optional count", edit(full, `"reasoning_tokens":5`, `"reasoning_tokens":null`), true, true},
		{"null attempts", edit(older, `"model":`, `"attempts":null,"tags":null,"guardrails":null,"provenance":null,"tool_arguments":null,"request_id":null,"model":`), true, true},
		{"null failure", edit(full, `"failure":"rate_limited"`, `"failure":null`), true, true},
		{"failure left out", edit(full, `"failure":"rate_limited",`, ``), false, false},
		{"null provenance string", edit(full, `"counter":"ws:`, `"counter":null,"x":"`), false, false},
		{"null provenance number", edit(full, `"bundle_version":7`, `"bundle_version":null`), false, true},
		{"count 1.0", edit(full, `"input_tokens":101`, `"input_tokens":101.0`), false, true},
		{"count 1e3", edit(full, `"input_tokens":101`, `"input_tokens":1e2`), false, true},
		{"count -0", edit(full, `"cache_read_tokens":64`, `"cache_read_tokens":-0`), true, true},
		{"count 1.5", edit(full, `"input_tokens":101`, `"input_tokens":1.5`), false, false},
		{"count past int64", edit(full, `"input_tokens":101`, `"input_tokens":99999999999999999999`), false, false},
		{"count at MaxInt64", edit(full, `"input_tokens":101`, `"input_tokens":9223372036854775807`), false, false},
		{"count negative", edit(full, `"input_tokens":101`, `"input_tokens":-1`), false, false},
		{"count leading zero", edit(full, `"input_tokens":101`, `"input_tokens":0101`), false, false},
		{"count as a string", edit(full, `"input_tokens":101`, `"input_tokens":"101"`), false, false},
		{"bundle version 7.0", edit(full, `"bundle_version":7`, `"bundle_version":7.0`), false, false},
		{"rule index 1e0", edit(full, `"rule_index":2`, `"rule_index":1e0`), false, false},
		{"NUL escaped", edit(full, `"model":"openai/gpt-4o-mini"`, `"model":"openai/gpt\u00004o"`), false, false},
		{"NUL escaped in tool arguments", edit(tool, `"q":`, `"\u0000":1,"q":`), false, false},
		{"NUL raw", edit(full, `"model":"openai/gpt-4o-mini"`, "\"model\":\"openai/gpt\x004o\""), false, false},
		{"control character raw", edit(full, `"model":"openai/gpt-4o-mini"`, "\"model\":\"openai/gpt\n4o\""), false, false},
		{"invalid UTF-8", edit(full, `"model":"openai/gpt-4o-mini"`, "\"model\":\"openai/gpt\xff4o\""), false, true},
		{"escapes", edit(full, `"model":"openai/gpt-4o-mini"`, `"model":"open\u0061i\/gpt-4o\u002Dmini\t"`), true, true},
		{"escaped member name", edit(full, `"model":`, `"mod\u0065l":`), true, true},
		{"surrogate pair", edit(full, `"model":"openai/gpt-4o-mini"`, `"model":"openai/\ud83d\ude00"`), true, true},
		{"lone surrogate", edit(full, `"model":"openai/gpt-4o-mini"`, `"model":"openai/\ud83d"`), false, true},
		{"bad escape", edit(full, `"model":"openai/gpt-4o-mini"`, `"model":"openai/\x"`), false, false},
		{"unknown event member", edit(full, `"model":`, `"extra":1,"model":`), false, false},
		{"unknown top member", edit(full, `{"events":`, `{"extra":1,"events":`), false, false},
		{"unknown attempt member", edit(full, `"latency_ms":12`, `"latency_ms":12,"x":1`), false, false},
		{"unknown provenance member", edit(full, `"bundle_version":7`, `"bundle_version":7,"x":1`), false, false},
		{"unknown prices member", edit(full, `"long_context":false`, `"long_context":false,"x":1`), false, false},
		{"unknown policy member", edit(full, `"rule_index":2`, `"rule_index":2,"x":1`), false, false},
		{"unknown guardrail member", edit(full, `"outcome":"redacted"`, `"outcome":"redacted","x":1`), false, false},
		{"policy id without dashes", edit(full, `"policy_id":"`, `"policy_id":"00112233445566778899aabbccddeeff","x":"`), false, false},
		{"tool arguments not an object", edit(tool, `"tool_arguments":{`, `"tool_arguments":[1],"x":{`), false, false},
		{"tool arguments on a chat event", edit(tool, `"endpoint":"mcp"`, `"endpoint":"chat.completions"`), false, false},
		{"tool arguments with duplicate keys", edit(tool, `"q":`, `"q":0,"q":`), true, true},
		{"tool arguments with big numbers", edit(tool, `"n":2`, `"n":1e400,"m":-0.0e-0,"k":123456789012345678901234567890`), true, true},
		{"tool arguments invalid JSON", edit(tool, `"n":2`, `"n":02`), false, false},
		{"empty tags", edit(full, `"tags":{"env":"prod é","team":"search"}`, `"tags":{}`), true, true},
		{"bad tag key", edit(full, `"team":`, `"Team":`), false, false},
		{"tag not a string", edit(full, `"team":"search"`, `"team":1`), false, false},
		{"guardrail name with a tab", edit(full, `"name":"words"`, `"name":"wo\trds"`), false, false},
		{"guardrail detectors null", edit(full, `"detectors":[]`, `"detectors":null`), true, true},
		{"guardrail detectors left out", edit(full, `,"detectors":[]`, ``), true, true},
		{"guardrail empty detector", edit(full, `"detectors":[]`, `"detectors":[""]`), false, false},
		{"time with an offset", edit(full, `"occurred_at":"2026-11-29T09:30:00.124456789Z"`, `"occurred_at":"2026-11-29T15:00:00.124456789+05:30"`), true, true},
		{"time without a zone", edit(full, `"occurred_at":"2026-11-29T09:30:00.124456789Z"`, `"occurred_at":"2026-11-29T09:30:00"`), false, false},
		{"status unknown", edit(full, `"status":"ok"`, `"status":"fine"`), false, false},
		{"reason on ok", edit(denied, `"status":"denied"`, `"status":"ok"`), false, false},
		{"no events", `{"events":[]}`, false, false},
		{"events null", `{"events":null}`, false, false},
		{"not an object", `[` + full + `]`, false, false},
		{"empty body", ``, false, false},
		{"trailing data", full + `{}`, false, false},
		{"trailing comma", edit(full, `"model":`, `"model":"x/y",}`), false, false},
		{"truncated", full[:len(full)/2], false, false},
		{"an event not an object", `{"events":[1]}`, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fast, slowErr := checkFastPath(t, []byte(c.body))
			if fast != c.fast {
				t.Errorf("one pass took it: %v, want %v", fast, c.fast)
			}
			if (slowErr == nil) != c.slowOK {
				t.Errorf("generic reading: %v, want ok %v\n%s", slowErr, c.slowOK, c.body)
			}
		})
	}
	// More events than a batch holds.
	many := shippedBatch(t, 1001)
	if fast, err := checkFastPath(t, many); fast || err == nil {
		t.Fatalf("1001 events: one pass %v, generic %v", fast, err)
	}
}

// FuzzUsageIngestFastPath holds the one pass to the generic reading on
// any body: never a body the generic reading refuses, and for every body
// it takes, the same events. Each run checks two bodies: the fuzzed body
// itself, and a shipped batch with the value of one of its members (at
// any depth) replaced by the fuzzed value, so that most bodies stay
// readable and the events the two readings make are compared, not only
// their refusals.
func FuzzUsageIngestFastPath(f *testing.F) {
	f.Add(shippedBatch(f, 7), uint16(0), []byte(`null`))
	for i, e := range []wire.UsageEventIn{shippedEvent(1), olderEvent(2), deniedEvent(3), toolEvent(4), cachedEvent(5)} {
		b, _ := json.Marshal(wire.UsageIngest{Events: []wire.UsageEventIn{e}})
		f.Add(b, uint16(i), []byte(`1.0`))
		f.Add(bytes.ReplaceAll(b, []byte(`":`), []byte(`" : `)), uint16(i*7), []byte(`{}`))
	}
	f.Add([]byte(`{"events":[{"id":"\u0030","model":"a\ud800b","input_tokens":1e3,"Prices":null}]}`), uint16(9), []byte(`-0`))
	f.Add([]byte(`{"events":[{"provenance":{"prices":null,"Prices":{},"policies":[{"policy_id":"00112233445566778899aabbccddeeff"}]}}]}`), uint16(40), []byte(`"00112233445566778899aabbccddeeff"`))
	for i, v := range []string{`"x"`, `[]`, `1e3`, `"\u0000"`, `{"Prices":null}`, `"a\u00e9\ud83d\ude00"`, `99999999999999999999`, `true`, `"2026-11-29T09:30:00+05:30"`, `{"q":1,"q":2}`} {
		f.Add([]byte(`{}`), uint16(i*5), []byte(v))
	}
	template := shippedBatch(f, 7)
	values := memberValues(template)
	f.Fuzz(func(t *testing.T, body []byte, member uint16, value []byte) {
		checkFastPath(t, body)
		at := values[int(member)%len(values)]
		edited := append(append(append([]byte(nil), template[:at[0]]...), value...), template[at[1]:]...)
		checkFastPath(t, edited)
	})
}

// memberValues finds where each member's value lies in a well-formed body,
// at every depth: [start, end) pairs.
func memberValues(body []byte) [][2]int {
	var out [][2]int
	for i := 0; i+1 < len(body); i++ {
		if body[i] != '"' || body[i+1] != ':' || (i > 0 && body[i-1] == '\\') {
			continue
		}
		d := ingestDecoder{data: body, pos: i + 2}
		d.peek()
		start := d.pos
		d.skip(0)
		if !d.fail {
			out = append(out, [2]int{start, d.pos})
		}
	}
	return out
}

// BenchmarkUsageIngestDecode: a 1,000-event batch as data planes ship it,
// read the generic way and in one pass.
func BenchmarkUsageIngestDecode(b *testing.B) {
	body := shippedBatch(b, 1000)
	b.Run("generic", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := readUsageIngest(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	// one-key: one key's calls to one model, every event naming the same
	// provenance.
	for name, body := range map[string][]byte{"one-pass": body, "one-pass/one-key": oneKeyBatch(b, 1000)} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, ok := decodeUsageIngest(body); !ok {
					b.Fatal("the one pass gave up on a shipped batch")
				}
			}
		})
	}
}

// oneKeyBatch is n shipped events of one key's calls to one model, on one
// bundle: each with the provenance of the first, as a data plane ships
// them.
func oneKeyBatch(t testing.TB, n int) []byte {
	events := make([]wire.UsageEventIn, n)
	for i := range events {
		events[i] = shippedEvent(i)
		events[i].Provenance = events[0].Provenance
	}
	body, err := json.Marshal(wire.UsageIngest{Events: events})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// A provenance written byte for byte as the event before's is read once
// and shared; one written otherwise (another value, or the same value
// spaced otherwise) is read afresh; either way the events are what the
// generic reading makes.
func TestUsageIngestSharesARepeatedProvenance(t *testing.T) {
	body := oneKeyBatch(t, 5)
	// The second event's provenance spaced otherwise within, the fifth's
	// another bundle's.
	at := func(n int) int { // where the nth event's provenance starts
		i := -1
		for range n {
			i += 1 + bytes.Index(body[i+1:], []byte(`"provenance":`))
		}
		return i
	}
	second, fifth := at(2), at(5)
	edited := slices.Concat(body[:second],
		bytes.Replace(body[second:fifth], []byte(`"bundle_version":7`), []byte(`"bundle_version": 7`), 1),
		bytes.Replace(body[fifth:], []byte(`"bundle_version":7`), []byte(`"bundle_version":8`), 1))
	if bytes.Equal(edited, body) || len(edited) != len(body)+1 {
		t.Fatal("the edits did not apply")
	}
	if fast, err := checkFastPath(t, edited); !fast {
		t.Fatalf("the edited batch took the generic reading (%v)", err)
	}
	events, _ := decodeUsageIngest(edited)
	same := func(i, j int) bool { return events[i].Provenance == events[j].Provenance }
	for _, c := range []struct {
		i, j int
		want bool
	}{{0, 1, false}, {1, 2, false}, {2, 3, true}, {3, 4, false}} {
		if got := same(c.i, c.j); got != c.want {
			t.Errorf("events %d and %d share their provenance: %v, want %v", c.i, c.j, got, c.want)
		}
	}
	if !reflect.DeepEqual(events[0].Provenance, events[1].Provenance) || events[3].Provenance.BundleVersion != 7 || events[4].Provenance.BundleVersion != 8 {
		t.Errorf("the provenances read: %+v", events)
	}
	events, _ = decodeUsageIngest(body)
	for i := 1; i < len(events); i++ {
		if !same(0, i) {
			t.Errorf("event %d has a provenance of its own, written as the first's", i)
		}
	}
}
