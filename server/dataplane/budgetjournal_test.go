package dataplane_test

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/spend"
)

func sortedStates(ss []spend.CounterState) []spend.CounterState {
	sort.Slice(ss, func(i, j int) bool { return ss[i].Counter.String() < ss[j].Counter.String() })
	return ss
}

// TestBudgetJournalKeepsHolderAndState: a journal read back gives the
// holder it was written for and each counter's last state; a torn last
// line is dropped; an unreadable journal, or none, starts anew under a new
// holder; periods that ended are dropped; a journal grown past its live
// state is compacted.
func TestBudgetJournalKeepsHolderAndState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "budgets.journal")
	n := 0
	newHolder := func() string { n++; return "dp-1#" + string(rune('a'+n-1)) }
	j, err := dataplane.OpenBudgetJournal(path, newHolder, nil)
	if err != nil || j.Holder() != "dp-1#a" || len(j.States()) != 0 {
		t.Fatalf("new journal: %v %q %v", err, j.Holder(), j.States())
	}
	now := time.Now().UTC()
	day, _ := spend.Bounds(spend.Day, now)
	month, _ := spend.Bounds(spend.Month, now)
	shared := spend.Counter{PolicyID: uuid.New(), Period: spend.Day, Aggregation: "shared"}
	perKey := spend.Counter{PolicyID: uuid.New(), Period: spend.Month, Aggregation: "per_key", KeyID: uuid.New()}
	j.Record([]spend.CounterState{{Counter: shared, Start: day, Granted: 100, Reserved: 10}})
	last := []spend.CounterState{
		{Counter: shared, Start: day, Granted: 100, Used: 7, Returned: 30, Acked: 20, Reported: 5},
		{Counter: perKey, Start: month, Granted: 9, Used: 1, Reserved: 2},
	}
	j.Record(last)
	// Yesterday's counter is over: dropped when the journal is read back.
	j.Record([]spend.CounterState{{Counter: shared, Start: day.AddDate(0, 0, -1), Granted: 5, Used: 5}})
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	// A machine that stopped mid-write leaves half a line.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(shared.String() + " 17")
	f.Close()

	j, err = dataplane.OpenBudgetJournal(path, newHolder, nil)
	if err != nil || j.Holder() != "dp-1#a" {
		t.Fatalf("reopened: %v %q", err, j.Holder())
	}
	if got := sortedStates(j.States()); !reflect.DeepEqual(got, sortedStates(last)) {
		t.Fatalf("states %+v, want %+v", got, last)
	}
	// Thousands of changes: the file stays near its live state.
	for i := range 20_000 {
		j.Record([]spend.CounterState{{Counter: shared, Start: day, Granted: 100, Used: int64(i)}})
	}
	st, err := os.Stat(path)
	if err != nil || st.Size() > 2<<20 {
		t.Fatalf("journal of %d bytes after 20,000 changes: %v", st.Size(), err)
	}
	j.Close()
	j, err = dataplane.OpenBudgetJournal(path, newHolder, nil)
	if err != nil || j.Holder() != "dp-1#a" {
		t.Fatalf("after compaction: %v %q", err, j.Holder())
	}
	for _, s := range j.States() {
		if s.Counter == shared && s.Used != 19_999 {
			t.Fatalf("after compaction %+v", s)
		}
	}
	j.Close()

	// A journal that does not read is not trusted: a new holder, nothing kept.
	if err := os.WriteFile(path, []byte("gw-budget-journal 1 dp-1#a\nnot a line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	j, err = dataplane.OpenBudgetJournal(path, newHolder, nil)
	if err != nil || j.Holder() != "dp-1#b" || len(j.States()) != 0 {
		t.Fatalf("unreadable journal: %v %q %v", err, j.Holder(), j.States())
	}
	j.Close()
	if err := os.WriteFile(path, []byte("something else entirely"), 0o600); err != nil {
		t.Fatal(err)
	}
	if j, err = dataplane.OpenBudgetJournal(path, newHolder, nil); err != nil || j.Holder() != "dp-1#c" {
		t.Fatalf("not a journal: %v %q", err, j.Holder())
	}
	j.Close()
}

// BenchmarkJournalRecord measures what journaling adds to a reservation
// and its settlement, against the same ledger without a journal, in one
// run:
//
//	go test -run '^$' -bench JournalRecord -benchmem ./server/dataplane
func BenchmarkJournalRecord(b *testing.B) {
	now := time.Now().UTC()
	start, _ := spend.Bounds(spend.Day, now)
	claims := []spend.Claim{{Counter: spend.Counter{PolicyID: uuid.New(), Period: spend.Day, Aggregation: "shared"}, LimitNano: 1 << 60, PolicyName: "p"}}
	ledger := func(b *testing.B, journal bool) *spend.Ledger {
		l := spend.NewLedger()
		if journal {
			j, err := dataplane.OpenBudgetJournal(filepath.Join(b.TempDir(), "budgets.journal"), func() string { return "bench" }, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { j.Close() })
			l.SetJournal(j)
		}
		l.Reserve(now, claims, 1)
		l.Apply([]spend.Grant{{Counter: claims[0].Counter, PeriodStart: start, Granted: 1 << 60, Limit: 1 << 60}})
		return l
	}
	for _, journal := range []bool{false, true} {
		name := "memory"
		if journal {
			name = "journal"
		}
		b.Run(name, func(b *testing.B) {
			l := ledger(b, journal)
			b.ReportAllocs()
			for b.Loop() {
				r, _ := l.Reserve(now, claims, 1000)
				r.Settle(500)
			}
		})
	}
}
