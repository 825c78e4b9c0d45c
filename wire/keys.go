package wire

import (
	"time"

	"github.com/google/uuid"
)

// Scope levels of a management key.
const (
	ScopeInstance     = "instance"
	ScopeOrganization = "organization"
	ScopeWorkspace    = "workspace"
)

// Management key statuses.
const (
	KeyActive  = "active"
	KeyRevoked = "revoked"
	KeyExpired = "expired"
)

// KeyScope says where a management key is valid.
type KeyScope struct {
	Level       string     `json:"level" jsonschema:"enum=instance,enum=organization,enum=workspace"`
	OrgID       *uuid.UUID `json:"org_id" jsonschema:"nullable"`
	WorkspaceID *uuid.UUID `json:"workspace_id" jsonschema:"nullable"`
}

// ManagementKey is spec 2.4. Token is present only in the creating response.
type ManagementKey struct {
	ID          uuid.UUID  `json:"id"`
	UserID      uuid.UUID  `json:"user_id"`
	OrgID       *uuid.UUID `json:"org_id" jsonschema:"nullable"`
	WorkspaceID *uuid.UUID `json:"workspace_id" jsonschema:"nullable"`
	ParentID    *uuid.UUID `json:"parent_id" jsonschema:"nullable"`
	Prefix      string     `json:"prefix"`
	Permissions []string   `json:"permissions"`
	Label       string     `json:"label"`
	ExpiresAt   *time.Time `json:"expires_at" jsonschema:"nullable"`
	RevokedAt   *time.Time `json:"revoked_at" jsonschema:"nullable"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	Scope       KeyScope   `json:"scope"`
	Status      string     `json:"status" jsonschema:"enum=active,enum=revoked,enum=expired"`
	Token       string     `json:"token,omitempty"`
}

// ManagementKeyCreate is spec 4.3's body.
type ManagementKeyCreate struct {
	Permissions []string   `json:"permissions" jsonschema:"minItems=1"`
	Label       string     `json:"label" jsonschema:"minLength=1,maxLength=80"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
}

// ServiceAccountCreate is spec 4.4's body.
type ServiceAccountCreate struct {
	Name          string              `json:"name" jsonschema:"minLength=1,maxLength=100"`
	ManagementKey ManagementKeyCreate `json:"management_key"`
}

// ServiceAccountBundle is spec 4.4's result.
type ServiceAccountBundle struct {
	ServiceAccount User          `json:"service_account"`
	Membership     Membership    `json:"membership"`
	ManagementKey  ManagementKey `json:"management_key"`
}
