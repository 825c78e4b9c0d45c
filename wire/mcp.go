package wire

import (
	"time"

	"github.com/google/uuid"
)

// MCPServer is an upstream MCP server of an organization or a workspace
// (issue 30; docs/mcp.md). Its secret is write-only: the answer shows
// only a hint.
type MCPServer struct {
	ID          uuid.UUID  `json:"id"`
	OrgID       uuid.UUID  `json:"org_id"`
	WorkspaceID *uuid.UUID `json:"workspace_id" jsonschema:"nullable"`
	Name        string     `json:"name"`
	URL         string     `json:"url"`
	Enabled     bool       `json:"enabled"`
	Auth        MCPAuthOut `json:"auth"`
	// Tools is the server-wide list-time filter; null admits every tool.
	Tools *MCPToolFilter `json:"tools" jsonschema:"nullable"`
	// Prices are USD per call by tool name or glob ({} when none: $0).
	Prices    map[string]string `json:"prices"`
	CreatedAt time.Time         `json:"created_at"`
	UpdatedAt time.Time         `json:"updated_at"`
}

// MCPAuthOut is a server's auth as the API shows it: never the secret.
type MCPAuthOut struct {
	Kind       string   `json:"kind" jsonschema:"enum=none,enum=header,enum=oauth_client_credentials"`
	Header     string   `json:"header,omitempty"`
	TokenURL   string   `json:"token_url,omitempty"`
	ClientID   string   `json:"client_id,omitempty"`
	Scopes     []string `json:"scopes,omitempty"`
	SecretHint string   `json:"secret_hint,omitempty"`
}

// MCPAuth is a server's auth as written: none, a header with a secret
// value, or OAuth client credentials.
type MCPAuth struct {
	Kind         string   `json:"kind" jsonschema:"enum=none,enum=header,enum=oauth_client_credentials"`
	Header       string   `json:"header,omitempty" jsonschema:"maxLength=255"`
	Secret       string   `json:"secret,omitempty" jsonschema:"maxLength=8192"`
	TokenURL     string   `json:"token_url,omitempty" jsonschema:"format=uri,maxLength=2048"`
	ClientID     string   `json:"client_id,omitempty" jsonschema:"maxLength=255"`
	ClientSecret string   `json:"client_secret,omitempty" jsonschema:"maxLength=8192"`
	Scopes       []string `json:"scopes,omitempty" jsonschema:"maxItems=20"`
}

// MCPToolFilter is a server-wide tool filter: a tool is served when it
// matches an allow glob (none: every tool) and no deny glob.
type MCPToolFilter struct {
	Allow []string `json:"allow,omitempty" jsonschema:"maxItems=200"`
	Deny  []string `json:"deny,omitempty" jsonschema:"maxItems=200"`
}

// MCPServerCreate creates an MCP server; enabled defaults to true, auth
// to none.
type MCPServerCreate struct {
	Name    string            `json:"name" jsonschema:"pattern=^[a-z0-9][a-z0-9-]{0,62}$"`
	URL     string            `json:"url" jsonschema:"format=uri,maxLength=2048"`
	Enabled *bool             `json:"enabled,omitempty"`
	Auth    *MCPAuth          `json:"auth,omitempty"`
	Tools   *MCPToolFilter    `json:"tools,omitempty" jsonschema:"nullable"`
	Prices  map[string]string `json:"prices,omitempty" jsonschema:"maxProperties=200"`
}

// MCPServerUpdate changes what it gives; a changed url needs the auth
// again (its secret is never sent to a new host unasked). A null tools
// or prices clears it.
type MCPServerUpdate struct {
	URL     *string            `json:"url,omitempty" jsonschema:"format=uri,maxLength=2048"`
	Enabled *bool              `json:"enabled,omitempty"`
	Auth    *MCPAuth           `json:"auth,omitempty"`
	Tools   *MCPToolFilter     `json:"tools,omitempty" jsonschema:"nullable"`
	Prices  *map[string]string `json:"prices,omitempty" jsonschema:"nullable,maxProperties=200"`
}

// ToolPolicy is a workspace's tool policy (issue 30).
type ToolPolicy struct {
	ID          uuid.UUID            `json:"id"`
	OrgID       uuid.UUID            `json:"org_id"`
	WorkspaceID uuid.UUID            `json:"workspace_id"`
	Name        string               `json:"name"`
	Enabled     bool                 `json:"enabled"`
	Definition  ToolPolicyDefinition `json:"definition"`
	CreatedAt   time.Time            `json:"created_at"`
	UpdatedAt   time.Time            `json:"updated_at"`
}

// ToolPolicyCreate creates a tool policy; enabled defaults to true.
type ToolPolicyCreate struct {
	Name       string               `json:"name" jsonschema:"minLength=1,maxLength=100"`
	Enabled    *bool                `json:"enabled,omitempty"`
	Definition ToolPolicyDefinition `json:"definition"`
}

// ToolPolicyUpdate replaces any of a tool policy's name, enabled flag or
// definition.
type ToolPolicyUpdate struct {
	Name       *string               `json:"name,omitempty" jsonschema:"minLength=1,maxLength=100"`
	Enabled    *bool                 `json:"enabled,omitempty"`
	Definition *ToolPolicyDefinition `json:"definition,omitempty"`
}

// ToolPolicyDefinition is whom a tool policy targets (exactly a policy's
// target) and its rules.
type ToolPolicyDefinition struct {
	Target ToolPolicyTarget `json:"target"`
	Rules  []ToolRule       `json:"rules" jsonschema:"minItems=1,maxItems=100"`
}

// ToolPolicyTarget is a policy's target: workspace, selected_users
// (user_ids) or selected_keys (key_ids).
type ToolPolicyTarget struct {
	Kind    string      `json:"kind" jsonschema:"enum=workspace,enum=selected_users,enum=selected_keys"`
	UserIDs []uuid.UUID `json:"user_ids,omitempty"`
	KeyIDs  []string    `json:"key_ids,omitempty"`
}

// ToolRule applies its action to the tools its match selects in its
// phase: list (what tools/list shows) or call (each tools/call).
type ToolRule struct {
	Match  ToolMatch  `json:"match"`
	Phase  string     `json:"phase" jsonschema:"enum=list,enum=call"`
	Action ToolAction `json:"action"`
}

// ToolMatch selects tools: servers by name, tools by glob, and (call
// rules only) arguments by JSON pointer.
type ToolMatch struct {
	Servers   []string               `json:"servers,omitempty"`
	Tools     []string               `json:"tools,omitempty"`
	Arguments map[string]ToolArgTest `json:"arguments,omitempty"`
}

// ToolArgTest is exactly one of equals (any JSON value), prefix or regex
// (of a string argument).
type ToolArgTest struct {
	Equals any     `json:"equals,omitempty"`
	Prefix *string `json:"prefix,omitempty"`
	Regex  *string `json:"regex,omitempty"`
}

// ToolAction is allow, or deny with an optional message.
type ToolAction struct {
	Kind    string `json:"kind" jsonschema:"enum=allow,enum=deny"`
	Message string `json:"message,omitempty" jsonschema:"maxLength=200"`
}

// MCPTool is a tool a key sees through the gateway (gw mcp tools).
type MCPTool struct {
	Server      string `json:"server"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}
