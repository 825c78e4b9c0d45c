package dataplane

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/wire"
)

// RequestJournal keeps, on disk, the requests a data plane has sent
// upstream and not yet seen billed, so that a process killed at any
// instant (SIGKILL, the OOM killer, a crash) leaves, at its next start,
// one usage event per such request, and its budget reservation settled to
// what it cost rather than to its bound (docs/budgets.md, "A crash").
//
// The file is an array of fixed-size slots, one per request in flight,
// each overwritten in place with pwrite(2) and never fsynced: a killed
// process's writes are in the page cache, which the next process reads.
// (A machine that loses power may come back with slots that miss their
// last writes, or torn ones; each part of a slot carries a checksum, and
// a torn part is read as never written.) A request costs two small
// writes, and a stream a few more, none per chunk:
//
//   - open, before the request goes upstream (again for each fallback
//     attempt): who sent it, the model and its prices, the reservation it
//     holds and against which budget counters, its tags;
//   - progress, at most once per tick (100 ms) of a stream's chunks, and
//     at its first chunk and its first text: what the upstream reported
//     of the input and what was relayed (bytes of text, deltas). A crash
//     loses at most the last tick's chunks;
//   - finishing, before finish settles the reservation: the outcome, its
//     tokens and cost.
//
// The slot is free for another request once the usage event is durable:
// at once for a sink that writes before Record returns (a remote plane's
// spool), when the database has it for one that buffers (StoreSink,
// AwaitStored; the sink's goroutine then marks it free on disk too). A
// slot freed on the request's path is not written again until reused: a
// crash leaves it finishing, and the next start records its event once
// more, which ingestion, idempotent on the event id, stores once. An
// orderly Close empties the file.
//
// At the next start the slots left are the remnants. An open one is a
// request the process died in: its event is an error, reason crashed,
// usage_source estimated, the input the upstream reported (else
// crashInput's count of the body) and the output relayed (crashOutput),
// priced at the prices it was admitted at; its reservation releases what its bound held
// beyond that cost. A finishing one ended but its event may not have been
// stored: it is recorded again with its outcome (ingestion is idempotent
// on the event id) and its reservation is left as the budget journal has
// it. The release is flagged in the slot before the budget journal hears
// of it, so a crash during recovery leaves a bound counted, never
// released twice.
//
// One process per journal, as for the budget journal beside it.
type RequestJournal struct {
	path        string
	log         *slog.Logger
	awaitStored bool
	f           *os.File

	// tick advances every ProgressEvery; a stream writes its progress
	// when the tick has moved since its last write.
	tick atomic.Int64
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	slots   []*journalSlot
	free    []*journalSlot
	waiting map[uuid.UUID]*journalSlot
	seq     uint64
	// inUse counts the slots taken: by a request, a remnant, or an event
	// the sink has not stored.
	inUse int
	// remnants are what the last process left, until recoverRemnants
	// hands them to the sink.
	remnants []remnant
	broken   atomic.Bool
}

// RequestJournalOptions configure a RequestJournal.
type RequestJournalOptions struct {
	// AwaitStored keeps a request's slot after its event is recorded,
	// until Stored says the event is durable: for a sink that buffers
	// (StoreSink). Without it a slot is freed once Record returns.
	AwaitStored bool
	// ProgressEvery is the tick of progress writes (100 ms when 0).
	ProgressEvery time.Duration
	Logger        *slog.Logger
}

// The file: a header, then slots of slotSize bytes.
const (
	requestJournalMagic = "gw-request-journal 1\n"
	journalHeaderSize   = 64
	slotSize            = 8 << 10
)

// A slot's layout. The header says whether the slot is in use; the parts
// after it each carry the slot's sequence number and a checksum, so that
// a part from an earlier use, or a torn one, is told apart.
const (
	slotMagic    = "gwRQ"
	offState     = 4
	offFlags     = 5
	offSeq       = 8
	offProgress  = 16
	progressSize = 80
	offFinal     = offProgress + progressSize
	finalSize    = 176
	offRecord    = offFinal + finalSize
	recordHead   = 8 // length and checksum
	maxRecord    = slotSize - offRecord - recordHead
	maxReason    = 64
	maxFailure   = 32
)

// Slot states.
const (
	slotFree byte = iota
	// slotOpen: the request is at an upstream.
	slotOpen
	// slotFinishing: finish has its outcome; the event may not be stored.
	slotFinishing
)

// Slot flags.
const (
	// flagSettled: a recovery released the reservation already.
	flagSettled byte = 1 << iota
	// flagPartial: the record did not fit its slot whole; tags, earlier
	// attempts or budget names were left out (see encodeRecord).
	flagPartial
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// journalSlot is one slot: owned by its request from acquire to
// recorded, then by whoever frees it.
type journalSlot struct {
	j     *RequestJournal
	index int
	seq   uint64
	state byte
	flags byte
	// buf is the slot's bytes from its start to the record's end, as last
	// written.
	buf []byte
	// tick is the journal tick of the last progress write (-1: none yet),
	// last the progress it wrote.
	tick int64
	last providers.Progress
	id   uuid.UUID
	// holds and budgets are scratch space for the record, reused.
	holds   []journalHold
	budgets []journalBudget
}

// OpenRequestJournal reads the journal at path, keeping what a previous
// process left (the remnants, handed to a plane by NewPlane), and opens
// it for this process. A journal that cannot be read is set aside with a
// warning: its requests are not billed, and their reservations stay
// counted at their bounds.
func OpenRequestJournal(path string, opts RequestJournalOptions) (*RequestJournal, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	every := opts.ProgressEvery
	if every <= 0 {
		every = 100 * time.Millisecond
	}
	j := &RequestJournal{path: path, log: log, awaitStored: opts.AwaitStored, waiting: map[uuid.UUID]*journalSlot{},
		stop: make(chan struct{}), done: make(chan struct{})}
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read request journal: %w", err)
	default:
		if err := j.parse(raw); err != nil {
			log.Warn("request journal unreadable; the requests it held are not billed, and their reservations stay counted at their bounds",
				"path", path, "error", err)
			j.remnants = nil
		}
	}
	// The file is rewritten with the remnants in its first slots.
	buf := make([]byte, journalHeaderSize, journalHeaderSize+len(j.remnants)*slotSize)
	copy(buf, requestJournalMagic)
	for i, r := range j.remnants {
		s := r.slot
		s.index = i
		buf = append(buf, s.buf...)
		buf = append(buf, make([]byte, slotSize-len(s.buf))...)
		j.seq = max(j.seq, s.seq)
		j.slots = append(j.slots, s)
	}
	j.inUse = len(j.remnants)
	if err := writeFileAtomic(path, buf); err != nil {
		return nil, fmt.Errorf("write request journal: %w", err)
	}
	if j.f, err = os.OpenFile(path, os.O_RDWR, 0o600); err != nil {
		return nil, fmt.Errorf("open request journal: %w", err)
	}
	go j.run(every)
	return j, nil
}

// parse reads the slots in use from a journal's bytes; one whose record
// does not read (a torn write) is left out with a warning.
func (j *RequestJournal) parse(raw []byte) error {
	if len(raw) < journalHeaderSize || string(raw[:len(requestJournalMagic)]) != requestJournalMagic {
		return errors.New("not a request journal")
	}
	for off := journalHeaderSize; off < len(raw); off += slotSize {
		s := readSlot(raw[off:min(off+slotSize, len(raw))])
		if s == nil {
			continue
		}
		_, rec, err := decodeRecord(s.buf[offRecord+recordHead:])
		if err != nil {
			j.log.Warn("request journal: a slot that does not read is skipped; its request is not billed", "error", err)
			continue
		}
		s.j, s.id = j, rec.id
		r := remnant{slot: s, rec: rec, progress: readProgress(s.buf[offProgress:offProgress+progressSize], s.seq)}
		if s.state == slotFinishing {
			r.final, r.finished = readFinal(s.buf[offFinal:offFinal+finalSize], s.seq)
		}
		j.remnants = append(j.remnants, r)
	}
	return nil
}

// readSlot returns the slot in b if it is in use and its record reads,
// nil otherwise.
func readSlot(b []byte) *journalSlot {
	if len(b) < offRecord+recordHead || string(b[:4]) != slotMagic {
		return nil
	}
	s := &journalSlot{state: b[offState], flags: b[offFlags], seq: binary.LittleEndian.Uint64(b[offSeq:]), tick: -1}
	if s.state != slotOpen && s.state != slotFinishing {
		return nil
	}
	n := int(binary.LittleEndian.Uint32(b[offRecord:]))
	if n > maxRecord || offRecord+recordHead+n > len(b) {
		return nil
	}
	rec := b[offRecord+recordHead : offRecord+recordHead+n]
	if crc32.Checksum(rec, crcTable) != binary.LittleEndian.Uint32(b[offRecord+4:]) || partSeq(rec) != s.seq {
		return nil
	}
	s.buf = append([]byte(nil), b[:offRecord+recordHead+n]...)
	return s
}

// partSeq is the sequence number a part starts with.
func partSeq(p []byte) uint64 {
	if len(p) < 8 {
		return 0
	}
	return binary.LittleEndian.Uint64(p)
}

// validPart says whether part p (its checksum in its last four bytes) was
// written whole for the slot's current use.
func validPart(p []byte, seq uint64) bool {
	body := p[:len(p)-4]
	return partSeq(body) == seq && crc32.Checksum(body, crcTable) == binary.LittleEndian.Uint32(p[len(p)-4:])
}

func sealPart(p []byte) {
	body := p[:len(p)-4]
	binary.LittleEndian.PutUint32(p[len(p)-4:], crc32.Checksum(body, crcTable))
}

// run advances the tick until Close.
func (j *RequestJournal) run(every time.Duration) {
	defer close(j.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-j.stop:
			return
		case <-t.C:
			j.tick.Add(1)
		}
	}
}

// Close stops the ticks and closes the file. Once every request has
// ended and every event is durable, the file is emptied: nothing is left
// for the next process. Otherwise what is in it stays.
func (j *RequestJournal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	select {
	case <-j.stop:
		return nil
	default:
	}
	close(j.stop)
	<-j.done
	if j.broken.Swap(true) {
		return j.f.Close()
	}
	var err error
	if j.inUse == 0 {
		err = j.f.Truncate(journalHeaderSize)
	}
	return errors.Join(err, j.f.Close())
}

// fail gives the journal up after a write failed: the file is removed, so
// the next process does not bill requests that may have ended, nor
// release reservations that may have settled. Until then, requests are
// served unjournaled: a crash leaves their reservations at their bounds
// and their events missing.
func (j *RequestJournal) fail(err error) {
	if j.broken.Swap(true) {
		return
	}
	j.log.Error("request journal write failed; it is dropped, and requests in flight at a crash of this process will not be billed",
		"path", j.path, "error", err)
	_ = os.Remove(j.path)
}

// acquire takes a free slot, or a new one at the end of the file.
func (j *RequestJournal) acquire() *journalSlot {
	if j.broken.Load() {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	var s *journalSlot
	if n := len(j.free); n > 0 {
		s, j.free = j.free[n-1], j.free[:n-1]
	} else {
		s = &journalSlot{j: j, index: len(j.slots), buf: make([]byte, 0, 1024)}
		j.slots = append(j.slots, s)
	}
	j.seq++
	j.inUse++
	s.seq, s.state, s.flags, s.tick, s.last = j.seq, slotOpen, 0, -1, providers.Progress{}
	return s
}

func (s *journalSlot) offset() int64 { return journalHeaderSize + int64(s.index)*slotSize }

// write writes buf[from:to] of the slot.
func (s *journalSlot) write(from, to int) {
	if s.j.broken.Load() {
		return
	}
	if _, err := s.j.f.WriteAt(s.buf[from:to], s.offset()+int64(from)); err != nil {
		s.j.fail(err)
	}
}

// release frees the slot for another request; onDisk marks it free in the
// file too (off a request's path: see RequestJournal).
func (s *journalSlot) release(onDisk bool) {
	j := s.j
	if onDisk && !j.broken.Load() {
		if _, err := j.f.WriteAt([]byte{slotFree}, s.offset()+offState); err != nil {
			j.fail(err)
		}
	}
	j.mu.Lock()
	s.state = slotFree
	j.free = append(j.free, s)
	j.inUse--
	j.mu.Unlock()
}

// Stored frees the slots of events the sink has made durable, or has
// given up on (StoreSinkOptions.Stored).
func (j *RequestJournal) Stored(events []wire.UsageEventIn) {
	var done []*journalSlot
	j.mu.Lock()
	for i := range events {
		if s, ok := j.waiting[events[i].ID]; ok {
			delete(j.waiting, events[i].ID)
			done = append(done, s)
		}
	}
	j.mu.Unlock()
	for _, s := range done {
		s.release(true)
	}
}

// await has the slot freed when Stored names its event.
func (s *journalSlot) await() {
	s.j.mu.Lock()
	s.j.waiting[s.id] = s
	s.j.mu.Unlock()
}

// header writes the slot's header into buf.
func (s *journalSlot) header() {
	b := s.buf[:offProgress]
	copy(b, slotMagic)
	b[offState], b[offFlags], b[6], b[7] = s.state, s.flags, 0, 0
	binary.LittleEndian.PutUint64(b[offSeq:], s.seq)
}

// progress records what a stream has relayed: at its first chunk and at
// its first text, then at most once per tick. Nothing else happens per
// chunk.
func (s *journalSlot) progress(ps providers.ProgressStream) {
	if s == nil || ps == nil {
		return
	}
	t := s.j.tick.Load()
	if t == s.tick && s.last.Pieces > 0 {
		return
	}
	s.tick = t
	p := ps.Progress()
	if p == s.last {
		return
	}
	s.last = p
	s.putProgress(time.Now())
	s.write(offProgress, offProgress+progressSize)
}

// putProgress encodes the progress part: seq, time, the counts, the
// input reported, checksum.
func (s *journalSlot) putProgress(now time.Time) {
	b := s.buf[offProgress : offProgress+progressSize]
	p := s.last
	le := binary.LittleEndian
	le.PutUint64(b[0:], s.seq)
	le.PutUint64(b[8:], uint64(now.UnixMilli()))
	for i, v := range [...]int64{p.TextBytes, p.ReasoningBytes, p.Pieces, p.Input, p.CacheRead, p.CacheWrite, p.CacheWrite1h} {
		le.PutUint64(b[16+8*i:], uint64(v))
	}
	b[72], b[73], b[74], b[75] = 0, 0, 0, 0
	if p.InputReported {
		b[72] = 1
	}
	sealPart(b)
}

// journalProgress is a progress part as read back.
type journalProgress struct {
	at   time.Time
	p    providers.Progress
	some bool
}

func readProgress(b []byte, seq uint64) journalProgress {
	if !validPart(b, seq) {
		return journalProgress{}
	}
	le := binary.LittleEndian
	var v [7]int64
	for i := range v {
		v[i] = int64(le.Uint64(b[16+8*i:]))
	}
	return journalProgress{at: time.UnixMilli(int64(le.Uint64(b[8:]))), some: true, p: providers.Progress{
		TextBytes: v[0], ReasoningBytes: v[1], Pieces: v[2], Input: v[3], CacheRead: v[4], CacheWrite: v[5], CacheWrite1h: v[6],
		InputReported: b[72] == 1}}
}

// journalFinal is how a request ended, as finish recorded it before
// settling.
type journalFinal struct {
	at                                                 time.Time
	input, output, cacheRead, cacheWrite, cacheWrite1h int64
	reasoning, costNano                                int64
	ok, estimated                                      bool
	reason, failure                                    string
}

// finishing records the request's outcome before its reservation settles.
func (s *journalSlot) finishing(f journalFinal) {
	s.state = slotFinishing
	s.header()
	s.putProgress(time.Now())
	b := s.buf[offFinal : offFinal+finalSize]
	le := binary.LittleEndian
	le.PutUint64(b[0:], s.seq)
	le.PutUint64(b[8:], uint64(f.at.UnixMilli()))
	for i, v := range [...]int64{f.input, f.output, f.cacheRead, f.cacheWrite, f.cacheWrite1h, f.reasoning, f.costNano} {
		le.PutUint64(b[16+8*i:], uint64(v))
	}
	b[72], b[73] = 0, 0
	if f.ok {
		b[72] = 1
	}
	if f.estimated {
		b[73] = 1
	}
	reason, failure := f.reason[:min(len(f.reason), maxReason)], f.failure[:min(len(f.failure), maxFailure)]
	b[74], b[75] = byte(len(reason)), byte(len(failure))
	clear(b[76 : finalSize-4])
	copy(b[76:], reason)
	copy(b[76+maxReason:], failure)
	sealPart(b)
	s.write(0, offRecord)
}

func readFinal(b []byte, seq uint64) (journalFinal, bool) {
	if !validPart(b, seq) || int(b[74]) > maxReason || int(b[75]) > maxFailure {
		return journalFinal{}, false
	}
	le := binary.LittleEndian
	var v [7]int64
	for i := range v {
		v[i] = int64(le.Uint64(b[16+8*i:]))
	}
	return journalFinal{at: time.UnixMilli(int64(le.Uint64(b[8:]))), input: v[0], output: v[1], cacheRead: v[2], cacheWrite: v[3],
		cacheWrite1h: v[4], reasoning: v[5], costNano: v[6], ok: b[72] == 1, estimated: b[73] == 1,
		reason: string(b[76 : 76+int(b[74])]), failure: string(b[76+maxReason : 76+maxReason+int(b[75])])}, true
}

// open writes the slot for an attempt about to go upstream: its header,
// no progress, no outcome, and r. It reports false, having written
// nothing, when r cannot fit even without what may be left out (model
// names of kilobytes): the request goes unjournaled.
func (s *journalSlot) open(r *journalRecord) bool {
	s.id = r.id
	s.state, s.flags, s.tick, s.last = slotOpen, 0, -1, providers.Progress{}
	s.buf = s.buf[:offRecord+recordHead]
	clear(s.buf[offProgress:])
	s.putProgress(time.Now())
	drop := dropNothing
	for {
		s.buf = encodeRecord(s.buf[:offRecord+recordHead], s.seq, r, drop)
		if len(s.buf) <= offRecord+recordHead+maxRecord || drop == dropAll {
			break
		}
		drop++
	}
	rec := s.buf[offRecord+recordHead:]
	if len(rec) > maxRecord {
		s.j.log.Warn("a request's journal record does not fit its slot; a crash would leave it unbilled", "request_id", r.id)
		return false
	}
	if drop > dropNothing {
		s.flags |= flagPartial
		s.j.log.Warn("a request's journal record was cut to fit its slot; a crash would bill it without some of its details",
			"request_id", r.id, "left_out", dropNames[drop])
	}
	s.header()
	binary.LittleEndian.PutUint32(s.buf[offRecord:], uint32(len(rec)))
	binary.LittleEndian.PutUint32(s.buf[offRecord+4:], crc32.Checksum(rec, crcTable))
	s.write(0, len(s.buf))
	return true
}

// dropNames say what a cut record left out, for the log.
var dropNames = [...]string{dropBudgetNames: "budget names", dropAttempts: "budget names and earlier attempts",
	dropTags: "budget names, earlier attempts and tags", dropAll: "budget names, earlier attempts, tags and the reservation"}

// markSettled flags a remnant's reservation as released.
func (s *journalSlot) markSettled() {
	s.flags |= flagSettled
	s.buf[offFlags] = s.flags
	s.write(offFlags, offFlags+1)
}

// errShortRecord is a record that ends before its fields do.
var errShortRecord = io.ErrUnexpectedEOF
