package wire

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Credential scope levels (the words policies' credential_access uses).
const (
	CredentialPlatform     = "platform"
	CredentialOrganization = "org"
	CredentialWorkspace    = "workspace"
)

// CredentialScope says where a provider credential is configured.
type CredentialScope struct {
	Level       string     `json:"level" jsonschema:"enum=platform,enum=org,enum=workspace"`
	OrgID       *uuid.UUID `json:"org_id" jsonschema:"nullable"`
	WorkspaceID *uuid.UUID `json:"workspace_id" jsonschema:"nullable"`
}

// ProviderCredential is an upstream API credential, as metadata: the
// secret itself is never returned.
type ProviderCredential struct {
	ID       uuid.UUID       `json:"id"`
	Scope    CredentialScope `json:"scope"`
	Provider string          `json:"provider"`
	Label    string          `json:"label"`
	BaseURL  *string         `json:"base_url" jsonschema:"nullable"`
	// Settings are the non-secret settings of the kinds that need them
	// (bedrock, vertex, azure-openai); null for none.
	Settings *CredentialSettings `json:"settings" jsonschema:"nullable"`
	// SecretHint tells keys apart: the secret's last four characters, or
	// for a JSON credential the identifier it names (an access key id's
	// ends, a service account's email, a client id's ends).
	SecretHint string    `json:"secret_hint"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// ProviderCredentialCreate configures a credential.
type ProviderCredentialCreate struct {
	Provider string `json:"provider" jsonschema:"minLength=1,maxLength=255"`
	Label    string `json:"label" jsonschema:"minLength=1,maxLength=80"`
	Secret   string `json:"secret" jsonschema:"minLength=1,maxLength=8192"`
	BaseURL  string `json:"base_url,omitempty" jsonschema:"format=uri,maxLength=2048"`
	// Settings are required by some kinds: bedrock (region), vertex
	// (location), and taken by azure-openai (api_version, deployments).
	Settings *CredentialSettings `json:"settings,omitempty"`
}

// CredentialSettings are a provider credential's non-secret settings
// (docs/providers.md): each provider kind takes its own, and refuses the
// others.
type CredentialSettings struct {
	// Region is a bedrock credential's AWS region (us-east-1).
	Region string `json:"region,omitempty" jsonschema:"maxLength=255"`
	// Project is a vertex credential's Google Cloud project; the service
	// account's project_id when left out.
	Project string `json:"project,omitempty" jsonschema:"maxLength=255"`
	// Location is a vertex credential's location (us-east5, global).
	Location string `json:"location,omitempty" jsonschema:"maxLength=255"`
	// APIVersion is an azure-openai credential's api-version (default
	// 2024-10-21).
	APIVersion string `json:"api_version,omitempty" jsonschema:"maxLength=255"`
	// Deployments maps an azure-openai model name to the deployment that
	// serves it; a model not listed is served by the deployment of its
	// own name.
	Deployments map[string]string `json:"deployments,omitempty"`
	// TokenURL replaces the OAuth token endpoint (vertex: the service
	// account's token_uri; azure-openai: Microsoft Entra ID's).
	TokenURL string `json:"token_url,omitempty" jsonschema:"maxLength=255"`
	// Batches is where an openai, azure-openai, anthropic or bedrock credential's
	// batch lines run: "native" (the default: the provider's own batch
	// API, at its batch price) or "gateway" (gw sends each line itself).
	Batches string `json:"batches,omitempty" jsonschema:"enum=native,enum=gateway"`
	// BatchS3URI is a bedrock credential's S3 prefix for batch inference
	// jobs (s3://bucket/prefix/): gw writes a job's input under it,
	// Bedrock its output. With BatchRoleARN, the credential's batch lines
	// run on Bedrock's batch inference; without, on gw's runner.
	BatchS3URI string `json:"batch_s3_uri,omitempty" jsonschema:"maxLength=255"`
	// BatchRoleARN is the IAM service role Bedrock's batch inference
	// jobs run as (it reads and writes BatchS3URI).
	BatchRoleARN string `json:"batch_role_arn,omitempty" jsonschema:"maxLength=255"`
	// BatchS3Endpoint is an S3 endpoint other than AWS's regional one (an
	// S3-compatible store, a VPC endpoint), held to the egress policy.
	BatchS3Endpoint string `json:"batch_s3_endpoint,omitempty" jsonschema:"maxLength=255"`
}

// ProviderCredentialUpdate changes a credential's label, secret, base URL or settings.
type ProviderCredentialUpdate struct {
	Label   *string `json:"label,omitempty" jsonschema:"minLength=1,maxLength=80"`
	Secret  *string `json:"secret,omitempty" jsonschema:"minLength=1,maxLength=8192"`
	BaseURL *string `json:"base_url,omitempty" jsonschema:"maxLength=2048"`
	// Settings replace the credential's settings whole; null clears them.
	Settings *CredentialSettings `json:"settings,omitempty"`
}

// InferenceKey is a workspace's data-plane key. Token is present only in
// the creating response.
type InferenceKey struct {
	ID          uuid.UUID  `json:"id"`
	OrgID       uuid.UUID  `json:"org_id"`
	WorkspaceID uuid.UUID  `json:"workspace_id"`
	UserID      uuid.UUID  `json:"user_id"`
	Name        string     `json:"name"`
	Prefix      string     `json:"prefix"`
	ExpiresAt   *time.Time `json:"expires_at" jsonschema:"nullable"`
	RevokedAt   *time.Time `json:"revoked_at" jsonschema:"nullable"`
	// RateLimits are the key's own limits; a key without them has its
	// workspace's, and a key's limits never exceed its workspace's.
	RateLimits *RateLimits `json:"rate_limits" jsonschema:"nullable"`
	// Tags are the key's cost-centre tags: every usage event of the key
	// records them, and they win over a request's X-Gw-Tags.
	Tags      map[string]string `json:"tags" jsonschema:"maxProperties=20"`
	CreatedAt time.Time         `json:"created_at"`
	UpdatedAt time.Time         `json:"updated_at"`
	Status    string            `json:"status" jsonschema:"enum=active,enum=revoked,enum=expired"`
	Token     string            `json:"token,omitempty"`
}

// InferenceKeyCreate issues an inference key, owned by the caller or by
// the given organization member.
type InferenceKeyCreate struct {
	Name      string     `json:"name" jsonschema:"minLength=1,maxLength=100"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	UserID    *uuid.UUID `json:"user_id,omitempty"`
	// RateLimits may not exceed the workspace's.
	RateLimits *RateLimits `json:"rate_limits,omitempty" jsonschema:"nullable"`
	// Tags: up to 20 pairs, keys of 1 to 64 characters matching
	// ^[a-z0-9][a-z0-9_.-]*$, values of 1 to 128 printable characters.
	Tags map[string]string `json:"tags,omitempty" jsonschema:"maxProperties=20"`
}

// InferenceKeyUpdate renames a key, changes its rate limits or replaces
// its tags (whole; null or {} clears them).
type InferenceKeyUpdate struct {
	Name       *string            `json:"name,omitempty" jsonschema:"minLength=1,maxLength=100"`
	RateLimits *RateLimits        `json:"rate_limits,omitempty" jsonschema:"nullable"`
	Tags       *map[string]string `json:"tags,omitempty" jsonschema:"nullable,maxProperties=20"`
}

// Policy is spec 2.3's PolicyOut.
type Policy struct {
	ID          uuid.UUID        `json:"id"`
	OrgID       uuid.UUID        `json:"org_id"`
	WorkspaceID uuid.UUID        `json:"workspace_id"`
	Name        string           `json:"name"`
	Enabled     bool             `json:"enabled"`
	Definition  PolicyDefinition `json:"definition"`
	CreatedAt   time.Time        `json:"created_at"`
	UpdatedAt   time.Time        `json:"updated_at"`
}

// PolicyCreate creates a policy; enabled defaults to true.
type PolicyCreate struct {
	Name       string           `json:"name" jsonschema:"minLength=1,maxLength=100"`
	Enabled    *bool            `json:"enabled,omitempty"`
	Definition PolicyDefinition `json:"definition"`
}

// PolicyUpdate replaces any of a policy's name, enabled flag or definition.
type PolicyUpdate struct {
	Name       *string          `json:"name,omitempty" jsonschema:"minLength=1,maxLength=100"`
	Enabled    *bool            `json:"enabled,omitempty"`
	Definition PolicyDefinition `json:"definition,omitempty"`
}

// PolicyCandidate is a user or inference key a selected_users or
// selected_keys target may name.
type PolicyCandidate struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	Kind  string `json:"kind" jsonschema:"enum=user,enum=key"`
}

// CatalogProvider is a provider of the model catalog.
type CatalogProvider struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Kind      string     `json:"kind"`
	BaseURL   string     `json:"base_url"`
	RetiredAt *time.Time `json:"retired_at" jsonschema:"nullable"`
}

// Pricing is per million tokens, as decimal strings (USD).
// CacheWrite1hPerMTok prices cache writes kept for an hour (null: the
// five-minute price applies); LongContext, when set, prices a whole
// request whose input passes its threshold.
type Pricing struct {
	InputPerMTok        string              `json:"input_per_mtok"`
	OutputPerMTok       string              `json:"output_per_mtok"`
	CacheReadPerMTok    string              `json:"cache_read_per_mtok"`
	CacheWritePerMTok   string              `json:"cache_write_per_mtok"`
	CacheWrite1hPerMTok *string             `json:"cache_write_1h_per_mtok" jsonschema:"nullable"`
	LongContext         *LongContextPricing `json:"long_context" jsonschema:"nullable"`
	// ServiceTiers are the provider's service tiers' prices (priority,
	// flex), by name; absent for none.
	ServiceTiers map[string]ServiceTierPricing `json:"service_tiers,omitempty"`
	// Batch are the prices of a batch's lines (docs/metering.md); absent,
	// a line costs the provider kind's published batch discount (half, at
	// openai, anthropic, bedrock, vertex and azure-openai), else the
	// prices above.
	Batch *BatchPricing `json:"batch,omitempty"`
}

// BatchPricing is the batch prices a provider publishes: input, output
// and cache reads (a batch line's cache writes cost the base price).
type BatchPricing struct {
	InputPerMTok     string `json:"input_per_mtok"`
	OutputPerMTok    string `json:"output_per_mtok"`
	CacheReadPerMTok string `json:"cache_read_per_mtok"`
}

// ServiceTierPricing is one service tier's prices, as Pricing's.
type ServiceTierPricing struct {
	InputPerMTok        string              `json:"input_per_mtok"`
	OutputPerMTok       string              `json:"output_per_mtok"`
	CacheReadPerMTok    string              `json:"cache_read_per_mtok"`
	CacheWritePerMTok   string              `json:"cache_write_per_mtok"`
	CacheWrite1hPerMTok *string             `json:"cache_write_1h_per_mtok,omitempty"`
	LongContext         *LongContextPricing `json:"long_context,omitempty"`
}

// LongContextPricing is the tier a request is priced at once its input
// (fresh, cache read and cache written) exceeds AboveInputTokens.
type LongContextPricing struct {
	AboveInputTokens    int64   `json:"above_input_tokens" jsonschema:"minimum=1"`
	InputPerMTok        string  `json:"input_per_mtok"`
	OutputPerMTok       string  `json:"output_per_mtok"`
	CacheReadPerMTok    string  `json:"cache_read_per_mtok"`
	CacheWritePerMTok   string  `json:"cache_write_per_mtok"`
	CacheWrite1hPerMTok *string `json:"cache_write_1h_per_mtok,omitempty"`
}

// CatalogModel is a model of the catalog.
type CatalogModel struct {
	ID              string   `json:"id"`
	Provider        string   `json:"provider"`
	Name            string   `json:"name"`
	ContextWindow   int64    `json:"context_window"`
	MaxOutputTokens int64    `json:"max_output_tokens"`
	Pricing         Pricing  `json:"pricing"`
	Capabilities    []string `json:"capabilities"`
	Modalities      []string `json:"modalities"`
	// Type is "embedding" for embedding models; left out for chat models.
	Type      string     `json:"type,omitempty" jsonschema:"enum=embedding"`
	Created   int64      `json:"created"`
	RetiredAt *time.Time `json:"retired_at" jsonschema:"nullable"`
	// Constraints are what the model refuses of a request its API
	// otherwise takes; absent for none.
	Constraints *ModelConstraints `json:"constraints,omitempty"`
	// Available says whether a provider credential is configured where the
	// reader (organization or workspace) can use it.
	Available *bool `json:"available,omitempty"`
}

// CatalogProviderInput is a provider as a catalog document, an import or a
// put writes it; retired_at is the server's to set.
type CatalogProviderInput struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	BaseURL string `json:"base_url,omitempty"`
}

// CatalogModelInput is a model as a catalog document, an import or a put
// writes it; retired_at and available are the server's to say.
type CatalogModelInput struct {
	ID              string   `json:"id"`
	Provider        string   `json:"provider"`
	Name            string   `json:"name"`
	ContextWindow   int64    `json:"context_window"`
	MaxOutputTokens int64    `json:"max_output_tokens"`
	Pricing         Pricing  `json:"pricing"`
	Capabilities    []string `json:"capabilities"`
	Modalities      []string `json:"modalities"`
	Type            string   `json:"type,omitempty" jsonschema:"enum=embedding"`
	Created         int64    `json:"created,omitempty"`
	// Constraints, when set, are what the model refuses of a request.
	Constraints *ModelConstraints `json:"constraints,omitempty"`
}

// ModelConstraints are a model's request constraints (docs/dialects.md):
// sampling_params false, the model refuses temperature, top_p and top_k
// (gw leaves them out); forced_tool_choice false, it refuses a forced
// tool choice (gw sends auto); anthropic_version, the anthropic-version it
// is called with (models of kind anthropic only).
type ModelConstraints struct {
	SamplingParams   *bool  `json:"sampling_params,omitempty"`
	ForcedToolChoice *bool  `json:"forced_tool_choice,omitempty"`
	AnthropicVersion string `json:"anthropic_version,omitempty" jsonschema:"pattern=^[0-9]{4}-[0-9]{2}-[0-9]{2}$"`
}

// CatalogDocument is what gw catalog import sends: providers and models,
// added or replaced by id.
type CatalogDocument struct {
	Providers []CatalogProviderInput `json:"providers"`
	Models    []CatalogModelInput    `json:"models,omitempty"`
}

// Catalog is the whole model catalog.
type Catalog struct {
	Providers []CatalogProvider `json:"providers"`
	Models    []CatalogModel    `json:"models"`
}

// CatalogImportResult counts what an import wrote.
type CatalogImportResult struct {
	Providers int `json:"providers"`
	Models    int `json:"models"`
}

// PolicyDefinition is a policy's definition (spec 2.3) as JSON: its schema
// is PolicyDefinition in the OpenAPI document, and server/policy parses and
// validates it. Wire shapes link nothing of the server, so the definition
// travels as the JSON it is; nil is absent (omitted on update).
type PolicyDefinition json.RawMessage

// MarshalJSON writes the definition as it is (null when empty).
func (d PolicyDefinition) MarshalJSON() ([]byte, error) {
	if len(d) == 0 {
		return []byte("null"), nil
	}
	return d, nil
}

// UnmarshalJSON keeps a copy of the definition's JSON.
func (d *PolicyDefinition) UnmarshalJSON(b []byte) error {
	*d = append((*d)[:0], b...)
	return nil
}
