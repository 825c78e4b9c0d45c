package spend

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestBoundsAreUTCCalendarPeriods(t *testing.T) {
	paris, _ := time.LoadLocation("Europe/Paris")
	tests := []struct {
		period     Period
		now        time.Time
		start, end string
	}{
		{Day, time.Date(2026, 11, 23, 23, 59, 59, 999_999_999, time.UTC), "2026-11-23T00:00:00Z", "2026-11-24T00:00:00Z"},
		{Day, time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC), "2026-11-24T00:00:00Z", "2026-11-25T00:00:00Z"},
		// 00:30 in Paris is still the previous UTC day.
		{Day, time.Date(2026, 11, 24, 0, 30, 0, 0, paris), "2026-11-23T00:00:00Z", "2026-11-24T00:00:00Z"},
		{Month, time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC), "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{Month, time.Date(2028, 2, 29, 12, 0, 0, 0, time.UTC), "2028-02-01T00:00:00Z", "2028-03-01T00:00:00Z"},
	}
	for _, tc := range tests {
		start, end := Bounds(tc.period, tc.now)
		if start.Format(time.RFC3339) != tc.start || end.Format(time.RFC3339) != tc.end {
			t.Errorf("%s at %s: [%s, %s), want [%s, %s)", tc.period, tc.now, start.Format(time.RFC3339), end.Format(time.RFC3339), tc.start, tc.end)
		}
	}
}

// grantor is the control plane's arithmetic in memory: one lease per
// holder per counter period.
type grantor struct {
	limit, seed int64
	leases      map[string]Lease
}

func (g *grantor) grant(holder string, a Ask, want int64) Grant {
	var others []Lease
	for h, l := range g.leases {
		if h != holder {
			others = append(others, l)
		}
	}
	next := GrantLease(g.limit, g.seed, others, g.leases[holder], want, a.Used, a.Returned)
	g.leases[holder] = next
	return Grant{Counter: a.Counter, PeriodStart: a.PeriodStart, Granted: next.Granted, Used: next.Used, Returned: next.Returned}
}

// free is what the grantor could still grant anyone.
func (g *grantor) free() int64 {
	committed := g.seed
	for _, l := range g.leases {
		committed += max(l.Granted, l.Used)
	}
	return g.limit - committed
}

type holder struct {
	name   string
	ledger *Ledger
	open   []*Reservation
	bounds []int64
}

// TestAdmissionNeverOvershootsNorRefusesFalsely drives several data planes'
// ledgers against one counter with random bounds, costs (never above the
// bound), syncs and restarts, and checks after every step that the spend
// of all of them together (with the seed) stays within the amount, and
// that every refusal was forced: neither the ledger nor the control plane
// had room for the request's bound. Syncs are lost, repeated or never sent.
func TestAdmissionNeverOvershootsNorRefusesFalsely(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for seed := uint64(0); seed < 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed*7+1))
		claim := Claim{Counter: Counter{PolicyID: uuid.New(), Period: Day, Aggregation: "shared"}, LimitNano: rng.Int64N(2_000_000), PolicyName: "p"}
		g := &grantor{limit: claim.LimitNano, seed: rng.Int64N(claim.LimitNano/2 + 1), leases: map[string]Lease{}}
		holders := make([]*holder, 1+rng.IntN(4))
		for i := range holders {
			holders[i] = &holder{name: uuid.NewString(), ledger: NewLedger()}
		}
		spentByGone := int64(0) // settled spend of restarted holders
		for step := 0; step < 400; step++ {
			h := holders[rng.IntN(len(holders))]
			switch op := rng.IntN(10); {
			case op < 5: // a request arrives
				bound := 1 + rng.Int64N(200_000)
				r, asks := h.ledger.Reserve(now, []Claim{claim}, bound)
				if r == nil {
					grants := make([]Grant, len(asks))
					for i, a := range asks {
						grants[i] = g.grant(h.name, a, a.Want+max(claim.LimitNano/10, bound))
					}
					h.ledger.Apply(grants)
					r, _ = h.ledger.Reserve(now, []Claim{claim}, bound)
				}
				if r == nil {
					local := h.ledger.States()[0]
					if room := local.Granted - local.Used - local.Reserved + g.free(); room >= bound {
						t.Fatalf("seed %d step %d: refused a bound of %d with %d of room (local %+v, grantor %+v free %d)", seed, step, bound, room, local, g.leases[h.name], g.free())
					}
					continue
				}
				h.open, h.bounds = append(h.open, r), append(h.bounds, bound)
			case op < 8: // a request ends
				if len(h.open) == 0 {
					continue
				}
				i := rng.IntN(len(h.open))
				h.open[i].Settle(rng.Int64N(h.bounds[i] + 1))
				h.open = append(h.open[:i], h.open[i+1:]...)
				h.bounds = append(h.bounds[:i], h.bounds[i+1:]...)
			case op < 9: // the periodic sync, over an unreliable network
				asks := h.ledger.Sync(now, func(c Claim) int64 { return c.LimitNano / 10 })
				switch rng.IntN(4) {
				case 0: // never sent: the control plane could not be dialled
					h.ledger.Unsent(asks)
				case 1: // received, the reply lost: sent again next time
					for _, a := range asks {
						g.grant(h.name, a, 0)
					}
				case 2: // received twice
					for _, a := range asks {
						g.grant(h.name, a, 0)
						g.grant(h.name, a, 0)
					}
					h.ledger.Synced(asks)
				default:
					for _, a := range asks {
						g.grant(h.name, a, 0)
					}
					h.ledger.Synced(asks)
				}
			default: // the process restarts: in-flight requests settle, a new holder takes over
				for i, r := range h.open {
					r.Settle(h.bounds[i])
				}
				for _, s := range h.ledger.States() {
					spentByGone += s.Used
				}
				*h = holder{name: uuid.NewString(), ledger: NewLedger()}
			}
			total := g.seed + spentByGone
			for _, h := range holders {
				for _, s := range h.ledger.States() {
					total += s.Used
					if s.Used+s.Reserved > s.Granted {
						t.Fatalf("seed %d step %d: a ledger holds %d used + %d reserved of %d granted", seed, step, s.Used, s.Reserved, s.Granted)
					}
				}
			}
			if total > claim.LimitNano {
				t.Fatalf("seed %d step %d: spent %d of %d", seed, step, total, claim.LimitNano)
			}
		}
	}
}

// TestLedgerRollsOverAtTheBoundary: the day's reservations settle into the
// day they were made in; the next day starts with nothing granted or used.
func TestLedgerRollsOverAtTheBoundary(t *testing.T) {
	l := NewLedger()
	claim := Claim{Counter: Counter{PolicyID: uuid.New(), Period: Day, Aggregation: "shared"}, LimitNano: 100, PolicyName: "p"}
	before := time.Date(2026, 11, 23, 23, 59, 59, 999_999_999, time.UTC)
	after := before.Add(time.Nanosecond)
	start, _ := Bounds(Day, before)
	if _, asks := l.Reserve(before, []Claim{claim}, 60); len(asks) != 1 {
		t.Fatal("an empty ledger must ask for a lease")
	}
	l.Apply([]Grant{{Counter: claim.Counter, PeriodStart: start, Granted: 100}})
	r, _ := l.Reserve(before, []Claim{claim}, 60)
	if r == nil {
		t.Fatal("a granted bound was refused")
	}
	if _, asks := l.Reserve(before, []Claim{claim}, 60); len(asks) != 1 {
		t.Fatal("a second bound beyond the grant must ask for more")
	}
	// One nanosecond later a new day: nothing granted yet, so it asks, for
	// the new period.
	_, asks := l.Reserve(after, []Claim{claim}, 60)
	if len(asks) != 1 || !asks[0].PeriodStart.Equal(start.AddDate(0, 0, 1)) || asks[0].Used != 0 {
		t.Fatalf("after midnight: %+v", asks)
	}
	// A grant for the old period is ignored now.
	l.Apply([]Grant{{Counter: claim.Counter, PeriodStart: start, Granted: 1000}})
	if s := l.States()[0]; s.Granted != 0 || !s.Start.Equal(start.AddDate(0, 0, 1)) {
		t.Fatalf("state after rollover %+v", s)
	}
	r.Settle(50) // the old day's request ends
	if s := l.States()[0]; s.Used != 0 || s.Reserved != 0 {
		t.Fatalf("the old day's cost leaked into the new day: %+v", s)
	}
}

func TestLedgerAllOrNothing(t *testing.T) {
	l := NewLedger()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	a := Claim{Counter: Counter{PolicyID: uuid.New(), Period: Day, Aggregation: "shared"}, LimitNano: 100, PolicyName: "a"}
	b := Claim{Counter: Counter{PolicyID: uuid.New(), Period: Month, Aggregation: "shared"}, LimitNano: 100, PolicyName: "b"}
	da, _ := Bounds(Day, now)
	mb, _ := Bounds(Month, now)
	l.Reserve(now, []Claim{a, b}, 10)
	l.Apply([]Grant{{Counter: a.Counter, PeriodStart: da, Granted: 100}, {Counter: b.Counter, PeriodStart: mb, Granted: 5}})
	if r, asks := l.Reserve(now, []Claim{a, b}, 10); r != nil || len(asks) != 1 || asks[0].Counter != b.Counter {
		t.Fatalf("b lacks room: %v %+v", r, asks)
	}
	for _, s := range l.States() {
		if s.Reserved != 0 {
			t.Fatalf("a refused request holds %d on %s", s.Reserved, s.Counter)
		}
	}
	if ref := l.Refuse(now, []Claim{a, b}, 10, false); ref.Claim.PolicyName != "b" {
		t.Fatalf("refusal names %q", ref.Claim.PolicyName)
	}
}

func BenchmarkReserveSettle(b *testing.B) {
	l := NewLedger()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	claims := []Claim{{Counter: Counter{PolicyID: uuid.New(), Period: Day, Aggregation: "shared"}, LimitNano: 1 << 60, PolicyName: "p"}}
	start, _ := Bounds(Day, now)
	l.Reserve(now, claims, 1)
	l.Apply([]Grant{{Counter: claims[0].Counter, PeriodStart: start, Granted: 1 << 60}})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, _ := l.Reserve(now, claims, 1000)
		r.Settle(500)
	}
}

// TestUnsentReturnStaysSpendable: allowance a sync gives back while the
// control plane cannot be dialled stays this ledger's to spend; what an
// earlier sync, maybe received, gave back stays given back.
func TestUnsentReturnStaysSpendable(t *testing.T) {
	now := time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC)
	cl := Claim{Counter: Counter{PolicyID: uuid.New(), Period: Day, Aggregation: "shared"}, LimitNano: 100, PolicyName: "cap"}
	l := NewLedger()
	if r, asks := l.Reserve(now, []Claim{cl}, 50); r != nil || len(asks) != 1 {
		t.Fatalf("reserve with no lease: %v %v", r, asks)
	}
	start, _ := Bounds(Day, now)
	l.Apply([]Grant{{Counter: cl.Counter, PeriodStart: start, Granted: 80}})
	keep := func(Claim) int64 { return 10 }

	// A sync that may have reached the control plane: its return stays out.
	first := l.Sync(now, keep)
	if len(first) != 1 || first[0].Returned != 70 || first[0].Moved != 70 {
		t.Fatalf("first sync %+v", first)
	}
	// Nothing new to give back; the pending return is resent, undialled.
	l.Apply([]Grant{{Counter: cl.Counter, PeriodStart: start, Granted: 80}})
	second := l.Sync(now, keep)
	if len(second) != 1 || second[0].Returned != 70 || second[0].Moved != 0 {
		t.Fatalf("second sync %+v", second)
	}
	l.Unsent(second)
	if r, _ := l.Reserve(now, []Claim{cl}, 11); r != nil {
		t.Fatal("spent allowance a maybe-received return gave back")
	}

	// A fresh ledger whose only return is undialled spends all it holds.
	l2 := NewLedger()
	l2.Reserve(now, []Claim{cl}, 50)
	l2.Apply([]Grant{{Counter: cl.Counter, PeriodStart: start, Granted: 80}})
	asks := l2.Sync(now, keep)
	l2.Unsent(asks)
	if r, _ := l2.Reserve(now, []Claim{cl}, 80); r == nil {
		t.Fatal("an undialled return was not spendable again")
	}
}
