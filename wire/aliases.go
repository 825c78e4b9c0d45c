package wire

import (
	"time"

	"github.com/google/uuid"
)

// ModelAliasTarget is a catalog model an alias routes to. Retired says the
// model has left the catalog in force since: the alias skips it.
type ModelAliasTarget struct {
	Model   string `json:"model"`
	Weight  int    `json:"weight" jsonschema:"minimum=1,maximum=100"`
	Retired bool   `json:"retired,omitempty"`
}

// ModelAlias is a name (a vendor's model id an agent asks for) routed to
// catalog models by weight. WorkspaceID is null for an organization's
// alias; a workspace's alias overrides the organization's of that name.
type ModelAlias struct {
	ID          uuid.UUID          `json:"id"`
	OrgID       uuid.UUID          `json:"org_id"`
	WorkspaceID *uuid.UUID         `json:"workspace_id"`
	Name        string             `json:"name"`
	Targets     []ModelAliasTarget `json:"targets"`
	CreatedAt   time.Time          `json:"created_at"`
	UpdatedAt   time.Time          `json:"updated_at"`
}

// ModelAliasTargetIn is a target as a request gives it; weight defaults
// to 1.
type ModelAliasTargetIn struct {
	Model  string `json:"model" jsonschema:"minLength=1"`
	Weight *int   `json:"weight,omitempty" jsonschema:"minimum=1,maximum=100"`
}

// ModelAliasCreate creates an alias.
type ModelAliasCreate struct {
	Name    string               `json:"name" jsonschema:"minLength=1,maxLength=128,pattern=^[A-Za-z0-9][A-Za-z0-9._:@\\[\\]-]{0\\,127}$"`
	Targets []ModelAliasTargetIn `json:"targets" jsonschema:"minItems=1,maxItems=8"`
}

// ModelAliasUpdate replaces an alias's targets.
type ModelAliasUpdate struct {
	Targets []ModelAliasTargetIn `json:"targets" jsonschema:"minItems=1,maxItems=8"`
}
