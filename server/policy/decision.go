package policy

import (
	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// Policy is a stored policy as Evaluate needs it.
type Policy struct {
	ID         uuid.UUID
	Name       string
	Enabled    bool
	Definition Definition
}

// Request is what is known about a request when it is evaluated. In the
// discovery phase there is no request yet, only a candidate model, so
// Stream and Capabilities are ignored there.
type Request struct {
	// Phase is discovery or inference; any other value, the zero value
	// included, is inference, which applies every rule: a caller that
	// forgets the phase gets the stricter evaluation.
	Phase Phase

	// The inference key and the user it belongs to, for policy targets.
	KeyID       string
	OwnerUserID uuid.UUID

	// The candidate model, its provider and its catalog prices in USD per
	// million tokens.
	Model              string
	Provider           string
	InputPricePerMTok  decimal.Decimal
	OutputPricePerMTok decimal.Decimal

	// Facts of the request itself (inference only).
	Stream       bool
	Capabilities []Capability

	// CredentialScopes are the scopes in which the model has a configured
	// credential. A model with none cannot be served, so Evaluate refuses
	// it; a caller that wants to ask about policies alone passes all three.
	CredentialScopes []CredentialScope
}

// RuleRef names the rule a reason, budget or fallback comes from. RuleIndex
// is the rule's position in its policy's definition: rules are unordered, so
// it identifies the rule, it does not rank it.
type RuleRef struct {
	PolicyID   uuid.UUID `json:"policy_id"`
	PolicyName string    `json:"policy_name"`
	RuleIndex  int       `json:"rule_index"`
}

// Reason explains what one applied rule did to the request.
type Reason struct {
	RuleRef
	Action ActionKind `json:"action"`
	Effect Effect     `json:"effect"`
	Detail string     `json:"detail"`
}

// Budget is a budget the request counts against. Every matching budget is
// enforced, not just the smallest: they may count different keys or periods.
type Budget struct {
	RuleRef
	AmountUSD   Decimal           `json:"amount_usd"`
	Period      BudgetPeriod      `json:"period"`
	Aggregation BudgetAggregation `json:"aggregation"`
}

// Fallback is the fallback plan for the request. Its models are only
// candidates: each must pass Evaluate on its own before it is tried.
type Fallback struct {
	RuleRef
	Models      []string          `json:"models"`
	On          []FallbackTrigger `json:"on"`
	MaxAttempts int               `json:"max_attempts"`
	TimeoutMS   int               `json:"timeout_ms"`
}

// Decision is the outcome of Evaluate. Lists are never nil, so a decision
// marshals the same whether or not anything applied.
type Decision struct {
	// Allowed: the request may go ahead (in discovery: the model is listed).
	Allowed bool `json:"allowed"`
	// DenyMessage says why not, for the caller; the message of a deny rule
	// is returned verbatim.
	DenyMessage string `json:"deny_message,omitempty"`

	// ModelAllowed: the model passed every models and providers allowlist
	// and every price ceiling. A deny rule or a missing credential can still
	// refuse a request whose model is allowed.
	ModelAllowed bool `json:"model_allowed"`
	// The lowest price ceilings that applied; nil when none did.
	MaxInputPricePerMTok  *Decimal `json:"max_input_price_per_mtok"`
	MaxOutputPricePerMTok *Decimal `json:"max_output_price_per_mtok"`

	// MaxOutputTokens is the lowest request limit; 0 means no limit, which
	// no rule can express since the schema's minimum is 1.
	MaxOutputTokens int64 `json:"max_output_tokens"`
	// CredentialScopes are the request's credential scopes that every
	// credential_access rule allows, in platform, org, workspace order.
	CredentialScopes []CredentialScope `json:"credential_scopes"`
	StrictParameters bool              `json:"strict_parameters"`
	Budgets          []Budget          `json:"budgets"`
	Fallback         *Fallback         `json:"fallback"`

	// Reasons lists every applied rule, sorted by policy id, then action
	// kind and content, so that equal inputs in any order explain alike.
	Reasons []Reason `json:"reasons"`
}
