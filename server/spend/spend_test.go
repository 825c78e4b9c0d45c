package spend

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestUnsentReturnStaysSpendable: allowance a sync gives back while the
// control plane cannot be dialled stays this ledger's to spend (the e2e
// budget outage run refused requests its leases covered, and after the
// restart the other data plane was refused while the return was pending);
// what an earlier sync, maybe received, gave back stays given back.
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
	if len(first) != 1 || first[0].Return != 70 || first[0].Moved != 70 {
		t.Fatalf("first sync %+v", first)
	}
	// Nothing new to give back; the pending return is resent, undialled.
	l.Apply([]Grant{{Counter: cl.Counter, PeriodStart: start, Granted: 80}})
	second := l.Sync(now, keep)
	if len(second) != 1 || second[0].Return != 70 || second[0].Moved != 0 {
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
