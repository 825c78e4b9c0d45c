package budgets_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/budgets"
	"github.com/gw-gateway/gw/server/spend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/fixture"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/server/usage"
	"github.com/gw-gateway/gw/wire"
)

func budgetDef(target, amount, period, aggregation string) string {
	return `{"target":` + target + `,"rules":[{"match":{"kind":"all_requests"},"action":{"kind":"budget","amount_usd":"` + amount +
		`","period":"` + period + `","aggregation":"` + aggregation + `"}}]}`
}

const everyKey = `{"kind":"workspace"}`

// TestLeasesAreSharedAndPruned: grants to two holders never exceed the
// limit the policy sets, a restart of the control plane (a new Leases on
// the same database) keeps them, and a period long over is pruned.
func TestLeasesAreSharedAndPruned(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st := store.New(db)
		org := fixture.NewOrg(t, st, fixture.Keyring(t), "acme")
		ws := org.Workspace("main")
		owner := org.Member(auth.MembershipActive)
		_, keyID := org.Key(ws, owner, nil)
		// 100 nano-dollars a day.
		pid := org.Policy(ws, "cap", true, budgetDef(everyKey, "0.0000001", "day", "shared"))
		now := time.Now().UTC()
		start, _ := spend.Bounds(spend.Day, now)
		name := spend.Counter{PolicyID: pid, Period: spend.Day, Aggregation: "shared"}.String()
		ask := wire.BudgetLeaseAsk{Counter: name, PeriodStart: start, WantNanoUSD: 70}
		g, err := (&budgets.Leases{Store: st}).Lease(ctx, "a", []wire.BudgetLeaseAsk{ask})
		if err != nil || g[0].GrantedNanoUSD != 70 || g[0].LimitNanoUSD != 100 {
			t.Fatalf("a: %+v %v", g, err)
		}
		// Another replica, later: b gets what is left, and learns a's share.
		g, err = (&budgets.Leases{Store: st}).Lease(ctx, "b", []wire.BudgetLeaseAsk{ask})
		if err != nil || g[0].GrantedNanoUSD != 30 || g[0].OthersNanoUSD != 70 || g[0].OthersUsedNanoUSD != 0 {
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
		if g, err = (&budgets.Leases{Store: st}).Lease(ctx, "b", []wire.BudgetLeaseAsk{ask}); err != nil || g[0].GrantedNanoUSD != 70 ||
			g[0].OthersUsedNanoUSD != 20 {
			t.Fatalf("b again: %+v %v", g, err)
		}
		// A rate-limit minute: no seed, the key's own limit.
		rpm := int64(5)
		k, err := st.GetInferenceKey(ctx, ws, keyID)
		if err != nil {
			t.Fatal(err)
		}
		k.RateLimits.RPM = &rpm
		if err := st.UpdateInferenceKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		minute := now.Truncate(time.Minute).Add(-2 * time.Hour)
		rl := wire.BudgetLeaseAsk{Counter: budgets.RateCounter(keyID, "requests"), PeriodStart: minute, WantNanoUSD: 9}
		if g, err = (&budgets.Leases{Store: st}).Lease(ctx, "a", []wire.BudgetLeaseAsk{rl}); err != nil || g[0].GrantedNanoUSD != 5 {
			t.Fatalf("rate: %+v %v", g, err)
		}
		bad := rl
		bad.PeriodStart = bad.PeriodStart.Add(time.Second)
		if _, err := (&budgets.Leases{Store: st}).Lease(ctx, "a", []wire.BudgetLeaseAsk{bad}); err == nil {
			t.Fatal("a period_start that starts no minute was accepted")
		}
		// The key has no token limit: no such counter.
		tokens := wire.BudgetLeaseAsk{Counter: budgets.RateCounter(keyID, "tokens"), PeriodStart: minute, WantNanoUSD: 9}
		if _, err := (&budgets.Leases{Store: st}).Lease(ctx, "a", []wire.BudgetLeaseAsk{tokens}); !errors.Is(err, spend.ErrLeaseRefused) {
			t.Fatalf("a rate counter the key has no limit for: %v", err)
		}
		n, err := st.PruneBudgetLeases(ctx, minute.Add(time.Hour))
		if err != nil || n != 1 {
			t.Fatalf("pruned %d: %v", n, err)
		}
		if ls, err := st.ListBudgetLeases(ctx, rl.Counter, rl.PeriodStart); err != nil || len(ls) != 0 {
			t.Fatalf("leases of a pruned counter: %+v %v", ls, err)
		}
		if ls, err := st.ListBudgetLeases(ctx, name, start); err != nil || len(ls) != 2 {
			t.Fatalf("the day's leases: %+v %v", ls, err)
		}
	})
}

// TestCountersResolveFromTheStore: the amount, the seed and what a
// per_key counter may name come from the control plane's own policy and
// keys; a counter that does not resolve refuses the whole request, which
// changes nothing; a report on a lease already held still goes through
// after its policy is disabled.
func TestCountersResolveFromTheStore(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st := store.New(db)
		kr := fixture.Keyring(t)
		org := fixture.NewOrg(t, st, kr, "acme")
		ws, other := org.Workspace("main"), org.Workspace("other")
		alice, bob := org.Member(auth.MembershipActive), org.Member(auth.MembershipActive)
		_, aliceKey := org.Key(ws, alice, nil)
		_, bobKey := org.Key(ws, bob, nil)
		_, elsewhere := org.Key(other, alice, nil)
		// $0.002 already spent today by alice's key, $0.001 by bob's.
		now := time.Now().UTC()
		for _, e := range []struct {
			key, owner uuid.UUID
			cost       string
		}{{aliceKey, alice, "0.002"}, {bobKey, bob, "0.001"}} {
			key, owner := e.key, e.owner
			row, err := usage.Row(wire.UsageEventIn{ID: uuid.New(), OrgID: org.ID, WorkspaceID: ws, InferenceKeyID: &key, OwnerID: &owner,
				Model: "openai/gpt-4o-mini", Provider: "openai", InputTokens: 1, CostUSD: e.cost, Status: "ok", OccurredAt: now}, now)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.InsertUsageEvents(ctx, []store.UsageEvent{row}); err != nil {
				t.Fatal(err)
			}
		}
		users := budgetDef(`{"kind":"selected_users","user_ids":["`+alice.String()+`"]}`, "0.01", "month", "per_key")
		pid := org.Policy(ws, "alice-keys", true, users)
		start, _ := spend.Bounds(spend.Month, now)
		perKey := func(key uuid.UUID) wire.BudgetLeaseAsk {
			return wire.BudgetLeaseAsk{Counter: spend.Counter{PolicyID: pid, Period: spend.Month, Aggregation: "per_key", KeyID: key}.String(),
				PeriodStart: start, WantNanoUSD: 1_000_000}
		}
		l := &budgets.Leases{Store: st}
		g, err := l.Lease(ctx, "a", []wire.BudgetLeaseAsk{perKey(aliceKey)})
		if err != nil || g[0].LimitNanoUSD != 10_000_000 || g[0].OthersUsedNanoUSD != 2_000_000 || g[0].GrantedNanoUSD != 1_000_000 {
			t.Fatalf("alice's key: %+v %v", g, err)
		}
		// Bob's key is not the target's; the other workspace's key is not the
		// policy's; a shared counter the policy does not have; a policy that
		// does not exist. Each refuses the request whole: alice's second ask
		// in it is not granted.
		for _, bad := range []wire.BudgetLeaseAsk{perKey(bobKey), perKey(elsewhere),
			{Counter: spend.Counter{PolicyID: pid, Period: spend.Month, Aggregation: "shared"}.String(), PeriodStart: start, WantNanoUSD: 1},
			{Counter: spend.Counter{PolicyID: uuid.New(), Period: spend.Day, Aggregation: "shared"}.String(), PeriodStart: start, WantNanoUSD: 1},
			{Counter: "nonsense", PeriodStart: start, WantNanoUSD: 1}} {
			_, err := l.Lease(ctx, "a", []wire.BudgetLeaseAsk{perKey(aliceKey), bad})
			var refused *budgets.Refused
			if !errors.As(err, &refused) || refused.Forbidden {
				t.Fatalf("%s: %v", bad.Counter, err)
			}
		}
		lease, err := st.GetBudgetLease(ctx, perKey(aliceKey).Counter, start, "a")
		if err != nil || lease.GrantedNanoUSD != 1_000_000 {
			t.Fatalf("a refused request changed the lease: %+v %v", lease, err)
		}
		// The policy disabled: no new allowance, but the holder's report of
		// its spend on the lease it has is taken.
		org.SetPolicyEnabled(ws, pid, false)
		if _, err := l.Lease(ctx, "a", []wire.BudgetLeaseAsk{perKey(aliceKey)}); !errors.Is(err, spend.ErrLeaseRefused) {
			t.Fatalf("more of a disabled policy's budget: %v", err)
		}
		report := perKey(aliceKey)
		report.WantNanoUSD, report.UsedNanoUSD, report.ReturnedNanoUSD = 0, 400_000, 600_000
		if g, err := l.Lease(ctx, "a", []wire.BudgetLeaseAsk{report}); err != nil || g[0].UsedNanoUSD != 400_000 || g[0].GrantedNanoUSD != 400_000 {
			t.Fatalf("a report after the policy was disabled: %+v %v", g, err)
		}
		// A holder that never leased the counter cannot report on it.
		if _, err := l.Lease(ctx, "b", []wire.BudgetLeaseAsk{report}); !errors.Is(err, spend.ErrLeaseRefused) {
			t.Fatalf("a report without a lease: %v", err)
		}
	})
}

// TestStatesShowSpendBeforeAnyCounter: the state view lists every budget
// of the enabled policies with the period's spend already recorded, with
// no request having touched a counter; a disabled policy's budget is not
// listed; a per_key budget has a row per key with spend.
func TestStatesShowSpendBeforeAnyCounter(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st := store.New(db)
		org := fixture.NewOrg(t, st, fixture.Keyring(t), "acme")
		ws := org.Workspace("main")
		owner := org.Member(auth.MembershipActive)
		_, key := org.Key(ws, owner, nil)
		now := time.Now().UTC()
		row, err := usage.Row(wire.UsageEventIn{ID: uuid.New(), OrgID: org.ID, WorkspaceID: ws, InferenceKeyID: &key, OwnerID: &owner,
			Model: "openai/gpt-4o-mini", Provider: "openai", InputTokens: 1, CostUSD: "0.36", Status: "ok", OccurredAt: now}, now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.InsertUsageEvents(ctx, []store.UsageEvent{row}); err != nil {
			t.Fatal(err)
		}
		org.Policy(ws, "monthly", true, budgetDef(everyKey, "10", "month", "shared"))
		org.Policy(ws, "each", true, budgetDef(everyKey, "1", "day", "per_key"))
		org.Policy(ws, "each-idle", true, `{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"request","models":["anthropic/claude-haiku-4-5-20251001"],"stream":null,"capabilities":[]},`+
			`"action":{"kind":"budget","amount_usd":"2","period":"day","aggregation":"per_key"}}]}`)
		org.Policy(ws, "off", false, budgetDef(everyKey, "5", "month", "shared"))
		states, err := (&budgets.Leases{Store: st}).States(ctx, ws, now)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]wire.BudgetState{}
		for _, s := range states {
			got[s.PolicyName] = s
		}
		if len(states) != 3 || got["off"].PolicyName != "" {
			t.Fatalf("states %+v", states)
		}
		if m := got["monthly"]; m.SpentUSD != "0.36" || m.RemainingUSD != "9.64" || m.ReservedUSD != "0" || m.Counter == "" {
			t.Fatalf("monthly %+v", m)
		}
		if e := got["each"]; e.SpentUSD != "0.36" || e.InferenceKeyID == nil || *e.InferenceKeyID != key || e.AmountUSD != "1" {
			t.Fatalf("each %+v", e)
		}
		if e := got["each-idle"]; e.SpentUSD != "0" || e.InferenceKeyID != nil || e.Counter != "" {
			t.Fatalf("each-idle %+v", e)
		}
	})
}
