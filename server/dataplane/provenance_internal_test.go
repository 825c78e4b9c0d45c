package dataplane

import (
	"testing"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/wire"
)

// TestProvenanceIsCutNotRefused: a request more rules and budgets apply
// to than an event may list keeps the first ones, so its event (and its
// cost) is never refused at ingest for its explanation.
func TestProvenanceIsCutNotRefused(t *testing.T) {
	d := &policy.Decision{}
	for i := range wire.MaxProvenanceItems + 50 {
		ref := policy.RuleRef{PolicyID: uuid.New(), PolicyName: "p", RuleIndex: i}
		d.Reasons = append(d.Reasons, policy.Reason{RuleRef: ref, Action: policy.ActionBudget, Effect: "applied"})
		d.Budgets = append(d.Budgets, policy.Budget{RuleRef: ref, Period: "day", Aggregation: policy.AggregationShared})
	}
	a := &admission{key: &inferenceKey{id: uuid.New(), org: &inferenceOrg{version: 7}}, decision: d}
	p := a.provenance(&usageRecord{}, true, false)
	if len(p.Policies) != wire.MaxProvenanceItems || len(p.Budgets) != wire.MaxProvenanceItems {
		t.Fatalf("provenance lists %d rules and %d budgets, want both cut at %d", len(p.Policies), len(p.Budgets), wire.MaxProvenanceItems)
	}
	if p.Policies[0].RuleIndex != 0 || p.BundleVersion != 7 {
		t.Fatalf("the cut kept %+v of bundle %d, want the first rules", p.Policies[0], p.BundleVersion)
	}
}
