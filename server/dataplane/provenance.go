package dataplane

import (
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
	// The lists are made at their final length (one allocation each, not
	// one per doubling); empty, not nil, when nothing applied.
	nPolicies, nBudgets := 0, 0
	if d := a.decision; d != nil {
		nPolicies = min(len(d.Reasons), wire.MaxProvenanceItems)
		if charged {
			nBudgets = min(len(d.Budgets), wire.MaxProvenanceItems)
		}
	}
	p := &wire.UsageProvenance{BundleVersion: a.key.org.version, Policies: make([]wire.UsagePolicy, 0, nPolicies),
		Budgets: make([]wire.UsageBudget, 0, nBudgets), OverBound: overBound, Prices: o.prices}
	if u := o.usage.Upstream; u != nil {
		p.UpstreamUsage = &wire.UsageCounts{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens}
	}
	if d := a.decision; d != nil {
		for _, r := range d.Reasons[:min(len(d.Reasons), wire.MaxProvenanceItems)] {
			p.Policies = append(p.Policies, wire.UsagePolicy{PolicyID: r.PolicyID, PolicyName: r.PolicyName, RuleIndex: r.RuleIndex,
				Action: string(r.Action), Effect: string(r.Effect)})
		}
	}
	if charged && a.decision != nil {
		for _, b := range a.decision.Budgets[:min(len(a.decision.Budgets), wire.MaxProvenanceItems)] {
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
			p.Budgets = append(p.Budgets, wire.UsageBudget{PolicyID: b.PolicyID, PolicyName: b.PolicyName, Counter: c.String(),
				Period: string(b.Period), Aggregation: string(b.Aggregation), AmountUSD: amount})
		}
	}
	return p
}
