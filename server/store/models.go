package store

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/wire"
)

// Strings is a list stored as JSON text, the same on both dialects.
type Strings []string

// Value implements driver.Valuer.
func (s Strings) Value() (driver.Value, error) {
	if s == nil {
		s = Strings{}
	}
	b, err := json.Marshal([]string(s))
	return string(b), err
}

// Scan implements sql.Scanner.
func (s *Strings) Scan(src any) error { return scanJSON(src, "Strings", (*[]string)(s)) }

// Tags are cost-centre tags (server/tags), stored as a JSON object; an
// empty set is NULL.
type Tags map[string]string

// Value implements driver.Valuer.
func (t Tags) Value() (driver.Value, error) {
	if len(t) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(map[string]string(t))
	return string(b), err
}

// Scan implements sql.Scanner.
func (t *Tags) Scan(src any) error { return scanJSON(src, "Tags", (*map[string]string)(t)) }

// TagValues are a workspace's tag_values: the values a request header may
// give each tag key, stored as a JSON object of lists; none is NULL.
type TagValues map[string][]string

// Value implements driver.Valuer.
func (t TagValues) Value() (driver.Value, error) {
	if len(t) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(map[string][]string(t))
	return string(b), err
}

// Scan implements sql.Scanner.
func (t *TagValues) Scan(src any) error { return scanJSON(src, "TagValues", (*map[string][]string)(t)) }

// JSONMap is an object stored as JSON text.
type JSONMap map[string]any

// Value implements driver.Valuer.
func (m JSONMap) Value() (driver.Value, error) {
	if m == nil {
		return "{}", nil
	}
	b, err := json.Marshal(map[string]any(m))
	return string(b), err
}

// Scan implements sql.Scanner.
func (m *JSONMap) Scan(src any) error { return scanJSON(src, "JSONMap", (*map[string]any)(m)) }

// scanJSON reads a column of JSON text into dst; NULL leaves dst's zero
// value.
func scanJSON[T any](src any, name string, dst *T) error {
	var b []byte
	switch v := src.(type) {
	case string:
		b = []byte(v)
	case []byte:
		b = v
	case nil:
		var zero T
		*dst = zero
		return nil
	default:
		return fmt.Errorf("scan %s from %T", name, src)
	}
	return json.Unmarshal(b, dst)
}

// Now is the store's notion of the current time: UTC, truncated to the
// microsecond PostgreSQL keeps, so what is written reads back identical.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// InstanceState is the single row of instance-wide state.
type InstanceState struct {
	bun.BaseModel `bun:"table:instance_state"`

	ID             int        `bun:"id,pk"`
	CursorKey      string     `bun:"cursor_key"`
	SetupTokenHash *string    `bun:"setup_token_hash"`
	BootstrappedAt *time.Time `bun:"bootstrapped_at"`
	CreatedAt      time.Time  `bun:"created_at"`
	// The bundle signing key pair; the private half is sealed.
	BundlePublicKey        *string `bun:"bundle_public_key"`
	BundlePrivateKeySealed *string `bun:"bundle_private_key_sealed"`
	// Egress is the instance's egress setting (JSON, EgressSetting), nil
	// while never set; EgressRevision counts its changes (instance_settings.go).
	Egress            *string    `bun:"egress"`
	EgressRevision    int64      `bun:"egress_revision"`
	SettingsUpdatedAt *time.Time `bun:"settings_updated_at"`
	// OAuthCIMDAllowPrivate lets Client ID Metadata Documents be fetched
	// from private and loopback addresses (issue 31; docs/identity.md).
	OAuthCIMDAllowPrivate *bool `bun:"oauth_cimd_allow_private"`
}

// Organization is a tenant.
type Organization struct {
	bun.BaseModel `bun:"table:organizations"`

	ID        uuid.UUID `bun:"id,pk,type:uuid"`
	Name      string    `bun:"name"`
	Slug      string    `bun:"slug"`
	CreatedAt time.Time `bun:"created_at"`
	UpdatedAt time.Time `bun:"updated_at"`
	// RequireSSO names the identity providers the organization's members
	// must sign in through (issue 31); none, password sign-in is allowed.
	RequireSSO Strings `bun:"require_sso,type:text,nullzero"`
}

// RateLimits are per-minute limits of requests and tokens; nil is none.
type RateLimits struct {
	RPM *int64 `bun:"rpm"`
	TPM *int64 `bun:"tpm"`
}

// User is a person or a service account.
type User struct {
	bun.BaseModel `bun:"table:users"`

	ID             uuid.UUID  `bun:"id,pk,type:uuid"`
	Email          string     `bun:"email"`
	Name           string     `bun:"name"`
	PasswordHash   *string    `bun:"password_hash"`
	InstanceRole   string     `bun:"instance_role"`
	ServiceAccount bool       `bun:"service_account"`
	ManagingOrgID  *uuid.UUID `bun:"managing_org_id,type:uuid"`
	DeletedAt      *time.Time `bun:"deleted_at"`
	// DisabledAt is set while an instance admin has disabled the account.
	DisabledAt *time.Time `bun:"disabled_at"`
	CreatedAt  time.Time  `bun:"created_at"`
	UpdatedAt  time.Time  `bun:"updated_at"`
}

// Membership places a user in an organization.
type Membership struct {
	bun.BaseModel `bun:"table:memberships"`

	OrgID     uuid.UUID `bun:"org_id,pk,type:uuid"`
	UserID    uuid.UUID `bun:"user_id,pk,type:uuid"`
	Role      string    `bun:"role"`
	Status    string    `bun:"status"`
	CreatedAt time.Time `bun:"created_at"`
	UpdatedAt time.Time `bun:"updated_at"`
}

// Workspace groups keys, credentials and policies inside an organization.
type Workspace struct {
	bun.BaseModel `bun:"table:workspaces"`

	ID        uuid.UUID `bun:"id,pk,type:uuid"`
	OrgID     uuid.UUID `bun:"org_id,type:uuid"`
	Name      string    `bun:"name"`
	Slug      string    `bun:"slug"`
	CreatedAt time.Time `bun:"created_at"`
	UpdatedAt time.Time `bun:"updated_at"`

	// RateLimits are the default and the ceiling of its keys' limits.
	RateLimits RateLimits `bun:"embed:rate_limit_"`
	// RequiredTags are the tag keys every request must carry (its key's
	// tags or its X-Gw-Tags header); nil requires none.
	RequiredTags Strings `bun:"required_tags,type:text,nullzero"`
	// TagValues are the values a request's X-Gw-Tags header may give each
	// listed tag key; nil restricts nothing.
	TagValues TagValues `bun:"tag_values,type:text,nullzero"`
	// MCPDefault is whether a tool no tool policy allows is reachable:
	// "allow", or nil for "deny" (issue 30).
	MCPDefault *string `bun:"mcp_default"`
	// MCPAuditArguments records a tool call's arguments in its audit row;
	// nil is false.
	MCPAuditArguments *bool `bun:"mcp_audit_arguments"`
	// Archive is the workspace's payload archive (issue 32); nil
	// archives nothing.
	Archive *Archive `bun:"archive,type:text,nullzero"`
	// ArchiveCheck is what the control plane last learnt of the archive's
	// bucket (when saved, at each sweep); nil when none was checked.
	ArchiveCheck *ArchiveCheck `bun:"archive_check,type:text,nullzero"`
	// ResponseCache is the workspace's response cache (issue 35); nil
	// caches nothing.
	ResponseCache *ResponseCache `bun:"response_cache,type:text,nullzero"`
	// PromptCache is the workspace's prompt-cache injection (issue 35,
	// part 4); nil injects nothing.
	PromptCache *PromptCache `bun:"prompt_cache,type:text,nullzero"`
}

// ResponseCache is a workspace's response cache setting, stored as JSON
// text.
type ResponseCache struct {
	Enabled       bool `json:"enabled"`
	TTLSeconds    int  `json:"ttl_seconds"`
	MaxEntryBytes int  `json:"max_entry_bytes"`
}

// Value implements driver.Valuer.
func (c *ResponseCache) Value() (driver.Value, error) {
	if c == nil {
		return nil, nil
	}
	b, err := json.Marshal(*c)
	return string(b), err
}

// Scan implements sql.Scanner.
func (c *ResponseCache) Scan(src any) error { return scanJSON(src, "ResponseCache", c) }

// Archive is a workspace's payload archive setting, stored as JSON text:
// where each request's body and answer go, the secret access key sealed
// (secrets.ArchiveAAD).
type Archive struct {
	Enabled       bool     `json:"enabled"`
	Endpoint      string   `json:"endpoint"`
	Region        string   `json:"region,omitempty"`
	Bucket        string   `json:"bucket"`
	Prefix        string   `json:"prefix,omitempty"`
	PathStyle     bool     `json:"path_style,omitempty"`
	AccessKeyID   string   `json:"access_key_id"`
	SecretSealed  string   `json:"secret_sealed"`
	RetentionDays int      `json:"retention_days,omitempty"`
	Include       []string `json:"include"`
}

// Value implements driver.Valuer.
func (a *Archive) Value() (driver.Value, error) {
	if a == nil {
		return nil, nil
	}
	b, err := json.Marshal(*a)
	return string(b), err
}

// Scan implements sql.Scanner.
func (a *Archive) Scan(src any) error { return scanJSON(src, "Archive", a) }

// WorkspaceMember places a user in a workspace.
type WorkspaceMember struct {
	bun.BaseModel `bun:"table:workspace_members"`

	WorkspaceID uuid.UUID `bun:"workspace_id,pk,type:uuid"`
	UserID      uuid.UUID `bun:"user_id,pk,type:uuid"`
	Role        string    `bun:"role"`
	CreatedAt   time.Time `bun:"created_at"`
	UpdatedAt   time.Time `bun:"updated_at"`
}

// ManagementKey is a control-plane credential; only its hash is stored.
type ManagementKey struct {
	bun.BaseModel `bun:"table:management_keys"`

	ID          uuid.UUID  `bun:"id,pk,type:uuid"`
	UserID      uuid.UUID  `bun:"user_id,type:uuid"`
	OrgID       *uuid.UUID `bun:"org_id,type:uuid"`
	WorkspaceID *uuid.UUID `bun:"workspace_id,type:uuid"`
	ParentID    *uuid.UUID `bun:"parent_id,type:uuid"`
	Prefix      string     `bun:"prefix"`
	TokenHash   string     `bun:"token_hash"`
	Permissions Strings    `bun:"permissions,type:text"`
	Label       string     `bun:"label"`
	ExpiresAt   *time.Time `bun:"expires_at"`
	RevokedAt   *time.Time `bun:"revoked_at"`
	CreatedAt   time.Time  `bun:"created_at"`
	UpdatedAt   time.Time  `bun:"updated_at"`
}

// Session is a browser sign-in; only its hash is stored.
type Session struct {
	bun.BaseModel `bun:"table:sessions"`

	ID        uuid.UUID `bun:"id,pk,type:uuid"`
	UserID    uuid.UUID `bun:"user_id,type:uuid"`
	TokenHash string    `bun:"token_hash"`
	// UserAgent and ClientAddress are as the session was started, shown
	// when a person lists their sessions.
	UserAgent     string    `bun:"user_agent"`
	ClientAddress string    `bun:"client_address"`
	CreatedAt     time.Time `bun:"created_at"`
	ExpiresAt     time.Time `bun:"expires_at"`
}

// Invitation asks someone, by email, to join an organization.
type Invitation struct {
	bun.BaseModel `bun:"table:invitations"`

	ID         uuid.UUID  `bun:"id,pk,type:uuid"`
	OrgID      uuid.UUID  `bun:"org_id,type:uuid"`
	Email      string     `bun:"email"`
	Role       string     `bun:"role"`
	TokenHash  string     `bun:"token_hash"`
	InvitedBy  *uuid.UUID `bun:"invited_by,type:uuid"`
	AcceptedBy *uuid.UUID `bun:"accepted_by,type:uuid"`
	ExpiresAt  time.Time  `bun:"expires_at"`
	AcceptedAt *time.Time `bun:"accepted_at"`
	RevokedAt  *time.Time `bun:"revoked_at"`
	CreatedAt  time.Time  `bun:"created_at"`
	UpdatedAt  time.Time  `bun:"updated_at"`
}

// AuditEvent records one mutation.
type AuditEvent struct {
	bun.BaseModel `bun:"table:audit_events"`

	ID          uuid.UUID  `bun:"id,pk,type:uuid"`
	OrgID       *uuid.UUID `bun:"org_id,type:uuid"`
	WorkspaceID *uuid.UUID `bun:"workspace_id,type:uuid"`
	ActorType   string     `bun:"actor_type"`
	ActorID     *uuid.UUID `bun:"actor_id,type:uuid"`
	ActorKeyID  *uuid.UUID `bun:"actor_key_id,type:uuid"`
	Action      string     `bun:"action"`
	TargetType  string     `bun:"target_type"`
	TargetID    string     `bun:"target_id"`
	RequestID   string     `bun:"request_id"`
	Details     JSONMap    `bun:"details,type:text"`
	CreatedAt   time.Time  `bun:"created_at"`
}

// CatalogProvider is an upstream provider of the model catalog.
type CatalogProvider struct {
	bun.BaseModel `bun:"table:catalog_providers"`

	ID        string     `bun:"id,pk"`
	Name      string     `bun:"name"`
	Kind      string     `bun:"kind"`
	BaseURL   string     `bun:"base_url"`
	RetiredAt *time.Time `bun:"retired_at"`
	CreatedAt time.Time  `bun:"created_at"`
	UpdatedAt time.Time  `bun:"updated_at"`
}

// CatalogModel is a model of the catalog; prices are decimal strings.
type CatalogModel struct {
	bun.BaseModel `bun:"table:catalog_models"`

	ID                string `bun:"id,pk"`
	Provider          string `bun:"provider"`
	Name              string `bun:"name"`
	ContextWindow     int64  `bun:"context_window"`
	MaxOutputTokens   int64  `bun:"max_output_tokens"`
	InputPerMTok      string `bun:"input_per_mtok"`
	OutputPerMTok     string `bun:"output_per_mtok"`
	CacheReadPerMTok  string `bun:"cache_read_per_mtok"`
	CacheWritePerMTok string `bun:"cache_write_per_mtok"`
	// CacheWrite1hPerMTok is empty when one-hour writes cost the
	// five-minute price; LongContext is the long-context tier as JSON
	// (catalog.LongContextPricing), nil for none.
	CacheWrite1hPerMTok string  `bun:"cache_write_1h_per_mtok"`
	LongContext         *string `bun:"long_context"`
	// ServiceTiers are the service tiers' prices as JSON
	// (catalog.Pricing.ServiceTiers), nil for none.
	ServiceTiers *string `bun:"service_tiers"`
	// Constraints are the model's request constraints as JSON
	// (catalog.Constraints), nil for none.
	Constraints *string `bun:"constraints"`
	// Batch are the batch prices as JSON (catalog.Pricing.Batch), nil
	// for none (the provider's published discount applies).
	Batch        *string    `bun:"batch_pricing"`
	Capabilities Strings    `bun:"capabilities,type:text"`
	Modalities   Strings    `bun:"modalities,type:text"`
	ModelType    string     `bun:"model_type"`
	Released     int64      `bun:"released"`
	RetiredAt    *time.Time `bun:"retired_at"`
	CreatedAt    time.Time  `bun:"created_at"`
	UpdatedAt    time.Time  `bun:"updated_at"`
}

// ProviderCredential is an upstream API secret at platform (no org),
// organization or workspace scope. The secret is sealed.
type ProviderCredential struct {
	bun.BaseModel `bun:"table:provider_credentials"`

	ID           uuid.UUID  `bun:"id,pk,type:uuid"`
	OrgID        *uuid.UUID `bun:"org_id,type:uuid"`
	WorkspaceID  *uuid.UUID `bun:"workspace_id,type:uuid"`
	Provider     string     `bun:"provider"`
	Label        string     `bun:"label"`
	BaseURL      *string    `bun:"base_url"`
	SecretSealed string     `bun:"secret_sealed"`
	SecretHint   string     `bun:"secret_hint"`
	// Settings are the non-secret settings some kinds need (a JSON
	// object), nil for none.
	Settings  *string   `bun:"settings"`
	CreatedAt time.Time `bun:"created_at"`
	UpdatedAt time.Time `bun:"updated_at"`
}

// InferenceKey is a data-plane credential; only its hash is stored.
type InferenceKey struct {
	bun.BaseModel `bun:"table:inference_keys"`

	ID          uuid.UUID  `bun:"id,pk,type:uuid"`
	OrgID       uuid.UUID  `bun:"org_id,type:uuid"`
	WorkspaceID uuid.UUID  `bun:"workspace_id,type:uuid"`
	UserID      uuid.UUID  `bun:"user_id,type:uuid"`
	Name        string     `bun:"name"`
	Prefix      string     `bun:"prefix"`
	TokenHash   string     `bun:"token_hash"`
	ExpiresAt   *time.Time `bun:"expires_at"`
	RevokedAt   *time.Time `bun:"revoked_at"`
	RateLimits  RateLimits `bun:"embed:rate_limit_"`
	// CreatedBy issued the key (and was shown its plaintext); nil for
	// keys older than the record whose issuing was not audited.
	CreatedBy *uuid.UUID `bun:"created_by,type:uuid"`
	// Tags are the key's cost-centre tags; every usage event of the key
	// records them, over any the request names.
	Tags      Tags      `bun:"tags,type:text"`
	CreatedAt time.Time `bun:"created_at"`
	UpdatedAt time.Time `bun:"updated_at"`
}

// Policy is a workspace policy; Definition is its canonical JSON.
type Policy struct {
	bun.BaseModel `bun:"table:policies"`

	ID          uuid.UUID `bun:"id,pk,type:uuid"`
	OrgID       uuid.UUID `bun:"org_id,type:uuid"`
	WorkspaceID uuid.UUID `bun:"workspace_id,type:uuid"`
	Name        string    `bun:"name"`
	Enabled     bool      `bun:"enabled"`
	Definition  string    `bun:"definition"`
	CreatedAt   time.Time `bun:"created_at"`
	UpdatedAt   time.Time `bun:"updated_at"`
}

// Bundle is an organization's latest compiled, signed bundle.
type Bundle struct {
	bun.BaseModel `bun:"table:bundles"`

	OrgID      uuid.UUID `bun:"org_id,pk,type:uuid"`
	Version    int64     `bun:"version"`
	Hash       string    `bun:"hash"`
	Signature  string    `bun:"signature"`
	Body       string    `bun:"body"`
	CompiledAt time.Time `bun:"compiled_at"`
}

// CLIAuthorization is one device-style CLI sign-in.
type CLIAuthorization struct {
	bun.BaseModel `bun:"table:cli_authorizations"`

	ID              uuid.UUID  `bun:"id,pk,type:uuid"`
	PollSecretHash  string     `bun:"poll_secret_hash"`
	UserCode        string     `bun:"user_code"`
	Label           string     `bun:"label"`
	Status          string     `bun:"status"`
	IntervalSeconds int        `bun:"interval_seconds"`
	UserID          *uuid.UUID `bun:"user_id,type:uuid"`
	OrgID           *uuid.UUID `bun:"org_id,type:uuid"`
	WorkspaceID     *uuid.UUID `bun:"workspace_id,type:uuid"`
	Permissions     Strings    `bun:"permissions,type:text"`
	KeyID           *uuid.UUID `bun:"key_id,type:uuid"`
	LastPollAt      *time.Time `bun:"last_poll_at"`
	ExpiresAt       time.Time  `bun:"expires_at"`
	DecidedAt       *time.Time `bun:"decided_at"`
	CreatedAt       time.Time  `bun:"created_at"`
}

// UsageEvent is one model request; cost in integer nano-dollars.
type UsageEvent struct {
	bun.BaseModel `bun:"table:usage_events"`

	ID                   uuid.UUID  `bun:"id,pk,type:uuid"`
	OrgID                uuid.UUID  `bun:"org_id,type:uuid"`
	WorkspaceID          uuid.UUID  `bun:"workspace_id,type:uuid"`
	InferenceKeyID       *uuid.UUID `bun:"inference_key_id,type:uuid"`
	ManagementKeyID      *uuid.UUID `bun:"management_key_id,type:uuid"`
	OwnerID              *uuid.UUID `bun:"owner_id,type:uuid"`
	Model                string     `bun:"model"`
	Provider             string     `bun:"provider"`
	ProviderCredentialID *uuid.UUID `bun:"provider_credential_id,type:uuid"`
	InputTokens          int64      `bun:"input_tokens"`
	OutputTokens         int64      `bun:"output_tokens"`
	CacheReadTokens      int64      `bun:"cache_read_tokens"`
	CacheWriteTokens     int64      `bun:"cache_write_tokens"`
	CostNanoUSD          int64      `bun:"cost_nano_usd"`
	Status               string     `bun:"status"`
	LatencyMS            int64      `bun:"latency_ms"`
	OccurredAt           time.Time  `bun:"occurred_at"`
	Bucket               int64      `bun:"bucket"`
	ReceivedAt           time.Time  `bun:"received_at"`
	RequestID            *string    `bun:"request_id"`
	Endpoint             *string    `bun:"endpoint"`
	Reason               *string    `bun:"reason"`
	RequestedModel       string     `bun:"requested_model"`
	// Attempts is the upstream attempt chain, stored as JSON text.
	Attempts UsageAttempts `bun:"attempts,type:text"`
	// UsageSource is upstream or estimated; ReasoningTokens part of the
	// output, CacheWrite1hTokens part of the cache writes.
	UsageSource        string `bun:"usage_source"`
	ReasoningTokens    int64  `bun:"reasoning_tokens"`
	CacheWrite1hTokens int64  `bun:"cache_write_1h_tokens"`
	// Provenance is how the cost came about, as JSON text; NULL on events
	// stored before it was recorded, and on those that name it by
	// ProvenanceID.
	Provenance *UsageProvenance `bun:"provenance,type:text"`
	// Tags are the request's cost-centre tags (NULL: none); TagSetID
	// names the set (tags.SetID), nil without tags.
	Tags     Tags       `bun:"tags,type:text"`
	TagSetID *uuid.UUID `bun:"tag_set_id,type:uuid"`
	// Guardrails are the guardrails' outcomes as JSON text (NULL: none
	// applied).
	Guardrails UsageGuardrails `bun:"guardrails,type:text"`
	// CacheSavingNanoUSD is what the upstream call would have cost, on
	// an event the response cache answered (usage_source cache); 0
	// otherwise.
	CacheSavingNanoUSD int64 `bun:"cache_saving_nano_usd"`
	// ServiceTier is the service tier the request was billed in; NULL
	// when none was named.
	ServiceTier *string `bun:"service_tier"`
	// BatchID is the batch the request was a line of; NULL for a
	// synchronous request.
	BatchID *string `bun:"batch_id"`
	// ProvenanceID names the event's provenance in usage_provenances,
	// where each distinct value is stored once (issue 33): a new event's
	// row carries it and leaves provenance NULL; NULL on events stored
	// before, which keep theirs inline. The store's reads fill Provenance
	// either way.
	ProvenanceID *uuid.UUID `bun:"provenance_id,type:uuid"`

	// ToolArguments and ToolArgumentsBytes are an MCP tool call's
	// arguments and their size, carried to its audit row (auditToolCalls)
	// when the workspace's mcp_audit_arguments is true: no column of the
	// event holds them.
	ToolArguments      json.RawMessage `bun:"-"`
	ToolArgumentsBytes int64           `bun:"-"`
}

// UsageGuardrails is an event's guardrail records as stored: a JSON array,
// NULL when empty.
type UsageGuardrails []wire.GuardrailRecord

// Value implements driver.Valuer.
func (g UsageGuardrails) Value() (driver.Value, error) {
	if len(g) == 0 {
		return nil, nil
	}
	b, err := json.Marshal([]wire.GuardrailRecord(g))
	return string(b), err
}

// Scan implements sql.Scanner.
func (g *UsageGuardrails) Scan(src any) error {
	return scanJSON(src, "UsageGuardrails", (*[]wire.GuardrailRecord)(g))
}

// guardrailsText is an event's guardrail records as stored (nil: NULL).
func guardrailsText(e *UsageEvent) (*string, error) {
	v, err := e.Guardrails.Value()
	if err != nil || v == nil {
		return nil, err
	}
	s := v.(string)
	return &s, nil
}

// UsageProvenance is an event's provenance as stored: JSON text.
type UsageProvenance wire.UsageProvenance

// Value implements driver.Valuer.
func (p *UsageProvenance) Value() (driver.Value, error) {
	if p == nil {
		return nil, nil
	}
	b, err := json.Marshal((*wire.UsageProvenance)(p))
	return string(b), err
}

// Scan implements sql.Scanner.
func (p *UsageProvenance) Scan(src any) error {
	return scanJSON(src, "UsageProvenance", (*wire.UsageProvenance)(p))
}

// UsageAttempts is an event's attempt chain as stored: a JSON array; NULL
// on events stored before attempts were recorded.
type UsageAttempts []wire.UsageAttempt

// Value implements driver.Valuer.
func (a UsageAttempts) Value() (driver.Value, error) {
	if a == nil {
		return "[]", nil
	}
	b, err := json.Marshal([]wire.UsageAttempt(a))
	return string(b), err
}

// Scan implements sql.Scanner.
func (a *UsageAttempts) Scan(src any) error {
	return scanJSON(src, "UsageAttempts", (*[]wire.UsageAttempt)(a))
}

// DataPlane is a data-plane instance as its last heartbeat described it.
type DataPlane struct {
	bun.BaseModel `bun:"table:data_planes"`

	ID             string    `bun:"id,pk"`
	Version        string    `bun:"version"`
	BundleVersions JSONMap   `bun:"bundle_versions,type:text"`
	SpoolDepth     int64     `bun:"spool_depth"`
	FirstSeenAt    time.Time `bun:"first_seen_at"`
	LastSeenAt     time.Time `bun:"last_seen_at"`
}
