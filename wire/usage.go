package wire

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// UsageEvent is one model request as the data plane recorded it. Cost is
// exact: a decimal string in USD.
type UsageEvent struct {
	ID                   uuid.UUID  `json:"id"`
	OrgID                uuid.UUID  `json:"org_id"`
	WorkspaceID          uuid.UUID  `json:"workspace_id"`
	InferenceKeyID       *uuid.UUID `json:"inference_key_id" jsonschema:"nullable"`
	ManagementKeyID      *uuid.UUID `json:"management_key_id" jsonschema:"nullable"`
	OwnerID              *uuid.UUID `json:"owner_id" jsonschema:"nullable"`
	Model                string     `json:"model"`
	Provider             string     `json:"provider"`
	ProviderCredentialID *uuid.UUID `json:"provider_credential_id" jsonschema:"nullable"`
	InputTokens          int64      `json:"input_tokens"`
	OutputTokens         int64      `json:"output_tokens"`
	CacheReadTokens      int64      `json:"cache_read_tokens"`
	CacheWriteTokens     int64      `json:"cache_write_tokens"`
	CostUSD              string     `json:"cost_usd"`
	Status               string     `json:"status"`
	LatencyMS            int64      `json:"latency_ms"`
	OccurredAt           time.Time  `json:"occurred_at"`
	ReceivedAt           time.Time  `json:"received_at"`
	// RequestID is the answer's X-Request-Id; Endpoint the API answered
	// (chat.completions). Both are null on events of older data planes.
	RequestID *string `json:"request_id" jsonschema:"nullable"`
	Endpoint  *string `json:"endpoint" jsonschema:"nullable"`
	// Reason says why a request was denied or ended in error, as a code
	// of gw's (policy_denied, rate_limited, stream_truncated, client_gone,
	// shutdown, …); null for ok. Never upstream text.
	Reason *string `json:"reason" jsonschema:"nullable"`
	// RequestedModel is the model asked for; Model is the one that
	// answered, or the last one tried. They differ after a fallback.
	RequestedModel string `json:"requested_model"`
	// Attempts are the upstream calls made, in order; empty for a request
	// refused before any.
	Attempts []UsageAttempt `json:"attempts"`
	// UsageSource says who counted the tokens: upstream (the provider
	// reported them) or estimated (gw counted what it sent and relayed,
	// because the provider did not: no usage, a stream cut or left).
	UsageSource string `json:"usage_source"`
	// ReasoningTokens are the part of OutputTokens spent thinking, and
	// CacheWrite1hTokens the part of CacheWriteTokens written with a
	// one-hour TTL (priced at its own rate).
	ReasoningTokens    int64 `json:"reasoning_tokens"`
	CacheWrite1hTokens int64 `json:"cache_write_1h_tokens"`
	// ServiceTier is the provider's service tier the request was billed
	// in (OpenAI's "default", "priority", "flex"): the one its answer
	// named, else the one it asked for; null when neither named one, and
	// on events of older data planes. provenance.prices.service_tier says
	// whose prices applied.
	ServiceTier *string `json:"service_tier" jsonschema:"nullable"`
	// BatchID is the batch (gw's batch_… id) the request was a line of,
	// priced at the batch prices (provenance.prices.price_class "batch");
	// null for a synchronous request.
	BatchID *string `json:"batch_id" jsonschema:"nullable"`
	// Provenance says how the cost came about; null on events of older
	// data planes.
	Provenance *UsageProvenance `json:"provenance" jsonschema:"nullable"`
	// Tags are the request's cost-centre tags: its key's, over those its
	// X-Gw-Tags header named; {} for none.
	Tags map[string]string `json:"tags" jsonschema:"maxProperties=20"`
	// Guardrails say what each guardrail that applied did (issue 32); []
	// when none applied.
	Guardrails []GuardrailRecord `json:"guardrails"`
	// CacheSavingUSD is what the upstream call would have cost, on an
	// event the response cache answered (usage_source "cache", cost 0;
	// docs/cache.md); null otherwise.
	CacheSavingUSD *string `json:"cache_saving_usd" jsonschema:"nullable"`
}

// MaxProvenanceItems bounds the policy rules and the budgets an event's
// provenance lists. A request that more apply to keeps the first ones: the
// provenance explains a cost, it never decides it, so it is cut rather
// than let the event (and its cost) be refused.
const MaxProvenanceItems = 200

// UsageProvenance records what a request was charged at and what decided
// it: the prices (null for a request refused before any upstream call),
// the version of the organization's bundle that admitted it, the policy
// rules that applied and the budgets it was charged to.
type UsageProvenance struct {
	Prices        *UsagePrices  `json:"prices" jsonschema:"nullable"`
	BundleVersion int64         `json:"bundle_version" jsonschema:"minimum=0"`
	Policies      []UsagePolicy `json:"policies" jsonschema:"maxItems=200"`
	Budgets       []UsageBudget `json:"budgets" jsonschema:"maxItems=200"`
	// OverBound: the request cost more than its budgets held for it (an
	// upstream reporting more than the request's bound allows, or a tail
	// admission past its estimate and the budget's reserve); the budgets
	// were charged what they held, never past their amounts.
	OverBound bool `json:"over_bound,omitempty"`
	// UpstreamUsage is what the upstream reported when the event records
	// more: counts below what gw can prove was sent and relayed (the floor,
	// docs/metering.md), which the event records instead, with
	// usage_source "estimated". Absent otherwise.
	UpstreamUsage *UsageCounts `json:"upstream_usage,omitempty"`
}

// UsageCounts are token counts in gw's disjoint classes.
type UsageCounts struct {
	InputTokens      int64 `json:"input_tokens" jsonschema:"minimum=0"`
	OutputTokens     int64 `json:"output_tokens" jsonschema:"minimum=0"`
	CacheReadTokens  int64 `json:"cache_read_tokens" jsonschema:"minimum=0"`
	CacheWriteTokens int64 `json:"cache_write_tokens" jsonschema:"minimum=0"`
}

// UsagePrices are the catalog prices a request was charged at, USD per
// million tokens; LongContext says the long-context tier applied.
type UsagePrices struct {
	InputPerMTok        string `json:"input_per_mtok"`
	OutputPerMTok       string `json:"output_per_mtok"`
	CacheReadPerMTok    string `json:"cache_read_per_mtok"`
	CacheWritePerMTok   string `json:"cache_write_per_mtok"`
	CacheWrite1hPerMTok string `json:"cache_write_1h_per_mtok"`
	LongContext         bool   `json:"long_context"`
	// ServiceTier is the catalog service tier (service_tiers) whose prices
	// applied; absent for the base (standard) prices.
	ServiceTier string `json:"service_tier,omitempty" jsonschema:"pattern=^[a-z][a-z0-9_]{0\\,31}$"`
	// PriceClass is "batch" when the request was a batch's line, priced
	// at the catalog's batch prices (pricing.batch, else the provider's
	// published batch discount); absent for synchronous prices.
	PriceClass string `json:"price_class,omitempty" jsonschema:"enum=batch"`
}

// PriceClassBatch is UsagePrices.PriceClass of a batch's line.
const PriceClassBatch = "batch"

// BatchIDPattern is the form of gw's batch ids, in a usage event's
// batch_id: "batch_" (an OpenAI batch) or "msgbatch_" (an Anthropic
// message batch) and up to 64 letters and digits (a code, never free
// text).
const BatchIDPattern = `^(msg)?batch_[A-Za-z0-9]{1,64}$`

// UsagePolicy is one policy rule that applied to a request: the policy,
// the rule's position in it, its action and what it did (spec's policy
// vocabulary: allow, deny, limit, …).
type UsagePolicy struct {
	PolicyID   uuid.UUID `json:"policy_id"`
	PolicyName string    `json:"policy_name" jsonschema:"maxLength=200"`
	RuleIndex  int       `json:"rule_index" jsonschema:"minimum=0"`
	Action     string    `json:"action" jsonschema:"maxLength=64"`
	Effect     string    `json:"effect" jsonschema:"maxLength=64"`
}

// UsageBudget is a budget a request was charged to: its policy, period and
// aggregation, the counter (per_key: the key's), and the amount then.
type UsageBudget struct {
	PolicyID    uuid.UUID `json:"policy_id"`
	PolicyName  string    `json:"policy_name" jsonschema:"maxLength=200"`
	Counter     string    `json:"counter" jsonschema:"maxLength=200"`
	Period      string    `json:"period" jsonschema:"enum=day,enum=month"`
	Aggregation string    `json:"aggregation" jsonschema:"enum=shared,enum=per_key"`
	AmountUSD   string    `json:"amount_usd"`
}

// UsageAttempt is one upstream call of a request: the model and provider
// tried, how it failed (null: it answered), and how long it took.
type UsageAttempt struct {
	Model     string  `json:"model"`
	Provider  string  `json:"provider"`
	Failure   *string `json:"failure" jsonschema:"nullable"`
	LatencyMS int64   `json:"latency_ms" jsonschema:"minimum=0"`
}

// UsageEventIn is one event a data plane ships. The id makes ingestion
// idempotent: an event sent twice is stored once.
type UsageEventIn struct {
	ID                   uuid.UUID  `json:"id"`
	OrgID                uuid.UUID  `json:"org_id"`
	WorkspaceID          uuid.UUID  `json:"workspace_id"`
	InferenceKeyID       *uuid.UUID `json:"inference_key_id,omitempty"`
	ManagementKeyID      *uuid.UUID `json:"management_key_id,omitempty"`
	OwnerID              *uuid.UUID `json:"owner_id,omitempty"`
	Model                string     `json:"model"`
	Provider             string     `json:"provider"`
	ProviderCredentialID *uuid.UUID `json:"provider_credential_id,omitempty"`
	InputTokens          int64      `json:"input_tokens" jsonschema:"minimum=0"`
	OutputTokens         int64      `json:"output_tokens" jsonschema:"minimum=0"`
	CacheReadTokens      int64      `json:"cache_read_tokens" jsonschema:"minimum=0"`
	CacheWriteTokens     int64      `json:"cache_write_tokens" jsonschema:"minimum=0"`
	CostUSD              string     `json:"cost_usd" jsonschema:"pattern=^\\d+(?:\\.\\d{1\\,9})?$"`
	Status               string     `json:"status"`
	LatencyMS            int64      `json:"latency_ms" jsonschema:"minimum=0"`
	OccurredAt           time.Time  `json:"occurred_at"`
	// The members below are optional, so older data planes' events are
	// still taken; see UsageEvent.
	RequestID      *string        `json:"request_id,omitempty" jsonschema:"maxLength=100"`
	Endpoint       *string        `json:"endpoint,omitempty" jsonschema:"pattern=^[a-z][a-z0-9_.]{0\\,63}$"`
	Reason         *string        `json:"reason,omitempty" jsonschema:"pattern=^[a-z][a-z0-9_]{0\\,63}$"`
	RequestedModel string         `json:"requested_model,omitempty"`
	Attempts       []UsageAttempt `json:"attempts,omitempty" jsonschema:"maxItems=20"`
	// UsageSource is upstream when left out (older data planes).
	UsageSource        string           `json:"usage_source,omitempty"`
	ReasoningTokens    int64            `json:"reasoning_tokens,omitempty" jsonschema:"minimum=0"`
	CacheWrite1hTokens int64            `json:"cache_write_1h_tokens,omitempty" jsonschema:"minimum=0"`
	Provenance         *UsageProvenance `json:"provenance,omitempty"`
	// ServiceTier is the service tier the request was billed in (older
	// data planes send none).
	ServiceTier *string `json:"service_tier,omitempty" jsonschema:"pattern=^[a-z][a-z0-9_]{0\\,31}$"`
	// BatchID is the batch the request was a line of (older data planes
	// and synchronous requests send none).
	BatchID *string `json:"batch_id,omitempty" jsonschema:"pattern=^(msg)?batch_[A-Za-z0-9]{1\\,64}$"`
	// Tags are the request's cost-centre tags (older data planes send
	// none).
	Tags map[string]string `json:"tags,omitempty" jsonschema:"maxProperties=20"`
	// Guardrails say what each guardrail that applied did (older data
	// planes send none).
	Guardrails []GuardrailRecord `json:"guardrails,omitempty" jsonschema:"maxItems=200"`
	// ToolArguments are an MCP tool call's arguments (endpoint "mcp"),
	// sent only when the workspace's mcp_audit_arguments is true and they
	// fit MaxToolArgumentsBytes: they go to the call's audit row, never to
	// the usage event's columns. ToolArgumentsBytes is their size, sent
	// with them or alone when they are too large to record.
	ToolArguments      json.RawMessage `json:"tool_arguments,omitempty"`
	ToolArgumentsBytes int64           `json:"tool_arguments_bytes,omitempty" jsonschema:"minimum=0"`
	// CacheSavingUSD is what the upstream call would have cost, sent
	// with usage_source "cache" only.
	CacheSavingUSD *string `json:"cache_saving_usd,omitempty" jsonschema:"pattern=^\\d+(?:\\.\\d{1\\,9})?$"`
}

// MaxToolArgumentsBytes bounds the arguments a tool call's audit row
// records (mcp_audit_arguments); larger ones are left out, their size
// recorded.
const MaxToolArgumentsBytes = 8 << 10

// Usage sources (UsageEvent.UsageSource).
const (
	UsageSourceUpstream  = "upstream"
	UsageSourceEstimated = "estimated"
	// UsageSourceCache: the response cache answered; the tokens are the
	// kept answer's, and no upstream was called.
	UsageSourceCache = "cache"
)

// UsageSources are the usage sources, for the document and checks.
var UsageSources = []string{UsageSourceUpstream, UsageSourceEstimated, UsageSourceCache}

// UsageIngest is a batch of events from a data plane.
type UsageIngest struct {
	Events []UsageEventIn `json:"events" jsonschema:"minItems=1,maxItems=1000"`
}

// UsageIngestResult counts what a batch stored and what was already there.
type UsageIngestResult struct {
	Accepted   int `json:"accepted"`
	Duplicates int `json:"duplicates"`
}

// UsageCounters are spec 2.6's counters.
type UsageCounters struct {
	Requests         int64  `json:"requests"`
	InputTokens      int64  `json:"input_tokens"`
	OutputTokens     int64  `json:"output_tokens"`
	CacheReadTokens  int64  `json:"cache_read_tokens"`
	CacheWriteTokens int64  `json:"cache_write_tokens"`
	CostUSD          string `json:"cost_usd"`
	// CacheSavingUSD is what the response cache's hits saved: the cost
	// of the upstream calls they did not make (docs/cache.md).
	CacheSavingUSD string `json:"cache_saving_usd"`
}

// UsageDay is one local day of a report.
type UsageDay struct {
	Date time.Time `json:"date"`
	UsageCounters
}

// UsagePeriod is the report's window and the one it is compared with.
type UsagePeriod struct {
	StartAt         time.Time `json:"start_at"`
	EndAt           time.Time `json:"end_at"`
	PreviousStartAt time.Time `json:"previous_start_at"`
	PreviousEndAt   time.Time `json:"previous_end_at"`
	Timezone        string    `json:"timezone"`
}

// UsageReport is spec 2.6.
type UsageReport struct {
	Totals     UsageCounters `json:"totals"`
	Comparison UsageCounters `json:"comparison"`
	Daily      []UsageDay    `json:"daily"`
	Period     UsagePeriod   `json:"period"`
	UpdatedAt  time.Time     `json:"updated_at"`
	// Note: see UsageBreakdown.Note.
	Note string `json:"note,omitempty"`
}

// UsageBreakdownRow is one model, provider, owner, key, workspace or tag
// value of a breakdown.
type UsageBreakdownRow struct {
	// Key is the dimension's value. In a breakdown by tag, the row of the
	// events without the tag has a null key (NoValue), and so has the row
	// of the events whose tags are past the organization's bound
	// (OverTagLimit).
	Key     string `json:"key" jsonschema:"nullable"`
	NoValue bool   `json:"-"`
	// OverTagLimit marks, in a breakdown by tag, the row of the requests
	// whose tag combination came after the organization reached the
	// bound of distinct combinations reports keep (docs/metering.md).
	OverTagLimit bool `json:"over_tag_limit,omitempty"`
	UsageCounters
}

// MarshalJSON writes a row without a value with a null key.
func (r UsageBreakdownRow) MarshalJSON() ([]byte, error) {
	type plain UsageBreakdownRow
	if !r.NoValue && !r.OverTagLimit {
		return json.Marshal(plain(r))
	}
	return json.Marshal(struct {
		Key *string `json:"key"`
		plain
	}{nil, plain(r)})
}

// UnmarshalJSON reads a null key as NoValue.
func (r *UsageBreakdownRow) UnmarshalJSON(b []byte) error {
	type plain UsageBreakdownRow
	var v struct {
		Key *string `json:"key"`
		plain
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = UsageBreakdownRow(v.plain)
	if v.Key == nil {
		r.Key, r.NoValue = "", true
	} else {
		r.Key = *v.Key
	}
	return nil
}

// UsageBreakdown splits a report's period by one dimension, largest cost
// first.
type UsageBreakdown struct {
	// By is a dimension of UsageDimensions, or tag:KEY for the values of
	// one tag.
	By     string              `json:"by" jsonschema:"pattern=^(model|requested_model|provider|owner|inference_key|workspace|tag:[a-z0-9][a-z0-9_.-]{0\\,63})$"`
	Period UsagePeriod         `json:"period"`
	Rows   []UsageBreakdownRow `json:"rows"`
	// Note says, when a report by tag or filtered by tag cannot place
	// some usage by tag (its tag combination came past the bound), what
	// was left out; absent otherwise.
	Note string `json:"note,omitempty"`
}

// SignedBundle is an organization's compiled bundle as data planes fetch
// it. Body is the exact signed bytes (base64 in JSON).
type SignedBundle struct {
	OrgID     uuid.UUID `json:"org_id"`
	Version   int64     `json:"version"`
	Hash      string    `json:"hash"`
	Signature string    `json:"signature"`
	Body      []byte    `json:"body"`
}

// DataPlaneBundles is what a data plane polls: the latest bundle of every
// organization it is enrolled for, and the key they are signed with (data
// planes should pin it). Enrollment is the poller's enrollment status; only
// an approved data plane receives bundles.
type DataPlaneBundles struct {
	PublicKey  string         `json:"public_key"`
	Enrollment string         `json:"enrollment"`
	Bundles    []SignedBundle `json:"bundles"`
}

// Heartbeat is a data plane's periodic report.
type Heartbeat struct {
	ID             string           `json:"id" jsonschema:"minLength=1,maxLength=100"`
	Version        string           `json:"version" jsonschema:"minLength=1,maxLength=100"`
	BundleVersions map[string]int64 `json:"bundle_versions"`
	SpoolDepth     int64            `json:"spool_depth" jsonschema:"minimum=0"`
}

// DataPlaneInstance is a data plane as its last heartbeat described it.
type DataPlaneInstance struct {
	ID             string           `json:"id"`
	Version        string           `json:"version"`
	BundleVersions map[string]int64 `json:"bundle_versions"`
	// LatestBundleVersions are the latest bundle versions of the
	// organizations the data plane is enrolled for (empty until approved):
	// it is current when it has admitted each.
	LatestBundleVersions map[string]int64 `json:"latest_bundle_versions"`
	SpoolDepth           int64            `json:"spool_depth"`
	Status               string           `json:"status" jsonschema:"enum=healthy,enum=stale"`
	// Enrollment is the data plane's enrollment: pending until an
	// instance admin approves it (it serves nothing until then), approved,
	// revoked, or none when it never asked.
	Enrollment  string    `json:"enrollment" jsonschema:"enum=none,enum=pending,enum=approved,enum=revoked"`
	FirstSeenAt time.Time `json:"first_seen_at"`
	LastSeenAt  time.Time `json:"last_seen_at"`
}

// The vocabulary of usage, defined once for the server, the client and the
// dashboard.
var (
	// UsagePeriods are the report periods of spec 4.6.
	UsagePeriods = []string{"today", "7d", "30d", "month_to_date", "custom"}
	// UsageDatelessPeriods are the periods that need no dates (all but
	// custom), the ones the dashboard cycles through.
	UsageDatelessPeriods = UsagePeriods[:4:4]
	// UsageDimensions are what a breakdown may split a report by.
	// model is the model that answered, requested_model the one asked for.
	UsageDimensions = []string{"model", "requested_model", "provider", "owner", "inference_key", "workspace"}
	// UsageStatuses are a usage event's statuses: ok, error (the upstream
	// failed or the caller left mid-answer) and denied (gw refused it).
	UsageStatuses = []string{"ok", "error", "denied"}
	// UsageAttemptFailures are how an upstream attempt can fail
	// (UsageAttempt.Failure): rate_limited (the upstream answered 429),
	// upstream_unavailable (5xx, no connection, a stream cut off),
	// timeout, upstream_error (the upstream refused the request or gw's
	// credential), credential_unavailable (gw could not open its
	// credential), client_gone (the caller left) and shutdown (the
	// gateway stopped), cooling_down (gw skipped the target: it is
	// waiting out a rate limit's Retry-After or its circuit is open),
	// crashed (the gateway's process died mid-attempt; the event was
	// recorded at its next start from its request journal).
	UsageAttemptFailures = []string{"rate_limited", "upstream_unavailable", "timeout", "upstream_error",
		"credential_unavailable", "client_gone", "shutdown", "cooling_down", "crashed"}
)
