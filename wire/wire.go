// Package wire defines every JSON shape of gw's management API once. The
// server encodes these, the client decodes them, and the OpenAPI document is
// generated from them; nothing else describes the wire.
package wire

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Envelope wraps every successful management response exactly once.
type Envelope[T any] struct {
	Data T `json:"data"`
}

// Page wraps one page of a growing collection.
type Page[T any] struct {
	Data []T     `json:"data"`
	Page PageRef `json:"page"`
}

// PageRef points to the next page; NextCursor is null on the last page.
type PageRef struct {
	NextCursor *string `json:"next_cursor" jsonschema:"nullable"`
}

// ErrorDetail is the body of every non-validation control-plane error.
type ErrorDetail struct {
	Detail string `json:"detail"`
}

// ValidationIssue is one item of a 422 body.
type ValidationIssue struct {
	Loc   []any          `json:"loc"`
	Msg   string         `json:"msg"`
	Type  string         `json:"type"`
	Input any            `json:"input,omitempty"`
	Ctx   map[string]any `json:"ctx,omitempty"`
}

// ValidationError is the body of a 422 with per-field problems.
type ValidationError struct {
	Detail []ValidationIssue `json:"detail"`
}

// Organization is a tenant.
type Organization struct {
	ID   uuid.UUID `json:"id"`
	Name string    `json:"name"`
	Slug string    `json:"slug"`
	// RequireSSO names the identity providers the members must sign in
	// through; empty, password sign-in is allowed.
	RequireSSO []string  `json:"require_sso"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// OrganizationCreate is the body that creates an organization.
type OrganizationCreate struct {
	Name string `json:"name" jsonschema:"minLength=1,maxLength=100"`
	Slug string `json:"slug,omitempty" jsonschema:"minLength=1,maxLength=63,pattern=^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$"`
}

// OrganizationUpdate changes an organization's name or slug.
type OrganizationUpdate struct {
	Name *string `json:"name,omitempty" jsonschema:"minLength=1,maxLength=100"`
	Slug *string `json:"slug,omitempty" jsonschema:"minLength=1,maxLength=63,pattern=^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$"`
	// RequireSSO replaces the identity providers members must sign in
	// through (each must exist); [] allows password sign-in again.
	RequireSSO []string `json:"require_sso,omitempty"`
}

// Workspace is spec 2.2.
type Workspace struct {
	ID    uuid.UUID `json:"id"`
	OrgID uuid.UUID `json:"org_id"`
	Name  string    `json:"name"`
	Slug  string    `json:"slug"`
	// RateLimits are the workspace's per-minute limits: the limits of
	// every key without its own, and the ceiling of the keys' own.
	RateLimits *RateLimits `json:"rate_limits" jsonschema:"nullable"`
	// RequiredTags are the tag keys every inference request in the
	// workspace must carry, from its key's tags or its X-Gw-Tags header;
	// a request lacking one is refused with 400.
	RequiredTags []string `json:"required_tags" jsonschema:"maxItems=20"`
	// TagValues are the values a request's X-Gw-Tags header may give each
	// listed tag key ({} when none is restricted); another value is
	// refused with 400 tag_not_allowed.
	TagValues map[string][]string `json:"tag_values" jsonschema:"maxProperties=20"`
	// MCPDefault is whether a key reaches an MCP tool no tool policy
	// allows: "deny" (the default) or "allow" (docs/mcp.md).
	MCPDefault string `json:"mcp_default" jsonschema:"enum=deny,enum=allow"`
	// MCPAuditArguments records each tool call's arguments in its audit
	// row (default false: never).
	MCPAuditArguments bool `json:"mcp_audit_arguments"`
	// Archive is where each request's body and answer are kept (null:
	// nowhere); its secret access key is never answered back.
	Archive *WorkspaceArchive `json:"archive" jsonschema:"nullable"`
	// ArchiveCheck is what the control plane last learnt of the enabled
	// archive's bucket (when the setting was saved, at each hourly
	// sweep); absent without an enabled archive. gw status shows the
	// failing ones.
	ArchiveCheck *ArchiveCheck `json:"archive_check,omitempty"`
	// ResponseCache is the workspace's response cache (null: none).
	ResponseCache *WorkspaceResponseCache `json:"response_cache" jsonschema:"nullable"`
	// PromptCache is the workspace's prompt-cache injection (null: none).
	PromptCache *WorkspacePromptCache `json:"prompt_cache" jsonschema:"nullable"`
	// Warnings are what an update saved but could not confirm (an
	// archive bucket that could not be reached); absent otherwise.
	Warnings  []string  `json:"warnings,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// WorkspaceArchive is a workspace's payload archive (issue 32): every
// request's body and answer (after redaction), with its usage event id,
// written as one gzipped JSON object
// <prefix>/<org>/<workspace>/<yyyy>/<mm>/<dd>/<usage event id>.json.gz by
// a background writer; objects past retention_days are deleted.
type WorkspaceArchive struct {
	Enabled     bool               `json:"enabled"`
	Destination ArchiveDestination `json:"destination"`
	// RetentionDays is how many days objects are kept (0: for ever).
	RetentionDays int `json:"retention_days" jsonschema:"minimum=0,maximum=3650"`
	// Include is what each object holds: "request", "response".
	Include []string `json:"include" jsonschema:"enum=request,enum=response"`
}

// ArchiveCheck is whether a workspace's archive bucket answered the
// control plane: when the setting was saved ("save") or at the hourly
// retention sweep ("sweep"). Data planes upload on their own; a bucket
// only they can reach fails here and still archives.
type ArchiveCheck struct {
	OK        bool      `json:"ok"`
	Error     string    `json:"error,omitempty"`
	CheckedAt time.Time `json:"checked_at"`
	By        string    `json:"by" jsonschema:"enum=save,enum=sweep"`
}

// ArchiveDestination is an S3-compatible bucket.
type ArchiveDestination struct {
	Kind       string            `json:"kind" jsonschema:"enum=s3"`
	Endpoint   string            `json:"endpoint"`
	Region     string            `json:"region"`
	Bucket     string            `json:"bucket"`
	Prefix     string            `json:"prefix"`
	Credential ArchiveCredential `json:"credential"`
	PathStyle  bool              `json:"path_style"`
}

// ArchiveCredential is the bucket's access key; the secret is write-only
// (sealed when saved, absent from answers).
type ArchiveCredential struct {
	AccessKeyID     string `json:"access_key_id"`
	SecretAccessKey string `json:"secret_access_key,omitempty"`
}

// RateLimits are per-minute limits of requests and of tokens (input plus
// output) in fixed UTC minutes; a null member is no limit. In an update,
// a null rate_limits clears both and an absent member keeps its value.
type RateLimits struct {
	RequestsPerMinute *int64 `json:"requests_per_minute" jsonschema:"nullable,minimum=1"`
	TokensPerMinute   *int64 `json:"tokens_per_minute" jsonschema:"nullable,minimum=1"`
}

// WorkspaceCreate is the body that creates a workspace.
type WorkspaceCreate struct {
	Name string `json:"name" jsonschema:"minLength=1,maxLength=100"`
	Slug string `json:"slug,omitempty" jsonschema:"minLength=1,maxLength=63,pattern=^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$"`
}

// WorkspaceUpdate changes a workspace's name, slug, rate limits, required
// tags or tag values.
type WorkspaceUpdate struct {
	Name       *string     `json:"name,omitempty" jsonschema:"minLength=1,maxLength=100"`
	Slug       *string     `json:"slug,omitempty" jsonschema:"minLength=1,maxLength=63,pattern=^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$"`
	RateLimits *RateLimits `json:"rate_limits,omitempty" jsonschema:"nullable"`
	// RequiredTags replaces the tag keys every request must carry; null
	// or [] requires none.
	RequiredTags *[]string `json:"required_tags,omitempty" jsonschema:"nullable,maxItems=20"`
	// TagValues replaces the values a request header may give each tag
	// key: {"team": ["ads", "search"]}; null or {} restricts none.
	TagValues *map[string][]string `json:"tag_values,omitempty" jsonschema:"nullable,maxProperties=20"`
	// MCPDefault sets whether a key reaches an MCP tool no tool policy
	// allows: "deny" or "allow".
	MCPDefault *string `json:"mcp_default,omitempty" jsonschema:"enum=deny,enum=allow"`
	// MCPAuditArguments sets whether tool calls' audit rows record their
	// arguments.
	MCPAuditArguments *bool `json:"mcp_audit_arguments,omitempty"`
	// Archive replaces the payload archive; null archives nothing. The
	// secret access key may be left out while the endpoint, bucket and
	// access key id stay the same (the sealed one is kept).
	Archive *WorkspaceArchive `json:"archive,omitempty" jsonschema:"nullable"`
	// ResponseCache replaces the response cache setting; null caches
	// nothing.
	ResponseCache *WorkspaceResponseCache `json:"response_cache,omitempty" jsonschema:"nullable"`
	// PromptCache replaces the prompt-cache setting; null injects
	// nothing.
	PromptCache *WorkspacePromptCache `json:"prompt_cache,omitempty" jsonschema:"nullable"`
}

// Deleted is the result of deleting a workspace or an organization.
type Deleted struct {
	ID        uuid.UUID `json:"id"`
	DeletedAt time.Time `json:"deleted_at"`
}

// User is a principal: a person or a service account (spec 2.5).
type User struct {
	ID             uuid.UUID  `json:"id"`
	Email          string     `json:"email"`
	Name           string     `json:"name"`
	InstanceRole   string     `json:"instance_role" jsonschema:"enum=owner,enum=admin,enum=member"`
	ServiceAccount bool       `json:"service_account"`
	ManagingOrgID  *uuid.UUID `json:"managing_org_id" jsonschema:"nullable"`
	// DisabledAt is when an instance admin disabled the account, present
	// only while it is disabled: an enabled principal keeps the spec's
	// shape (2.5) to the letter.
	DisabledAt *time.Time  `json:"disabled_at,omitempty"`
	CreatedAt  time.Time   `json:"created_at"`
	UpdatedAt  time.Time   `json:"updated_at"`
	Orgs       []uuid.UUID `json:"orgs"`
}

// UserUpdate changes a user's instance role.
type UserUpdate struct {
	InstanceRole string `json:"instance_role" jsonschema:"enum=owner,enum=admin,enum=member"`
}

// Membership is a principal's place in an organization (spec 2.5).
type Membership struct {
	UserID uuid.UUID `json:"user_id"`
	OrgID  uuid.UUID `json:"org_id"`
	Role   string    `json:"role" jsonschema:"enum=owner,enum=admin,enum=member,enum=viewer"`
	Status string    `json:"status" jsonschema:"enum=active,enum=invited,enum=suspended"`
}

// Member is an organization member as listed: the membership plus who it is.
type Member struct {
	UserID         uuid.UUID `json:"user_id"`
	OrgID          uuid.UUID `json:"org_id"`
	Email          string    `json:"email"`
	Name           string    `json:"name"`
	ServiceAccount bool      `json:"service_account"`
	Role           string    `json:"role" jsonschema:"enum=owner,enum=admin,enum=member,enum=viewer"`
	Status         string    `json:"status" jsonschema:"enum=active,enum=invited,enum=suspended"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// MemberAdd adds an existing user to an organization, by id or email.
type MemberAdd struct {
	UserID *uuid.UUID `json:"user_id,omitempty"`
	Email  string     `json:"email,omitempty"`
	Role   string     `json:"role" jsonschema:"enum=owner,enum=admin,enum=member,enum=viewer"`
}

// MemberUpdate changes a member's role or status.
type MemberUpdate struct {
	Role   *string `json:"role,omitempty" jsonschema:"enum=owner,enum=admin,enum=member,enum=viewer"`
	Status *string `json:"status,omitempty" jsonschema:"enum=active,enum=suspended"`
}

// WorkspaceMember is a principal's place in a workspace.
type WorkspaceMember struct {
	WorkspaceID uuid.UUID `json:"workspace_id"`
	UserID      uuid.UUID `json:"user_id"`
	Email       string    `json:"email"`
	Name        string    `json:"name"`
	Role        string    `json:"role" jsonschema:"enum=admin,enum=member,enum=viewer"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// WorkspaceMemberAdd adds an organization member to a workspace.
type WorkspaceMemberAdd struct {
	UserID uuid.UUID `json:"user_id"`
	Role   string    `json:"role" jsonschema:"enum=admin,enum=member,enum=viewer"`
}

// WorkspaceMemberUpdate changes a workspace member's role.
type WorkspaceMemberUpdate struct {
	Role string `json:"role" jsonschema:"enum=admin,enum=member,enum=viewer"`
}

// Candidate is an organization member who may be added to a workspace.
type Candidate struct {
	UserID uuid.UUID `json:"user_id"`
	Email  string    `json:"email"`
	Name   string    `json:"name"`
}

// UsagePayload is a request's archived payload (issue 32): its body as
// it went upstream (redactions applied) and its answer as the caller got
// it, JSON as JSON and an event stream as a string; what the workspace's
// archive does not include is absent.
type UsagePayload struct {
	UsageEventID uuid.UUID       `json:"usage_event_id"`
	RequestID    string          `json:"request_id,omitempty"`
	OrgID        uuid.UUID       `json:"org_id"`
	WorkspaceID  uuid.UUID       `json:"workspace_id"`
	Endpoint     string          `json:"endpoint,omitempty"`
	OccurredAt   time.Time       `json:"occurred_at"`
	Request      json.RawMessage `json:"request,omitempty"`
	Response     json.RawMessage `json:"response,omitempty"`
	// ResponseTruncated: the answer was longer than the 8 MiB kept.
	ResponseTruncated bool `json:"response_truncated,omitempty"`
}
