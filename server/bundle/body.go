// Package bundle is the format of what a data plane must know about one
// organization: a signed, versioned document, and its verification before a
// data plane admits it (DESIGN §7). It links no database: compiling bundles
// is the control plane's work (server/publish).
//
// A bundle carries the organization's workspaces, its active inference keys
// (hashes only), its enabled policies, the catalog in force and its provider
// credential references, the secrets still sealed. The control plane signs
// it with an Ed25519 key every replica shares; a data plane that holds the
// public key admits nothing else.
package bundle

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/guardrails"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/toolpolicy"
)

// Format is the body layout this build writes and the only one it admits.
// It changes when a member changes meaning, so an old data plane refuses a
// bundle it would misread instead of serving it wrongly.
const Format = 1

// Body is a bundle's content. Every list is sorted by id and never null, so
// equal content always encodes to equal bytes and so to an equal hash.
type Body struct {
	Format     int       `json:"format"`
	OrgID      uuid.UUID `json:"org_id"`
	Version    int64     `json:"version"`
	CompiledAt time.Time `json:"compiled_at"`

	Workspaces  []Workspace     `json:"workspaces"`
	Keys        []Key           `json:"keys"`
	Policies    []Policy        `json:"policies"`
	Catalog     catalog.Catalog `json:"catalog"`
	Credentials []Credential    `json:"credentials"`
	// Aliases are the organization's model aliases and its workspaces'.
	// Left out when there are none, so bundles without aliases keep their
	// bytes and hashes; a data plane too old to know them refuses a
	// bundle that has them (unknown members are refused) rather than
	// answering 404 for the names they route.
	Aliases []Alias `json:"aliases,omitempty"`
	// Egress is the instance's egress setting, the same in every
	// organization's bundle: a data plane holds every upstream connection
	// to it (server/egress). Left out while the instance has none, so
	// those bundles keep their bytes; a data plane too old to know it
	// refuses a bundle that has it rather than call where it forbids.
	Egress *Egress `json:"egress,omitempty"`
	// Guardrails are the organization's enabled guardrails (applying to
	// every workspace) and its workspaces' (issue 32). Left out when there
	// are none; a data plane too old to know them refuses a bundle that
	// has them rather than let through what they would stop.
	Guardrails []Guardrail `json:"guardrails,omitempty"`
	// MCPServers are the organization's enabled MCP servers and its
	// workspaces' (issue 30), secrets sealed like credentials'; left out
	// when none, so bundles without them keep their bytes and hashes.
	MCPServers []MCPServer `json:"mcp_servers,omitempty"`
	// ToolPolicies are the enabled tool policies of its workspaces; left
	// out when none.
	ToolPolicies []ToolPolicy `json:"tool_policies,omitempty"`
	// OAuthGrants are the live OAuth grants of the organization's active
	// members (issue 31): an access token names its grant, and is
	// accepted only while the bundle in force carries it. Left out when
	// none, so bundles without grants keep their bytes and hashes.
	OAuthGrants []OAuthGrant `json:"oauth_grants,omitempty"`
}

// OAuthGrant is a person's consent that a client act as them in a
// workspace: its access tokens are admitted like that person's key.
type OAuthGrant struct {
	ID          uuid.UUID `json:"id"`
	WorkspaceID uuid.UUID `json:"workspace_id"`
	OwnerID     uuid.UUID `json:"owner_id"`
}

// MCPServer is an upstream MCP server. WorkspaceID is nil for the
// organization's; a workspace's shadows the organization's of the same
// name. Auth is the non-secret part of its auth (kind, header, token_url,
// client_id, scopes); SecretSealed its secret, sealed to the master key
// in the store and to a remote data plane's key in what it receives.
type MCPServer struct {
	ID           uuid.UUID          `json:"id"`
	WorkspaceID  *uuid.UUID         `json:"workspace_id"`
	Name         string             `json:"name"`
	URL          string             `json:"url"`
	Auth         json.RawMessage    `json:"auth"`
	SecretSealed string             `json:"secret_sealed,omitempty"`
	Tools        *toolpolicy.Filter `json:"tools,omitempty"`
	Prices       toolpolicy.Prices  `json:"prices,omitempty"`
}

// ToolPolicy is an enabled tool policy, its definition read as strictly
// as the API reads it.
type ToolPolicy struct {
	ID          uuid.UUID             `json:"id"`
	WorkspaceID uuid.UUID             `json:"workspace_id"`
	Name        string                `json:"name"`
	Definition  toolpolicy.Definition `json:"definition"`
}

// Guardrail is an enabled guardrail. WorkspaceID is nil for the
// organization's. A webhook detector's signing secret is sealed, as
// provider credentials' are (to the data plane's key for a remote one).
type Guardrail struct {
	ID          uuid.UUID           `json:"id"`
	WorkspaceID *uuid.UUID          `json:"workspace_id"`
	Name        string              `json:"name"`
	Target      policy.Target       `json:"target"`
	Stages      []guardrails.Stage  `json:"stages"`
	Detectors   []GuardrailDetector `json:"detectors"`
	Action      guardrails.Action   `json:"action"`
	OnError     guardrails.OnError  `json:"on_error"`
}

// GuardrailDetector is a detector and, for a webhook, its sealed secret.
type GuardrailDetector struct {
	guardrails.DetectorSpec
	SecretSealed string `json:"secret_sealed,omitempty"`
}

// Spec is the guardrail as the core reads it.
func (g Guardrail) Spec() guardrails.Spec {
	s := guardrails.Spec{ID: g.ID.String(), Name: g.Name, Stages: g.Stages, Action: g.Action, OnError: g.OnError,
		Detectors: make([]guardrails.DetectorSpec, len(g.Detectors))}
	for i, d := range g.Detectors {
		s.Detectors[i] = d.DetectorSpec
	}
	return s
}

// Egress is the instance's egress setting (GET/PATCH
// /api/v1/instance/settings): ranges refused and ranges allowed, as
// canonical CIDR prefixes. Revision counts the setting's changes, so a
// plane holding bundles compiled before and after a change enforces the
// newer setting whatever order they arrived in.
type Egress struct {
	Revision int64    `json:"revision"`
	Deny     []string `json:"deny"`
	Allow    []string `json:"allow"`
}

// Alias is a model alias: a name routed to catalog models by weight.
// WorkspaceID is nil for the organization's alias; a workspace's alias
// overrides the organization's of the same name. A target that is not in
// the bundle's catalog (it retired since) is skipped.
type Alias struct {
	ID          uuid.UUID     `json:"id"`
	WorkspaceID *uuid.UUID    `json:"workspace_id"`
	Name        string        `json:"name"`
	Targets     []AliasTarget `json:"targets"`
}

// AliasTarget is a catalog model of an alias and its weight (1 to 100).
type AliasTarget struct {
	Model  string `json:"model"`
	Weight int    `json:"weight"`
}

// Workspace is one workspace of the organization.
type Workspace struct {
	ID   uuid.UUID `json:"id"`
	Slug string    `json:"slug"`
	Name string    `json:"name"`

	// RateLimits are the workspace's settings, for reference: its keys
	// carry their effective limits already.
	RateLimits *RateLimits `json:"rate_limits,omitempty"`

	// RequiredTags are the tag keys every inference request of the
	// workspace must carry; left out when none.
	RequiredTags []string `json:"required_tags,omitempty"`

	// TagValues are the values a request's X-Gw-Tags header may give
	// each listed tag key; left out when none is restricted.
	TagValues map[string][]string `json:"tag_values,omitempty"`

	// Archive is where the workspace's request payloads are archived
	// (issue 32); left out when it archives nothing.
	Archive *Archive `json:"archive,omitempty"`

	// ResponseCache is the workspace's response cache (issue 35); left
	// out when it caches nothing.
	ResponseCache *ResponseCache `json:"response_cache,omitempty"`

	// PromptCache is the workspace's prompt-cache injection (issue 35,
	// part 4); left out when it injects nothing.
	PromptCache *PromptCache `json:"prompt_cache,omitempty"`

	// TagBudgets are the workspace's budgets for a tag whose policies the
	// bundle carries (enabled ones): a request header may not name their
	// tag keys, and each budget counts the requests whose tags carry its
	// tag. Left out when none.
	TagBudgets []TagBudget `json:"tag_budgets,omitempty"`

	// MCPDefault is "allow" when a key reaches an MCP tool no tool
	// policy allows; left out for the default, "deny".
	MCPDefault string `json:"mcp_default,omitempty"`
	// MCPAuditArguments records tool calls' arguments in their audit
	// rows; left out when false.
	MCPAuditArguments bool `json:"mcp_audit_arguments,omitempty"`
}

// TagBudget is a policy whose selected_keys target follows the keys
// carrying one tag.
type TagBudget struct {
	PolicyID uuid.UUID `json:"policy_id"`
	TagKey   string    `json:"tag_key"`
	TagValue string    `json:"tag_value"`
}

// Key is an active inference key: unrevoked, and owned by an active member.
// Expiry is left to the data plane, which checks it on every request, so a
// key expiring needs no recompile.
type Key struct {
	ID          uuid.UUID  `json:"id"`
	WorkspaceID uuid.UUID  `json:"workspace_id"`
	OwnerID     uuid.UUID  `json:"owner_id"`
	TokenHash   string     `json:"token_hash"`
	ExpiresAt   *time.Time `json:"expires_at"`

	// RateLimits are the limits a data plane enforces for the key: for
	// each member, the lower of the key's own and its workspace's, either
	// when only one is set, absent when neither is.
	RateLimits *RateLimits `json:"rate_limits,omitempty"`

	// Tags are the key's cost-centre tags, which every usage event of the
	// key records over any its request names; left out when it has none,
	// so bundles of keys without tags keep their bytes and hashes.
	Tags map[string]string `json:"tags,omitempty"`

	// BatchesOnly marks a key that is no longer active (revoked, or its
	// owner gone) but submitted a batch whose provider batch was sent (or
	// is being sent): the provider runs and bills those lines, so the data
	// plane records their usage as the key's (and cancels the provider
	// batch). Such a key has no token hash and admits no request. Left out
	// when false.
	BatchesOnly bool `json:"batches_only,omitempty"`
}

// RateLimits are per-minute limits, each at least 1; 0 (absent) is none.
// Members are omitted when empty, so a bundle without limits encodes as it
// did before they existed; a data plane too old to know them refuses a
// bundle that has them (unknown members are refused) rather than serving
// its keys unlimited.
type RateLimits struct {
	RequestsPerMinute int64 `json:"requests_per_minute,omitempty"`
	TokensPerMinute   int64 `json:"tokens_per_minute,omitempty"`
}

// Policy is an enabled workspace policy. Its definition is typed: it encodes
// to the canonical JSON of the spec's shape and decodes as strictly as the
// management API reads it (policy.Definition's UnmarshalJSON runs the same
// parser as policy.ParseDefinitionJSON), so a bundle cannot carry a
// definition the API would have refused.
type Policy struct {
	ID          uuid.UUID         `json:"id"`
	WorkspaceID uuid.UUID         `json:"workspace_id"`
	Name        string            `json:"name"`
	Definition  policy.Definition `json:"definition"`
}

// Credential is a reference to a provider credential the organization may
// use. SecretSealed is the secret exactly as stored, sealed: the compiler
// never opens it, and only the component that calls the provider will.
type Credential struct {
	ID           uuid.UUID              `json:"id"`
	Scope        policy.CredentialScope `json:"scope"`
	WorkspaceID  *uuid.UUID             `json:"workspace_id"`
	Provider     string                 `json:"provider"`
	BaseURL      *string                `json:"base_url"`
	SecretSealed string                 `json:"secret_sealed"`
	// Settings are the credential's non-secret settings as stored (a JSON
	// object); left out when it has none, so bundles of credentials
	// without settings keep their bytes and hashes.
	Settings json.RawMessage `json:"settings,omitempty"`
}

// Archive is a workspace's payload archive as a data plane writes it: an
// S3-compatible bucket, the secret access key sealed (to the data plane,
// in the bundle it receives; secrets.ArchiveAAD).
type Archive struct {
	Endpoint     string   `json:"endpoint"`
	Region       string   `json:"region,omitempty"`
	Bucket       string   `json:"bucket"`
	Prefix       string   `json:"prefix,omitempty"`
	PathStyle    bool     `json:"path_style,omitempty"`
	AccessKeyID  string   `json:"access_key_id"`
	SecretSealed string   `json:"secret_sealed"`
	Include      []string `json:"include"`
}

// PromptCache is a workspace's prompt-cache injection as a data plane
// applies it (docs/promptcache.md).
type PromptCache struct {
	MinPrefixTokens int64 `json:"min_prefix_tokens"`
}

// ResponseCache is a workspace's response cache setting as a data plane
// applies it (docs/cache.md).
type ResponseCache struct {
	TTLSeconds    int `json:"ttl_seconds"`
	MaxEntryBytes int `json:"max_entry_bytes"`
}
