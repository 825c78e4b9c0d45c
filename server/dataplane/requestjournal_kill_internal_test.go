package dataplane

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/spend"
	"github.com/gw-gateway/gw/wire"
)

// leftEvent is what a slot leaves the next start: the event it records,
// its cost, whether its reservation is released (open, not settled), and
// whether a recovery released it already.
type leftEvent struct {
	event            wire.UsageEventIn
	cost             int64
	releases, settle bool
}

// leaves reads a journal's bytes as the next start does.
func leaves(t *testing.T, raw []byte) []leftEvent {
	t.Helper()
	j := &RequestJournal{log: slog.New(slog.DiscardHandler)}
	if err := j.parse(raw); err != nil {
		t.Fatal(err)
	}
	var out []leftEvent
	for _, r := range j.remnants {
		e, cost := crashedEvent(r)
		out = append(out, leftEvent{event: e, cost: cost, releases: r.slot.state == slotOpen, settle: r.slot.flags&flagSettled != 0})
	}
	slices.SortFunc(out, func(a, b leftEvent) int { return strings.Compare(a.event.ID.String(), b.event.ID.String()) })
	return out
}

func readJournal(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// slotWrite is one store to a slot: where in the file, what.
type slotWrite struct {
	off int64
	b   []byte
}

// TestRequestJournalKilledMidWrite: a process killed at any instant of a
// step (SIGKILL stops a copy into the mapping half-way, which it never
// does to a pwrite) leaves what the slot said before the step, or once
// its state word has it, what it says after: never a torn part that
// counts. Each step's stores are replayed onto the file as it was before
// the step, stopped before each store, one byte into it, half-way and one
// byte short of its end; a four-byte word is stored at once.
func TestRequestJournalKilledMidWrite(t *testing.T) {
	day, _ := spend.Bounds(spend.Day, time.Now())
	hold := testHold(day)
	record := func() *journalRecord { r := testRecord(hold); return &r }
	streamed := func(t *testing.T, j *RequestJournal) *journalSlot {
		s := openSlot(t, j, record())
		ps := &fixedProgress{providers.Progress{TextBytes: 10, Pieces: 3}}
		s.progress(ps)
		j.tick.Add(1)
		ps.p = providers.Progress{TextBytes: 40, Pieces: 9, Input: 321, InputReported: true}
		s.progress(ps)
		return s
	}
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, j *RequestJournal) *journalSlot
		step  func(s *journalSlot)
	}{
		{"open a new slot", func(t *testing.T, j *RequestJournal) *journalSlot { return j.acquire() },
			func(s *journalSlot) { s.open(record()) }},
		{"open the slot of a request freed without a write", func(t *testing.T, j *RequestJournal) *journalSlot {
			s := openSlot(t, j, record())
			s.finishing(journalFinal{at: time.Now(), input: 2, output: 2, costNano: 1500, ok: true})
			s.release(false)
			return j.acquire()
		}, func(s *journalSlot) { s.open(record()) }},
		{"open a fallback attempt of a stream", streamed, func(s *journalSlot) {
			r := record()
			r.id, r.model, r.attempts = s.id, "anthropic/claude-haiku-4-5", nil
			s.open(r)
		}},
		{"progress", streamed, func(s *journalSlot) {
			s.j.tick.Add(1)
			s.progress(&fixedProgress{providers.Progress{TextBytes: 400, ReasoningBytes: 100, Pieces: 90, Input: 321, InputReported: true}})
		}},
		{"finishing", streamed, func(s *journalSlot) {
			s.finishing(journalFinal{at: time.Now(), input: 321, output: 200, costNano: 321*150 + 200*600, ok: true, reason: "stop"})
		}},
		{"settled by a recovery", streamed, func(s *journalSlot) { s.markSettled() }},
		{"freed once stored", func(t *testing.T, j *RequestJournal) *journalSlot {
			s := streamed(t, j)
			s.finishing(journalFinal{at: time.Now(), input: 321, output: 20, costNano: 321*150 + 20*600, ok: true})
			return s
		}, func(s *journalSlot) { s.markFree() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			eachJournalStore(t, func(t *testing.T, jc journalCase) {
				path := filepath.Join(t.TempDir(), "requests.journal")
				j := jc.open(t, path, false)
				// A neighbour, which no step may touch.
				openSlot(t, j, record())
				s := tt.setup(t, j)
				before := readJournal(t, path)
				var writes []slotWrite
				j.observe = func(off int64, b []byte) { writes = append(writes, slotWrite{off, b}) }
				tt.step(s)
				j.observe = nil
				after := readJournal(t, path)
				wantBefore, wantAfter := leaves(t, before), leaves(t, after)
				if reflect.DeepEqual(wantBefore, wantAfter) {
					t.Fatal("the step changes nothing a kill leaves")
				}
				// The step counts once its last word is stored (a progress
				// part, which no word follows, once it is whole).
				commit := len(writes) - 1
				for k, w := range writes {
					if len(w.b) == 4 {
						commit = k
					}
				}
				// A pwrite past the end grows the file: read as zeros before.
				img := append(bytes.Clone(before), make([]byte, max(0, len(after)-len(before)))...)
				for k, w := range writes {
					cuts := []int{0, 1, len(w.b) / 2, len(w.b) - 1}
					if len(w.b) == 4 {
						cuts = []int{0}
					}
					for _, c := range cuts {
						cut := bytes.Clone(img)
						copy(cut[w.off:], w.b[:c])
						want, when := wantBefore, "before"
						if k > commit {
							want, when = wantAfter, "after"
						}
						if got := leaves(t, cut); !reflect.DeepEqual(got, want) {
							t.Fatalf("killed %d bytes into store %d of %d (%d bytes at %d): leaves %+v, not what the slot said %s the step, %+v",
								c, k, len(writes), len(w.b), w.off, got, when, want)
						}
					}
					copy(img[w.off:], w.b)
				}
				if !bytes.Equal(img[:len(after)], after) {
					t.Fatal("the stores observed are not the step's")
				}
			})
		})
	}
}

// v1Slot is a slot of the first layout, as gw wrote it before the
// mapping: header (state, flags, seq), one progress part, the outcome,
// the record.
func v1Slot(state, flags byte, seq uint64, rec []byte, p *journalProgress, f *journalFinal) []byte {
	b := make([]byte, slotSize1)
	le := binary.LittleEndian
	copy(b, slotMagic)
	b[offState], b[offFlags1] = state, flags
	le.PutUint64(b[offSeq1:], seq)
	if p != nil {
		pp := b[offProgress1 : offProgress1+progressSize1]
		le.PutUint64(pp[0:], seq)
		le.PutUint64(pp[8:], uint64(p.at.UnixMilli()))
		for i, v := range [...]int64{p.p.TextBytes, p.p.ReasoningBytes, p.p.Pieces, p.p.Input, p.p.CacheRead, p.p.CacheWrite, p.p.CacheWrite1h} {
			le.PutUint64(pp[16+8*i:], uint64(v))
		}
		if p.p.InputReported {
			pp[72] = 1
		}
		sealPart(pp)
	}
	if f != nil {
		putFinal(b[offFinal1:offFinal1+finalSize], seq, *f)
	}
	le.PutUint32(b[offRecord1:], uint32(len(rec)))
	le.PutUint32(b[offRecord1+4:], crc32.Checksum(rec, crcTable))
	copy(b[offRecord1+recordHead1:], rec)
	return b
}

// TestRequestJournalReadsTheFirstLayout: a journal an earlier gw left
// (gw-request-journal 1) is read at the start, each remnant as that gw
// read it, then rewritten in the current layout: killed again at once,
// the process after leaves the same.
func TestRequestJournalReadsTheFirstLayout(t *testing.T) {
	eachJournalStore(t, func(t *testing.T, jc journalCase) {
		day, _ := spend.Bounds(spend.Day, time.Now())
		hold := testHold(day)
		recs := make([]journalRecord, 5)
		for i := range recs {
			recs[i] = testRecord(hold)
		}
		at := time.UnixMilli(time.Now().UnixMilli())
		stream := journalProgress{at: at, some: true, p: providers.Progress{TextBytes: 40, Pieces: 9, Input: 321, CacheRead: 20, InputReported: true}}
		final := journalFinal{at: at, input: 300, output: 50, reasoning: 5, costNano: 300*150 + 50*600, ok: true}
		raw := make([]byte, journalHeaderSize)
		copy(raw, requestJournalMagic1)
		raw = append(raw, v1Slot(slotOpen, 0, 11, encodeRecord(nil, 11, &recs[0], dropNothing), &stream, nil)...)
		raw = append(raw, v1Slot(slotFinishing, 0, 12, encodeRecord(nil, 12, &recs[1], dropNothing), &stream, &final)...)
		raw = append(raw, v1Slot(slotOpen, flagSettled, 13, encodeRecord(nil, 13, &recs[2], dropNothing), nil, nil)...)
		raw = append(raw, v1Slot(slotFree, 0, 14, encodeRecord(nil, 14, &recs[3], dropNothing), nil, nil)...)
		torn := v1Slot(slotFinishing, 0, 15, encodeRecord(nil, 15, &recs[4], dropNothing), &stream, &final)
		torn[offFinal1+20] ^= 0xff
		raw = append(raw, torn...)
		path := filepath.Join(t.TempDir(), "requests.journal")
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		want := leaves(t, raw)
		if len(want) != 4 {
			t.Fatalf("%d remnants of the first layout, want 4", len(want))
		}
		for _, l := range want {
			e := l.event
			switch e.ID {
			case recs[0].id:
				if !l.releases || *e.Reason != reasonCrashed || e.InputTokens != 321 || e.CacheReadTokens != 20 || e.OutputTokens != 20 {
					t.Fatalf("the stream's %+v", l)
				}
			case recs[1].id:
				if l.releases || e.Status != statusOK || e.OutputTokens != 50 || e.ReasoningTokens != 5 {
					t.Fatalf("the ended request's %+v", l)
				}
			case recs[2].id:
				if !l.releases || !l.settle || e.InputTokens != 500 {
					t.Fatalf("the settled request's %+v", l)
				}
			case recs[4].id:
				// Its outcome torn: in flight, not released (it may have
				// settled).
				if l.releases || *e.Reason != reasonCrashed {
					t.Fatalf("the torn outcome's %+v", l)
				}
			default:
				t.Fatalf("a remnant of %s", e.ID)
			}
		}
		j := jc.open(t, path, false)
		if got := leaves(t, readJournal(t, path)); !reflect.DeepEqual(got, want) {
			t.Fatalf("rewritten, the journal leaves %+v\nnot %+v", got, want)
		}
		if raw := readJournal(t, path); !strings.HasPrefix(string(raw), requestJournalMagic) {
			t.Fatalf("not rewritten in the current layout: %q", raw[:len(requestJournalMagic)])
		}
		// The remnants' slots serve new requests once recovered.
		j.recoverRemnants(&memorySink{}, j.log)
		for range 5 {
			openSlot(t, j, &recs[3])
		}
		if got := leaves(t, readJournal(t, path)); len(got) != 5 {
			t.Fatalf("%d slots in use, want the 5 new requests'", len(got))
		}
	})
}

var _ = uuid.Nil
