package policy

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// A small world, so that random policies collide: the same models, prices
// and scopes come up again and again, as do identical rules.
var (
	worldModels    = []string{"openai/gpt-4o", "openai/gpt-4o-mini", "anthropic/claude", "mistral/large"}
	worldProviders = []string{"openai", "anthropic", "mistral"}
	worldPrices    = []string{"0", "1", "1.0", "2.5", "2.50", "10", "15"}
	worldKeys      = []string{"key-1", "key-2", "key-3"}
	worldUsers     = []uuid.UUID{owner, stranger}
)

func pick[T any](r *rand.Rand, items []T) T { return items[r.Intn(len(items))] }

func some[T any](r *rand.Rand, items []T, min int) []T {
	n := min + r.Intn(len(items)-min+1)
	out := make([]T, n)
	for i := range out {
		out[i] = pick(r, items)
	}
	return out
}

func randomPolicies(r *rand.Rand) []Policy {
	policies := make([]Policy, 1+r.Intn(8))
	for i := range policies {
		p := Policy{
			ID:      uuid.UUID{15: byte(i + 1)},
			Name:    fmt.Sprintf("p%d", r.Intn(3)), // names repeat; ids do not
			Enabled: r.Intn(6) > 0,
		}
		switch r.Intn(3) {
		case 0:
			p.Definition.Target = Target{Kind: TargetWorkspace}
		case 1:
			p.Definition.Target = Target{Kind: TargetSelectedUsers, UserIDs: some(r, worldUsers, 1)}
		default:
			p.Definition.Target = Target{Kind: TargetSelectedKeys, KeyIDs: some(r, worldKeys, 1)}
		}
		rules := make([]Rule, 1+r.Intn(8))
		fallbacks := 0
		for j := range rules {
			if j > 0 && r.Intn(5) == 0 {
				rules[j] = rules[r.Intn(j)] // the same rule twice
			} else {
				rules[j] = Rule{randomMatch(r), randomAction(r)}
			}
			if rules[j].Action.Kind == ActionFallback {
				if fallbacks++; fallbacks > 1 {
					rules[j].Action = Action{Kind: ActionStrictParameters}
				}
			}
		}
		p.Definition.Rules = rules
		policies[i] = p
	}
	return policies
}

func randomMatch(r *rand.Rand) Match {
	if r.Intn(2) == 0 {
		return Match{Kind: MatchAllRequests}
	}
	m := Match{Kind: MatchRequest, Models: some(r, worldModels, 0), Capabilities: []Capability{}}
	if r.Intn(3) == 0 {
		m.Models = []string{}
	}
	if r.Intn(3) == 0 {
		b := r.Intn(2) == 0
		m.Stream = &b
	}
	if r.Intn(3) == 0 {
		m.Capabilities = some(r, capabilities, 1)
	}
	return m
}

func randomAction(r *rand.Rand) Action {
	a := Action{Kind: pick(r, actionKinds)}
	switch a.Kind {
	case ActionModels:
		a.Names = some(r, worldModels, 1)
	case ActionProviders:
		a.Names = some(r, worldProviders, 1)
	case ActionDeny:
		a.Message = pick(r, []string{"no", "not now", "blocked"})
	case ActionPriceLimit:
		a.MaxInputPricePerMTok = MustDecimal(pick(r, worldPrices))
		a.MaxOutputPricePerMTok = MustDecimal(pick(r, worldPrices))
	case ActionRequestLimits:
		a.MaxOutputTokens = int64(1 + r.Intn(3)*100)
	case ActionCredentialAccess:
		a.Scopes = some(r, credentialScopes, 1)
	case ActionFallback:
		a.Models = some(r, worldModels, 1)
		a.On = some(r, fallbackTriggers, 1)
		a.MaxAttempts = 2 + r.Intn(4)
		a.TimeoutMS = 100 * (1 + r.Intn(3))
	case ActionBudget:
		a.AmountUSD = MustDecimal(pick(r, worldPrices))
		a.Period = pick(r, budgetPeriods)
		a.Aggregation = pick(r, budgetAggregations)
	}
	return a
}

func randomRequest(r *rand.Rand) Request {
	return Request{
		Phase:              pick(r, phases),
		KeyID:              pick(r, worldKeys),
		OwnerUserID:        pick(r, worldUsers),
		Model:              pick(r, worldModels),
		Provider:           pick(r, worldProviders),
		InputPricePerMTok:  decimal.RequireFromString(pick(r, worldPrices)),
		OutputPricePerMTok: decimal.RequireFromString(pick(r, worldPrices)),
		Stream:             r.Intn(2) == 0,
		Capabilities:       some(r, capabilities, 0),
		CredentialScopes:   some(r, credentialScopes, 0),
	}
}

// shuffle reorders the policies and each policy's rules, returning for each
// policy id the permutation: shuffled rule k was original rule perm[k].
func shuffle(r *rand.Rand, policies []Policy) ([]Policy, map[uuid.UUID][]int) {
	out := slices.Clone(policies)
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	perms := make(map[uuid.UUID][]int, len(out))
	for i := range out {
		rules := out[i].Definition.Rules
		perm := r.Perm(len(rules))
		shuffled := make([]Rule, len(rules))
		for k, from := range perm {
			shuffled[k] = rules[from]
		}
		out[i].Definition.Rules = shuffled
		perms[out[i].ID] = perm
	}
	return out, perms
}

// unshuffle renames every RuleIndex back to the rule's original position, so
// a decision about shuffled rules can be compared with the original one.
// Identical rules in one policy differ only in RuleIndex, the last sort key,
// so renaming can swap two neighbours; the lists are sorted again for that.
func unshuffle(d Decision, perms map[uuid.UUID][]int) Decision {
	return relabel(d, func(ref RuleRef) int { return perms[ref.PolicyID][ref.RuleIndex] }, true)
}

// withoutIndexes blanks every RuleIndex and keeps the order: it checks that
// the order comes from content alone.
func withoutIndexes(d Decision) Decision {
	return relabel(d, func(RuleRef) int { return 0 }, false)
}

func relabel(d Decision, index func(RuleRef) int, sort bool) Decision {
	d.Reasons = slices.Clone(d.Reasons)
	for i := range d.Reasons {
		d.Reasons[i].RuleIndex = index(d.Reasons[i].RuleRef)
	}
	d.Budgets = slices.Clone(d.Budgets)
	for i := range d.Budgets {
		d.Budgets[i].RuleIndex = index(d.Budgets[i].RuleRef)
	}
	if d.Fallback != nil {
		f := *d.Fallback
		f.RuleIndex = index(f.RuleRef)
		d.Fallback = &f
	}
	if sort {
		slices.SortFunc(d.Reasons, compareReasons)
		slices.SortFunc(d.Budgets, compareBudgets)
	}
	return d
}

// Policies are unordered: the same set in any order decides identically.
func TestEvaluatePolicyOrderProperty(t *testing.T) {
	for seed := int64(1); seed <= 2000; seed++ {
		r := rand.New(rand.NewSource(seed))
		policies := randomPolicies(r)
		req := randomRequest(r)
		want := Evaluate(policies, req)
		for range 5 {
			shuffled := slices.Clone(policies)
			r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			if got := Evaluate(shuffled, req); !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d: policy order changed the decision\n got: %+v\nwant: %+v", seed, got, want)
			}
		}
	}
}

// Rules are unordered too: shuffling them changes nothing but the positions
// RuleIndex reports.
func TestEvaluateRuleOrderProperty(t *testing.T) {
	allowed, denied := 0, 0
	for seed := int64(1); seed <= 2000; seed++ {
		r := rand.New(rand.NewSource(seed))
		policies := randomPolicies(r)
		req := randomRequest(r)
		want := Evaluate(policies, req)
		if want.Allowed {
			allowed++
		} else {
			denied++
		}
		for range 5 {
			shuffled, perms := shuffle(r, policies)
			got := Evaluate(shuffled, req)
			if a, b := withoutIndexes(got), withoutIndexes(want); !reflect.DeepEqual(a, b) {
				t.Fatalf("seed %d: rule order changed the decision\n got: %+v\nwant: %+v", seed, a, b)
			}
			if got := unshuffle(got, perms); !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d: rule indexes do not follow their rules\n got: %+v\nwant: %+v", seed, got, want)
			}
		}
	}
	// The generator must exercise both outcomes, or the property says little.
	if allowed < 100 || denied < 100 {
		t.Errorf("generator is lopsided: %d allowed, %d denied", allowed, denied)
	}
}
