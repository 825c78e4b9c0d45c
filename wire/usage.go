package wire

import (
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
	Status               string     `json:"status" jsonschema:"enum=ok,enum=error,enum=denied"`
	LatencyMS            int64      `json:"latency_ms"`
	OccurredAt           time.Time  `json:"occurred_at"`
	ReceivedAt           time.Time  `json:"received_at"`
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
	Status               string     `json:"status" jsonschema:"enum=ok,enum=error,enum=denied"`
	LatencyMS            int64      `json:"latency_ms" jsonschema:"minimum=0"`
	OccurredAt           time.Time  `json:"occurred_at"`
}

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
}

// UsageBreakdownRow is one model, provider, owner or key of a breakdown.
type UsageBreakdownRow struct {
	Key string `json:"key"`
	UsageCounters
}

// UsageBreakdown splits a report's period by one dimension, largest cost
// first.
type UsageBreakdown struct {
	By     string              `json:"by" jsonschema:"enum=model,enum=provider,enum=owner,enum=inference_key,enum=workspace"`
	Period UsagePeriod         `json:"period"`
	Rows   []UsageBreakdownRow `json:"rows"`
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

// DataPlaneBundles is what a data plane polls: every organization's latest
// bundle and the key they are signed with (data planes should pin it).
type DataPlaneBundles struct {
	PublicKey string         `json:"public_key"`
	Bundles   []SignedBundle `json:"bundles"`
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
	SpoolDepth     int64            `json:"spool_depth"`
	Status         string           `json:"status" jsonschema:"enum=healthy,enum=stale"`
	FirstSeenAt    time.Time        `json:"first_seen_at"`
	LastSeenAt     time.Time        `json:"last_seen_at"`
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
	UsageDimensions = []string{"model", "provider", "owner", "inference_key", "workspace"}
	// UsageStatuses are a usage event's statuses: ok, error (the upstream
	// failed or the caller left mid-answer) and denied (gw refused it).
	UsageStatuses = []string{"ok", "error", "denied"}
)
