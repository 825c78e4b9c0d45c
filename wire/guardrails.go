package wire

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// GuardrailDetector is one detector of a guardrail, discriminated by kind:
// pii (types), secrets, regex (patterns, RE2), keywords (words,
// case-insensitive at word boundaries) or webhook (url, timeout_ms, and
// a write-only signing secret: answered back only as has_secret).
type GuardrailDetector struct {
	Kind      string   `json:"kind"`
	Types     []string `json:"types,omitempty"`
	Patterns  []string `json:"patterns,omitempty"`
	Words     []string `json:"words,omitempty"`
	URL       string   `json:"url,omitempty"`
	TimeoutMS int      `json:"timeout_ms,omitempty"`
	HasSecret bool     `json:"has_secret,omitempty"`
}

// Guardrail is a guardrail (issue 32). WorkspaceID is null for an
// organization's, which applies to every workspace. Target is the
// policies' target.
type Guardrail struct {
	ID          uuid.UUID           `json:"id"`
	OrgID       uuid.UUID           `json:"org_id"`
	WorkspaceID *uuid.UUID          `json:"workspace_id"`
	Name        string              `json:"name"`
	Enabled     bool                `json:"enabled"`
	Target      PolicyTarget        `json:"target"`
	Stages      []string            `json:"stages"`
	Detectors   []GuardrailDetector `json:"detectors"`
	Action      string              `json:"action"`
	OnError     string              `json:"on_error"`
	CreatedAt   time.Time           `json:"created_at"`
	UpdatedAt   time.Time           `json:"updated_at"`
}

// GuardrailDetectorIn is a detector as a request gives it; secret is the
// webhook's signing secret, write-only (a webhook given none on update
// keeps the secret of the previous webhook of the same URL).
type GuardrailDetectorIn struct {
	Kind      string   `json:"kind"`
	Types     []string `json:"types,omitempty"`
	Patterns  []string `json:"patterns,omitempty"`
	Words     []string `json:"words,omitempty"`
	URL       string   `json:"url,omitempty"`
	TimeoutMS int      `json:"timeout_ms,omitempty" jsonschema:"minimum=1,maximum=30000"`
	Secret    string   `json:"secret,omitempty" jsonschema:"minLength=16,maxLength=512"`
}

// GuardrailCreate creates a guardrail; enabled defaults to true.
type GuardrailCreate struct {
	Name      string                `json:"name" jsonschema:"minLength=1,maxLength=200"`
	Enabled   *bool                 `json:"enabled,omitempty"`
	Target    PolicyTarget          `json:"target"`
	Stages    []string              `json:"stages" jsonschema:"minItems=1,maxItems=2"`
	Detectors []GuardrailDetectorIn `json:"detectors" jsonschema:"minItems=1,maxItems=16"`
	Action    string                `json:"action"`
	OnError   string                `json:"on_error"`
}

// GuardrailUpdate changes the members given.
type GuardrailUpdate struct {
	Name      *string               `json:"name,omitempty" jsonschema:"minLength=1,maxLength=200"`
	Enabled   *bool                 `json:"enabled,omitempty"`
	Target    PolicyTarget          `json:"target,omitempty"`
	Stages    []string              `json:"stages,omitempty" jsonschema:"minItems=1,maxItems=2"`
	Detectors []GuardrailDetectorIn `json:"detectors,omitempty" jsonschema:"minItems=1,maxItems=16"`
	Action    *string               `json:"action,omitempty"`
	OnError   *string               `json:"on_error,omitempty"`
}

// GuardrailRecord is one guardrail's outcome at one stage of a request
// (usage events' guardrails): passed, blocked, redacted, flagged, errored
// (a detector could not answer: the request was blocked under
// fail_closed, passed under fail_open) or skipped (a part no detector can
// read, such as an image or audio, went unchecked).
type GuardrailRecord struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Stage     string   `json:"stage"`
	Outcome   string   `json:"outcome"`
	Detectors []string `json:"detectors"`
}

// PolicyTarget is a policies' target (spec 2.3) as JSON, as a guardrail
// names it: its schema is the policy document's Target.
type PolicyTarget json.RawMessage

// MarshalJSON writes the target as it is (null when empty).
func (t PolicyTarget) MarshalJSON() ([]byte, error) {
	if len(t) == 0 {
		return []byte("null"), nil
	}
	return t, nil
}

// UnmarshalJSON keeps a copy of the target's JSON.
func (t *PolicyTarget) UnmarshalJSON(b []byte) error {
	*t = append((*t)[:0], b...)
	return nil
}

// Guardrail vocabularies (the OpenAPI document's enums; the server checks
// against server/guardrails' own lists, and a test holds them equal).
var (
	GuardrailKinds    = []string{"pii", "secrets", "regex", "keywords", "webhook"}
	GuardrailPIITypes = []string{"email", "phone", "credit_card", "iban", "us_ssn", "ip_address"}
	GuardrailStages   = []string{"input", "output"}
	GuardrailActions  = []string{"block", "redact", "flag"}
	GuardrailOnErrors = []string{"fail_closed", "fail_open"}
	GuardrailOutcomes = []string{"passed", "blocked", "redacted", "flagged", "errored", "skipped"}
)
