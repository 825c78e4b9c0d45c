package dataplane

import (
	"sync"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/spend"
	"github.com/gw-gateway/gw/wire"
)

// provenance says how a request's cost came about, for its usage event:
// the prices its tokens were charged at (when an upstream was called: the
// record's),
// the bundle that admitted it, the policy rules that applied to the model
// it ended on, and, when charged (a reservation held them), the budgets
// its cost counts against, whether they were charged less than the cost
// (overBound), and what the upstream reported when gw recorded its floor
// instead. The lists are cut at wire.MaxProvenanceItems
// (a workspace may have more applying rules): the event is never refused
// for its explanation.
func (a *admission) provenance(o *usageRecord, charged, overBound bool) *wire.UsageProvenance {
	p := &wire.UsageProvenance{BundleVersion: a.key.org.version, OverBound: overBound, Prices: o.prices}
	if u := o.usage.Upstream; u != nil {
		p.UpstreamUsage = &wire.UsageCounts{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens}
	}
	if l := a.lists; l != nil && l.of(a.decision) {
		// A cached decision's lists, made by its first event: the same
		// for every request on it (the key's own, on one bundle).
		l.once.Do(func() { l.policies, l.budgets = a.decisionLists(a.decision) })
		p.Policies, p.Budgets = l.policies, emptyBudgets
		if charged {
			p.Budgets = l.budgets
		}
		return p
	}
	p.Policies, p.Budgets = a.decisionLists(a.decision)
	if !charged {
		p.Budgets = emptyBudgets
	}
	return p
}

// provenanceLists are what a cached decision's events name of it
// (cachedDecision): shared by those events, so read-only, and capped at
// their length so an append copies.
type provenanceLists struct {
	decision *policy.Decision
	once     sync.Once
	policies []wire.UsagePolicy
	budgets  []wire.UsageBudget
}

// of reports whether l are d's lists: a request that moves to another
// decision (a fallback) without lists, or back to an earlier one, keeps
// lists that are not its decision's.
func (l *provenanceLists) of(d *policy.Decision) bool {
	return d != nil && l.decision == d
}

// emptyBudgets is the budgets of an event that charged none: empty, not
// nil. Shared, and of no length, so an append copies.
var emptyBudgets = []wire.UsageBudget{}

// decisionLists are the policies that decided d and the budgets it
// charges, as an event names them. The lists are made at their final
// length (one allocation each, not one per doubling); empty, not nil,
// when nothing applied.
func (a *admission) decisionLists(d *policy.Decision) ([]wire.UsagePolicy, []wire.UsageBudget) {
	if d == nil {
		return []wire.UsagePolicy{}, []wire.UsageBudget{}
	}
	policies := make([]wire.UsagePolicy, 0, min(len(d.Reasons), wire.MaxProvenanceItems))
	for _, r := range d.Reasons[:cap(policies)] {
		policies = append(policies, wire.UsagePolicy{PolicyID: r.PolicyID, PolicyName: r.PolicyName, RuleIndex: r.RuleIndex,
			Action: string(r.Action), Effect: string(r.Effect)})
	}
	budgets := make([]wire.UsageBudget, 0, min(len(d.Budgets), wire.MaxProvenanceItems))
	for _, b := range d.Budgets[:cap(budgets)] {
		c := spend.Counter{PolicyID: b.PolicyID, Period: spend.Period(b.Period), Aggregation: string(b.Aggregation)}
		if b.Aggregation == policy.AggregationPerKey {
			c.KeyID = a.key.id
		}
		amount := b.AmountUSD.Text
		// An amount an older version stored too long for an event:
		// the one enforced. (Checked first without the decimal's
		// regular expression: nearly every amount is a valid price.)
		if !catalog.ValidPrice(amount) {
			if n, _, err := catalog.BudgetNanoUSD(amount); err == nil {
				amount = catalog.FormatNanoUSD(n)
			}
		}
		budgets = append(budgets, wire.UsageBudget{PolicyID: b.PolicyID, PolicyName: b.PolicyName, Counter: c.String(),
			Period: string(b.Period), Aggregation: string(b.Aggregation), AmountUSD: amount})
	}
	return policies, budgets
}
