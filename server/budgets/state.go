package budgets

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/spend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/usage"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// States reports every budget of the workspace's enabled policies in the
// period containing now: spent (what usage had recorded when the counter
// began, plus what data planes reported), reserved (granted to data
// planes, not yet reported spent) and remaining (not yet granted). A
// budget no request has asked about in its period has no counter yet; its
// spend is what its counter would be seeded with, the usage already
// recorded in the period, so it shows from the moment the budget exists.
// A per_key budget has a row per key that has a counter or spend in the
// period, or one row without a key when none has.
func (l *Leases) States(ctx context.Context, wsID uuid.UUID, now time.Time) ([]wire.BudgetState, error) {
	ps, err := l.Store.ListPolicies(ctx, wsID)
	if err != nil {
		return nil, err
	}
	var defs []*counterDef
	var ids []uuid.UUID
	for i := range ps {
		if !ps[i].Enabled {
			continue
		}
		var def policy.Definition
		if err := json.Unmarshal([]byte(ps[i].Definition), &def); err != nil {
			continue // stored definitions parse; one that does not has no budget to show
		}
		seen := map[spend.Counter]bool{}
		for _, rule := range def.Rules {
			a := rule.Action
			c := spend.Counter{PolicyID: ps[i].ID, Period: spend.Period(a.Period), Aggregation: string(a.Aggregation)}
			if a.Kind != policy.ActionBudget || seen[c] {
				continue
			}
			seen[c] = true
			d, _, err := budgetOf(&ps[i], c.Period, c.Aggregation)
			if err != nil {
				return nil, err
			}
			if c.Aggregation != string(policy.AggregationPerKey) {
				d.name = c.String()
			}
			defs = append(defs, d)
		}
		if len(seen) > 0 {
			ids = append(ids, ps[i].ID)
		}
	}
	counters, err := l.Store.ListBudgetCounters(ctx, ids, now)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]*store.BudgetCounter, len(counters))
	for i := range counters {
		byName[counters[i].Counter] = &counters[i]
	}
	out := []wire.BudgetState{}
	for _, d := range defs {
		rows, err := l.statesOf(ctx, d, byName, now)
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].PolicyName != out[j].PolicyName {
			return out[i].PolicyName < out[j].PolicyName
		}
		return out[i].Counter < out[j].Counter
	})
	return out, nil
}

// statesOf is one budget's rows.
func (l *Leases) statesOf(ctx context.Context, d *counterDef, counters map[string]*store.BudgetCounter, now time.Time) ([]wire.BudgetState, error) {
	start, end := spend.Bounds(d.period, now)
	aggregation := d.aggregation
	row := func(name string, key *uuid.UUID, c *store.BudgetCounter, seed int64) (wire.BudgetState, error) {
		spent, reserved := seed, int64(0)
		if c != nil {
			leases, err := l.Store.ListBudgetLeases(ctx, c.Counter, c.PeriodStart)
			if err != nil {
				return wire.BudgetState{}, err
			}
			spent = c.SeededNanoUSD
			for _, le := range leases {
				spent += le.UsedNanoUSD
				reserved += max(0, le.GrantedNanoUSD-le.UsedNanoUSD)
			}
		}
		return wire.BudgetState{PolicyID: d.policyID, PolicyName: d.policyName, Counter: name, Period: string(d.period),
			Aggregation: aggregation, InferenceKeyID: key, AmountUSD: catalog.FormatNanoUSD(d.limit),
			SpentUSD: catalog.FormatNanoUSD(spent), ReservedUSD: catalog.FormatNanoUSD(reserved),
			RemainingUSD: catalog.FormatNanoUSD(max(0, d.limit-spent-reserved)), PeriodStart: start, PeriodEnd: end,
			Warning: d.warning()}, nil
	}
	if aggregation != string(policy.AggregationPerKey) {
		c := counters[d.name]
		var seed int64
		if c == nil {
			var err error
			if seed, err = seedOf(ctx, l.Store, d, start, end); err != nil {
				return nil, err
			}
		}
		s, err := row(d.name, nil, c, seed)
		return []wire.BudgetState{s}, err
	}
	ws := d.wsID
	byKey, err := usage.SumCostByKey(ctx, l.Store, store.UsageFilter{OrgID: d.orgID, From: start, To: end, WorkspaceID: &ws},
		d.scope.narrowing())
	if err != nil {
		return nil, err
	}
	keys := map[uuid.UUID]bool{}
	for id := range byKey {
		keys[id] = true
	}
	prefix := spend.Counter{PolicyID: d.policyID, Period: d.period, Aggregation: "per_key"}
	for _, c := range counters {
		if c.InferenceKeyID != nil && c.PolicyID == d.policyID {
			prefix.KeyID = *c.InferenceKeyID
			if prefix.String() == c.Counter {
				keys[*c.InferenceKeyID] = true
			}
		}
	}
	if len(keys) == 0 {
		s, err := row("", nil, nil, 0)
		return []wire.BudgetState{s}, err
	}
	out := make([]wire.BudgetState, 0, len(keys))
	for id := range keys {
		prefix.KeyID = id
		name := prefix.String()
		key := id
		s, err := row(name, &key, counters[name], byKey[id])
		if err != nil {
			return nil, err
		}
		if _, known := byKey[id]; !known {
			// A counter without a key's events may be a user's
			// playground (playground.KeyID): say whose.
			if s.PlaygroundUserID, err = l.playgroundRow(ctx, d, id, now); err != nil {
				return nil, err
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// playgroundRow is the user whose playground a per_key counter's id
// stands for, or nil when it is a key's.
func (l *Leases) playgroundRow(ctx context.Context, d *counterDef, id uuid.UUID, now time.Time) (*uuid.UUID, error) {
	r := newResolver(l.Store, now, nil)
	if k, err := r.key(ctx, id); err != nil || k != nil {
		return nil, err
	}
	return r.playgroundUser(ctx, d.orgID, d.wsID, id, nil)
}

// warning is the budget state's warning when a rule's stored amount is not
// the one enforced; nil otherwise.
func (d *counterDef) warning() *string {
	if len(d.inexact) == 0 {
		return nil
	}
	w := fmt.Sprintf("the stored amount %s is finer than a nano-dollar or beyond what gw counts; %s USD is enforced instead. "+
		"Save the policy again with an amount of at most %d decimal places and at most %d USD",
		strings.Join(d.inexact, ", "), catalog.FormatNanoUSD(d.limit), validate.MaxMoneyDecimals, validate.BudgetUSD.Max)
	return &w
}
