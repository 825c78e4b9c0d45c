package usage

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/gw-gateway/gw/server/background"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/wire"
)

// StoreSinkOptions tune a StoreSink; zero values take the defaults.
type StoreSinkOptions struct {
	// FlushInterval is the longest an event waits (1 s).
	FlushInterval time.Duration
	// BatchSize flushes early once this many events wait (1,000).
	BatchSize int
	// MaxPending bounds the events kept while the database refuses them
	// (100,000); beyond it the oldest are dropped, and logged.
	MaxPending int
	Logger     *slog.Logger
	// Stored, when set, is told of the events the sink is done with:
	// written to the database, or given up on (refused as unstorable,
	// dropped beyond MaxPending). It must not keep the slice. The data
	// plane's request journal keeps each request until then, so that a
	// process killed before a flush still bills it at its next start.
	Stored func([]wire.UsageEventIn)
}

// StoreSink writes usage events to the database in batches, for a data
// plane in the control plane's process (gw serve with both roles): every
// second, or as soon as 1,000 events wait, and on Close. Record only
// appends to memory; an event is durable before then through the data
// plane's request journal, which keeps the request until Stored names it
// (a killed process records it again at its next start). Large batches
// are what the database does cheaply: the rows go in as multi-row
// statements (COPY on PostgreSQL) and the rollups' queue gets each
// batch's sums per slot and dimensions, not a row per event. A failed write keeps its events for the next flush;
// inserts are idempotent on event id, so a batch that was written although
// the write reported an error is not counted twice.
type StoreSink struct {
	// insert stores a batch: the store's InsertUsageEvents (a test
	// watches it).
	insert func(context.Context, []store.UsageEvent) (int, error)
	opts   StoreSinkOptions

	mu sync.Mutex
	// pending holds the waiting events in the order recorded, in chunks of
	// at most chunkLen: Record appends to the last chunk, or starts one.
	// One growing slice had Record copy the whole backlog to a larger array
	// whenever the database fell behind, holding mu, which every request
	// takes (a fifth of the loader benchmark's CPU: issue 33, seventeenth
	// round).
	pending  [][]wire.UsageEventIn
	npending int
	chunkLen int
	// free holds cleared chunks of chunkLen for Record to fill again, at
	// most maxFreeChunks.
	free    [][]wire.UsageEventIn
	closed  bool
	dropped int

	// flushMu keeps one flush at a time, so a flush that fails puts its
	// events back before the next takes any. It also guards the buffers a
	// flush reuses, so that in steady state Record appends into a chunk
	// that is already made and a flush allocates no slices.
	flushMu sync.Mutex
	spare   [][]wire.UsageEventIn
	events  []wire.UsageEventIn
	rows    []store.UsageEvent
	wake    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
}

const (
	// maxChunkLen bounds a chunk of pending events (400 bytes each).
	maxChunkLen = 1024
	// maxFreeChunks bounds the chunks kept for reuse: a steady flow
	// needs two or three; a backlog's others go to the collector.
	maxFreeChunks = 8
)

// NewStoreSink starts a sink writing to st.
func NewStoreSink(st *store.Store, opts StoreSinkOptions) *StoreSink {
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = time.Second
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 1000
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = 100_000
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &StoreSink{insert: st.InsertUsageEvents, opts: opts, chunkLen: min(opts.BatchSize, maxChunkLen),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	go s.loop()
	return s
}

// Record implements UsageSink.
func (s *StoreSink) Record(e wire.UsageEventIn) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.opts.Logger.Error("usage event recorded after the sink closed; it is lost", "event_id", e.ID)
		return
	}
	last := len(s.pending) - 1
	if last < 0 || len(s.pending[last]) == cap(s.pending[last]) {
		s.pending = append(s.pending, s.newChunk())
		last++
	}
	s.pending[last] = append(s.pending[last], e)
	s.npending++
	full := s.npending >= s.opts.BatchSize
	s.mu.Unlock()
	if full {
		select {
		case s.wake <- struct{}{}:
		default: // a flush is already due
		}
	}
}

func (s *StoreSink) loop() {
	defer close(s.stopped)
	t := time.NewTicker(s.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		case <-s.wake:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := s.Flush(ctx); err != nil {
			s.opts.Logger.Error("writing usage events; they are kept for the next attempt", "error", err)
		}
		cancel()
	}
}

// newChunk is an empty chunk of chunkLen for pending, reused when one is
// free. Call with mu held.
func (s *StoreSink) newChunk() []wire.UsageEventIn {
	if n := len(s.free); n > 0 {
		c := s.free[n-1]
		s.free[n-1] = nil
		s.free = s.free[:n-1]
		return c
	}
	return make([]wire.UsageEventIn, 0, s.chunkLen)
}

// Flush writes every waiting event now.
func (s *StoreSink) Flush(ctx context.Context) error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.mu.Lock()
	chunks, n := s.pending, s.npending
	s.pending, s.npending = s.spare[:0], 0
	s.mu.Unlock()

	received := store.Now()
	// Grown once to the batch, not doubled (and copied) on the way.
	events, rows := slices.Grow(s.events[:0], n), slices.Grow(s.rows[:0], n)
	var refused []wire.UsageEventIn
	defer func() {
		// Every array is free once the flush is done (a failed flush
		// requeues a copy), and cleared, so it holds no event meanwhile.
		clear(events)
		clear(rows)
		s.events, s.rows = events[:0], rows[:0]
		s.mu.Lock()
		for i, c := range chunks {
			clear(c)
			if cap(c) == s.chunkLen && len(s.free) < maxFreeChunks {
				s.free = append(s.free, c[:0])
			}
			chunks[i] = nil
		}
		s.mu.Unlock()
		s.spare = chunks[:0]
	}()
	for _, c := range chunks {
		for i := range c {
			row, err := Row(c[i], received)
			if err != nil {
				s.opts.Logger.Error("usage event cannot be stored; it is dropped", "event_id", c[i].ID, "error", err)
				refused = append(refused, c[i])
				continue
			}
			events, rows = append(events, c[i]), append(rows, row)
		}
	}
	// One transaction per several thousand events: each commit writes the
	// pages it dirtied (the same index pages, again and again, in smaller
	// transactions), and the store splits statements itself.
	const perInsert = 10_000
	var err error
	var start int
	// The database's work can wait: it gives the cores to requests first
	// (server/background). Stored, which takes the request journal's lock
	// that every request takes, runs back here at this goroutine's
	// priority. On SQLite the insert holds the write gate, which a request
	// waits for only when it asks for a lease in process, now and then
	// (docs/decisions.md).
	if len(rows) > 0 {
		background.Do(func() {
			for ; start < len(rows); start += perInsert {
				if _, err = s.insert(ctx, rows[start:min(start+perInsert, len(rows))]); err != nil {
					return
				}
			}
		})
	}
	// An event refused as unstorable is given up on either way.
	s.stored(refused)
	if err != nil {
		s.requeue(slices.Clone(events[start:]))
		s.stored(events[:start])
		return err
	}
	s.stored(events)
	return nil
}

func (s *StoreSink) stored(events []wire.UsageEventIn) {
	if s.opts.Stored != nil && len(events) > 0 {
		s.opts.Stored(events)
	}
}

// requeue puts events back ahead of those recorded since, within
// MaxPending.
func (s *StoreSink) requeue(events []wire.UsageEventIn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(events) == 0 {
		return
	}
	s.pending = slices.Insert(s.pending, 0, events[:len(events):len(events)])
	s.npending += len(events)
	over := s.npending - s.opts.MaxPending
	if over <= 0 {
		return
	}
	s.npending -= over
	s.dropped += over
	s.opts.Logger.Error("usage events dropped: the database has refused them for too long", "dropped", over, "dropped_total", s.dropped)
	for over > 0 {
		c := s.pending[0]
		k := min(over, len(c))
		s.stored(c[:k])
		over -= k
		if k < len(c) {
			s.pending[0] = c[k:]
			break
		}
		s.pending[0] = nil
		s.pending = s.pending[1:]
	}
}

// Close stops the background flushes and writes what waits. Call it after
// the HTTP server has shut down, so no request records after it.
func (s *StoreSink) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	<-s.stopped
	if err := s.Flush(ctx); err != nil {
		s.mu.Lock()
		lost := s.npending
		s.mu.Unlock()
		return fmt.Errorf("usage: %d events could not be written: %w", lost, err)
	}
	return nil
}

// Pending is how many events wait in memory to be written, for the queue
// depth gauge.
func (s *StoreSink) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.npending
}
