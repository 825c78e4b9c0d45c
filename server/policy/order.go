package policy

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
)

// scopeMask is a set of credential scopes. Intersections over many rules are
// then one AND each, with no allocation on the hot path.
type scopeMask uint8

var allScopes = scopeMask(1<<len(credentialScopes) - 1)

func maskOf(scopes []CredentialScope) scopeMask {
	var m scopeMask
	for _, s := range scopes {
		if i := rank(s, credentialScopes); i < len(credentialScopes) {
			m |= 1 << i
		}
	}
	return m
}

// scopes lists the set in the spec's order; never nil.
func (m scopeMask) scopes() []CredentialScope {
	out := make([]CredentialScope, 0, len(credentialScopes))
	for i, s := range credentialScopes {
		if m&(1<<i) != 0 {
			out = append(out, s)
		}
	}
	return out
}

func (m scopeMask) String() string { return scopeTexts[m&allScopes] }

// scopeTexts spells every set once, for the reasons that name them.
var scopeTexts = func() []string {
	out := make([]string, allScopes+1)
	for m := range out {
		out[m] = "none"
		if m != 0 {
			out[m] = joinEnum(scopeMask(m).scopes())
		}
	}
	return out
}()

// The comparisons below order what Evaluate returns by content, never by
// input order, so that shuffled policies and rules give identical decisions.
// RuleIndex comes last: two rules that differ only in position are the same
// rule twice, and either order tells the same story.

func compareRefs(a, b RuleRef) int {
	if c := bytes.Compare(a.PolicyID[:], b.PolicyID[:]); c != 0 {
		return c
	}
	return strings.Compare(a.PolicyName, b.PolicyName)
}

// compareReasons sorts the longest list Evaluate returns, so unlike the
// others it stops at the first difference instead of using cmp.Or, which
// computes every key.
func compareReasons(a, b Reason) int {
	if c := compareRefs(a.RuleRef, b.RuleRef); c != 0 {
		return c
	}
	if a.Action != b.Action {
		return cmp.Compare(rank(a.Action, actionKinds), rank(b.Action, actionKinds))
	}
	if a.Effect != b.Effect {
		return cmp.Compare(rank(a.Effect, effects), rank(b.Effect, effects))
	}
	if c := strings.Compare(a.Detail, b.Detail); c != 0 {
		return c
	}
	return cmp.Compare(a.RuleIndex, b.RuleIndex)
}

func compareBudgets(a, b Budget) int {
	return cmp.Or(
		compareRefs(a.RuleRef, b.RuleRef),
		cmp.Compare(rank(a.Period, budgetPeriods), rank(b.Period, budgetPeriods)),
		cmp.Compare(rank(a.Aggregation, budgetAggregations), rank(b.Aggregation, budgetAggregations)),
		a.AmountUSD.cmp(b.AmountUSD),
		cmp.Compare(a.RuleIndex, b.RuleIndex),
	)
}

func compareDenials(a, b denial) int {
	return cmp.Or(
		compareRefs(a.ref, b.ref),
		strings.Compare(a.message, b.message),
	)
}

// compareFallbacks puts the preferred fallback first: the more specific
// target, then the lower policy id, then the content for definitions that
// were never validated and hold two fallbacks in one policy.
func compareFallbacks(a, b fallbackCandidate) int {
	return cmp.Or(
		cmp.Compare(b.specificity, a.specificity),
		compareRefs(a.ref, b.ref),
		slices.Compare(a.action.Models, b.action.Models),
		slices.Compare(a.action.On, b.action.On),
		cmp.Compare(a.action.MaxAttempts, b.action.MaxAttempts),
		cmp.Compare(a.action.TimeoutMS, b.action.TimeoutMS),
		cmp.Compare(a.ref.RuleIndex, b.ref.RuleIndex),
	)
}
