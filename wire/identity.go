package wire

import (
	"time"

	"github.com/google/uuid"
)

// IdentityProvider is an OpenID provider people sign in through (issue 31).
// The client secret is write-only: secret_hint tells secrets apart.
type IdentityProvider struct {
	ID                  uuid.UUID      `json:"id"`
	Name                string         `json:"name"`
	Kind                string         `json:"kind" jsonschema:"enum=oidc"`
	Issuer              string         `json:"issuer"`
	ClientID            string         `json:"client_id"`
	HasClientSecret     bool           `json:"has_client_secret"`
	SecretHint          *string        `json:"secret_hint" jsonschema:"nullable"`
	Scopes              []string       `json:"scopes"`
	Claims              IdentityClaims `json:"claims"`
	AllowedEmailDomains []string       `json:"allowed_email_domains"`
	JIT                 bool           `json:"jit"`
	GroupMappings       []GroupMapping `json:"group_mappings"`
	// StartURL is where a browser begins signing in through the provider.
	StartURL  string    `json:"start_url"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// IdentityClaims name the ID-token claims read.
type IdentityClaims struct {
	Email  string `json:"email"`
	Name   string `json:"name"`
	Groups string `json:"groups"`
}

// GroupMapping turns a provider group into memberships. On input, org and
// workspace are an id or a slug; on output, ids.
type GroupMapping struct {
	Group      string             `json:"group"`
	Org        string             `json:"org"`
	Role       string             `json:"role"`
	Workspaces []WorkspaceMapping `json:"workspaces"`
}

// WorkspaceMapping is one workspace membership of a group mapping.
type WorkspaceMapping struct {
	Workspace string `json:"workspace"`
	Role      string `json:"role"`
}

// IdentityProviderCreate is the body that creates an identity provider.
type IdentityProviderCreate struct {
	Name                string          `json:"name" jsonschema:"minLength=1,maxLength=63,pattern=^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$"`
	Kind                string          `json:"kind,omitempty" jsonschema:"enum=oidc"`
	Issuer              string          `json:"issuer" jsonschema:"minLength=1,maxLength=2048"`
	ClientID            string          `json:"client_id" jsonschema:"minLength=1,maxLength=512"`
	ClientSecret        *string         `json:"client_secret,omitempty" jsonschema:"minLength=1,maxLength=8192"`
	Scopes              []string        `json:"scopes,omitempty"`
	Claims              *IdentityClaims `json:"claims,omitempty"`
	AllowedEmailDomains []string        `json:"allowed_email_domains,omitempty"`
	JIT                 *bool           `json:"jit,omitempty"`
	GroupMappings       []GroupMapping  `json:"group_mappings,omitempty"`
}

// IdentityProviderUpdate changes what it sets; client_secret null removes
// the secret (a public client).
type IdentityProviderUpdate struct {
	Issuer              *string         `json:"issuer,omitempty" jsonschema:"minLength=1,maxLength=2048"`
	ClientID            *string         `json:"client_id,omitempty" jsonschema:"minLength=1,maxLength=512"`
	ClientSecret        *string         `json:"client_secret,omitempty" jsonschema:"maxLength=8192"`
	Scopes              []string        `json:"scopes,omitempty"`
	Claims              *IdentityClaims `json:"claims,omitempty"`
	AllowedEmailDomains []string        `json:"allowed_email_domains,omitempty"`
	JIT                 *bool           `json:"jit,omitempty"`
	GroupMappings       []GroupMapping  `json:"group_mappings,omitempty"`
}

// SignInProvider is a provider as the sign-in page offers it.
type SignInProvider struct {
	Name     string `json:"name"`
	StartURL string `json:"start_url"`
}
