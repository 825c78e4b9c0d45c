package dataplane

import (
	"reflect"
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

// TestProvenanceFromCachedLists: a cached decision's events name the same
// rules and budgets as a decision evaluated per request, charged or not;
// lists kept for one decision are never used for another (a request that
// fell back to a model whose decision was not cached), and a list shared
// between events is never appended into.
func TestProvenanceFromCachedLists(t *testing.T) {
	decision := func(n int) *policy.Decision {
		d := &policy.Decision{}
		for i := range n {
			ref := policy.RuleRef{PolicyID: uuid.New(), PolicyName: "p", RuleIndex: i}
			d.Reasons = append(d.Reasons, policy.Reason{RuleRef: ref, Action: policy.ActionBudget, Effect: "applied"})
			d.Budgets = append(d.Budgets, policy.Budget{RuleRef: ref, Period: "day", Aggregation: policy.AggregationPerKey})
		}
		return d
	}
	var cache decisionCache
	cached, lists := cache.decision(decisionKey{model: "m"}, func() policy.Decision { return *decision(3) })
	if lists == nil || !lists.of(cached) {
		t.Fatal("a cached decision comes without its lists")
	}
	key := &inferenceKey{id: uuid.New(), org: &inferenceOrg{version: 7}}
	for _, charged := range []bool{true, false, true} {
		fresh := (&admission{key: key, decision: cached}).provenance(&usageRecord{}, charged, false)
		got := (&admission{key: key, decision: cached, lists: lists}).provenance(&usageRecord{}, charged, false)
		if !reflect.DeepEqual(got, fresh) {
			t.Fatalf("charged %v: from the cached lists %+v, evaluated %+v", charged, got, fresh)
		}
		if len(got.Policies) != 3 || len(got.Budgets) != map[bool]int{true: 3, false: 0}[charged] || got.Budgets == nil {
			t.Fatalf("charged %v: %d rules, %d budgets", charged, len(got.Policies), len(got.Budgets))
		}
		if cap(got.Policies) != len(got.Policies) || cap(got.Budgets) != len(got.Budgets) {
			t.Fatal("a shared list has room to be appended into")
		}
	}
	// The request moved to another decision: its own lists, not the
	// cached ones.
	other := decision(1)
	p := (&admission{key: key, decision: other, lists: lists}).provenance(&usageRecord{}, true, false)
	if len(p.Policies) != 1 || p.Policies[0].PolicyID != other.Reasons[0].PolicyID || len(p.Budgets) != 1 {
		t.Fatalf("another decision's event names %+v", p)
	}
	if _, none := (*decisionCache)(nil).decision(decisionKey{}, func() policy.Decision { return *decision(1) }); none != nil {
		t.Fatal("a decision not cached comes with lists")
	}
}
