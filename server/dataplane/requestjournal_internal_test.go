package dataplane

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/spend"
	"github.com/gw-gateway/gw/wire"
)

// gpt-4o-mini's prices: 150 and 600 nano-dollars an input and an output
// token, 75 a cache read.
var miniPricing = catalog.Pricing{InputPerMTok: "0.15", OutputPerMTok: "0.60", CacheReadPerMTok: "0.075", CacheWritePerMTok: "0.15"}

func testHold(start time.Time) journalHold {
	return journalHold{counter: spend.Counter{PolicyID: uuid.New(), Period: spend.Day, Aggregation: "shared"}, start: start}
}

func testRecord(holds ...journalHold) journalRecord {
	now := time.Now()
	failure := "rate_limited"
	r := journalRecord{id: uuid.New(), occurred: now.UTC().Truncate(time.Microsecond), started: now.Add(-2 * time.Second).Truncate(time.Millisecond),
		attemptStarted: now.Add(-time.Second).Truncate(time.Millisecond), org: uuid.New(), workspace: uuid.New(), key: uuid.New(),
		owner: uuid.New(), credential: uuid.New(), model: "openai/gpt-4o-mini", provider: "openai", requested: "fast",
		endpoint: "chat.completions", requestID: "req-1", bundleVersion: 7, pricing: miniPricing, inputTokens: 500, outputCap: 100,
		bound: 500*150 + 100*600 + 1, holds: holds, tags: map[string]string{"team": "ads", "env": "prod"},
		attempts: []wire.UsageAttempt{{Model: "anthropic/claude-haiku-4-5", Provider: "anthropic", LatencyMS: 12, Failure: &failure}},
		budgets:  []journalBudget{{policyID: uuid.New(), name: "cap", period: "day", aggregation: "shared", amount: "0.02"}}}
	// Each counter holds the whole bound (no tail admission).
	for i := range r.holds {
		if r.holds[i].held == 0 {
			r.holds[i].held = r.bound
		}
	}
	return r
}

// TestRequestJournalRecordRoundTrip: a record reads back as written,
// long-context prices included; a record cut anywhere, or followed by
// bytes, does not read.
func TestRequestJournalRecordRoundTrip(t *testing.T) {
	day, _ := spend.Bounds(spend.Day, time.Now())
	r := testRecord(testHold(day), journalHold{counter: spend.Counter{PolicyID: uuid.New(), Period: spend.Month, Aggregation: "per_key",
		KeyID: uuid.New()}, start: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)})
	r.pricing.LongContext = &catalog.LongContextPricing{AboveInputTokens: 200_000, InputPerMTok: "6", OutputPerMTok: "22.5",
		CacheReadPerMTok: "0.6", CacheWritePerMTok: "7.5"}
	r.managementKey = uuid.New()
	rec := encodeRecord(nil, 42, &r, dropNothing)
	seq, got, err := decodeRecord(rec)
	if err != nil || seq != 42 {
		t.Fatalf("decode: %d %v", seq, err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("read back %+v\nwrote     %+v", got, r)
	}
	for n := range len(rec) {
		if _, _, err := decodeRecord(rec[:n]); err == nil {
			t.Fatalf("a record cut at %d of %d bytes reads", n, len(rec))
		}
	}
	if _, _, err := decodeRecord(append(rec, 0)); err == nil {
		t.Fatal("a record followed by a byte reads")
	}
	// What a slot too small for the record leaves out, in turn.
	for drop, want := range map[int]func(*journalRecord){
		dropBudgetNames: func(r *journalRecord) { r.budgets = nil },
		dropAttempts:    func(r *journalRecord) { r.budgets, r.attempts = nil, nil },
		dropTags:        func(r *journalRecord) { r.budgets, r.attempts, r.tags = nil, nil, nil },
		dropAll:         func(r *journalRecord) { r.budgets, r.attempts, r.tags, r.holds, r.bound = nil, nil, nil, nil, 0 },
	} {
		_, got, err := decodeRecord(encodeRecord(nil, 1, &r, drop))
		w := r
		want(&w)
		if err != nil || !reflect.DeepEqual(got, w) {
			t.Fatalf("drop %d: %v\n%+v\nwant %+v", drop, err, got, w)
		}
	}
}

// fixedProgress is a stream whose progress is set by the test.
type fixedProgress struct{ p providers.Progress }

func (f *fixedProgress) Progress() providers.Progress { return f.p }

// memorySink keeps the events it is given.
type memorySink struct {
	mu     sync.Mutex
	events []wire.UsageEventIn
}

func (m *memorySink) Record(e wire.UsageEventIn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, e)
}

// journalCase is how a test's journals write: to a shared memory map of
// the file (unix), or with pwrite(2) (writeAt: Windows).
type journalCase struct{ writeAt bool }

// eachJournalStore runs test against both ways of writing the journal.
func eachJournalStore(t *testing.T, test func(t *testing.T, jc journalCase)) {
	for _, jc := range []journalCase{{}, {writeAt: true}} {
		name := "mapped"
		if jc.writeAt {
			name = "writeat"
		}
		t.Run(name, func(t *testing.T) { test(t, jc) })
	}
}

func (jc journalCase) open(t *testing.T, path string, await bool) *RequestJournal {
	t.Helper()
	j, err := OpenRequestJournal(path, RequestJournalOptions{AwaitStored: await, ProgressEvery: time.Hour, writeAt: jc.writeAt})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Close() })
	return j
}

// onDisk reads slot s's progress from the file: the newer whole part.
func onDisk(t *testing.T, path string, s *journalSlot) journalProgress {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := journalHeaderSize + s.index*slotSize
	r, ok := readSlot(raw[off:min(off+slotSize, len(raw))])
	if !ok {
		t.Fatalf("slot %d does not read", s.index)
	}
	return r.progress
}

func openSlot(t *testing.T, j *RequestJournal, r *journalRecord) *journalSlot {
	t.Helper()
	s := j.acquire()
	if s == nil || !s.open(r) {
		t.Fatal("no slot")
	}
	return s
}

// TestRequestJournalLeavesWhatACrashCut: a process that dies leaves, to
// the next, the requests it had at an upstream (their last progress, at
// most one per tick) and those whose outcome it had but whose event may
// not be stored; not those whose events the sink said it stored. The next
// process releases what the cut requests' reservations held beyond their
// cost, records one event each, and, stopped in order, leaves nothing.
func TestRequestJournalLeavesWhatACrashCut(t *testing.T) {
	eachJournalStore(t, func(t *testing.T, jc journalCase) {
		path := filepath.Join(t.TempDir(), "requests.journal")
		day, _ := spend.Bounds(spend.Day, time.Now())
		hold := testHold(day)
		j := jc.open(t, path, false)

		// A stream at its upstream: its first progress is written at once,
		// later ones once a tick has passed.
		streamRec := testRecord(hold)
		stream := openSlot(t, j, &streamRec)
		ps := &fixedProgress{providers.Progress{TextBytes: 10, Pieces: 3}}
		stream.progress(ps)
		first := ps.p
		ps.p = providers.Progress{TextBytes: 40, ReasoningBytes: 10, Pieces: 9, Input: 321, CacheRead: 20, InputReported: true}
		stream.progress(ps) // same tick: not written
		if got := onDisk(t, path, stream); got.p != first {
			t.Fatalf("progress within a tick: %+v, want the first %+v", got.p, first)
		}
		// Once a tick has passed, the next chunk writes.
		j.tick.Add(1)
		stream.progress(ps)
		if got := onDisk(t, path, stream); got.p != ps.p {
			t.Fatalf("progress after a tick: %+v", got.p)
		}
		// A request that ended, its event not stored yet.
		endedRec := testRecord(hold)
		ended := openSlot(t, j, &endedRec)
		ended.finishing(journalFinal{at: time.Now(), input: 300, output: 50, reasoning: 5, costNano: 300*150 + 50*600, ok: true})
		// A request whose event the sink stored: its slot is free on disk.
		doneRec := testRecord(hold)
		done := openSlot(t, j, &doneRec)
		done.finishing(journalFinal{at: time.Now(), input: 1, output: 1, costNano: 750, ok: true})
		done.await()
		j.Stored([]wire.UsageEventIn{{ID: doneRec.id}})
		// A call not yet answered: no progress at all (in the slot freed
		// above).
		waitingRec := testRecord(hold)
		waitingRec.tags = nil
		if w := openSlot(t, j, &waitingRec); w.index != done.index {
			t.Fatalf("a new request in slot %d, not the free %d", w.index, done.index)
		}
		// One whose event the spool has: freed on the request's path, without
		// a write; left finishing on disk, recorded again (stored once).
		spooledRec := testRecord(hold)
		spooled := openSlot(t, j, &spooledRec)
		spooled.finishing(journalFinal{at: time.Now(), input: 2, output: 2, costNano: 1500, ok: true})
		spooled.release(false)

		next := jc.open(t, path, false) // the process died: j was never closed
		if len(next.remnants) != 4 {
			t.Fatalf("%d remnants, want 4", len(next.remnants))
		}
		byID := map[uuid.UUID]remnant{}
		for _, r := range next.remnants {
			byID[r.rec.id] = r
		}
		if r := byID[streamRec.id]; !r.progress.some || r.progress.p != ps.p || r.finished {
			t.Fatalf("the stream's remnant %+v", r.progress)
		}
		if r := byID[endedRec.id]; !r.finished || r.final.output != 50 || !r.final.ok {
			t.Fatalf("the ended request's remnant %+v", r)
		}

		// The budget journal had the three open reservations (the ended one
		// had settled), and 1,000 settled before.
		bound := streamRec.bound
		states := []spend.CounterState{{Counter: hold.counter, Start: hold.start, Granted: 10 * bound, Used: 1000, Reserved: 2 * bound}}
		var recorded []spend.CounterState
		restored := next.settleBudgets(states, func(cs []spend.CounterState) { recorded = append(recorded, cs...) })
		_, streamCost := crashedEvent(byID[streamRec.id])
		_, waitingCost := crashedEvent(byID[waitingRec.id])
		if want := streamCost + waitingCost; restored[0].Reserved != want || !reflect.DeepEqual(recorded, restored) {
			t.Fatalf("restored %+v (recorded %+v), want %d reserved: the two cut requests' costs", restored, recorded, want)
		}
		sink := &memorySink{}
		next.recoverRemnants(sink, next.log)
		if len(sink.events) != 4 {
			t.Fatalf("%d events, want 4", len(sink.events))
		}
		for _, e := range sink.events {
			switch e.ID {
			case streamRec.id:
				// The input the upstream reported, the output relayed.
				out, reasoning := crashOutput(ps.p, streamRec.outputCap)
				cost := 321*150 + 20*75 + out*600
				if e.Status != "error" || *e.Reason != "crashed" || e.UsageSource != "estimated" || e.InputTokens != 321 || e.CacheReadTokens != 20 ||
					e.OutputTokens != out || e.ReasoningTokens != reasoning || e.CostUSD != catalog.FormatNanoUSD(int64(cost)) || int64(cost) != streamCost {
					t.Fatalf("the stream's event %+v", e)
				}
				if len(e.Attempts) != 2 || *e.Attempts[1].Failure != "crashed" || *e.Attempts[0].Failure != "rate_limited" ||
					e.Tags["team"] != "ads" || *e.RequestID != "req-1" || *e.InferenceKeyID != streamRec.key || e.ManagementKeyID != nil ||
					e.Provenance.Prices.InputPerMTok != "0.15" || e.Provenance.Budgets[0].Counter != streamRec.budgets[0].policyID.String()+"/day/shared" {
					t.Fatalf("the stream's event %+v", e)
				}
			case waitingRec.id:
				// Nothing relayed, nothing reported: the input the journal
				// counted.
				if *e.Reason != "crashed" || e.InputTokens != 500 || e.OutputTokens != 0 || e.CostUSD != catalog.FormatNanoUSD(500*150) || e.Tags != nil {
					t.Fatalf("the waiting request's event %+v", e)
				}
			case endedRec.id:
				// Its outcome, as finish had it.
				if e.Status != "ok" || e.Reason != nil || e.UsageSource != "upstream" || e.OutputTokens != 50 || e.ReasoningTokens != 5 ||
					e.CostUSD != catalog.FormatNanoUSD(300*150+50*600) || e.Attempts[1].Failure != nil {
					t.Fatalf("the ended request's event %+v", e)
				}
			case spooledRec.id:
				if e.Status != "ok" || e.OutputTokens != 2 || e.CostUSD != catalog.FormatNanoUSD(1500) {
					t.Fatalf("the spooled request's event %+v", e)
				}
			default:
				t.Fatalf("event of %s", e.ID)
			}
		}
		// All recorded (the sink writes before Record returns): an orderly
		// stop leaves nothing.
		next.Close()
		if last := jc.open(t, path, false); len(last.remnants) != 0 {
			t.Fatalf("%d remnants after recovery", len(last.remnants))
		}
	})
}

// TestRequestJournalAwaitsTheSink: with a sink that buffers, a slot stays
// until the sink says its event is stored. A crash before then leaves the
// request to the next process again, whose event has the same id (stored
// once), and whose reservation is not released twice.
func TestRequestJournalAwaitsTheSink(t *testing.T) {
	eachJournalStore(t, func(t *testing.T, jc journalCase) {
		path := filepath.Join(t.TempDir(), "requests.journal")
		day, _ := spend.Bounds(spend.Day, time.Now())
		hold := testHold(day)
		j := jc.open(t, path, true)
		r := testRecord(hold)
		openSlot(t, j, &r)

		states := []spend.CounterState{{Counter: hold.counter, Start: hold.start, Granted: 10 * r.bound, Reserved: r.bound}}
		first := jc.open(t, path, true)
		restored := first.settleBudgets(states, func([]spend.CounterState) {})
		sink := &memorySink{}
		first.recoverRemnants(sink, first.log)
		if len(sink.events) != 1 || restored[0].Reserved == r.bound {
			t.Fatalf("events %+v, restored %+v", sink.events, restored)
		}
		// Killed before the sink stored the event.
		second := jc.open(t, path, true)
		if len(second.remnants) != 1 || second.remnants[0].slot.flags&flagSettled == 0 {
			t.Fatalf("remnants %+v", second.remnants)
		}
		if again := second.settleBudgets(states, func([]spend.CounterState) { t.Fatal("released twice") }); again[0].Reserved != r.bound {
			t.Fatalf("released twice: %+v", again)
		}
		second.recoverRemnants(sink, second.log)
		if len(sink.events) != 2 || sink.events[1].ID != sink.events[0].ID {
			t.Fatalf("events %+v", sink.events)
		}
		second.Stored(sink.events[1:])
		second.Close()
		if third := jc.open(t, path, true); len(third.remnants) != 0 {
			t.Fatalf("%d remnants once stored", len(third.remnants))
		}
	})
}

// TestRequestJournalTornWrites: what a power cut can leave (a kill
// cannot: TestRequestJournalKilledMidWrite). A slot whose record is torn
// is skipped; a torn progress reads as the one before it (here the
// open's: nothing relayed), a torn outcome as a request still in flight,
// whose reservation is not released (it may have settled); a file cut
// mid-slot or not a journal at all is survived.
func TestRequestJournalTornWrites(t *testing.T) {
	eachJournalStore(t, func(t *testing.T, jc journalCase) {
		dir := t.TempDir()
		path := filepath.Join(dir, "requests.journal")
		day, _ := spend.Bounds(spend.Day, time.Now())
		hold := testHold(day)
		j := jc.open(t, path, false)
		var recs []journalRecord
		for range 4 {
			recs = append(recs, testRecord(hold))
		}
		s0 := openSlot(t, j, &recs[0])
		s1 := openSlot(t, j, &recs[1])
		s1.progress(&fixedProgress{providers.Progress{TextBytes: 100, Pieces: 20}})
		s2 := openSlot(t, j, &recs[2])
		s2.finishing(journalFinal{at: time.Now(), input: 1, output: 1, costNano: 750, ok: true})
		s3 := openSlot(t, j, &recs[3])
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		flip := func(slot, at int) { raw[journalHeaderSize+slot*slotSize+at] ^= 0xff }
		flip(s0.index, offArea+s0.area*areaSize+recordHead+20)
		flip(s1.index, offProgress+s1.part*progressSize+20)
		flip(s2.index, offFinal+20)
		// The last slot is cut after its record: still whole.
		raw = raw[:journalHeaderSize+s3.index*slotSize+offArea+s3.area*areaSize+recordHead+len(s3.rec)]
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		j.Close()
		next := jc.open(t, path, false)
		got := map[uuid.UUID]remnant{}
		for _, r := range next.remnants {
			got[r.rec.id] = r
		}
		if _, ok := got[recs[0].id]; ok || len(got) != 3 {
			t.Fatalf("remnants %d; the torn record's present: %v", len(got), ok)
		}
		if r := got[recs[1].id]; !r.progress.some || r.progress.p != (providers.Progress{}) {
			t.Fatalf("a torn progress read %+v, not the open's", r.progress)
		}
		if r := got[recs[2].id]; r.finished || r.slot.state != slotFinishing {
			t.Fatalf("a torn outcome read %+v", r)
		}
		if _, ok := got[recs[3].id]; !ok {
			t.Fatal("the cut file's last slot is lost")
		}
		states := []spend.CounterState{{Counter: hold.counter, Start: hold.start, Granted: 10 * recs[0].bound, Reserved: 4 * recs[0].bound}}
		restored := next.settleBudgets(states, func([]spend.CounterState) {})
		_, c1 := crashedEvent(got[recs[1].id])
		_, c3 := crashedEvent(got[recs[3].id])
		if want := 4*recs[0].bound - (recs[1].bound - c1) - (recs[3].bound - c3); restored[0].Reserved != want {
			t.Fatalf("reserved %d, want %d: only the two requests in flight release", restored[0].Reserved, want)
		}
		next.Close()

		for _, junk := range []string{"something else entirely", requestJournalMagic + strings.Repeat("x", 100),
			requestJournalMagic1 + strings.Repeat("x", 100)} {
			if err := os.WriteFile(path, []byte(junk), 0o600); err != nil {
				t.Fatal(err)
			}
			j := jc.open(t, path, false)
			if len(j.remnants) != 0 {
				t.Fatalf("%q: %d remnants", junk, len(j.remnants))
			}
			if s := j.acquire(); s == nil || !s.open(&recs[0]) {
				t.Fatal("a fresh journal takes no request")
			}
			j.Close()
		}
	})
}

// TestRequestJournalCutsARecordToFit: a record too large for its slot
// leaves out, in turn, budget names, earlier attempts and tags (see
// TestRequestJournalRecordRoundTrip); the request is journaled all the
// same.
func TestRequestJournalCutsARecordToFit(t *testing.T) {
	eachJournalStore(t, func(t *testing.T, jc journalCase) {
		path := filepath.Join(t.TempDir(), "requests.journal")
		j := jc.open(t, path, false)
		r := testRecord()
		r.tags = map[string]string{}
		for i := range 20 {
			r.tags[strings.Repeat(string(rune('a'+i)), 64)] = strings.Repeat("é", 128)
		}
		r.attempts = nil
		for range 20 {
			r.attempts = append(r.attempts, wire.UsageAttempt{Model: strings.Repeat("m", 200), Provider: "openai", LatencyMS: 1})
		}
		s := openSlot(t, j, &r)
		if s.flags&flagPartial == 0 {
			t.Fatal("not flagged partial")
		}
		next := jc.open(t, path, false)
		// 20 tags of the longest keys and values fit once the attempts are out.
		if len(next.remnants) != 1 || next.remnants[0].rec.attempts != nil || !reflect.DeepEqual(next.remnants[0].rec.tags, r.tags) ||
			next.remnants[0].rec.id != r.id {
			t.Fatalf("remnants %+v", next.remnants)
		}
	})
}

// TestRequestJournalDropsItselfOnAFailedWrite: a journal that cannot
// write is removed, so the next process neither bills requests that may
// have ended nor releases reservations that may have settled. A pwrite
// fails with an error; a store to a mapped page the file no longer backs
// (as a full disk leaves it) faults, which the journal survives.
func TestRequestJournalDropsItselfOnAFailedWrite(t *testing.T) {
	eachJournalStore(t, func(t *testing.T, jc journalCase) {
		path := filepath.Join(t.TempDir(), "requests.journal")
		j := jc.open(t, path, false)
		r := testRecord()
		openSlot(t, j, &r)
		s := openSlot(t, j, &r)
		if w, ok := j.store.(*journalWriteAt); ok {
			_ = w.f.Close()
		} else if err := os.Truncate(path, journalHeaderSize); err != nil {
			t.Fatal(err)
		}
		s.finishing(journalFinal{at: time.Now(), ok: true})
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("the journal is still there: %v", err)
		}
		if j.acquire() != nil {
			t.Fatal("a broken journal still hands out slots")
		}
	})
}

func TestCrashOutput(t *testing.T) {
	for _, tt := range []struct {
		p              providers.Progress
		cap            int64
		out, reasoning int64
	}{
		{providers.Progress{}, 100, 0, 0},
		{providers.Progress{TextBytes: 9, Pieces: 1}, 100, 5, 0},
		// Never fewer tokens than deltas relayed.
		{providers.Progress{TextBytes: 10, Pieces: 8}, 100, 8, 0},
		// Never more than the request could produce.
		{providers.Progress{TextBytes: 1000, Pieces: 100}, 100, 100, 0},
		{providers.Progress{TextBytes: 100, ReasoningBytes: 25, Pieces: 10}, 0, 50, 12},
	} {
		if out, reasoning := crashOutput(tt.p, tt.cap); out != tt.out || reasoning != tt.reasoning {
			t.Errorf("%+v cap %d: %d, %d; want %d, %d", tt.p, tt.cap, out, reasoning, tt.out, tt.reasoning)
		}
	}
}

func TestReleaseCrashed(t *testing.T) {
	day, _ := spend.Bounds(spend.Day, time.Now())
	a, b := testHold(day), testHold(day)
	a.held, b.held = 100, 100
	yesterday := journalHold{counter: a.counter, start: day.AddDate(0, 0, -1), held: 10}
	states := []spend.CounterState{
		{Counter: a.counter, Start: day, Granted: 1000, Used: 100, Reserved: 300},
		{Counter: b.counter, Start: day, Granted: 1000, Used: 100, Reserved: 50},
	}
	all, changed := releaseCrashed(states, []crashedHold{
		// Each counter gives back what it held less the cost.
		{holds: []journalHold{a, b}, cost: 20},
		// A period the journal no longer counts: nothing.
		{holds: []journalHold{yesterday}},
		// Never more than a counter holds.
		{holds: []journalHold{b}, cost: 20},
	})
	if all[0].Reserved != 220 || all[1].Reserved != 0 || len(changed) != 2 || states[0].Reserved != 300 {
		t.Fatalf("released %+v (changed %+v); the input %+v", all, changed, states)
	}
	if _, changed := releaseCrashed(states, []crashedHold{{holds: []journalHold{yesterday}}}); changed != nil {
		t.Fatalf("changed %+v", changed)
	}
}

// BenchmarkRequestJournal measures what the journal adds to a request, in
// one run: "request" its record before the upstream call, its outcome
// and its release (stores to the mapping; two pwrite(2)s on Windows);
// "chunk" what a stream's chunk costs between ticks (no write).
//
//	go test -run '^$' -bench RequestJournal -benchmem ./server/dataplane
func BenchmarkRequestJournal(b *testing.B) {
	day, _ := spend.Bounds(spend.Day, time.Now())
	j, err := OpenRequestJournal(filepath.Join(b.TempDir(), "requests.journal"), RequestJournalOptions{ProgressEvery: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = j.Close() })
	r := testRecord(testHold(day))
	f := journalFinal{input: 19, output: 10, costNano: 8850, ok: true}
	b.Run("request", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s := j.acquire()
			s.open(&r)
			f.at = time.Now()
			s.finishing(f)
			s.release(false)
		}
	})
	b.Run("chunk", func(b *testing.B) {
		s := j.acquire()
		s.open(&r)
		ps := &fixedProgress{providers.Progress{TextBytes: 1, Pieces: 1}}
		s.progress(ps)
		b.ReportAllocs()
		for b.Loop() {
			ps.p.TextBytes++
			s.progress(ps)
		}
	})
}

func TestCrashInput(t *testing.T) {
	for _, tt := range []struct {
		s    inputShape
		want int64
	}{
		// A token per two bytes of the body…
		{inputShape{bytes: 1001}, 501},
		// …and the bound's allowances beyond the bytes: tool framing, an
		// attachment.
		{inputShape{bytes: 1000, tools: true}, 600},
		{inputShape{bytes: 1000, extra: attachmentTokens}, 500 + attachmentTokens},
		{inputShape{}, 0},
	} {
		if got := crashInput(tt.s, catalog.KindOpenAI); got != tt.want || got > tt.s.tokens(catalog.KindOpenAI) {
			t.Errorf("%+v: %d, want %d (never above the bound's %d)", tt.s, got, tt.want, tt.s.tokens(catalog.KindOpenAI))
		}
	}
}

// A batch line's record carries its batch, written after everything else
// so a synchronous request's record is byte for byte what earlier
// versions wrote (and read); a line that crashed at its upstream is
// priced at the batch prices and its event names the batch.
func TestRequestJournalBatchLine(t *testing.T) {
	r := testRecord()
	// One tag: a map's order is the runtime's choice, so two encodings of
	// several tags need not match byte for byte.
	r.tags = map[string]string{"team": "ads"}
	plain := encodeRecord(nil, 1, &r, dropNothing)
	r.batchID, r.batchKind = "batch_abc123", string(catalog.KindOpenAI)
	withBatch := encodeRecord(nil, 1, &r, dropNothing)
	if !bytes.HasPrefix(withBatch, plain) {
		t.Fatal("a batch line's record is not a synchronous record with the batch after it")
	}
	_, got, err := decodeRecord(withBatch)
	if err != nil || !reflect.DeepEqual(got, r) {
		t.Fatalf("read back %+v %v", got, err)
	}
	if _, got, err := decodeRecord(plain); err != nil || got.batchID != "" {
		t.Fatalf("a synchronous record: %q %v", got.batchID, err)
	}
	if _, _, err := decodeRecord(append(plain, 0, 0)); err == nil {
		t.Fatal("an empty batch id reads")
	}
	// Crashed at its upstream before any progress: the admission's input
	// and the whole output cap, at gpt-4o-mini's synchronous prices (a
	// journalled line is one gw's runner sent, billed as a synchronous
	// request), naming its batch.
	line := remnant{rec: r}
	e, cost := crashedEvent(line)
	sync := r
	sync.batchID, sync.batchKind = "", ""
	_, syncCost := crashedEvent(remnant{rec: sync})
	if cost != syncCost || e.BatchID == nil || *e.BatchID != "batch_abc123" || e.Provenance.Prices.PriceClass != "" {
		t.Fatalf("a crashed batch line: cost %d (synchronous %d), batch %v, prices %+v", cost, syncCost, e.BatchID, e.Provenance.Prices)
	}
}
