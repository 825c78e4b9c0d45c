package usage

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/tags"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// MaxIngestBatch bounds one batch a data plane ships.
const MaxIngestBatch = 1000

// costPattern is a cost as events carry it: exact USD, at most nano-dollars.
var costPattern = regexp.MustCompile(`^\d+(?:\.\d{1,9})?$`)

// endpointPattern and reasonPattern keep an event's endpoint and reason
// codes: lower-case words, never free text, so no upstream message (which
// may echo a secret) can be stored as a reason.
var (
	endpointPattern = regexp.MustCompile(`^[a-z][a-z0-9_.]{0,63}$`)
	reasonPattern   = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
)

// MaxRequestIDLen bounds a request id; MaxAttempts an attempt chain (a
// fallback rule allows 5, with room for what later versions may try).
const (
	MaxRequestIDLen = 100
	MaxAttempts     = 20
)

// FieldError is one problem with one member of an event. Field is the
// member's JSON name, Sub the path inside it (an attempt's [0, "model"]),
// Type the validation word of DESIGN §5.
type FieldError struct {
	Field, Type, Msg string
	Sub              []any
	Input            any
}

func (e FieldError) Error() string {
	name := e.Field
	for _, p := range e.Sub {
		name += "." + fmt.Sprint(p)
	}
	return name + ": " + e.Msg
}

// InvalidEvent lists every problem of one event.
type InvalidEvent struct{ Problems []FieldError }

func (e *InvalidEvent) Error() string {
	msgs := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p
	}
	return "invalid usage event: " + errors.Join(msgs...).Error()
}

// Check applies the rules every stored event obeys, whichever way it
// arrived (shipped by a remote data plane or recorded in process): ids
// present, model and provider ids of catalog length, counts within what an
// upstream can report, an exact non-negative cost, a known status. It
// reports every problem at once, nil when there is none.
func Check(e wire.UsageEventIn) *InvalidEvent {
	// A collector on the stack, not closures: every event recorded passes
	// here, and a closure handed on is an allocation.
	var ps problems
	checkCounted(&e, &ps)
	checkAttribution(&e, &ps)
	checkMetering(&e, &ps)
	if len(e.Tags) > 0 {
		for _, p := range tags.Check(e.Tags) {
			if p.Key == "" {
				ps.add("tags", "too_long", "Value error, "+p.Msg, len(e.Tags))
			} else {
				ps.addSub("tags", []any{p.Key}, "value_error", "Value error, "+p.Msg, e.Tags[p.Key])
			}
		}
	}
	out := ps.out
	if out == nil {
		return nil
	}
	// Maps iterate in random order; problems are reported in a stable one.
	slices.SortStableFunc(out, func(a, b FieldError) int {
		switch {
		case a.Field < b.Field:
			return -1
		case a.Field > b.Field:
			return 1
		}
		return 0
	})
	return &InvalidEvent{Problems: out}
}

// problems collects what Check finds.
type problems struct{ out []FieldError }

func (ps *problems) add(field, typ, msg string, input any) {
	ps.out = append(ps.out, FieldError{Field: field, Type: typ, Msg: msg, Input: input})
}

func (ps *problems) addSub(field string, sub []any, typ, msg string, input any) {
	ps.out = append(ps.out, FieldError{Field: field, Sub: sub, Type: typ, Msg: msg, Input: input})
}

// checkCounted checks the members every event has: ids, model and
// provider, counts, cost, status and time.
func checkCounted(e *wire.UsageEventIn, ps *problems) {
	// Arrays, not maps: every event recorded passes here, and a map
	// literal is an allocation (the problems are sorted by field anyway).
	for _, f := range [...]struct {
		field string
		id    uuid.UUID
	}{{"id", e.ID}, {"org_id", e.OrgID}, {"workspace_id", e.WorkspaceID}} {
		if f.id == uuid.Nil {
			ps.add(f.field, "value_error", "Value error, must not be the nil UUID", f.id.String())
		}
	}
	for _, f := range [...]struct{ field, v string }{{"model", e.Model}, {"provider", e.Provider}} {
		switch n := utf8.RuneCountInString(f.v); {
		case n < 1:
			ps.add(f.field, "string_too_short", "String should have at least 1 character", f.v)
		case n > catalog.MaxModelIDLen:
			ps.add(f.field, "string_too_long", fmt.Sprintf("String should have at most %d characters", catalog.MaxModelIDLen), f.v)
		}
	}
	for _, f := range [...]struct {
		field string
		n     int64
	}{{"input_tokens", e.InputTokens}, {"output_tokens", e.OutputTokens}, {"cache_read_tokens", e.CacheReadTokens},
		{"cache_write_tokens", e.CacheWriteTokens}, {"latency_ms", e.LatencyMS}} {
		switch {
		case f.n < 0:
			ps.add(f.field, "greater_than_equal", "Input should be greater than or equal to 0", f.n)
		case f.n > providers.MaxTokenCount:
			ps.add(f.field, "less_than_equal", fmt.Sprintf("Input should be less than or equal to %d", int64(providers.MaxTokenCount)), f.n)
		}
	}
	if !validCost(e.CostUSD) {
		ps.add("cost_usd", "string_pattern_mismatch", "String should match pattern '"+costPattern.String()+"'", e.CostUSD)
	} else if _, err := catalog.ParseNanoUSD(e.CostUSD); err != nil {
		// The pattern limits the fraction; the sum can still overflow.
		ps.add("cost_usd", "value_error", "Value error, "+err.Error(), e.CostUSD)
	}
	if !slices.Contains(wire.UsageStatuses, e.Status) {
		ps.add("status", "literal_error", "Input should be 'ok', 'error' or 'denied'", e.Status)
	}
	if e.OccurredAt.IsZero() {
		ps.add("occurred_at", "missing", "Field required", nil)
	}
}

// checkAttribution checks the members that say which request an event is
// and how it was served. Each is optional, for older data planes.
func checkAttribution(e *wire.UsageEventIn, ps *problems) {
	if e.RequestID != nil {
		switch n := len([]rune(*e.RequestID)); {
		case n < 1:
			ps.add("request_id", "string_too_short", "String should have at least 1 character", *e.RequestID)
		case n > MaxRequestIDLen:
			ps.add("request_id", "string_too_long", fmt.Sprintf("String should have at most %d characters", MaxRequestIDLen), *e.RequestID)
		}
	}
	if e.Endpoint != nil && !isWord(*e.Endpoint, true) {
		ps.add("endpoint", "string_pattern_mismatch", "String should match pattern '"+endpointPattern.String()+"'", *e.Endpoint)
	}
	if e.Reason != nil {
		switch {
		case !isWord(*e.Reason, false):
			ps.add("reason", "string_pattern_mismatch", "String should match pattern '"+reasonPattern.String()+"'", *e.Reason)
		case e.Status == "ok":
			ps.add("reason", "value_error", "Value error, a request that ended ok has no reason", *e.Reason)
		}
	}
	if n := len([]rune(e.RequestedModel)); n > catalog.MaxModelIDLen {
		ps.add("requested_model", "string_too_long", fmt.Sprintf("String should have at most %d characters", catalog.MaxModelIDLen), e.RequestedModel)
	}
	checkGuardrailRecords(e.Guardrails, ps)
	if len(e.Attempts) > MaxAttempts {
		ps.add("attempts", "too_long", fmt.Sprintf("List should have at most %d items", MaxAttempts), len(e.Attempts))
	}
	for i, a := range e.Attempts {
		at := func(member, typ, msg string, input any) {
			ps.addSub("attempts", []any{i, member}, typ, msg, input)
		}
		for _, m := range []struct{ member, v string }{{"model", a.Model}, {"provider", a.Provider}} {
			switch n := len([]rune(m.v)); {
			case n < 1:
				at(m.member, "string_too_short", "String should have at least 1 character", m.v)
			case n > catalog.MaxModelIDLen:
				at(m.member, "string_too_long", fmt.Sprintf("String should have at most %d characters", catalog.MaxModelIDLen), m.v)
			}
		}
		if a.Failure != nil && !slices.Contains(wire.UsageAttemptFailures, *a.Failure) {
			at("failure", "literal_error", "Input should be "+validate.QuoteList(wire.UsageAttemptFailures)+" or null", *a.Failure)
		}
		switch {
		case a.LatencyMS < 0:
			at("latency_ms", "greater_than_equal", "Input should be greater than or equal to 0", a.LatencyMS)
		case a.LatencyMS > providers.MaxTokenCount:
			at("latency_ms", "less_than_equal", fmt.Sprintf("Input should be less than or equal to %d", int64(providers.MaxTokenCount)), a.LatencyMS)
		}
	}
}

// maxProvenanceName bounds names in a provenance: they are policy names.
// Its lists are bounded by wire.MaxProvenanceItems, to which data planes
// cut them.
const maxProvenanceName = 200

// provenanceWord keeps the action and effect words of a provenance to
// gw's vocabulary shape, as reasons are: never free text.
var provenanceWord = reasonPattern

// checkMetering checks who counted the tokens, the parts of the counts and
// the provenance. Each is optional, for older data planes.
// checkToolArguments: arguments only on a tool call's event, a JSON
// object within the bound (re-encoded by the ingest, so their size as
// the data plane measured it is not held against them).
func checkToolArguments(e *wire.UsageEventIn, ps *problems) {
	if e.ToolArgumentsBytes < 0 {
		ps.add("tool_arguments_bytes", "greater_than_equal", "Input should be greater than or equal to 0", e.ToolArgumentsBytes)
	}
	if len(e.ToolArguments) == 0 {
		return
	}
	switch {
	case e.Endpoint == nil || *e.Endpoint != "mcp":
		ps.add("tool_arguments", "value_error", "Value error, only an MCP tool call's event (endpoint mcp) carries arguments", nil)
	case len(e.ToolArguments) > wire.MaxToolArgumentsBytes:
		ps.add("tool_arguments", "too_long", fmt.Sprintf("Value error, at most %d bytes", wire.MaxToolArgumentsBytes), len(e.ToolArguments))
	case !json.Valid(e.ToolArguments) || bytes.TrimSpace(e.ToolArguments)[0] != '{':
		ps.add("tool_arguments", "dict_type", "Input should be a valid dictionary", nil)
	}
}

// serviceTierRE is the form of a service tier's name (providers.ServiceTierName):
// a code, never free text.
var serviceTierRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// batchIDRE is the form of gw's batch ids: a code, never free text.
var batchIDRE = regexp.MustCompile(wire.BatchIDPattern)

func checkMetering(e *wire.UsageEventIn, ps *problems) {
	if e.UsageSource != "" && e.UsageSource != wire.UsageSourceUpstream && e.UsageSource != wire.UsageSourceEstimated && e.UsageSource != wire.UsageSourceCache {
		ps.add("usage_source", "literal_error", "Input should be 'upstream', 'estimated' or 'cache'", e.UsageSource)
	}
	checkCacheSaving(e, ps)
	if e.ServiceTier != nil && !serviceTierRE.MatchString(*e.ServiceTier) {
		ps.add("service_tier", "string_pattern_mismatch", "String should match pattern '"+serviceTierRE.String()+"'", *e.ServiceTier)
	}
	if e.BatchID != nil && !batchIDRE.MatchString(*e.BatchID) {
		ps.add("batch_id", "string_pattern_mismatch", "String should match pattern '"+wire.BatchIDPattern+"'", *e.BatchID)
	}
	for _, part := range []struct {
		field    string
		n, whole int64
		of       string
	}{{"reasoning_tokens", e.ReasoningTokens, e.OutputTokens, "output_tokens"}, {"cache_write_1h_tokens", e.CacheWrite1hTokens, e.CacheWriteTokens, "cache_write_tokens"}} {
		switch {
		case part.n < 0:
			ps.add(part.field, "greater_than_equal", "Input should be greater than or equal to 0", part.n)
		case part.n > part.whole:
			ps.add(part.field, "less_than_equal", "Input should be less than or equal to "+part.of+", of which it is a part", part.n)
		}
	}
	checkToolArguments(e, ps)
	if pv := e.Provenance; pv != nil {
		at := provenanceProblem{ps}
		if pv.BundleVersion < 0 {
			at.add([]any{"bundle_version"}, "greater_than_equal", "Input should be greater than or equal to 0", pv.BundleVersion)
		}
		checkPrices(pv.Prices, at)
		checkRules(pv.Policies, at)
		checkBudgets(pv.Budgets, at)
		checkUpstreamUsage(pv.UpstreamUsage, at)
	}
}

// provenanceProblem reports problems at paths inside a provenance.
type provenanceProblem struct{ ps *problems }

func (p provenanceProblem) add(sub []any, typ, msg string, input any) {
	p.ps.addSub("provenance", sub, typ, msg, input)
}

// checkUpstreamUsage checks the counts an upstream reported below gw's
// floor: none negative.
func checkUpstreamUsage(u *wire.UsageCounts, at provenanceProblem) {
	if u == nil {
		return
	}
	for _, f := range [...]struct {
		name string
		n    int64
	}{{"input_tokens", u.InputTokens}, {"output_tokens", u.OutputTokens}, {"cache_read_tokens", u.CacheReadTokens},
		{"cache_write_tokens", u.CacheWriteTokens}} {
		if f.n < 0 {
			at.add([]any{"upstream_usage", f.name}, "greater_than_equal", "Input should be greater than or equal to 0", f.n)
		}
	}
}

func checkPrices(pr *wire.UsagePrices, at provenanceProblem) {
	if pr == nil {
		return
	}
	for _, f := range [...]struct{ name, v string }{{"input_per_mtok", pr.InputPerMTok}, {"output_per_mtok", pr.OutputPerMTok},
		{"cache_read_per_mtok", pr.CacheReadPerMTok}, {"cache_write_per_mtok", pr.CacheWritePerMTok}, {"cache_write_1h_per_mtok", pr.CacheWrite1hPerMTok}} {
		if !catalog.ValidPrice(f.v) {
			at.add([]any{"prices", f.name}, "string_pattern_mismatch", "String should match pattern '"+catalog.DecimalPattern+"'", f.v)
		}
	}
	if pr.ServiceTier != "" && !serviceTierRE.MatchString(pr.ServiceTier) {
		at.add([]any{"prices", "service_tier"}, "string_pattern_mismatch", "String should match pattern '"+serviceTierRE.String()+"'", pr.ServiceTier)
	}
	if pr.PriceClass != "" && pr.PriceClass != wire.PriceClassBatch {
		at.add([]any{"prices", "price_class"}, "literal_error", "Input should be 'batch'", pr.PriceClass)
	}
}

func checkRules(rules []wire.UsagePolicy, at provenanceProblem) {
	if len(rules) > wire.MaxProvenanceItems {
		at.add([]any{"policies"}, "too_long", fmt.Sprintf("List should have at most %d items", wire.MaxProvenanceItems), len(rules))
	}
	for i, r := range rules {
		checkPolicyName(r.PolicyName, "policies", i, at)
		if r.RuleIndex < 0 {
			at.add([]any{"policies", i, "rule_index"}, "greater_than_equal", "Input should be greater than or equal to 0", r.RuleIndex)
		}
		for _, f := range [...]struct{ name, v string }{{"action", r.Action}, {"effect", r.Effect}} {
			if !isWord(f.v, false) {
				at.add([]any{"policies", i, f.name}, "string_pattern_mismatch", "String should match pattern '"+provenanceWord.String()+"'", f.v)
			}
		}
	}
}

func checkBudgets(budgets []wire.UsageBudget, at provenanceProblem) {
	if len(budgets) > wire.MaxProvenanceItems {
		at.add([]any{"budgets"}, "too_long", fmt.Sprintf("List should have at most %d items", wire.MaxProvenanceItems), len(budgets))
	}
	for i, b := range budgets {
		checkPolicyName(b.PolicyName, "budgets", i, at)
		if n := len(b.Counter); n < 1 || n > maxProvenanceName || strings.ContainsFunc(b.Counter, unicode.IsControl) {
			at.add([]any{"budgets", i, "counter"}, "value_error", "Value error, a counter is 1 to 200 characters without control characters", b.Counter)
		}
		if b.Period != "day" && b.Period != "month" {
			at.add([]any{"budgets", i, "period"}, "literal_error", "Input should be 'day' or 'month'", b.Period)
		}
		if b.Aggregation != "shared" && b.Aggregation != "per_key" {
			at.add([]any{"budgets", i, "aggregation"}, "literal_error", "Input should be 'shared' or 'per_key'", b.Aggregation)
		}
		if !catalog.ValidPrice(b.AmountUSD) {
			at.add([]any{"budgets", i, "amount_usd"}, "string_pattern_mismatch", "String should match pattern '"+catalog.DecimalPattern+"'", b.AmountUSD)
		}
	}
}

func checkPolicyName(name, list string, i int, at provenanceProblem) {
	if utf8.RuneCountInString(name) > maxProvenanceName {
		at.add([]any{list, i, "policy_name"}, "string_too_long", fmt.Sprintf("String should have at most %d characters", maxProvenanceName), name)
	}
}

// isWord is endpointPattern (dot: true) or reasonPattern without the
// regular expression, which every recorded event would run several
// times: a lower-case letter, then up to 63 lower-case letters, digits,
// underscores (and dots).
func isWord(s string, dot bool) bool {
	if len(s) < 1 || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_', c == '.' && dot:
		default:
			return false
		}
	}
	return true
}

// validCost is costPattern without the regular expression: digits, then
// optionally a dot and 1 to 9 digits.
func validCost(s string) bool {
	whole, frac, dotted := strings.Cut(s, ".")
	return allDigits(whole, 1, len(whole)) && (!dotted || allDigits(frac, 1, 9))
}

// allDigits: s is lo to hi ASCII digits.
func allDigits(s string, lo, hi int) bool {
	if len(s) < lo || len(s) > hi {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Row converts a checked event into its stored form: the one conversion
// of an event to a row, for events shipped over HTTP and recorded in
// process alike.
func Row(e wire.UsageEventIn, received time.Time) (store.UsageEvent, error) {
	if bad := Check(e); bad != nil {
		return store.UsageEvent{}, bad
	}
	nano, _ := catalog.ParseNanoUSD(e.CostUSD)
	// An older data plane does not say which model was asked for; the one
	// that answered is the best account of it.
	requested := e.RequestedModel
	if requested == "" {
		requested = e.Model
	}
	occurred := e.OccurredAt.UTC().Truncate(time.Microsecond)
	var tagSet *uuid.UUID
	var tagged store.Tags
	if len(e.Tags) > 0 {
		id := tags.SetID(e.OrgID, e.Tags)
		tagSet, tagged = &id, store.Tags(maps.Clone(e.Tags))
	}
	return store.UsageEvent{
		ID: e.ID, OrgID: e.OrgID, WorkspaceID: e.WorkspaceID,
		InferenceKeyID: e.InferenceKeyID, ManagementKeyID: e.ManagementKeyID, OwnerID: e.OwnerID,
		Model: e.Model, Provider: e.Provider, ProviderCredentialID: e.ProviderCredentialID,
		InputTokens: e.InputTokens, OutputTokens: e.OutputTokens, CacheReadTokens: e.CacheReadTokens, CacheWriteTokens: e.CacheWriteTokens,
		CostNanoUSD: nano, Status: e.Status, LatencyMS: e.LatencyMS,
		OccurredAt: occurred, Bucket: store.UsageBucket(occurred), ReceivedAt: received.UTC(),
		RequestID: e.RequestID, Endpoint: e.Endpoint, Reason: e.Reason, RequestedModel: requested,
		Attempts:    store.UsageAttempts(slices.Clone(e.Attempts)),
		UsageSource: cmp.Or(e.UsageSource, wire.UsageSourceUpstream), ReasoningTokens: e.ReasoningTokens, CacheWrite1hTokens: e.CacheWrite1hTokens,
		Provenance: (*store.UsageProvenance)(e.Provenance), Tags: tagged, TagSetID: tagSet,
		Guardrails:    store.UsageGuardrails(slices.Clone(e.Guardrails)),
		ToolArguments: slices.Clone(e.ToolArguments), ToolArgumentsBytes: e.ToolArgumentsBytes,
		CacheSavingNanoUSD: cacheSavingNano(&e),
		ServiceTier:        e.ServiceTier, BatchID: e.BatchID,
	}, nil
}

// Ingest stores a batch of events, each checked and converted by Row,
// all within the caller's reach (or none is stored). It is idempotent on
// event id: a batch shipped twice is counted once.
func Ingest(ctx context.Context, st *store.Store, reach Reach, events []wire.UsageEventIn) (wire.UsageIngestResult, error) {
	received := store.Now()
	if err := checkReach(ctx, st, reach, events, received); err != nil {
		return wire.UsageIngestResult{}, err
	}
	rows := make([]store.UsageEvent, len(events))
	for i, e := range events {
		row, err := Row(e, received)
		if err != nil {
			return wire.UsageIngestResult{}, fmt.Errorf("event %d: %w", i, err)
		}
		rows[i] = row
	}
	stored, err := st.InsertUsageEvents(ctx, rows)
	if err != nil {
		return wire.UsageIngestResult{}, err
	}
	return wire.UsageIngestResult{Accepted: stored, Duplicates: len(rows) - stored}, nil
}

// MaxGuardrailRecords bounds an event's guardrail records.
const MaxGuardrailRecords = 200

// checkGuardrailRecords holds an event's guardrail records to their
// vocabulary: stage and outcome from the lists, names and detector kinds
// short.
func checkGuardrailRecords(rs []wire.GuardrailRecord, ps *problems) {
	if len(rs) > MaxGuardrailRecords {
		ps.addSub("guardrails", nil, "too_long", fmt.Sprintf("List should have at most %d items", MaxGuardrailRecords), len(rs))
		return
	}
	for i, r := range rs {
		if !slices.Contains(wire.GuardrailStages, r.Stage) {
			ps.addSub("guardrails", []any{i, "stage"}, "literal_error", "Input should be "+validate.QuoteList(wire.GuardrailStages), r.Stage)
		}
		if !slices.Contains(wire.GuardrailOutcomes, r.Outcome) {
			ps.addSub("guardrails", []any{i, "outcome"}, "literal_error", "Input should be "+validate.QuoteList(wire.GuardrailOutcomes), r.Outcome)
		}
		if r.ID == "" || len(r.ID) > 64 || len(r.Name) > 200 || len(r.Detectors) > 16 {
			ps.addSub("guardrails", []any{i}, "value_error", "Value error, a guardrail record's id is 1 to 64 characters, its name at most 200, its detectors at most 16", nil)
		}
		for j, d := range r.Detectors {
			if len(d) == 0 || len(d) > 64 {
				ps.addSub("guardrails", []any{i, "detectors", j}, "value_error", "Value error, a detector name is 1 to 64 characters", d)
			}
		}
	}
}

// checkCacheSaving: a saving only on an event the response cache
// answered, which costs nothing (docs/cache.md).
func checkCacheSaving(e *wire.UsageEventIn, ps *problems) {
	if e.UsageSource == wire.UsageSourceCache {
		if n, err := catalog.ParseNanoUSD(e.CostUSD); err == nil && n != 0 {
			ps.add("cost_usd", "value_error", "Value error, an answer from the response cache costs 0", e.CostUSD)
		}
	}
	if e.CacheSavingUSD == nil {
		return
	}
	if e.UsageSource != wire.UsageSourceCache {
		ps.add("cache_saving_usd", "value_error", "Value error, only an event with usage_source cache carries a saving", *e.CacheSavingUSD)
		return
	}
	if !costPattern.MatchString(*e.CacheSavingUSD) {
		ps.add("cache_saving_usd", "string_pattern_mismatch", "String should match pattern '"+costPattern.String()+"'", *e.CacheSavingUSD)
	} else if _, err := catalog.ParseNanoUSD(*e.CacheSavingUSD); err != nil {
		ps.add("cache_saving_usd", "value_error", "Value error, "+err.Error(), *e.CacheSavingUSD)
	}
}

// cacheSavingNano is a checked event's saving in nano-dollars.
func cacheSavingNano(e *wire.UsageEventIn) int64 {
	if e.CacheSavingUSD == nil {
		return 0
	}
	n, _ := catalog.ParseNanoUSD(*e.CacheSavingUSD)
	return n
}
