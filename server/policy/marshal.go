package policy

import (
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/gw-gateway/gw/server/validate"
)

// The marshallers write exactly the members the spec lists for each kind, so
// what the API returns, what bundles carry and what ParseDefinition accepts
// are the same shape. Lists are written as [] even when nil: the spec's
// members are arrays, never null.

// MarshalJSON writes the definition in the spec's shape.
func (d Definition) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Target Target `json:"target"`
		Rules  []Rule `json:"rules"`
	}{d.Target, orEmpty(d.Rules)})
}

// UnmarshalJSON reads a definition as strictly as the API does, so a stored
// or hand-written definition can never slip past the schema through
// encoding/json's lenient field matching. Unlike most unmarshalers it refuses
// null: a definition is never optional where this type is used.
func (d *Definition) UnmarshalJSON(data []byte) error {
	v, err := validate.ParseJSON(data, nil)
	if err != nil {
		return err
	}
	var errs validate.Errors
	parsed := ParseDefinition(v, nil, &errs)
	if err := errs.Err(); err != nil {
		return err
	}
	*d = parsed
	return nil
}

// MarshalJSON writes the target with its kind's members only.
func (t Target) MarshalJSON() ([]byte, error) {
	switch t.Kind {
	case TargetWorkspace:
		return json.Marshal(struct {
			Kind TargetKind `json:"kind"`
		}{t.Kind})
	case TargetSelectedUsers:
		return json.Marshal(struct {
			Kind    TargetKind  `json:"kind"`
			UserIDs []uuid.UUID `json:"user_ids"`
		}{t.Kind, orEmpty(t.UserIDs)})
	case TargetSelectedKeys:
		return json.Marshal(struct {
			Kind   TargetKind `json:"kind"`
			KeyIDs []string   `json:"key_ids"`
		}{t.Kind, orEmpty(t.KeyIDs)})
	}
	return nil, fmt.Errorf("policy: cannot marshal target of unknown kind %q", t.Kind)
}

// MarshalJSON writes the rule's match and action.
func (r Rule) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Match  Match  `json:"match"`
		Action Action `json:"action"`
	}{r.Match, r.Action})
}

// MarshalJSON writes the match. A request match always carries all three of
// its members, stream as null when it places no condition.
func (m Match) MarshalJSON() ([]byte, error) {
	switch m.Kind {
	case MatchAllRequests:
		return json.Marshal(struct {
			Kind MatchKind `json:"kind"`
		}{m.Kind})
	case MatchRequest:
		return json.Marshal(struct {
			Kind         MatchKind    `json:"kind"`
			Models       []string     `json:"models"`
			Stream       *bool        `json:"stream"`
			Capabilities []Capability `json:"capabilities"`
		}{m.Kind, orEmpty(m.Models), m.Stream, orEmpty(m.Capabilities)})
	}
	return nil, fmt.Errorf("policy: cannot marshal match of unknown kind %q", m.Kind)
}

// MarshalJSON writes the action with its kind's members only.
func (a Action) MarshalJSON() ([]byte, error) {
	switch a.Kind {
	case ActionModels, ActionProviders:
		return json.Marshal(struct {
			Kind  ActionKind `json:"kind"`
			Names []string   `json:"names"`
		}{a.Kind, orEmpty(a.Names)})
	case ActionDeny:
		return json.Marshal(struct {
			Kind    ActionKind `json:"kind"`
			Message string     `json:"message"`
		}{a.Kind, a.Message})
	case ActionStrictParameters:
		return json.Marshal(struct {
			Kind ActionKind `json:"kind"`
		}{a.Kind})
	case ActionPriceLimit:
		return json.Marshal(struct {
			Kind           ActionKind `json:"kind"`
			MaxInputPrice  Decimal    `json:"max_input_price_per_mtok"`
			MaxOutputPrice Decimal    `json:"max_output_price_per_mtok"`
		}{a.Kind, a.MaxInputPricePerMTok, a.MaxOutputPricePerMTok})
	case ActionRequestLimits:
		return json.Marshal(struct {
			Kind            ActionKind `json:"kind"`
			MaxOutputTokens int64      `json:"max_output_tokens"`
		}{a.Kind, a.MaxOutputTokens})
	case ActionCredentialAccess:
		return json.Marshal(struct {
			Kind   ActionKind        `json:"kind"`
			Scopes []CredentialScope `json:"scopes"`
		}{a.Kind, orEmpty(a.Scopes)})
	case ActionFallback:
		return json.Marshal(struct {
			Kind        ActionKind        `json:"kind"`
			Models      []string          `json:"models"`
			On          []FallbackTrigger `json:"on"`
			MaxAttempts int               `json:"max_attempts"`
			TimeoutMS   int               `json:"timeout_ms"`
		}{a.Kind, orEmpty(a.Models), orEmpty(a.On), a.MaxAttempts, a.TimeoutMS})
	case ActionBudget:
		return json.Marshal(struct {
			Kind        ActionKind        `json:"kind"`
			AmountUSD   Decimal           `json:"amount_usd"`
			Period      BudgetPeriod      `json:"period"`
			Aggregation BudgetAggregation `json:"aggregation"`
		}{a.Kind, a.AmountUSD, a.Period, a.Aggregation})
	}
	return nil, fmt.Errorf("policy: cannot marshal action of unknown kind %q", a.Kind)
}

// MarshalJSON writes the decimal as the string it was given. A Decimal built
// from a value alone (no text) is written in the value's plain notation.
func (d Decimal) MarshalJSON() ([]byte, error) {
	if d.Text == "" {
		return json.Marshal(d.Value.String())
	}
	return json.Marshal(d.Text)
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// UnmarshalJSON reads a target as strictly as the API does.
func (t *Target) UnmarshalJSON(data []byte) error {
	v, err := validate.ParseJSON(data, nil)
	if err != nil {
		return err
	}
	var errs validate.Errors
	parsed := parseTarget(v, nil, &errs)
	if err := errs.Err(); err != nil {
		return err
	}
	*t = parsed
	return nil
}
