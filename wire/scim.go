package wire

import (
	"time"

	"github.com/google/uuid"
)

// SCIMToken is an organization's SCIM token (issue 31): what a
// provisioning client (Okta, Microsoft Entra ID) sends as its bearer
// token to /scim/v2. Token is present only in the creating response.
type SCIMToken struct {
	ID         uuid.UUID  `json:"id"`
	OrgID      uuid.UUID  `json:"org_id"`
	Label      string     `json:"label"`
	Prefix     string     `json:"prefix"`
	CreatedBy  *uuid.UUID `json:"created_by" jsonschema:"nullable"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at" jsonschema:"nullable"`
	// SCIMURL is the base URL to give the provisioning client.
	SCIMURL string `json:"scim_url"`
	Token   string `json:"token,omitempty"`
}

// SCIMTokenCreate is the body creating a SCIM token.
type SCIMTokenCreate struct {
	Label string `json:"label" jsonschema:"minLength=1,maxLength=80"`
}
