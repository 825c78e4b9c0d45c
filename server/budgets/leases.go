// Package budgets is the control plane's side of hard budgets: it grants
// data planes leases, slices of each budget counter's remainder, so that
// the spend of every data plane together never passes the amount (DESIGN
// §6), and it reports budget state. Lease state lives in the database, so
// every control-plane replica sharing it sees the same.
package budgets

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gw-gateway/gw/server/spend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/usage"
	"github.com/gw-gateway/gw/wire"
)

// Leases grants budget leases from the database.
type Leases struct {
	Store *store.Store
}

// Lease answers one holder's asks, each in a transaction of its own that
// holds the counter's row: of two holders asking at once, the second sees
// what the first was granted.
func (l *Leases) Lease(ctx context.Context, holder string, asks []wire.BudgetLeaseAsk) ([]wire.BudgetLeaseGrant, error) {
	out := make([]wire.BudgetLeaseGrant, 0, len(asks))
	for _, a := range asks {
		var g wire.BudgetLeaseGrant
		err := l.Store.InTx(ctx, func(tx *store.Store) error {
			var err error
			g, err = grantOne(ctx, tx, holder, a)
			return err
		})
		if errors.Is(err, store.ErrConflict) {
			// Another replica created the counter between our read and
			// insert: its row is there now.
			err = l.Store.InTx(ctx, func(tx *store.Store) error {
				var err error
				g, err = grantOne(ctx, tx, holder, a)
				return err
			})
		}
		if err != nil {
			return nil, fmt.Errorf("budget lease for %s: %w", a.Counter, err)
		}
		out = append(out, g)
	}
	return out, nil
}

func grantOne(ctx context.Context, tx *store.Store, holder string, a wire.BudgetLeaseAsk) (wire.BudgetLeaseGrant, error) {
	start := a.PeriodStart.UTC()
	now := store.Now()
	c, err := tx.LockBudgetCounter(ctx, a.Counter, start)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if c, err = newCounter(ctx, tx, a, now); err != nil {
			return wire.BudgetLeaseGrant{}, err
		}
	case err != nil:
		return wire.BudgetLeaseGrant{}, err
	case c.LimitNanoUSD != a.LimitNanoUSD || c.PolicyName != a.PolicyName:
		// The policy was edited: the new amount applies, the spend stays.
		c.LimitNanoUSD, c.PolicyName, c.UpdatedAt = a.LimitNanoUSD, a.PolicyName, now
		if err := tx.UpdateBudgetCounter(ctx, c); err != nil {
			return wire.BudgetLeaseGrant{}, err
		}
	}
	leases, err := tx.ListBudgetLeases(ctx, a.Counter, start)
	if err != nil {
		return wire.BudgetLeaseGrant{}, err
	}
	mine := &store.BudgetLease{Counter: a.Counter, PeriodStart: start, Holder: holder}
	var others []spend.Lease
	othersTotal := c.SeededNanoUSD
	for i := range leases {
		if leases[i].Holder == holder {
			mine = &leases[i]
			continue
		}
		others = append(others, spend.Lease{Granted: leases[i].GrantedNanoUSD, Used: leases[i].UsedNanoUSD, Returned: leases[i].ReturnedNanoUSD})
		othersTotal += max(leases[i].GrantedNanoUSD, leases[i].UsedNanoUSD)
	}
	next := spend.GrantLease(c.LimitNanoUSD, c.SeededNanoUSD, others,
		spend.Lease{Granted: mine.GrantedNanoUSD, Used: mine.UsedNanoUSD, Returned: mine.ReturnedNanoUSD},
		a.WantNanoUSD, a.UsedNanoUSD, a.ReturnedNanoUSD)
	mine.GrantedNanoUSD, mine.UsedNanoUSD, mine.ReturnedNanoUSD = next.Granted, next.Used, next.Returned
	mine.UpdatedAt = now
	if err := tx.SaveBudgetLease(ctx, mine); err != nil {
		return wire.BudgetLeaseGrant{}, err
	}
	return wire.BudgetLeaseGrant{Counter: a.Counter, PeriodStart: start, GrantedNanoUSD: mine.GrantedNanoUSD, UsedNanoUSD: mine.UsedNanoUSD, ReturnedNanoUSD: mine.ReturnedNanoUSD,
		OthersNanoUSD: othersTotal}, nil
}

// newCounter makes a counter, seeded with the cost of the usage events
// already recorded in its period that it covers: a budget set mid-period
// counts the period's spend so far. The rule's stream and capability
// conditions are not recorded on events, so the seed may count more than
// the rule matched, never less.
func newCounter(ctx context.Context, tx *store.Store, a wire.BudgetLeaseAsk, now time.Time) (*store.BudgetCounter, error) {
	start, end := spend.Bounds(spend.Period(a.Period), a.PeriodStart)
	if !start.Equal(a.PeriodStart.UTC()) {
		return nil, fmt.Errorf("period_start %s does not start a %s", a.PeriodStart.Format(time.RFC3339), a.Period)
	}
	var seed int64
	if a.Kind != wire.LeaseRateLimit {
		f := store.UsageFilter{OrgID: a.OrgID, From: start, To: end, WorkspaceID: &a.WorkspaceID, InferenceKeyID: a.InferenceKeyID}
		var err error
		if seed, err = usage.SumCost(ctx, tx, f, store.UsageNarrowing{OwnerIDs: a.OwnerIDs, InferenceKeyIDs: a.KeyIDs, Models: a.Models}); err != nil {
			return nil, fmt.Errorf("seed from usage events: %w", err)
		}
	}
	c := &store.BudgetCounter{Counter: a.Counter, PeriodStart: start, OrgID: a.OrgID, PolicyID: a.PolicyID, PolicyName: a.PolicyName,
		InferenceKeyID: a.InferenceKeyID, PeriodEnd: end, LimitNanoUSD: a.LimitNanoUSD, SeededNanoUSD: seed, CreatedAt: now, UpdatedAt: now}
	if err := tx.CreateBudgetCounter(ctx, c); err != nil {
		return nil, err
	}
	return c, nil
}
