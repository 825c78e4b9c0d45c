package policy

import "fmt"

// TargetKind says which inference keys a policy applies to.
type TargetKind string

// Target kinds (spec 2.3).
const (
	TargetWorkspace     TargetKind = "workspace"
	TargetSelectedUsers TargetKind = "selected_users"
	TargetSelectedKeys  TargetKind = "selected_keys"
)

var targetKinds = []TargetKind{TargetWorkspace, TargetSelectedUsers, TargetSelectedKeys}

func (k TargetKind) String() string { return string(k) }

// ParseTargetKind returns the target kind named s.
func ParseTargetKind(s string) (TargetKind, error) { return parseEnum("target kind", s, targetKinds) }

// MatchKind says which requests a rule applies to.
type MatchKind string

// Match kinds (spec 2.3).
const (
	MatchAllRequests MatchKind = "all_requests"
	MatchRequest     MatchKind = "request"
)

var matchKinds = []MatchKind{MatchAllRequests, MatchRequest}

func (k MatchKind) String() string { return string(k) }

// ParseMatchKind returns the match kind named s.
func ParseMatchKind(s string) (MatchKind, error) { return parseEnum("match kind", s, matchKinds) }

// ActionKind says what a rule does to the requests it matches.
type ActionKind string

// Action kinds (spec 2.3). The order of this list is also the order in
// which reasons of one policy are listed, so keep it stable.
const (
	ActionModels           ActionKind = "models"
	ActionProviders        ActionKind = "providers"
	ActionDeny             ActionKind = "deny"
	ActionStrictParameters ActionKind = "strict_parameters"
	ActionPriceLimit       ActionKind = "price_limit"
	ActionRequestLimits    ActionKind = "request_limits"
	ActionCredentialAccess ActionKind = "credential_access"
	ActionFallback         ActionKind = "fallback"
	ActionBudget           ActionKind = "budget"
)

var actionKinds = []ActionKind{
	ActionModels, ActionProviders, ActionDeny, ActionStrictParameters, ActionPriceLimit,
	ActionRequestLimits, ActionCredentialAccess, ActionFallback, ActionBudget,
}

func (k ActionKind) String() string { return string(k) }

// ParseActionKind returns the action kind named s.
func ParseActionKind(s string) (ActionKind, error) { return parseEnum("action kind", s, actionKinds) }

// Capability is a request capability a request match can require. The
// catalog also knows `streaming`, but the spec lets matches name only these
// three: streaming has its own `stream` member.
type Capability string

// Capabilities a request match may list (spec 2.3).
const (
	CapabilityTools            Capability = "tools"
	CapabilityReasoning        Capability = "reasoning"
	CapabilityStructuredOutput Capability = "structured_output"
)

var capabilities = []Capability{CapabilityTools, CapabilityReasoning, CapabilityStructuredOutput}

func (c Capability) String() string { return string(c) }

// ParseCapability returns the capability named s.
func ParseCapability(s string) (Capability, error) { return parseEnum("capability", s, capabilities) }

// CredentialScope is where a provider credential is configured.
type CredentialScope string

// Credential scopes, from the widest to the narrowest.
const (
	ScopePlatform  CredentialScope = "platform"
	ScopeOrg       CredentialScope = "org"
	ScopeWorkspace CredentialScope = "workspace"
)

var credentialScopes = []CredentialScope{ScopePlatform, ScopeOrg, ScopeWorkspace}

func (s CredentialScope) String() string { return string(s) }

// ParseCredentialScope returns the credential scope named s.
func ParseCredentialScope(s string) (CredentialScope, error) {
	return parseEnum("credential scope", s, credentialScopes)
}

// FallbackTrigger is an upstream failure that lets a fallback take over.
type FallbackTrigger string

// Fallback triggers (spec 2.3).
const (
	TriggerRateLimited         FallbackTrigger = "rate_limited"
	TriggerUpstreamUnavailable FallbackTrigger = "upstream_unavailable"
	TriggerTimeout             FallbackTrigger = "timeout"
)

var fallbackTriggers = []FallbackTrigger{TriggerRateLimited, TriggerUpstreamUnavailable, TriggerTimeout}

func (t FallbackTrigger) String() string { return string(t) }

// ParseFallbackTrigger returns the fallback trigger named s.
func ParseFallbackTrigger(s string) (FallbackTrigger, error) {
	return parseEnum("fallback trigger", s, fallbackTriggers)
}

// BudgetPeriod is the window a budget's spend is counted over.
type BudgetPeriod string

// Budget periods (spec 2.3).
const (
	PeriodDay   BudgetPeriod = "day"
	PeriodMonth BudgetPeriod = "month"
)

var budgetPeriods = []BudgetPeriod{PeriodDay, PeriodMonth}

func (p BudgetPeriod) String() string { return string(p) }

// ParseBudgetPeriod returns the budget period named s.
func ParseBudgetPeriod(s string) (BudgetPeriod, error) {
	return parseEnum("budget period", s, budgetPeriods)
}

// BudgetAggregation says whether the keys a policy targets share one budget
// or each get their own.
type BudgetAggregation string

// Budget aggregations (spec 2.3).
const (
	AggregationShared BudgetAggregation = "shared"
	AggregationPerKey BudgetAggregation = "per_key"
)

var budgetAggregations = []BudgetAggregation{AggregationShared, AggregationPerKey}

func (a BudgetAggregation) String() string { return string(a) }

// ParseBudgetAggregation returns the budget aggregation named s.
func ParseBudgetAggregation(s string) (BudgetAggregation, error) {
	return parseEnum("budget aggregation", s, budgetAggregations)
}

// Phase is when a request is evaluated: while listing models, nothing about
// the eventual request is known yet.
type Phase string

// Evaluation phases (spec 4.9).
const (
	PhaseDiscovery Phase = "discovery"
	PhaseInference Phase = "inference"
)

var phases = []Phase{PhaseDiscovery, PhaseInference}

func (p Phase) String() string { return string(p) }

// ParsePhase returns the phase named s.
func ParsePhase(s string) (Phase, error) { return parseEnum("phase", s, phases) }

// Effect is what one rule did to a request.
type Effect string

// Effects of a rule on a request.
const (
	// EffectAdmit: the rule constrains requests and this one passed it.
	EffectAdmit Effect = "admit"
	// EffectNarrow: the rule lets the request through with a tighter setting
	// (a token limit, fewer credential scopes, a budget, a fallback, ...).
	EffectNarrow Effect = "narrow"
	// EffectDeny: the rule refuses the request.
	EffectDeny Effect = "deny"
)

var effects = []Effect{EffectAdmit, EffectNarrow, EffectDeny}

func (e Effect) String() string { return string(e) }

// ParseEffect returns the effect named s.
func ParseEffect(s string) (Effect, error) { return parseEnum("effect", s, effects) }

func parseEnum[T ~string](what, s string, all []T) (T, error) {
	for _, v := range all {
		if string(v) == s {
			return v, nil
		}
	}
	return "", fmt.Errorf("policy: unknown %s %q", what, s)
}

// names lists an enum's values as the plain strings the validate package
// wants for literal and discriminator checks.
func names[T ~string](all []T) []string {
	out := make([]string, len(all))
	for i, v := range all {
		out[i] = string(v)
	}
	return out
}

// rank is a value's position in its enum list, used to order output the way
// the spec lists the values rather than alphabetically.
func rank[T ~string](v T, all []T) int {
	for i, a := range all {
		if a == v {
			return i
		}
	}
	return len(all)
}
