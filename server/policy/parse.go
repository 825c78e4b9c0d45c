package policy

import (
	"fmt"
	"regexp"

	"github.com/gw-gateway/gw/server/validate"
	"github.com/shopspring/decimal"
)

// Limits of spec section 8.
const (
	MaxRules          = 100
	MaxTargetIDs      = 1000
	MaxNames          = 1000
	MaxNameLength     = 255
	MaxMatchModels    = 1000
	MaxDenyMessage    = 200
	MaxFallbackModels = 4
	MinFallbackTries  = 2
	MaxFallbackTries  = 5
	MinFallbackMS     = 100
	MaxFallbackMS     = 120000
)

// decimalPattern is the spec's pattern for prices and amounts. Go's \d is
// ASCII only, which is what we want: the regex engines pydantic uses read \d
// as any Unicode digit, and would pass "١" to a decimal parser that cannot
// read it.
var decimalPattern = regexp.MustCompile(`^\d+(?:\.\d+)?$`)

var (
	nameRule    = validate.StringRule{Min: 1, Max: MaxNameLength}
	messageRule = validate.StringRule{Min: 1, Max: MaxDenyMessage}
	decimalRule = validate.StringRule{Pattern: decimalPattern}
)

const fallbackCountMsg = "at most one rule may have a fallback action"

func errDecimalPattern(s string) error {
	return fmt.Errorf("policy: %q does not match the decimal pattern %s", s, decimalPattern)
}

// ParseDefinitionJSON reads a request body's definition. Problems come back
// as one *validate.Error located under body.definition, every one of them.
func ParseDefinitionJSON(data []byte) (Definition, error) {
	root := validate.Loc{"body", "definition"}
	v, err := validate.ParseJSON(data, root)
	if err != nil {
		return Definition{}, err
	}
	var errs validate.Errors
	d := ParseDefinition(v, root, &errs)
	if err := errs.Err(); err != nil {
		return Definition{}, err
	}
	return d, nil
}

// ParseDefinition reads a definition from a generic JSON tree (as
// validate.ParseJSON returns it) located at loc, reporting every problem to
// errs. The result is meaningful only when errs gained no issue; it is
// returned anyway so a caller validating a larger body keeps going.
//
// Parsed lists are never nil for the kind they belong to, so a definition
// read from JSON and one read back from its own marshalling are DeepEqual.
func ParseDefinition(v any, loc validate.Loc, errs *validate.Errors) Definition {
	o := validate.ReadObject(v, loc, errs)
	if o == nil {
		return Definition{}
	}
	var d Definition
	member(o, "target", func(v any, loc validate.Loc) { d.Target = parseTarget(v, loc, errs) })
	member(o, "rules", func(v any, loc validate.Loc) { d.Rules = parseRules(v, loc, errs) })
	o.Close()
	return d
}

func parseTarget(v any, loc validate.Loc, errs *validate.Errors) Target {
	o, kind, ok := readUnion(v, loc, errs, targetKinds)
	if !ok {
		return Target{}
	}
	t := Target{Kind: kind}
	switch kind {
	case TargetSelectedUsers:
		member(o, "user_ids", func(v any, loc validate.Loc) {
			t.UserIDs = list(v, loc, validate.ListRule{Min: 1, Max: MaxTargetIDs}, errs, validate.UUID)
		})
	case TargetSelectedKeys:
		member(o, "key_ids", func(v any, loc validate.Loc) {
			t.KeyIDs = list(v, loc, validate.ListRule{Min: 1, Max: MaxTargetIDs}, errs, stringOf(nameRule))
		})
	}
	o.Close()
	return t
}

func parseRules(v any, loc validate.Loc, errs *validate.Errors) []Rule {
	rules := list(v, loc, validate.ListRule{Min: 1, Max: MaxRules}, errs,
		func(v any, loc validate.Loc, errs *validate.Errors) (Rule, bool) {
			return parseRule(v, loc, errs), true
		})
	fallbacks := 0
	for _, r := range rules {
		if r.Action.Kind == ActionFallback {
			fallbacks++
		}
	}
	if fallbacks > 1 {
		// A rule set is one decision, so the problem belongs to the list, not
		// to either rule. The input is left out, like validate.List does for
		// long lists: echoing up to 100 rules back helps nobody.
		errs.Add(loc, "value_error", "Value error, "+fallbackCountMsg, nil,
			map[string]any{"error": fallbackCountMsg})
	}
	return rules
}

func parseRule(v any, loc validate.Loc, errs *validate.Errors) Rule {
	o := validate.ReadObject(v, loc, errs)
	if o == nil {
		return Rule{}
	}
	var r Rule
	member(o, "match", func(v any, loc validate.Loc) { r.Match = parseMatch(v, loc, errs) })
	member(o, "action", func(v any, loc validate.Loc) { r.Action = parseAction(v, loc, errs) })
	o.Close()
	return r
}

// parseMatch reads a match. The spec's table calls models and capabilities
// both "required" and "default empty list"; we read that as pydantic does
// for a field with a default: optional on input ([] when absent), always
// present on output. stream has no default: "boolean or null, required", so
// it must be given, null meaning either.
func parseMatch(v any, loc validate.Loc, errs *validate.Errors) Match {
	o, kind, ok := readUnion(v, loc, errs, matchKinds)
	if !ok {
		return Match{}
	}
	m := Match{Kind: kind}
	if kind == MatchRequest {
		m.Models = []string{}
		m.Capabilities = []Capability{}
		optional(o, "models", func(v any, loc validate.Loc) {
			m.Models = list(v, loc, validate.ListRule{Max: MaxMatchModels}, errs, stringOf(nameRule))
		})
		if v, ok := o.Require("stream"); ok && v != nil {
			if b, ok := validate.Bool(v, loc.With("stream"), errs); ok {
				m.Stream = &b
			}
		}
		optional(o, "capabilities", func(v any, loc validate.Loc) {
			m.Capabilities = list(v, loc, validate.ListRule{Max: len(capabilities)}, errs, literalOf(capabilities))
		})
	}
	o.Close()
	return m
}

func parseAction(v any, loc validate.Loc, errs *validate.Errors) Action {
	o, kind, ok := readUnion(v, loc, errs, actionKinds)
	if !ok {
		return Action{}
	}
	a := Action{Kind: kind}
	switch kind {
	case ActionModels, ActionProviders:
		member(o, "names", func(v any, loc validate.Loc) {
			a.Names = list(v, loc, validate.ListRule{Min: 1, Max: MaxNames}, errs, stringOf(nameRule))
		})
	case ActionDeny:
		member(o, "message", func(v any, loc validate.Loc) { a.Message, _ = validate.String(v, loc, messageRule, errs) })
	case ActionStrictParameters:
	case ActionPriceLimit:
		member(o, "max_input_price_per_mtok", func(v any, loc validate.Loc) {
			a.MaxInputPricePerMTok, _ = parseDecimal(v, loc, errs)
		})
		member(o, "max_output_price_per_mtok", func(v any, loc validate.Loc) {
			a.MaxOutputPricePerMTok, _ = parseDecimal(v, loc, errs)
		})
	case ActionRequestLimits:
		member(o, "max_output_tokens", func(v any, loc validate.Loc) {
			a.MaxOutputTokens, _ = validate.Int(v, loc, validate.IntRule{Min: validate.Bound(1)}, errs)
		})
	case ActionCredentialAccess:
		member(o, "scopes", func(v any, loc validate.Loc) {
			a.Scopes = list(v, loc, validate.ListRule{Min: 1, Max: len(credentialScopes)}, errs, literalOf(credentialScopes))
		})
	case ActionFallback:
		member(o, "models", func(v any, loc validate.Loc) {
			a.Models = list(v, loc, validate.ListRule{Min: 1, Max: MaxFallbackModels}, errs, stringOf(nameRule))
		})
		member(o, "on", func(v any, loc validate.Loc) {
			a.On = list(v, loc, validate.ListRule{Min: 1, Max: len(fallbackTriggers)}, errs, literalOf(fallbackTriggers))
		})
		member(o, "max_attempts", func(v any, loc validate.Loc) {
			n, _ := validate.Int(v, loc, intRange(MinFallbackTries, MaxFallbackTries), errs)
			a.MaxAttempts = int(n)
		})
		member(o, "timeout_ms", func(v any, loc validate.Loc) {
			n, _ := validate.Int(v, loc, intRange(MinFallbackMS, MaxFallbackMS), errs)
			a.TimeoutMS = int(n)
		})
	case ActionBudget:
		member(o, "amount_usd", func(v any, loc validate.Loc) { a.AmountUSD, _ = parseDecimal(v, loc, errs) })
		member(o, "period", func(v any, loc validate.Loc) { a.Period, _ = literal(v, loc, errs, budgetPeriods) })
		member(o, "aggregation", func(v any, loc validate.Loc) { a.Aggregation, _ = literal(v, loc, errs, budgetAggregations) })
	}
	o.Close()
	return a
}

// readUnion opens a tagged object and reads its kind. When the kind is
// missing or unknown the object's other members are not checked: without a
// variant there is no member list to check them against, and pydantic
// reports only the tag then too.
func readUnion[K ~string](v any, loc validate.Loc, errs *validate.Errors, kinds []K) (*validate.Object, K, bool) {
	o := validate.ReadObject(v, loc, errs)
	if o == nil {
		return nil, "", false
	}
	tag, ok := validate.Discriminator(o, "kind", names(kinds))
	if !ok {
		return nil, "", false
	}
	return o, K(tag), true
}

// member reads a required member, reporting it missing when absent.
func member(o *validate.Object, name string, read func(v any, loc validate.Loc)) {
	if v, ok := o.Require(name); ok {
		read(v, o.Loc().With(name))
	}
}

// optional reads a member only when present.
func optional(o *validate.Object, name string, read func(v any, loc validate.Loc)) {
	if v, ok := o.Raw(name); ok {
		read(v, o.Loc().With(name))
	}
}

// list reads an array, keeping the items that read cleanly. The result is
// never nil, so an empty list and a list of bad items read the same way.
func list[T any](v any, loc validate.Loc, r validate.ListRule, errs *validate.Errors,
	item func(v any, loc validate.Loc, errs *validate.Errors) (T, bool)) []T {
	out := []T{}
	validate.List(v, loc, r, errs, func(v any, loc validate.Loc) {
		if x, ok := item(v, loc, errs); ok {
			out = append(out, x)
		}
	})
	return out
}

func intRange(lo, hi int64) validate.IntRule {
	return validate.IntRule{Min: validate.Bound(lo), Max: validate.Bound(hi)}
}

func stringOf(r validate.StringRule) func(any, validate.Loc, *validate.Errors) (string, bool) {
	return func(v any, loc validate.Loc, errs *validate.Errors) (string, bool) {
		return validate.String(v, loc, r, errs)
	}
}

func literalOf[T ~string](all []T) func(any, validate.Loc, *validate.Errors) (T, bool) {
	return func(v any, loc validate.Loc, errs *validate.Errors) (T, bool) {
		return literal(v, loc, errs, all)
	}
}

func literal[T ~string](v any, loc validate.Loc, errs *validate.Errors, all []T) (T, bool) {
	s, ok := validate.Literal(v, loc, names(all), errs)
	if !ok {
		return "", false
	}
	return T(s), true
}

// parseDecimal reads a price or amount. The pattern already rules out signs,
// exponents and blanks; the decimal parse can still refuse a number whose
// scale is beyond the library's limit, which pydantic would call
// decimal_parsing.
func parseDecimal(v any, loc validate.Loc, errs *validate.Errors) (Decimal, bool) {
	s, ok := validate.String(v, loc, decimalRule, errs)
	if !ok {
		return Decimal{}, false
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		errs.Add(loc, "decimal_parsing", "Input should be a valid decimal", s, map[string]any{"error": err.Error()})
		return Decimal{}, false
	}
	return Decimal{Text: s, Value: d}, true
}

// ParseTarget reads a target alone, exactly as a definition's, reporting
// every problem to errs: a guardrail's target (issue 32) and a tool
// policy's (server/toolpolicy, issue 30) are the policies' target.
func ParseTarget(v any, loc validate.Loc, errs *validate.Errors) Target {
	return parseTarget(v, loc, errs)
}
