package dataplane

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

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
// each overwritten in place and never fsynced: a killed process's writes
// are in the page cache, which the next process reads. On unix the file
// is a shared memory map (requestjournal_mmap.go), so a request's writes
// are stores to memory, no system call at all; elsewhere (Windows) each
// step is one pwrite(2) (journalWriteAt). A request writes, none of it
// per chunk:
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
// A pwrite is never torn by a kill, but a copy into a mapping can be
// stopped half-way. So nothing is overwritten that the slot still
// counts on: each part (a record, the outcome, a progress) carries its
// request's sequence number and a checksum and is written whole before
// one aligned four-byte store of the slot's state word makes it count.
// The record has two areas, and a new attempt is written to the one the
// state word does not name; progress has two parts, written in turn,
// each with its own count, and the reader takes the newer whole one. A
// kill at any instant thus leaves either what the slot said before a
// step or what it said after it, as a pwrite would. (A machine that
// loses power may come back with slots that miss their last writes, or
// torn ones; a torn part is read as never written.)
//
// The slot is free for another request once the usage event is durable:
// at once for a sink that writes before Record returns, when the database
// or the file has it for one that buffers (StoreSink, a remote plane's
// spool with GroupWrites; AwaitStored: the sink's goroutine then marks it
// free on disk too). A
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
// released twice. A journal of the first layout (gw-request-journal 1,
// written with pwrite alone) is read the same way and rewritten in this
// one.
//
// One process per journal, as for the budget journal beside it.
type RequestJournal struct {
	path        string
	log         *slog.Logger
	awaitStored bool
	store       journalStore

	// tick advances every ProgressEvery; a stream writes its progress
	// when the tick has moved since its last write.
	tick atomic.Int64
	stop chan struct{}
	done chan struct{}
	// seq numbers the attempts written: each open takes the next.
	seq atomic.Uint64

	mu      sync.Mutex
	slots   []*journalSlot
	free    []*journalSlot
	waiting map[uuid.UUID]*journalSlot
	// inUse counts the slots taken: by a request, a remnant, or an event
	// the sink has not stored.
	inUse int
	// remnants are what the last process left, until recoverRemnants
	// hands them to the sink.
	remnants []remnant
	broken   atomic.Bool

	// observe, when set (tests), sees every store to a slot, in order:
	// the file offset and the bytes.
	observe func(off int64, b []byte)
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

	// writeAt writes with pwrite(2) where the file would be mapped, so
	// that tests run both ways on one system.
	writeAt bool
}

// The file: a header, then slots of slotSize bytes.
const (
	requestJournalMagic = "gw-request-journal 2\n"
	journalHeaderSize   = 64
	slotSize            = 16 << 10
)

// A slot's layout. The state word names the slot's state and the record
// area that counts; each part after it carries the sequence number of
// the attempt it belongs to and a checksum, so that a part of an earlier
// attempt, or a torn one, is told apart.
const (
	slotMagic = "gwRQ"
	// offState is the state word: its first byte the state, with
	// stateAreaB when the record is in the second area; the other three
	// zero. Stored with one aligned four-byte store.
	offState      = 4
	offProgress   = 16
	progressSize  = 88
	offFinal      = offProgress + 2*progressSize
	finalSize     = 176
	offArea       = offFinal + finalSize
	recordHead    = 12 // the flags word, length and checksum
	maxRecord     = 8<<10 - 280
	areaSize      = recordHead + maxRecord
	maxReason     = 64
	maxFailure    = 32
	stateAreaB    = 0x10
	stateMask     = 0x0f
	recordFlagOff = 0
)

// Slot states.
const (
	slotFree byte = iota
	// slotOpen: the request is at an upstream.
	slotOpen
	// slotFinishing: finish has its outcome; the event may not be stored.
	slotFinishing
)

// Slot flags, in the record area's flags word.
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
	// mem is the slot's bytes: the file's own where it is mapped, else a
	// copy whose changes store.flush writes.
	mem   []byte
	seq   uint64
	state byte
	flags byte
	// area is the record area the state word names; part the progress
	// part written last, count the progress writes.
	area, part int
	count      uint64
	// lo and hi bound what changed since the last flush.
	lo, hi int
	// tick is the journal tick of the last progress write (-1: none yet),
	// last the progress it wrote.
	tick int64
	last providers.Progress
	id   uuid.UUID
	// rec and scratch are space for the record and a part, reused;
	// holds and budgets for the record's lists.
	rec     []byte
	scratch [finalSize]byte
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
	// The file is rewritten, in this layout, with the remnants in its
	// first slots.
	buf := make([]byte, journalHeaderSize+len(j.remnants)*slotSize)
	copy(buf, requestJournalMagic)
	for i := range j.remnants {
		r := &j.remnants[i]
		r.slot.index = i
		encodeRemnant(buf[journalHeaderSize+i*slotSize:][:slotSize], r)
		if r.slot.seq > j.seq.Load() {
			j.seq.Store(r.slot.seq)
		}
	}
	if err := writeFileAtomic(path, buf); err != nil {
		return nil, fmt.Errorf("write request journal: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open request journal: %w", err)
	}
	if opts.writeAt {
		j.store = newJournalWriteAt(f, buf)
	} else if j.store, err = newJournalStore(f, buf); err != nil {
		f.Close()
		return nil, fmt.Errorf("open request journal: %w", err)
	}
	for i := range j.remnants {
		s := j.remnants[i].slot
		if s.mem, err = j.store.slot(i); err != nil {
			_ = j.store.close(false)
			return nil, fmt.Errorf("open request journal: %w", err)
		}
		j.slots = append(j.slots, s)
	}
	j.inUse = len(j.remnants)
	go j.run(every)
	return j, nil
}

// parse reads the slots in use from a journal's bytes, of either layout;
// one whose record does not read (a torn write) is left out with a
// warning.
func (j *RequestJournal) parse(raw []byte) error {
	size, read := slotSize, readSlot
	switch {
	case len(raw) >= journalHeaderSize && string(raw[:len(requestJournalMagic)]) == requestJournalMagic:
	case len(raw) >= journalHeaderSize && string(raw[:len(requestJournalMagic1)]) == requestJournalMagic1:
		size, read = slotSize1, readSlot1
	default:
		return errors.New("not a request journal")
	}
	for off := journalHeaderSize; off < len(raw); off += size {
		r, ok := read(raw[off:min(off+size, len(raw))])
		if !ok {
			continue
		}
		_, rec, err := decodeRecord(r.raw)
		if err != nil {
			j.log.Warn("request journal: a slot that does not read is skipped; its request is not billed", "error", err)
			continue
		}
		r.rec = rec
		r.slot.j, r.slot.id = j, rec.id
		j.remnants = append(j.remnants, r)
	}
	return nil
}

// readSlot returns the remnant in slot b if the slot is in use and its
// record is whole; the record is left to decode.
func readSlot(b []byte) (remnant, bool) {
	if len(b) < offArea+recordHead || string(b[:4]) != slotMagic {
		return remnant{}, false
	}
	state, area := b[offState]&stateMask, 0
	if b[offState]&stateAreaB != 0 {
		area = 1
	}
	if state != slotOpen && state != slotFinishing {
		return remnant{}, false
	}
	a := offArea + area*areaSize
	if len(b) < a+recordHead {
		return remnant{}, false
	}
	le := binary.LittleEndian
	n := int(le.Uint32(b[a+4:]))
	if n > maxRecord || a+recordHead+n > len(b) {
		return remnant{}, false
	}
	rec := b[a+recordHead : a+recordHead+n]
	if crc32.Checksum(rec, crcTable) != le.Uint32(b[a+8:]) {
		return remnant{}, false
	}
	s := &journalSlot{state: state, flags: b[a+recordFlagOff], seq: partSeq(rec), tick: -1}
	r := remnant{slot: s, raw: append([]byte(nil), rec...)}
	var count uint64
	for k := range 2 {
		off := offProgress + k*progressSize
		if p, c, ok := readProgress(b[off:off+progressSize], s.seq); ok && (!r.progress.some || c > count) {
			r.progress, count = p, c
		}
	}
	if state == slotFinishing {
		r.final, r.finished = readFinal(b[offFinal:offFinal+finalSize], s.seq)
	}
	return r, true
}

// encodeRemnant writes remnant r into slot b, zeroed, as this process's
// first write of it: its record in the first area, its progress in the
// first part.
func encodeRemnant(b []byte, r *remnant) {
	s := r.slot
	copy(b, slotMagic)
	b[offState] = s.state
	if r.progress.some {
		putProgress(b[offProgress:offProgress+progressSize], s.seq, 1, r.progress.at, r.progress.p)
		s.count = 1
	}
	if r.finished {
		putFinal(b[offFinal:offFinal+finalSize], s.seq, r.final)
	}
	putArea(b[offArea:offArea+areaSize], s.flags, r.raw)
	s.area, s.part = 0, 0
}

// putArea writes a record area: the flags word, the record's length and
// checksum, the record.
func putArea(b []byte, flags byte, rec []byte) {
	le := binary.LittleEndian
	le.PutUint32(b[recordFlagOff:], uint32(flags))
	le.PutUint32(b[4:], uint32(len(rec)))
	le.PutUint32(b[8:], crc32.Checksum(rec, crcTable))
	copy(b[recordHead:], rec)
}

// partSeq is the sequence number a part starts with.
func partSeq(p []byte) uint64 {
	if len(p) < 8 {
		return 0
	}
	return binary.LittleEndian.Uint64(p)
}

// validPart says whether part p (its checksum in its last four bytes) was
// written whole for the slot's current attempt.
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
// for the next process. Otherwise what is in it stays (and a mapping
// stays mapped, for the requests that still hold slots).
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
		return j.store.close(false)
	}
	return j.store.close(j.inUse == 0)
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

// recoverFault, deferred by each write as
// defer j.recoverFault(debug.SetPanicOnFault(true)), turns a fault on the
// mapping into a failed write: a store to a page the file system cannot
// back (a full disk) raises SIGBUS, which would otherwise kill the
// process. Other panics go on.
func (j *RequestJournal) recoverFault(was bool) {
	debug.SetPanicOnFault(was)
	if r := recover(); r != nil {
		j.fail(mapFault(r, "request journal"))
	}
}

// mapFault is the error a fault recovered from a store to a journal's
// mapping stands for (recoverFault, catchMapFault); any other panic goes
// on. (recover itself must be called by the deferred function.)
func mapFault(r any, journal string) error {
	if _, fault := r.(interface{ Addr() uintptr }); !fault {
		panic(r)
	}
	return fmt.Errorf("%s: %v", journal, r)
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
		mem, err := j.store.slot(len(j.slots))
		if err != nil {
			j.fail(err)
			return nil
		}
		s = &journalSlot{j: j, index: len(j.slots), mem: mem, rec: make([]byte, 0, 1024)}
		j.slots = append(j.slots, s)
	}
	j.inUse++
	s.tick, s.last = -1, providers.Progress{}
	return s
}

// put stores b at off in the slot. Parts are put whole before the state
// word that makes them count (see RequestJournal).
func (s *journalSlot) put(off int, b []byte) {
	copy(s.mem[off:], b)
	s.touch(off, off+len(b))
}

// putWord stores the four bytes at off (aligned) at once: a kill sees
// them all or none.
func (s *journalSlot) putWord(off int, b0 byte) {
	v := binary.NativeEndian.Uint32([]byte{b0, 0, 0, 0})
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&s.mem[off])), v)
	s.touch(off, off+4)
}

func (s *journalSlot) touch(from, to int) {
	if s.hi == 0 {
		s.lo, s.hi = from, to
	} else {
		s.lo, s.hi = min(s.lo, from), max(s.hi, to)
	}
	if o := s.j.observe; o != nil {
		o(journalHeaderSize+int64(s.index)*slotSize+int64(from), append([]byte(nil), s.mem[from:to]...))
	}
}

// flush hands what changed to the store: nothing to do for a mapping, a
// pwrite(2) otherwise.
func (s *journalSlot) flush() {
	if s.hi == 0 {
		return
	}
	lo, hi := s.lo, s.hi
	s.lo, s.hi = 0, 0
	if err := s.j.store.flush(s.index, s.mem, lo, hi); err != nil {
		s.j.fail(err)
	}
}

// stateByte is the state word's first byte for state.
func (s *journalSlot) stateByte(state byte) byte {
	if s.area == 1 {
		return state | stateAreaB
	}
	return state
}

// release frees the slot for another request; onDisk marks it free in the
// file too (off a request's path: see RequestJournal).
func (s *journalSlot) release(onDisk bool) {
	j := s.j
	if onDisk && !j.broken.Load() {
		s.markFree()
	}
	j.mu.Lock()
	s.state = slotFree
	j.free = append(j.free, s)
	j.inUse--
	j.mu.Unlock()
}

func (s *journalSlot) markFree() {
	defer s.j.recoverFault(debug.SetPanicOnFault(true))
	s.putWord(offState, s.stateByte(slotFree))
	s.flush()
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
	if s.j.broken.Load() {
		return
	}
	defer s.j.recoverFault(debug.SetPanicOnFault(true))
	s.writeProgress(time.Now())
	s.flush()
}

// writeProgress puts the progress into the part not written last: the
// other stays whole, whatever a kill does to this one.
func (s *journalSlot) writeProgress(now time.Time) {
	s.part = 1 - s.part
	s.count++
	b := s.scratch[:progressSize]
	putProgress(b, s.seq, s.count, now, s.last)
	s.put(offProgress+s.part*progressSize, b)
}

// putProgress encodes a progress part: seq, its count, time, the counts,
// the input reported, checksum.
func putProgress(b []byte, seq, count uint64, at time.Time, p providers.Progress) {
	le := binary.LittleEndian
	le.PutUint64(b[0:], seq)
	le.PutUint64(b[8:], count)
	le.PutUint64(b[16:], uint64(at.UnixMilli()))
	for i, v := range [...]int64{p.TextBytes, p.ReasoningBytes, p.Pieces, p.Input, p.CacheRead, p.CacheWrite, p.CacheWrite1h} {
		le.PutUint64(b[24+8*i:], uint64(v))
	}
	b[80], b[81], b[82], b[83] = 0, 0, 0, 0
	if p.InputReported {
		b[80] = 1
	}
	sealPart(b)
}

// journalProgress is a progress part as read back.
type journalProgress struct {
	at   time.Time
	p    providers.Progress
	some bool
}

// readProgress reads a progress part of attempt seq, and its count.
func readProgress(b []byte, seq uint64) (journalProgress, uint64, bool) {
	if !validPart(b, seq) {
		return journalProgress{}, 0, false
	}
	return progressAt(b, 16), binary.LittleEndian.Uint64(b[8:]), true
}

// progressAt reads what a progress part records from offset at: the
// time, the seven counts, whether the input was reported. Both layouts
// write it so, the second after a count of its own.
func progressAt(b []byte, at int) journalProgress {
	le := binary.LittleEndian
	var v [7]int64
	for i := range v {
		v[i] = int64(le.Uint64(b[at+8+8*i:]))
	}
	return journalProgress{at: time.UnixMilli(int64(le.Uint64(b[at:]))), some: true, p: providers.Progress{
		TextBytes: v[0], ReasoningBytes: v[1], Pieces: v[2], Input: v[3], CacheRead: v[4], CacheWrite: v[5], CacheWrite1h: v[6],
		InputReported: b[at+64] == 1}}
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

// finishing records the request's outcome before its reservation
// settles: the outcome part, then the state word that makes it count,
// then (for a machine that loses the outcome to a power cut) the
// progress at this time.
func (s *journalSlot) finishing(f journalFinal) {
	s.state = slotFinishing
	if s.j.broken.Load() {
		return
	}
	defer s.j.recoverFault(debug.SetPanicOnFault(true))
	b := s.scratch[:finalSize]
	putFinal(b, s.seq, f)
	s.put(offFinal, b)
	s.putWord(offState, s.stateByte(slotFinishing))
	s.writeProgress(time.Now())
	s.flush()
}

// putFinal encodes the outcome part (the same in both layouts).
func putFinal(b []byte, seq uint64, f journalFinal) {
	le := binary.LittleEndian
	le.PutUint64(b[0:], seq)
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

// open writes the slot for an attempt about to go upstream, under a new
// sequence number: a progress of nothing yet and r, in the record area
// and progress part the slot does not count on, then the state word
// naming them. It reports false, having written nothing, when r cannot
// fit even without what may be left out (model names of kilobytes): the
// request goes unjournaled.
func (s *journalSlot) open(r *journalRecord) bool {
	seq := s.j.seq.Add(1)
	drop := dropNothing
	for {
		s.rec = encodeRecord(s.rec[:0], seq, r, drop)
		if len(s.rec) <= maxRecord || drop == dropAll {
			break
		}
		drop++
	}
	if len(s.rec) > maxRecord {
		s.j.log.Warn("a request's journal record does not fit its slot; a crash would leave it unbilled", "request_id", r.id)
		return false
	}
	flags := byte(0)
	if drop > dropNothing {
		flags = flagPartial
		s.j.log.Warn("a request's journal record was cut to fit its slot; a crash would bill it without some of its details",
			"request_id", r.id, "left_out", dropNames[drop])
	}
	s.id, s.seq, s.state, s.flags, s.tick, s.last = r.id, seq, slotOpen, flags, -1, providers.Progress{}
	if s.j.broken.Load() {
		return true
	}
	defer s.j.recoverFault(debug.SetPanicOnFault(true))
	copy(s.mem, slotMagic)
	s.touch(0, len(slotMagic))
	s.writeProgress(time.Now())
	area := 1 - s.area
	a := offArea + area*areaSize
	s.put(a+recordHead, s.rec)
	head := s.scratch[:recordHead]
	le := binary.LittleEndian
	le.PutUint32(head[recordFlagOff:], uint32(flags))
	le.PutUint32(head[4:], uint32(len(s.rec)))
	le.PutUint32(head[8:], crc32.Checksum(s.rec, crcTable))
	s.put(a, head)
	s.area = area
	s.putWord(offState, s.stateByte(slotOpen))
	s.flush()
	return true
}

// dropNames say what a cut record left out, for the log.
var dropNames = [...]string{dropBudgetNames: "budget names", dropAttempts: "budget names and earlier attempts",
	dropTags: "budget names, earlier attempts and tags", dropAll: "budget names, earlier attempts, tags and the reservation"}

// markSettled flags a remnant's reservation as released.
func (s *journalSlot) markSettled() {
	s.flags |= flagSettled
	if s.j.broken.Load() {
		return
	}
	defer s.j.recoverFault(debug.SetPanicOnFault(true))
	s.putWord(offArea+s.area*areaSize+recordFlagOff, s.flags)
	s.flush()
}

// errShortRecord is a record that ends before its fields do.
var errShortRecord = io.ErrUnexpectedEOF
