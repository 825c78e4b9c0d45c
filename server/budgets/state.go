package budgets

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/spend"
	"github.com/gw-gateway/gw/wire"
)

// States reports the workspace's budget counters of the periods containing
// now: spent (what usage had recorded when the counter began, plus what
// data planes reported), reserved (granted to data planes, not yet
// reported spent) and remaining (not yet granted). A budget that no
// request has asked about in its period has no counter yet and is listed
// with nothing reserved and its spend so far seeded from usage events when
// the first request comes; it is shown with zero spend here.
func (l *Leases) States(ctx context.Context, wsID uuid.UUID, now time.Time) ([]wire.BudgetState, error) {
	ps, err := l.Store.ListPolicies(ctx, wsID)
	if err != nil {
		return nil, err
	}
	type rule struct {
		period, aggregation, amount string
	}
	budgetsOf := map[uuid.UUID][]rule{}
	names := map[uuid.UUID]string{}
	var ids []uuid.UUID
	for _, p := range ps {
		var def policy.Definition
		if err := json.Unmarshal([]byte(p.Definition), &def); err != nil {
			continue // stored definitions parse; one that does not has no budget to show
		}
		for _, r := range def.Rules {
			if r.Action.Kind == policy.ActionBudget {
				budgetsOf[p.ID] = append(budgetsOf[p.ID], rule{string(r.Action.Period), string(r.Action.Aggregation), r.Action.AmountUSD.Text})
			}
		}
		if len(budgetsOf[p.ID]) > 0 {
			ids = append(ids, p.ID)
			names[p.ID] = p.Name
		}
	}
	counters, err := l.Store.ListBudgetCounters(ctx, ids, now)
	if err != nil {
		return nil, err
	}
	out := []wire.BudgetState{}
	seen := map[string]bool{}
	for _, c := range counters {
		leases, err := l.Store.ListBudgetLeases(ctx, c.Counter, c.PeriodStart)
		if err != nil {
			return nil, err
		}
		spent, reserved := c.SeededNanoUSD, int64(0)
		for _, le := range leases {
			spent += le.UsedNanoUSD
			reserved += max(0, le.GrantedNanoUSD-le.UsedNanoUSD)
		}
		period, aggregation := counterParts(c.Counter)
		seen[c.PolicyID.String()+"/"+period+"/"+aggregation] = true
		out = append(out, wire.BudgetState{PolicyID: c.PolicyID, PolicyName: names[c.PolicyID], Counter: c.Counter, Period: period,
			Aggregation: aggregation, InferenceKeyID: c.InferenceKeyID, AmountUSD: catalog.FormatNanoUSD(c.LimitNanoUSD),
			SpentUSD: catalog.FormatNanoUSD(spent), ReservedUSD: catalog.FormatNanoUSD(reserved),
			RemainingUSD: catalog.FormatNanoUSD(max(0, c.LimitNanoUSD-spent-reserved)), PeriodStart: c.PeriodStart.UTC(), PeriodEnd: c.PeriodEnd.UTC()})
	}
	for _, id := range ids {
		for _, r := range budgetsOf[id] {
			if seen[id.String()+"/"+r.period+"/"+r.aggregation] {
				continue
			}
			seen[id.String()+"/"+r.period+"/"+r.aggregation] = true
			start, end := bounds(r.period, now)
			out = append(out, wire.BudgetState{PolicyID: id, PolicyName: names[id], Period: r.period, Aggregation: r.aggregation,
				AmountUSD: r.amount, SpentUSD: "0", ReservedUSD: "0", RemainingUSD: r.amount, PeriodStart: start, PeriodEnd: end})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].PolicyName != out[j].PolicyName {
			return out[i].PolicyName < out[j].PolicyName
		}
		return out[i].Counter < out[j].Counter
	})
	return out, nil
}

// counterParts reads the period and aggregation back from a counter's name
// (spend.Counter.String: policy/period/aggregation[/key]).
func counterParts(name string) (period, aggregation string) {
	parts := strings.Split(name, "/")
	if len(parts) < 3 {
		return "", ""
	}
	return parts[1], parts[2]
}

func bounds(period string, now time.Time) (time.Time, time.Time) {
	return spend.Bounds(spend.Period(period), now)
}
