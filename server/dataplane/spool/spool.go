// Package spool is a remote data plane's usage sink: an append-only file
// that events reach before anything else, shipped to the control plane in
// batches. It links no database.
package spool

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// Spool is a remote data plane's usage sink. Every event is appended to a
// local file before anything else, so none is lost while the control plane
// is unreachable or the process restarts; a shipper sends them in batches.
// Ingestion is idempotent on event id, so a batch sent again after a crash
// between sending and forgetting it is still counted once.
//
// Shipping works on a snapshot: the live file is renamed aside (appends go
// on into a fresh one), the aside file is sent, then removed. A snapshot
// that could not be sent stays and is sent first next time.
type Spool struct {
	path string
	ship Ship
	log  *slog.Logger

	// encoder writes the events' lines, a repeated provenance's JSON
	// written once.
	encoder wire.ProvenanceCache

	mu      sync.Mutex
	f       *os.File
	pending int64 // events written and not yet shipped

	// The live file's lines, kept so that a snapshot ships from memory
	// instead of being read back (issue 33, eighteenth round: reading,
	// scanning and checking the file was 3 % of a remote data plane's
	// CPU). lines[:written] are in the file; lines[written:] wait for a
	// group write. While whole, lines[:written] is all the file holds;
	// otherwise (a file an earlier process began, a failed write, more
	// than memLines bytes) lines holds only the waiting lines and the
	// snapshot is read from its file. The file stays what a crash leaves.
	lines   []byte
	written int
	whole   bool
	// fresh counts the events written to the live file; full wakes Run
	// once it holds shipEvents (or half of memLines), so that a busy
	// plane ships a few batches at a time instead of a poll interval's
	// worth that memory would not hold.
	fresh int
	full  chan struct{}

	// Group writes (GroupWrites): the events of the waiting lines, and
	// whether a write is due.
	stored  func([]wire.UsageEventIn)
	waiting []wire.UsageEventIn
	due     bool

	// asideLines is the snapshot's bytes when they were whole in memory
	// at rotation (nil: read its file); spare, a shipped snapshot's
	// buffer for the next file's lines.
	asideLines []byte
	spare      []byte
}

// memLines is the most of a file's lines kept in memory to ship from; a
// larger file is read back. Run ships once shipEvents or half of memLines
// are written, so a busy plane stays well inside it. Not at each batch:
// a ship's last batch is a part one, and the control plane's cost of a
// post (authentication, the reach of its ids) is the same for 40 events
// as for 1,000; at four batches most posts stay full.
const (
	memLines   = 8 << 20
	shipEvents = 4 * spoolBatch
)

// groupDelay is the longest a line waits in memory with group writes, and
// groupBytes the most lines wait before they are written at once.
const (
	groupDelay = 2 * time.Millisecond
	groupBytes = 64 << 10
)

// spoolBatch is the largest batch the ingest endpoint takes.
const spoolBatch = 1000

// Ship sends one batch of events, each the JSON of a wire.UsageEventIn as
// the spool holds it (client.IngestUsageLines): a batch is sent as the
// bytes that were written, never decoded and encoded again (issue 33: that
// was a tenth of a remote data plane's CPU).
type Ship func(ctx context.Context, events []json.RawMessage) error

// OpenSpool opens (or creates) the spool at path; ship sends one batch.
func Open(path string, ship Ship, log *slog.Logger) (*Spool, error) {
	s := &Spool{path: path, ship: ship, log: log, full: make(chan struct{}, 1)}
	// A data plane given its key, id and signing key in the environment
	// writes nothing else to its state dir before the spool.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("usage spool directory: %w", err)
	}
	for _, p := range []string{path, s.aside()} {
		err := eachSpoolBatch(p, log, func(batch []json.RawMessage) error {
			s.pending += int64(len(batch))
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if err := s.reopen(); err != nil {
		return nil, err
	}
	// Lines are kept in memory only for a file begun empty.
	if st, err := s.f.Stat(); err == nil && st.Size() == 0 {
		s.whole = true
	}
	return s, nil
}

func (s *Spool) aside() string { return s.path + ".shipping" }

func (s *Spool) reopen() error {
	f, err := os.OpenFile(s.path, os.O_CREATE|os.O_APPEND|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("open usage spool: %w", err)
	}
	// A crash mid-write leaves a torn last line; end it, so the next event
	// starts a line of its own instead of being glued to the fragment.
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			_, _ = f.Write([]byte{'\n'})
		}
	}
	s.f = f
	return nil
}

// lineBufs are reusable lines of the spool: an event's JSON and its
// newline, as json.Marshal writes the event (wire.ProvenanceCache).
var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// GroupWrites has Record keep lines in memory, written together within
// groupDelay (or at groupBytes), and tell stored of the events once their
// lines are in the file: a write(2) per event was 2 % of a remote data
// plane's CPU (issue 33, eighth round). A killed process then loses the
// lines not yet written, so stored must be a request journal's Stored,
// which keeps each request until then and records it again at the next
// start (ingestion is idempotent on event id). Call it before the first
// Record; stored must not keep the slice.
func (s *Spool) GroupWrites(stored func([]wire.UsageEventIn)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stored = stored
}

// Record appends one event. It never blocks on the network; a failed write
// is logged (the request it describes has been served already). The line
// is written to the file before Record returns, so a killed process loses
// nothing it recorded; with GroupWrites, within groupDelay.
func (s *Spool) Record(e wire.UsageEventIn) {
	l := lineBufs.Get().(*[]byte)
	defer lineBufs.Put(l)
	line, err := s.encoder.AppendUsageEventInJSON((*l)[:0], &e)
	if err != nil {
		s.log.Error("usage spool: encode event", "error", err)
		return
	}
	line = append(line, '\n')
	*l = line
	s.mu.Lock()
	s.lines = append(s.lines, line...)
	if s.stored == nil {
		defer s.mu.Unlock()
		if err := s.writeLinesLocked(); err != nil {
			s.log.Error("usage spool: write event", "error", err)
			return
		}
		s.pending++
		s.wroteLocked(1)
		return
	}
	s.waiting = append(s.waiting, e)
	full := len(s.lines)-s.written >= groupBytes
	if !full && !s.due {
		s.due = true
		time.AfterFunc(groupDelay, s.writeWaiting)
	}
	s.mu.Unlock()
	if full {
		s.writeWaiting()
	}
}

// writeLinesLocked writes the lines not yet in the file in one write(2),
// keeping them in memory while the file's lines are whole there.
func (s *Spool) writeLinesLocked() error {
	_, err := s.f.Write(s.lines[s.written:])
	if err == nil && s.whole && len(s.lines) <= memLines {
		s.written = len(s.lines)
		return nil
	}
	// A failed write may have left part of the lines in the file: the
	// memory's lines are no longer the file's.
	s.whole = false
	s.lines, s.written = s.lines[:0], 0
	return err
}

// writeWaiting writes the lines in memory in one write(2) and tells
// stored of their events.
func (s *Spool) writeWaiting() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writeWaitingLocked()
}

// writeWaitingLocked writes the waiting lines and tells stored of their
// events, under s.mu, so that no call of stored outlives Close (the
// request journal closes after the spool). After a failed write the
// events are not stored: their requests stay in the journal, which
// records them again at the next start.
func (s *Spool) writeWaitingLocked() {
	s.due = false
	events := s.waiting
	if len(events) == 0 {
		return
	}
	err := s.writeLinesLocked()
	// stored keeps no slice (GroupWrites): the array is the next group's,
	// cleared so that it holds no event meanwhile.
	defer func() { clear(events); s.waiting = events[:0] }()
	if err != nil {
		s.log.Error("usage spool: write events; they are recorded again at the next start", "events", len(events), "error", err)
		return
	}
	s.pending += int64(len(events))
	s.wroteLocked(len(events))
	s.stored(events)
}

// wroteLocked counts n events written to the live file and wakes Run
// when enough of them wait (shipEvents).
func (s *Spool) wroteLocked(n int) {
	if s.fresh += n; s.fresh >= shipEvents || s.written >= memLines/2 {
		select {
		case s.full <- struct{}{}:
		default: // Run is awake already
		}
	}
}

// Depth is how many events wait to be shipped (for heartbeats), those
// not yet written included.
func (s *Spool) Depth() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending + int64(len(s.waiting))
}

// Ship sends everything spooled so far.
func (s *Spool) Ship(ctx context.Context) error {
	// Lines in memory go to the file first, so they ship now too.
	s.writeWaiting()
	if s.Depth() == 0 {
		return nil
	}
	if _, err := os.Stat(s.aside()); errors.Is(err, os.ErrNotExist) {
		if err := s.rotate(); err != nil {
			return err
		}
	}
	s.mu.Lock()
	mem := s.asideLines
	s.mu.Unlock()
	// Send a batch at a time: after a long outage the backlog may be far
	// larger than memory should hold, so a snapshot not in memory is read
	// from its file as it goes.
	shipped := 0
	send := func(batch []json.RawMessage) error {
		if err := s.shipBatch(ctx, batch); err != nil {
			return fmt.Errorf("ship usage: %w", err)
		}
		shipped += len(batch)
		return nil
	}
	var err error
	if mem != nil {
		err = eachLineBatch(mem, send)
	} else {
		err = eachSpoolBatch(s.aside(), s.log, send)
	}
	if err != nil {
		return err
	}
	if err := os.Remove(s.aside()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	s.mu.Lock()
	s.pending -= int64(shipped)
	if mem != nil {
		s.spare = mem[:0]
	}
	s.asideLines = nil
	s.mu.Unlock()
	return nil
}

// shipBatch sends a batch. When the control plane refuses it for good (a
// 4xx other than authentication or throttling: a malformed event, or a
// newer data plane's field the control plane does not know), the events
// are sent one by one and those refused are set aside in a .rejected file
// with an error in the log, so one bad event cannot hold back all usage
// behind it. Transient failures leave the batch to be retried.
func (s *Spool) shipBatch(ctx context.Context, batch []json.RawMessage) error {
	err := s.ship(ctx, batch)
	if !permanentRefusal(err) {
		return err
	}
	for _, e := range batch {
		err := s.ship(ctx, []json.RawMessage{e})
		switch {
		case permanentRefusal(err):
			s.log.Error("usage event refused by the control plane; set aside", "event", eventID(e), "error", err, "file", s.path+".rejected")
			if werr := appendLine(s.path+".rejected", e); werr != nil {
				return werr
			}
		case err != nil:
			return err
		}
	}
	return nil
}

func permanentRefusal(err error) bool {
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status < 400 || ae.Status >= 500 {
		return false
	}
	switch ae.Status {
	case 401, 403, 408, 429:
		return false
	}
	return true
}

// eventID is the id of an event line, for the log.
func eventID(line json.RawMessage) string {
	var e struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(line, &e)
	return e.ID
}

func appendLine(path string, line json.RawMessage) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(append(line[:len(line):len(line)], '\n'))
	return err
}

// rotate moves the live file aside and starts a fresh one.
func (s *Spool) rotate() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.f.Sync(); err != nil {
		return err
	}
	if err := s.f.Close(); err != nil {
		return err
	}
	if err := os.Rename(s.path, s.aside()); err != nil {
		// reopen may end a line the memory does not hold.
		s.whole = false
		s.lines, s.written = s.lines[s.written:], 0
		_ = s.reopen()
		return fmt.Errorf("rotate usage spool: %w", err)
	}
	// The snapshot ships from memory if its lines are whole there; the
	// waiting lines are the fresh file's first.
	s.asideLines = nil
	if s.whole {
		s.asideLines = s.lines[:s.written:s.written]
		s.lines = append(s.spare[:0], s.lines[s.written:]...)
		s.spare = nil
	}
	s.written, s.whole, s.fresh = 0, true, 0
	return s.reopen()
}

// Run ships every interval, and as soon as shipEvents (or half of
// memLines) have been written, until ctx ends. After a failed ship it
// waits for the interval: events written meanwhile do not send the
// control plane a retry. The last events are shipped by Close, once the
// server has finished its requests.
func (s *Spool) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.full:
			if failing {
				continue
			}
		}
		err := s.Ship(ctx)
		if failing = err != nil; failing && ctx.Err() == nil {
			s.log.Warn("usage shipping failed; kept in the spool", "error", err, "events", s.Depth())
		}
	}
}

// Close ships what is left (after the server has drained its requests, so
// their events are in) and closes the file; what cannot be shipped stays
// for the next start.
func (s *Spool) Close(ctx context.Context) error {
	if err := s.Ship(ctx); err != nil {
		s.log.Warn("usage left in the spool for the next start", "error", err, "events", s.Depth())
	}
	// Lines recorded since the ship stay in the file for the next start.
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writeWaitingLocked()
	return s.f.Close()
}

// eachSpoolBatch reads a spool file's events in batches of spoolBatch and
// hands each to fn, which must not keep the slice or its lines (both are
// reused); a torn line (a crash mid-write) is skipped with a warning. A
// line is checked to be whole (wholeObject), not decoded: the control
// plane reads it.
func eachSpoolBatch(path string, log *slog.Logger, fn func([]json.RawMessage) error) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	// The batch's lines are copied into one buffer, reused batch after
	// batch: the scanner's own is overwritten by the next line.
	batch := make([]json.RawMessage, 0, spoolBatch)
	var lines []byte
	var ends []int
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	flush := func() error {
		start := 0
		for _, end := range ends {
			batch = append(batch, lines[start:end:end])
			start = end
		}
		err := fn(batch)
		clear(batch)
		batch, lines, ends = batch[:0], lines[:0], ends[:0]
		return err
	}
	for sc.Scan() {
		line := sc.Bytes()
		if !wholeObject(line) {
			log.Warn("usage spool: skipping an unreadable line", "bytes", len(line))
			continue
		}
		lines = append(lines, line...)
		if ends = append(ends, len(lines)); len(ends) == spoolBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(ends) > 0 {
		return flush()
	}
	return nil
}

// eachLineBatch hands fn the lines of a snapshot kept in memory
// (asideLines) in batches of spoolBatch, as eachSpoolBatch does its
// file's. Every line there was written whole by Record.
func eachLineBatch(lines []byte, fn func([]json.RawMessage) error) error {
	batch := make([]json.RawMessage, 0, spoolBatch)
	send := func() error {
		err := fn(batch)
		clear(batch)
		batch = batch[:0]
		return err
	}
	for line := range bytes.Lines(lines) {
		n := len(line) - 1 // the newline
		if batch = append(batch, line[:n:n]); len(batch) == spoolBatch {
			if err := send(); err != nil {
				return err
			}
		}
	}
	if len(batch) > 0 {
		return send()
	}
	return nil
}

// wholeObject reports whether line is a whole JSON object as far as its
// brackets and strings go: it opens with '{' and its brackets, outside
// strings, close for the first time at its last byte (whitespace may
// follow). Every line is written by one write(2) of one event's JSON, so a
// crash can leave only a prefix of one, the file's last line (reopen ends
// it), and no prefix of an object closes its brackets: wholeObject refuses
// every torn line (TestWholeObjectRefusesEveryPrefix, FuzzWholeObject).
// It does not check the JSON's grammar, which json.Valid did at 7 to 11
// µs an event, 3 % of a remote data plane's CPU under load (issue 33,
// eighth round): a line damaged some other way is refused by the control
// plane, and shipBatch then sets it aside alone, as it does any event the
// control plane refuses.
func wholeObject(line []byte) bool {
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	depth := 0
	for i := 0; i < len(line); {
		c := line[i]
		i++
		switch c {
		case '"':
			// To the string's end: its closing quote, any escaped byte
			// skipped. A string not closed leaves i past the line.
			for i < len(line) {
				c, i = line[i], i+1
				if c == '"' {
					break
				}
				if c == '\\' {
					i++
				}
			}
			if i > len(line) || line[i-1] != '"' {
				return false
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return len(bytes.TrimRight(line[i:], " \t\r")) == 0
			}
		}
	}
	return false
}
