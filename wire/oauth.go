package wire

import (
	"time"

	"github.com/google/uuid"
)

// OAuthClient is an OAuth client an administrator registered with gw's
// authorization server (issue 31; a client identified by its Client ID
// Metadata Document needs none). ClientSecret is set once, in the answer
// that registers a confidential client.
type OAuthClient struct {
	ClientID     string    `json:"client_id"`
	Name         string    `json:"name"`
	RedirectURIs []string  `json:"redirect_uris"`
	Confidential bool      `json:"confidential"`
	ClientSecret string    `json:"client_secret,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
}

// OAuthClientCreate registers a client: confidential clients get a secret
// (client_secret_basic), public ones none.
type OAuthClientCreate struct {
	Name         string   `json:"name" jsonschema:"minLength=1,maxLength=200"`
	RedirectURIs []string `json:"redirect_uris" jsonschema:"minItems=1,maxItems=20"`
	Confidential bool     `json:"confidential,omitempty"`
}

// The statuses of an OAuth grant.
const (
	OAuthGrantActive  = "active"
	OAuthGrantRevoked = "revoked"
)

// OAuthGrant is a person's consent that a client act as them in a
// workspace, for a resource: its access tokens are accepted like the
// person's inference key until it is revoked.
type OAuthGrant struct {
	ID            uuid.UUID  `json:"id"`
	OrgID         uuid.UUID  `json:"org_id"`
	WorkspaceID   uuid.UUID  `json:"workspace_id"`
	UserID        uuid.UUID  `json:"user_id"`
	ClientID      string     `json:"client_id"`
	ClientName    string     `json:"client_name"`
	Resource      string     `json:"resource"`
	Scope         string     `json:"scope"`
	Status        string     `json:"status" jsonschema:"enum=active,enum=revoked"`
	CreatedAt     time.Time  `json:"created_at"`
	LastUsedAt    *time.Time `json:"last_used_at" jsonschema:"nullable"`
	RevokedAt     *time.Time `json:"revoked_at" jsonschema:"nullable"`
	RevokedReason *string    `json:"revoked_reason" jsonschema:"nullable"`
}
