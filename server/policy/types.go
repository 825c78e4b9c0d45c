// Package policy holds workspace inference policies: their definition
// schema (spec 2.3 and 8), its strict validation, and Evaluate, the one pure
// function that decides what a policy set does to a request. Discovery,
// inference, `gw policies explain` and the playground all call Evaluate, so
// they can never disagree about what a policy means.
//
// The package does no I/O and reads no clock: everything it needs arrives in
// its arguments.
package policy

import (
	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// Definition is a policy's definition: who it targets and its rules. Rules
// are unordered; their position only names them in explanations.
type Definition struct {
	Target Target
	Rules  []Rule
}

// Target selects the inference keys a policy applies to. UserIDs is set only
// for selected_users, KeyIDs only for selected_keys.
type Target struct {
	Kind    TargetKind
	UserIDs []uuid.UUID
	KeyIDs  []string
}

// Rule applies its action to the requests its match matches.
type Rule struct {
	Match  Match
	Action Action
}

// Match selects requests. Models, Stream and Capabilities belong to the
// request kind only; a request match ANDs them, and an empty list or a nil
// Stream places no condition.
type Match struct {
	Kind         MatchKind
	Models       []string
	Stream       *bool
	Capabilities []Capability
}

// Action is one of the spec's action kinds. It is one flat struct rather than
// an interface per kind so that a definition stays plain data: it copies,
// compares with reflect.DeepEqual and reads without a type assertion at every
// use. Only the members of Kind are meaningful; the rest stay zero.
type Action struct {
	Kind ActionKind

	// models and providers: the allowlist (model ids or provider ids).
	Names []string

	// deny: returned to the caller as the refusal.
	Message string

	// price_limit: ceilings in USD per million tokens.
	MaxInputPricePerMTok  Decimal
	MaxOutputPricePerMTok Decimal

	// request_limits.
	MaxOutputTokens int64

	// credential_access: the scopes whose credentials may serve requests.
	Scopes []CredentialScope

	// fallback.
	Models      []string
	On          []FallbackTrigger
	MaxAttempts int
	TimeoutMS   int

	// budget.
	AmountUSD   Decimal
	Period      BudgetPeriod
	Aggregation BudgetAggregation
}

// Decimal is a money amount as the user wrote it and as a number. The text is
// kept so that a definition reads back exactly as it was stored ("1.50" stays
// "1.50", not "1.5"); the value is what comparisons use. Money never passes
// through float64.
type Decimal struct {
	Text  string
	Value decimal.Decimal
}

// NewDecimal parses s, which must match the spec's decimal pattern
// (digits, optionally a dot and more digits).
func NewDecimal(s string) (Decimal, error) {
	if !decimalPattern.MatchString(s) {
		return Decimal{}, errDecimalPattern(s)
	}
	v, err := decimal.NewFromString(s)
	if err != nil {
		return Decimal{}, err
	}
	return Decimal{Text: s, Value: v}, nil
}

// MustDecimal is NewDecimal for constants in code and tests.
func MustDecimal(s string) Decimal {
	d, err := NewDecimal(s)
	if err != nil {
		panic(err)
	}
	return d
}

func (d Decimal) String() string { return d.Text }

// cmp orders by value, then by text so that "1" and "1.0" still compare
// deterministically.
func (d Decimal) cmp(o Decimal) int {
	if c := d.Value.Cmp(o.Value); c != 0 {
		return c
	}
	switch {
	case d.Text < o.Text:
		return -1
	case d.Text > o.Text:
		return 1
	}
	return 0
}
