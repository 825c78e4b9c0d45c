package budgets_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/budgets"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// TestLeasesAreSharedAndPruned: grants to two holders never exceed the
// limit, a restart of the control plane (a new Leases on the same
// database) keeps them, and a period long over is pruned.
func TestLeasesAreSharedAndPruned(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st := store.New(db)
		start := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
		ask := wire.BudgetLeaseAsk{Counter: "c1", OrgID: uuid.New(), WorkspaceID: uuid.New(), PolicyID: uuid.New(), PolicyName: "p",
			Period: "day", PeriodStart: start, LimitNanoUSD: 100, WantNanoUSD: 70}
		g, err := (&budgets.Leases{Store: st}).Lease(ctx, "a", []wire.BudgetLeaseAsk{ask})
		if err != nil || g[0].GrantedNanoUSD != 70 {
			t.Fatalf("a: %+v %v", g, err)
		}
		// Another replica, later: b gets what is left, and learns a's share.
		g, err = (&budgets.Leases{Store: st}).Lease(ctx, "b", []wire.BudgetLeaseAsk{ask})
		if err != nil || g[0].GrantedNanoUSD != 30 || g[0].OthersNanoUSD != 70 {
			t.Fatalf("b: %+v %v", g, err)
		}
		// a used 20 and gives back 40: b can have it.
		back := ask
		back.WantNanoUSD, back.UsedNanoUSD, back.ReturnedNanoUSD = 0, 20, 40
		if g, err = (&budgets.Leases{Store: st}).Lease(ctx, "a", []wire.BudgetLeaseAsk{back}); err != nil || g[0].GrantedNanoUSD != 30 {
			t.Fatalf("a returns: %+v %v", g, err)
		}
		// The same ask again (its reply was lost): nothing is given back twice.
		if g, err = (&budgets.Leases{Store: st}).Lease(ctx, "a", []wire.BudgetLeaseAsk{back}); err != nil ||
			g[0].GrantedNanoUSD != 30 || g[0].ReturnedNanoUSD != 40 {
			t.Fatalf("a returns twice: %+v %v", g, err)
		}
		if g, err = (&budgets.Leases{Store: st}).Lease(ctx, "b", []wire.BudgetLeaseAsk{ask}); err != nil || g[0].GrantedNanoUSD != 70 {
			t.Fatalf("b again: %+v %v", g, err)
		}
		// A rate-limit minute: no seed, its own period rules.
		rl := wire.BudgetLeaseAsk{Kind: wire.LeaseRateLimit, Counter: "rl/x/requests", OrgID: ask.OrgID, WorkspaceID: ask.WorkspaceID,
			PolicyID: uuid.New(), PolicyName: "rate limit", Period: "minute", PeriodStart: time.Date(2026, 11, 23, 10, 1, 0, 0, time.UTC),
			LimitNanoUSD: 5, WantNanoUSD: 9}
		if g, err = (&budgets.Leases{Store: st}).Lease(ctx, "a", []wire.BudgetLeaseAsk{rl}); err != nil || g[0].GrantedNanoUSD != 5 {
			t.Fatalf("rate: %+v %v", g, err)
		}
		bad := rl
		bad.PeriodStart = bad.PeriodStart.Add(time.Second)
		bad.Counter = "rl/y/requests"
		if _, err := (&budgets.Leases{Store: st}).Lease(ctx, "a", []wire.BudgetLeaseAsk{bad}); err == nil {
			t.Fatal("a period_start that starts no minute was accepted")
		}
		n, err := st.PruneBudgetLeases(ctx, time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
		if err != nil || n != 1 {
			t.Fatalf("pruned %d: %v", n, err)
		}
		if ls, err := st.ListBudgetLeases(ctx, "rl/x/requests", rl.PeriodStart); err != nil || len(ls) != 0 {
			t.Fatalf("leases of a pruned counter: %+v %v", ls, err)
		}
		if ls, err := st.ListBudgetLeases(ctx, "c1", start); err != nil || len(ls) != 2 {
			t.Fatalf("the day's leases: %+v %v", ls, err)
		}
	})
}
