package dataplane

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/spend"
)

// openBudget opens a budget journal that writes as jc says: to a shared
// memory map of the file (unix), or with pwrite(2) (Windows).
func (jc journalCase) openBudget(t *testing.T, path, holder string) *BudgetJournal {
	t.Helper()
	j, err := openBudgetJournal(path, func() string { return holder }, nil, jc.writeAt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Close() })
	return j
}

// budgetRead is what a reader makes of a journal's bytes: its holder and
// counters, sorted, or that it does not read.
type budgetRead struct {
	holder string
	states []spend.CounterState
	err    bool
}

func (r budgetRead) String() string {
	if r.err {
		return "unreadable"
	}
	return fmt.Sprintf("%s %+v", r.holder, r.states)
}

// readBudget reads raw as the next start does, or (earlier) as an
// earlier gw does: without the stop at the first NUL.
func readBudget(raw []byte, earlier bool) budgetRead {
	j := &BudgetJournal{last: map[journalKey]spend.CounterState{}}
	parse := j.parse
	if earlier {
		parse = j.parseLines
	}
	if err := parse(raw); err != nil {
		return budgetRead{err: true}
	}
	r := budgetRead{holder: j.holder}
	for _, s := range j.last {
		r.states = append(r.states, s)
	}
	slices.SortFunc(r.states, func(a, b spend.CounterState) int {
		return strings.Compare(a.Counter.String()+a.Start.String(), b.Counter.String()+b.Start.String())
	})
	return r
}

// budgetWrite is one store to the file: where, what, and whether a kill
// may stop it part-way (a copy into the mapping) or not (a byte, a
// pwrite).
type budgetWrite struct {
	off   int64
	b     []byte
	whole bool
}

func watchBudget(j *BudgetJournal, observe func(off int64, b []byte, whole bool)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.observe = observe
	j.store.watch(observe)
}

// testCounters are a reservation's: a shared daily counter and a per-key
// monthly one.
func testCounters(now time.Time) []spend.CounterState {
	day, _ := spend.Bounds(spend.Day, now)
	month, _ := spend.Bounds(spend.Month, now)
	return []spend.CounterState{
		{Counter: spend.Counter{PolicyID: uuid.New(), Period: spend.Day, Aggregation: "shared"}, Start: day, Granted: 5_000_000},
		{Counter: spend.Counter{PolicyID: uuid.New(), Period: spend.Month, Aggregation: "per_key", KeyID: uuid.New()}, Start: month, Granted: 90_000_000},
	}
}

// reserve and settle change the counters as a reservation of n and its
// settlement at half of it do.
func reserve(cs []spend.CounterState, n int64) []spend.CounterState {
	out := slices.Clone(cs)
	for i := range out {
		out[i].Reserved += n
	}
	return out
}

func settle(cs []spend.CounterState, n int64) []spend.CounterState {
	out := slices.Clone(cs)
	for i := range out {
		out[i].Reserved -= n
		out[i].Used += n / 2
	}
	return out
}

// TestBudgetJournalKilledMidChange: a process killed at any instant of a
// change (SIGKILL stops a copy into the mapping part-way, in whatever
// order memmove stores, which it never does to a write(2)) leaves the
// journal as it was before the change or, once the change's first byte
// is stored, as it is after it: never some of a reservation's counters
// without the others, never a torn line. Each change's stores are
// replayed onto the file as it was before the change, each copy stopped
// after each of several counts of its bytes stored from its start, from
// its end, and every other one. An earlier gw (layout 1, no stop at the
// first NUL) reads every such file as it was before the change, as it is
// after, or not at all (then it starts under a new holder): never as
// something else.
func TestBudgetJournalKilledMidChange(t *testing.T) {
	now := time.Now()
	for _, tt := range []struct {
		name string
		// setup brings the journal to just before the change.
		setup func(t *testing.T, j *BudgetJournal, cs []spend.CounterState)
		// straddles: the change is copied into two mappings.
		straddles bool
	}{
		{"the first change, growing the file", func(*testing.T, *BudgetJournal, []spend.CounterState) {}, false},
		{"a settlement after a reservation", func(_ *testing.T, j *BudgetJournal, cs []spend.CounterState) {
			j.Record(reserve(cs, 1000))
		}, false},
		{"a change across two segments of the mapping", func(t *testing.T, j *BudgetJournal, cs []spend.CounterState) {
			line := int64(len(appendJournalLine(nil, cs[0])))
			for i := int64(1); j.size < budgetSegment-line-line/2; i++ {
				j.Record(reserve(cs[:1], i))
			}
		}, true},
		{"the first change after a compaction", func(t *testing.T, j *BudgetJournal, cs []spend.CounterState) {
			for i := int64(1); ; i++ {
				if j.Record(reserve(cs[:1], i)); j.size == j.live {
					return
				}
			}
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			eachJournalStore(t, func(t *testing.T, jc journalCase) {
				path := filepath.Join(t.TempDir(), "budgets.journal")
				j := jc.openBudget(t, path, "dp-kill#1")
				cs := testCounters(now)
				tt.setup(t, j, cs)
				before := readJournal(t, path)
				var writes []budgetWrite
				watchBudget(j, func(off int64, b []byte, whole bool) { writes = append(writes, budgetWrite{off, b, whole}) })
				j.Record(settle(reserve(cs, 1000), 1000))
				watchBudget(j, nil)
				after := readJournal(t, path)
				wantBefore, wantAfter := readBudget(before, false), readBudget(after, false)
				if wantBefore.err || wantAfter.err || reflect.DeepEqual(wantBefore, wantAfter) {
					t.Fatalf("the change does not show: before %v, after %v", wantBefore, wantAfter)
				}
				if got := readBudget(after, true); !reflect.DeepEqual(got, wantAfter) {
					t.Fatalf("an earlier gw reads the journal after the change as %v, not %v", got, wantAfter)
				}
				if !jc.writeAt {
					if n := len(writes); n < 2 || !writes[n-1].whole || len(writes[n-1].b) != 1 {
						t.Fatalf("the change's last store is not its first byte: %+v", writes)
					}
					if straddles := len(writes) == 3; straddles != tt.straddles {
						t.Fatalf("%d stores for the change", len(writes))
					}
				}
				// A file grown for the change reads as zeros before it.
				img := append(bytes.Clone(before), make([]byte, max(0, len(after)-len(before)))...)
				for k, w := range writes {
					for _, cut := range cuts(w) {
						raw := bytes.Clone(img)
						for _, i := range cut {
							raw[w.off+int64(i)] = w.b[i]
						}
						if got := readBudget(raw, false); !reflect.DeepEqual(got, wantBefore) {
							t.Fatalf("killed with %d of store %d's %d bytes (at %d) stored: reads %v, not what it was before the change, %v",
								len(cut), k, len(w.b), w.off, got, wantBefore)
						}
						if got := readBudget(raw, true); !got.err && !reflect.DeepEqual(got, wantBefore) {
							t.Fatalf("killed with %d of store %d's %d bytes (at %d) stored: an earlier gw reads %v, not %v",
								len(cut), k, len(w.b), w.off, got, wantBefore)
						}
					}
					copy(img[w.off:], w.b)
				}
				if !bytes.Equal(img[:len(after)], after) {
					t.Fatal("the stores observed are not the change's")
				}
			})
		})
	}
}

// cuts are the bytes of store w stored when a kill stops it: none, or
// for a copy, a prefix, a suffix (memmove may store the tail first) or
// every other byte.
func cuts(w budgetWrite) [][]int {
	out := [][]int{nil}
	if w.whole {
		return out
	}
	n := len(w.b)
	for _, c := range []int{1, 2, n / 3, n / 2, 2 * n / 3, n - 2, n - 1} {
		if c <= 0 || c >= n {
			continue
		}
		var head, tail []int
		for i := range c {
			head, tail = append(head, i), append(tail, n-1-i)
		}
		out = append(out, head, tail)
	}
	var odd []int
	for i := 1; i < n; i += 2 {
		odd = append(odd, i)
	}
	return append(out, odd)
}

// TestBudgetJournalReadsWhatAnEarlierGwWrote: a journal as gw wrote it
// with write(2) (no zeros after it; maybe half a line a machine stopped
// in, and periods that ended) is read as that gw read it, rewritten at
// the start, and after a Close read the same by that gw and this one.
func TestBudgetJournalReadsWhatAnEarlierGwWrote(t *testing.T) {
	eachJournalStore(t, func(t *testing.T, jc journalCase) {
		now := time.Now()
		cs := testCounters(now)
		old := slices.Clone(cs)
		old[0].Start = old[0].Start.AddDate(0, 0, -1)
		raw := []byte(journalMagic + " dp-old#7\n")
		for _, c := range [][]spend.CounterState{reserve(cs, 500), old, settle(reserve(cs, 500), 500), reserve(cs[:1], 80)} {
			for _, s := range c {
				raw = appendJournalLine(raw, s)
			}
		}
		raw = append(raw, cs[1].Counter.String()+" 17 4"...)
		path := filepath.Join(t.TempDir(), "budgets.journal")
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		want := readBudget(raw, true)
		if want.err || len(want.states) != 3 {
			t.Fatalf("the earlier gw's reading: %v", want)
		}
		j := jc.openBudget(t, path, "dp-new#1")
		if j.Holder() != "dp-old#7" {
			t.Fatalf("holder %q", j.Holder())
		}
		// Rewritten without the period that ended nor the torn line.
		rewritten := readJournal(t, path)
		if n := bytes.Count(rewritten, []byte("\n")); n != 3 || bytes.IndexByte(rewritten, 0) >= 0 {
			t.Fatalf("rewritten as %q", rewritten)
		}
		want.states = slices.DeleteFunc(want.states, func(s spend.CounterState) bool { return s.Start.Equal(old[0].Start) })
		if got := readBudget(rewritten, false); !reflect.DeepEqual(got, want) {
			t.Fatalf("rewritten, reads %v, not %v", got, want)
		}
		j.Record(reserve(settle(reserve(cs, 500), 500), 40))
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		closed := readJournal(t, path)
		got, back := readBudget(closed, false), readBudget(closed, true)
		if got.err || got.holder != "dp-old#7" || got.states[0].Reserved != 40 || !reflect.DeepEqual(back, got) {
			t.Fatalf("closed, the journal reads %v here and %v in an earlier gw", got, back)
		}
	})
}

// TestBudgetJournalCutToLengthAtClose: a mapped journal is grown in
// segments of zeros, which the reader stops at (an earlier gw drops them
// as what follows the last newline); Close cuts them off.
func TestBudgetJournalCutToLengthAtClose(t *testing.T) {
	eachJournalStore(t, func(t *testing.T, jc journalCase) {
		path := filepath.Join(t.TempDir(), "budgets.journal")
		j := jc.openBudget(t, path, "dp-cut#1")
		cs := testCounters(time.Now())
		j.Record(reserve(cs, 10))
		j.Record(settle(reserve(cs, 10), 10))
		open, written := readJournal(t, path), j.size
		wantLen, zeros := written, -1
		if !jc.writeAt {
			wantLen, zeros = budgetSegment, int(written)
		}
		if int64(len(open)) != wantLen || bytes.IndexByte(open, 0) != zeros {
			t.Fatalf("open: %d bytes, %d written, the first zero at %d", len(open), written, bytes.IndexByte(open, 0))
		}
		if got, back := readBudget(open, false), readBudget(open, true); got.err || len(got.states) != 2 || !reflect.DeepEqual(got, back) {
			t.Fatalf("open, the journal reads %v here and %v in an earlier gw", got, back)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		closed := readJournal(t, path)
		if int64(len(closed)) != written || !bytes.Equal(closed, open[:written]) {
			t.Fatalf("closed: %d bytes, %d written", len(closed), written)
		}
		j.Record(reserve(cs, 1)) // after Close: nothing
		if again := readJournal(t, path); !bytes.Equal(again, closed) {
			t.Fatal("a change after Close reached the file")
		}
	})
}

// TestBudgetJournalCompactsTheMappedFile: compaction rewrites the file
// (a new one, renamed over it) and appends to the new one, mapped anew:
// what a kill leaves after it, read while the journal is open, is the
// last state, and the file stays near its live state.
func TestBudgetJournalCompactsTheMappedFile(t *testing.T) {
	eachJournalStore(t, func(t *testing.T, jc journalCase) {
		path := filepath.Join(t.TempDir(), "budgets.journal")
		j := jc.openBudget(t, path, "dp-compact#1")
		cs := testCounters(time.Now())
		compactions := 0
		for i := int64(1); compactions < 3; i++ {
			if j.Record(reserve(cs, i)); j.size == j.live {
				compactions++
				if raw := readJournal(t, path); bytes.IndexByte(raw, 0) >= 0 || int64(len(raw)) != j.size {
					t.Fatalf("compacted into %d bytes (%d written), zeros at %d", len(raw), j.size, bytes.IndexByte(raw, 0))
				}
			}
			if i%5000 == 0 || compactions == 3 {
				got := readBudget(readJournal(t, path), false)
				if got.err || len(got.states) != 2 || got.states[0].Reserved != i || got.states[1].Reserved != i {
					t.Fatalf("after %d changes and %d compactions, a kill leaves %v", i, compactions, got)
				}
			}
			if j.broken {
				t.Fatal("the journal broke")
			}
		}
		if m, ok := j.store.(interface{ segments() int }); ok && m.segments() > compactAbove/budgetSegment+1 {
			t.Fatalf("%d segments mapped", m.segments())
		}
		if st, err := os.Stat(path); err != nil || st.Size() > compactAbove+budgetSegment {
			t.Fatalf("a journal of %d bytes", st.Size())
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		if got := readBudget(readJournal(t, path), false); got.err || !reflect.DeepEqual(got.states, readBudget(readJournal(t, path), true).states) {
			t.Fatalf("closed: %v", got)
		}
	})
}

// TestBudgetJournalDropsItselfOnAFailedWrite: a journal that cannot
// write is removed, so the next process starts under a new holder rather
// than from a journal that misses spend. A pwrite fails with an error; a
// store to a mapped page the file no longer backs (as a full disk leaves
// it) faults, which the journal survives.
func TestBudgetJournalDropsItselfOnAFailedWrite(t *testing.T) {
	eachJournalStore(t, func(t *testing.T, jc journalCase) {
		path := filepath.Join(t.TempDir(), "budgets.journal")
		j := jc.openBudget(t, path, "dp-fail#1")
		cs := testCounters(time.Now())
		j.Record(reserve(cs, 1))
		if w, ok := j.store.(*budgetWriteAt); ok {
			_ = w.f.Close()
		} else if err := os.Truncate(path, 0); err != nil {
			t.Fatal(err)
		}
		j.Record(reserve(cs, 2))
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) || !j.broken {
			t.Fatalf("the journal is still there: %v", err)
		}
		j.Record(reserve(cs, 3))
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a change after the failure wrote the journal again: %v", err)
		}
		// The next process: a new holder.
		if k := jc.openBudget(t, path, "dp-fail#2"); k.Holder() != "dp-fail#2" || len(k.States()) != 0 {
			t.Fatalf("after a failed write: %q %v", k.Holder(), k.States())
		}
	})
}
