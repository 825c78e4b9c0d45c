package dataplane

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gw-gateway/gw/server/spend"
)

// BudgetJournal keeps a data plane's budget ledger on disk, so that a
// restarted process, even one killed with SIGKILL, knows what it spent
// and takes its leases back rather than stranding them: the holder name
// it leases under is kept with it (DESIGN §6, docs/budgets.md).
//
// It is an append-only file of lines, one per change of a counter, each
// the counter's whole state; the last line of a counter's period is its
// state. Each change is written before the ledger acts on it (a
// reservation before its request goes upstream, a give-back before it is
// sent), with no fsync: a killed process's writes are in the page cache,
// which the next process reads. (A machine that loses power loses the
// cache too, and may come back with a journal that misses changes, the
// one case a restarted data plane could spend what it already had: treat
// a power loss as a lost state dir, see docs/budgets.md.) The file is
// rewritten, compacted, at start and whenever it has grown well past its
// live state.
//
// On unix the file is a shared memory map (budgetjournal_mmap.go), grown
// in segments of zeros, so a change is stores to memory, no system call;
// elsewhere (Windows) it is one pwrite(2) (budgetWriteAt). A copy into
// the mapping can be stopped half-way by a kill, in any order (memmove
// does not store left to right), where one write(2) of a change, several
// lines, never was: so a change is stored with its first byte left zero,
// and that byte stored last, and the reader stops at the first NUL. A
// kill at any instant leaves the change whole or not at all. Close cuts
// the file to what was written.
//
// The layout is still gw-budget-journal 1: an earlier gw, which drops
// what follows the last newline and refuses a line that does not read,
// reads such a file as this one does, or, after a kill cut a change, not
// at all (the cut change's first line starts with a NUL, which no
// counter does), and then starts anew under a new holder, which is safe.
// TestBudgetJournalKilledMidChange holds both readers to it.
//
// One process per journal: a second process on the same state dir would
// lease under the same holder and the control plane could not tell their
// spend apart.
type BudgetJournal struct {
	path   string
	holder string
	log    *slog.Logger

	// writeAt writes with pwrite(2) where the file would be mapped, so
	// that tests run both ways on one system.
	writeAt bool
	// observe, when set (tests), sees every store to the file, in order.
	observe func(off int64, b []byte, whole bool)

	mu    sync.Mutex
	store budgetStore
	// last is the state of each counter period, for compaction.
	last map[journalKey]spend.CounterState
	// size is the length written; live its length when last compacted.
	size, live int64
	broken     bool
	buf        []byte
}

type journalKey struct {
	counter spend.Counter
	start   int64
}

// journalMagic starts the file, followed by the holder name.
const journalMagic = "gw-budget-journal 1"

// compactAbove is the size past which a journal four times its live
// state is rewritten: about ten thousand changes.
const compactAbove = 1 << 20

// OpenBudgetJournal reads the journal at path and opens it for appending.
// A journal that exists and reads gives back the holder it was written
// for and the counters it kept (States); one that does not exist, or
// cannot be read, starts anew under newHolder(): a ledger that does not
// know what it spent must never take over a lease that may have spent it.
func OpenBudgetJournal(path string, newHolder func() string, log *slog.Logger) (*BudgetJournal, error) {
	return openBudgetJournal(path, newHolder, log, false)
}

func openBudgetJournal(path string, newHolder func() string, log *slog.Logger, writeAt bool) (*BudgetJournal, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	j := &BudgetJournal{path: path, log: log, writeAt: writeAt, last: map[journalKey]spend.CounterState{}}
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read budget journal: %w", err)
	default:
		if err := j.parse(raw); err != nil {
			log.Warn("budget journal unreadable; this process leases under a new holder, and what the last one held stays counted until its period ends",
				"path", path, "error", err)
			j.holder, j.last = "", map[journalKey]spend.CounterState{}
		}
	}
	if j.holder == "" {
		j.holder = newHolder()
	}
	if err := j.compact(time.Now()); err != nil {
		return nil, err
	}
	return j, nil
}

// parse reads the journal's lines up to its first NUL: the end of what
// was written, the zeros past it in a mapped file, or a change a kill cut
// before its first byte was stored (see BudgetJournal).
func (j *BudgetJournal) parse(raw []byte) error {
	if end := bytes.IndexByte(raw, 0); end >= 0 {
		raw = raw[:end]
	}
	return j.parseLines(raw)
}

// parseLines reads the journal's lines as every gw has (the reader of an
// earlier gw is this one without the cut at the first NUL). A torn last
// line (a machine that stopped mid-write) is dropped: the ledger records
// a change before it acts on it, so nothing came of that change yet.
func (j *BudgetJournal) parseLines(raw []byte) error {
	first, rest, ok := bytes.Cut(raw, []byte("\n"))
	holder, magic := strings.CutPrefix(string(first), journalMagic+" ")
	if !ok || !magic || holder == "" {
		return errors.New("not a budget journal")
	}
	j.holder = holder
	lines := strings.Split(string(rest), "\n")
	for i, line := range lines[:len(lines)-1] {
		s, err := parseJournalLine(line)
		if err != nil {
			return fmt.Errorf("line %d: %w", i+2, err)
		}
		j.last[journalKey{s.Counter, s.Start.Unix()}] = s
	}
	return nil
}

// States is what the journal kept: each counter's last state.
func (j *BudgetJournal) States() []spend.CounterState {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]spend.CounterState, 0, len(j.last))
	for _, s := range j.last {
		out = append(out, s)
	}
	return out
}

// Holder is the name this data plane's ledger leases under.
func (j *BudgetJournal) Holder() string { return j.holder }

// Record appends changed counters (spend.Journal), stores into the
// mapped file whole or not at all (budgetStore.put). A failed write, or a
// fault on the mapping, makes the journal unusable: it is removed, so the
// next process starts under a new holder rather than from a journal that
// misses spend.
func (j *BudgetJournal) Record(states []spend.CounterState) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.broken || len(states) == 0 {
		return
	}
	j.buf = j.buf[:0]
	for _, s := range states {
		j.buf = appendJournalLine(j.buf, s)
		j.last[journalKey{s.Counter, s.Start.Unix()}] = s
	}
	if err := j.store.put(j.size, j.buf); err != nil {
		j.fail(err)
		return
	}
	j.size += int64(len(j.buf))
	if j.size > compactAbove && j.size > 4*j.live {
		if err := j.compactLocked(time.Now()); err != nil {
			j.fail(err)
		}
	}
}

func (j *BudgetJournal) fail(err error) {
	j.broken = true
	j.log.Error("budget journal write failed; it is dropped, and a restart of this process leases under a new holder",
		"path", j.path, "error", err)
	_ = j.store.close(-1)
	_ = os.Remove(j.path)
}

// Close closes the file, cut to the length written; the journal stays
// for the next process.
func (j *BudgetJournal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.store == nil || j.broken {
		return nil
	}
	j.broken = true
	return j.store.close(j.size)
}

func (j *BudgetJournal) compact(now time.Time) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.compactLocked(now)
}

// compactLocked rewrites the journal with the last state of each counter
// whose period has not ended, through a temporary file and a rename, and
// appends to the new file from then on: mapped anew as it grows, the old
// file's mapping gone (nothing stores to it outside j.mu).
func (j *BudgetJournal) compactLocked(now time.Time) error {
	buf := []byte(journalMagic + " " + j.holder + "\n")
	for k, s := range j.last {
		if _, end := spend.Bounds(s.Counter.Period, s.Start); !now.Before(end) {
			delete(j.last, k)
			continue
		}
		buf = appendJournalLine(buf, s)
	}
	if err := writeFileAtomic(j.path, buf); err != nil {
		return fmt.Errorf("write budget journal: %w", err)
	}
	f, err := os.OpenFile(j.path, os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("open budget journal: %w", err)
	}
	var store budgetStore = newBudgetWriteAt(f)
	if !j.writeAt {
		if store, err = newBudgetStore(f); err != nil {
			f.Close()
			return fmt.Errorf("open budget journal: %w", err)
		}
	}
	store.watch(j.observe)
	if j.store != nil {
		// The file it was is unlinked already: nothing to cut.
		_ = j.store.close(-1)
	}
	j.store, j.size, j.live = store, int64(len(buf)), int64(len(buf))
	return nil
}

// A journal line: counter, period start (Unix seconds), granted, used,
// reserved, returned, acked, reported.
func appendJournalLine(b []byte, s spend.CounterState) []byte {
	b = s.Counter.AppendName(b)
	for _, n := range [...]int64{s.Start.Unix(), s.Granted, s.Used, s.Reserved, s.Returned, s.Acked, s.Reported} {
		b = append(b, ' ')
		b = strconv.AppendInt(b, n, 10)
	}
	return append(b, '\n')
}

func parseJournalLine(line string) (spend.CounterState, error) {
	f := strings.Fields(line)
	if len(f) != 8 {
		return spend.CounterState{}, fmt.Errorf("%d fields, want 8", len(f))
	}
	c, err := spend.ParseCounter(f[0])
	if err != nil {
		return spend.CounterState{}, err
	}
	var n [7]int64
	for i := range n {
		if n[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
			return spend.CounterState{}, err
		}
	}
	start := time.Unix(n[0], 0).UTC()
	if s, _ := spend.Bounds(c.Period, start); !s.Equal(start) {
		return spend.CounterState{}, fmt.Errorf("%s does not start a %s", start.Format(time.RFC3339), c.Period)
	}
	return spend.CounterState{Counter: c, Start: start, Granted: n[1], Used: n[2], Reserved: n[3], Returned: n[4], Acked: n[5], Reported: n[6]}, nil
}
