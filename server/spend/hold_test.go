package spend

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"
)

// holdLedger is a ledger granted granted of each claim's counter, whose
// amount is limit, with its journal.
func holdLedger(t *testing.T, now time.Time, granted, limit int64, claims ...Claim) (*Ledger, *memJournal) {
	t.Helper()
	l := NewLedger()
	j := &memJournal{last: map[string]CounterState{}}
	l.SetJournal(j)
	var gs []Grant
	for _, cl := range claims {
		l.Reserve(now, []Claim{cl}, 0)
		start, _ := Bounds(cl.Counter.Period, now)
		gs = append(gs, Grant{Counter: cl.Counter, PeriodStart: start, Granted: granted, Limit: limit, Others: granted})
	}
	l.Apply(gs)
	return l, j
}

func stateOf(l *Ledger, c Counter) State {
	for _, s := range l.States() {
		if s.Counter == c {
			return s
		}
	}
	return State{}
}

// TestHoldIsDrawnDownWithoutAGap: a hold keeps room for requests to come
// (a batch's lines); each draws its share from it in the same step as it
// is reserved, so a request that does not draw from it never finds that
// room free.
func TestHoldIsDrawnDownWithoutAGap(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	a := Claim{Counter: Counter{PolicyID: uuid.New(), Period: Day, Aggregation: "shared"}, LimitNano: 1000, PolicyName: "a"}
	b := Claim{Counter: Counter{PolicyID: uuid.New(), Period: Month, Aggregation: "shared"}, LimitNano: 1000, PolicyName: "b"}
	type want struct{ reservedA, reservedB, usedA, holding int64 }
	tests := []struct {
		name string
		// hold is the hold's bound against a and b (the ledger is granted
		// 1000 of each); run does the rest and returns the request, if
		// any, and whether run expected it to be taken.
		hold  int64
		run   func(t *testing.T, l *Ledger, h *Reservation) *Reservation
		taken bool
		want  want
	}{
		{name: "a request of the share's size takes the share, nothing more", taken: true, hold: 1000,
			run: func(t *testing.T, l *Ledger, h *Reservation) *Reservation {
				return only(l.ReserveFrom(Source{From: h, Share: 300}, now, []Claim{a, b}, 300))
			},
			want: want{reservedA: 1000, reservedB: 1000, holding: 700}},
		{name: "a request tighter than its share frees the rest", taken: true, hold: 1000,
			run: func(t *testing.T, l *Ledger, h *Reservation) *Reservation {
				return only(l.ReserveFrom(Source{From: h, Share: 300}, now, []Claim{a, b}, 120))
			},
			want: want{reservedA: 820, reservedB: 820, holding: 700}},
		{name: "a request dearer than its share takes the rest from the free allowance", taken: true, hold: 600,
			run: func(t *testing.T, l *Ledger, h *Reservation) *Reservation {
				return only(l.ReserveFrom(Source{From: h, Share: 300}, now, []Claim{a, b}, 500))
			},
			want: want{reservedA: 800, reservedB: 800, holding: 300}},
		{name: "a share larger than what the hold has left takes what is left", taken: true, hold: 200,
			run: func(t *testing.T, l *Ledger, h *Reservation) *Reservation {
				return only(l.ReserveFrom(Source{From: h, Share: 300}, now, []Claim{a, b}, 300))
			},
			want: want{reservedA: 300, reservedB: 300, holding: 0}},
		{name: "a request of some of the hold's claims draws on those only", taken: true, hold: 1000,
			run: func(t *testing.T, l *Ledger, h *Reservation) *Reservation {
				return only(l.ReserveFrom(Source{From: h, Share: 300}, now, []Claim{a}, 300))
			},
			want: want{reservedA: 1000, reservedB: 1000, holding: 1000}},
		{name: "a request that does not draw finds no room while the hold has it", hold: 1000,
			run: func(t *testing.T, l *Ledger, h *Reservation) *Reservation {
				r, asks := l.Reserve(now, []Claim{a}, 1)
				if len(asks) != 1 || asks[0].Want != 1 {
					t.Errorf("asks %+v", asks)
				}
				return r
			},
			want: want{reservedA: 1000, reservedB: 1000, holding: 1000}},
		{name: "a request that does not fit even with its share leaves the hold as it was", hold: 900,
			run: func(t *testing.T, l *Ledger, h *Reservation) *Reservation {
				r, asks := l.ReserveFrom(Source{From: h, Share: 300}, now, []Claim{a, b}, 450)
				// The shortfall counts the share as the request's room.
				if len(asks) != 2 || asks[0].Want != 50 {
					t.Errorf("asks %+v", asks)
				}
				// Judging it lends the share for a moment only.
				l.OutlookFrom(Source{From: h, Share: 300}, now, []Claim{a, b}, 450, false)
				if ref := l.RefuseFrom(Source{From: h, Share: 300}, now, []Claim{a, b}, 450, Busy); ref.Claim.PolicyName != "a" {
					t.Errorf("refusal %+v", ref)
				}
				return r
			},
			want: want{reservedA: 900, reservedB: 900, holding: 900}},
		{name: "a cancelled line's share is given back", taken: true, hold: 1000,
			run: func(t *testing.T, l *Ledger, h *Reservation) *Reservation {
				if left := h.GiveBack(400); left != 600 {
					t.Errorf("left %d", left)
				}
				return only(l.Reserve(now, []Claim{a, b}, 400))
			},
			want: want{reservedA: 1000, reservedB: 1000, holding: 600}},
		{name: "a released hold frees all it held and charges nothing", taken: true, hold: 1000,
			run: func(t *testing.T, l *Ledger, h *Reservation) *Reservation {
				line, _ := l.ReserveFrom(Source{From: h, Share: 300}, now, []Claim{a, b}, 300)
				h.Release()
				h.Release()
				h.GiveBack(100)
				line.Settle(250)
				return only(l.Reserve(now, []Claim{a, b}, 750))
			},
			want: want{reservedA: 750, reservedB: 750, usedA: 250}},
		{name: "settling a hold charges nothing", hold: 1000,
			run: func(t *testing.T, l *Ledger, h *Reservation) *Reservation {
				if h.Settle(500) {
					t.Error("a hold settled at a cost says it was charged")
				}
				return nil
			},
			want: want{}},
		{name: "a released hold lends nothing", taken: true, hold: 1000,
			run: func(t *testing.T, l *Ledger, h *Reservation) *Reservation {
				h.Release()
				return only(l.ReserveFrom(Source{From: h, Share: 300}, now, []Claim{a, b}, 300))
			},
			want: want{reservedA: 300, reservedB: 300}},
		{name: "a hold drawn in a later period lends nothing there", hold: 1000,
			run: func(t *testing.T, l *Ledger, h *Reservation) *Reservation {
				r, asks := l.ReserveFrom(Source{From: h, Share: 300}, now.AddDate(0, 0, 1), []Claim{a}, 300)
				if len(asks) != 1 {
					t.Errorf("asks %+v", asks)
				}
				return r
			},
			want: want{reservedA: 0, reservedB: 1000, holding: 1000}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := holdLedger(t, now, 1000, 1000, a, b)
			h, asks := l.ReserveFrom(Source{Hold: true}, now, []Claim{a, b}, tc.hold)
			if h == nil {
				t.Fatalf("hold refused: %+v", asks)
			}
			r := tc.run(t, l, h)
			if (r != nil) != tc.taken {
				t.Errorf("request taken %v, want %v", r != nil, tc.taken)
			}
			if h.Holding() != tc.want.holding {
				t.Errorf("hold holds %d, want %d", h.Holding(), tc.want.holding)
			}
			sa := stateOf(l, a.Counter)
			sb := stateOf(l, b.Counter)
			if tc.name == "a hold drawn in a later period lends nothing there" {
				// The new period's counter replaced the old one in the
				// ledger; the hold holds the old one's room.
				sa = State{Reserved: 0}
			}
			if sa.Reserved != tc.want.reservedA || sb.Reserved != tc.want.reservedB || sa.Used != tc.want.usedA {
				t.Errorf("a reserved %d used %d, b reserved %d; want %+v", sa.Reserved, sa.Used, sb.Reserved, tc.want)
			}
		})
	}
}

// only is the reservation Reserve made, nil when it asks for more.
func only(r *Reservation, _ []Ask) *Reservation { return r }

// TestHoldIsNotJournaledAsReserved: a process that dies with a hold open
// owes nothing for it (nothing was sent under it): the journal counts the
// requests drawn from it, at their bound, and frees the rest.
func TestHoldIsNotJournaledAsReserved(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	cl := Claim{Counter: Counter{PolicyID: uuid.New(), Period: Day, Aggregation: "shared"}, LimitNano: 1000, PolicyName: "cap"}
	l, j := holdLedger(t, now, 1000, 1000, cl)
	h, _ := l.ReserveFrom(Source{Hold: true}, now, []Claim{cl}, 900)
	done, _ := l.ReserveFrom(Source{From: h, Share: 300}, now, []Claim{cl}, 300)
	done.Settle(100)
	l.ReserveFrom(Source{From: h, Share: 300}, now, []Claim{cl}, 200) // in flight at the crash
	next := NewLedger()
	next.Restore(j.states())
	s := stateOf(next, cl.Counter)
	// 100 spent, 200 in flight (counted at its bound), the hold's 300 free.
	if s.Used != 300 || s.Reserved != 0 || s.Granted != 1000 {
		t.Fatalf("restored %+v", s)
	}
	if r, _ := next.ReserveFrom(Source{Hold: true}, now, []Claim{cl}, 700); r == nil {
		t.Fatal("the restarted process cannot hold again what the hold had left")
	}
}

// FuzzHoldNeverOvershoots drives a ledger with holds, draws, give-backs,
// plain requests and settlements, and checks after every step that the
// spend and everything held stay within the grant, that the ledger's
// reserved amount is what its open reservations hold, and that a hold
// never holds more than it was made with.
func FuzzHoldNeverOvershoots(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Add(uint64(7), uint64(99))
	f.Fuzz(func(t *testing.T, s1, s2 uint64) {
		rng := rand.New(rand.NewPCG(s1, s2))
		now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
		a := Claim{Counter: Counter{PolicyID: uuid.New(), Period: Day, Aggregation: "shared"}, LimitNano: 10_000, PolicyName: "a"}
		b := Claim{Counter: Counter{PolicyID: uuid.New(), Period: Day, Aggregation: "shared"}, LimitNano: 10_000, PolicyName: "b"}
		const granted = 10_000
		l, _ := holdLedger(t, now, granted, granted, a, b)
		type open struct {
			r      *Reservation
			bound  int64
			claims []Claim
		}
		var holds []*Reservation
		var reqs []open
		var used int64
		for step := 0; step < 200; step++ {
			claims := [][]Claim{{a}, {b}, {a, b}}[rng.IntN(3)]
			switch rng.IntN(6) {
			case 0:
				if h, _ := l.ReserveFrom(Source{Hold: true}, now, []Claim{a, b}, rng.Int64N(4000)); h != nil {
					holds = append(holds, h)
				}
			case 1, 2:
				src := Source{}
				if len(holds) > 0 {
					src = Source{From: holds[rng.IntN(len(holds))], Share: rng.Int64N(1500)}
				}
				bound := rng.Int64N(1500)
				before := src.From.Holding()
				r, _ := l.ReserveFrom(src, now, claims, bound)
				if r != nil {
					reqs = append(reqs, open{r, bound, claims})
				} else if src.From.Holding() != before {
					t.Fatalf("step %d: a refused request took from the hold", step)
				}
			case 3:
				if len(holds) > 0 {
					holds[rng.IntN(len(holds))].GiveBack(rng.Int64N(1500))
				}
			case 4:
				if len(holds) > 0 {
					i := rng.IntN(len(holds))
					holds[i].Release()
					holds = append(holds[:i], holds[i+1:]...)
				}
			case 5:
				if len(reqs) > 0 {
					i := rng.IntN(len(reqs))
					o := reqs[i]
					cost := rng.Int64N(o.bound + 1)
					// Charged at most what it held (a tail admission).
					used += min(cost, heldOn(o.r, a.Counter))
					o.r.Settle(cost)
					reqs = append(reqs[:i], reqs[i+1:]...)
				}
			}
			var held int64
			for _, h := range holds {
				held += heldOn(h, a.Counter)
				if h.Holding() > 4000 {
					t.Fatalf("step %d: a hold holds %d, more than it was made with", step, h.Holding())
				}
			}
			var inFlight int64
			for _, o := range reqs {
				// Its bound, or a tail admission's estimate and reserve.
				inFlight += heldOn(o.r, a.Counter)
				if heldOn(o.r, a.Counter) > o.bound {
					t.Fatalf("step %d: a request holds more than its bound", step)
				}
			}
			sa := stateOf(l, a.Counter)
			if sa.Used != used {
				t.Fatalf("step %d: a used %d, want %d", step, sa.Used, used)
			}
			if sa.Reserved != held+inFlight {
				t.Fatalf("step %d: a reserved %d, holds %d and requests %d", step, sa.Reserved, held, inFlight)
			}
			for _, s := range l.States() {
				if s.Used+s.Reserved > s.Granted {
					t.Fatalf("step %d: %s used %d + reserved %d > granted %d", step, s.Counter, s.Used, s.Reserved, s.Granted)
				}
			}
		}
	})
}

// heldOn is what r holds of counter c.
func heldOn(r *Reservation, c Counter) int64 {
	if r.done {
		return 0
	}
	for _, h := range r.held {
		if h.id == c {
			return h.amount + h.reserve
		}
	}
	return 0
}

// TestSyncReportsWhileReservationsAreOpen: a counter with a hold (or any
// reservation) open is reported at every sync even when its spend did not
// change, so the control plane never takes its holder for gone and what
// it holds for spent; once nothing is open and nothing changes, it is
// not.
func TestSyncReportsWhileReservationsAreOpen(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	cl := Claim{Counter: Counter{PolicyID: uuid.New(), Period: Day, Aggregation: "shared"}, LimitNano: 1000, PolicyName: "cap"}
	l, _ := holdLedger(t, now, 1000, 1000, cl)
	keep := func(Claim) int64 { return 100 }
	h, _ := l.ReserveFrom(Source{Hold: true}, now, []Claim{cl}, 600)
	for i := range 3 {
		asks := l.Sync(now, keep)
		if len(asks) != 1 || asks[0].Used != 0 {
			t.Fatalf("sync %d with a hold open: %+v", i, asks)
		}
		l.Synced(asks)
	}
	h.Release()
	l.Synced(l.Sync(now, keep))
	if asks := l.Sync(now, keep); len(asks) != 0 {
		t.Fatalf("an idle counter with nothing open reported: %+v", asks)
	}
}
