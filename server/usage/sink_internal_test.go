package usage

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/wire"
)

func sinkTestEvent(n int64) wire.UsageEventIn {
	return wire.UsageEventIn{ID: uuid.Must(uuid.NewV7()), OrgID: uuid.New(), WorkspaceID: uuid.New(),
		Model: "openai/gpt-4o-mini", Provider: "openai", CostUSD: "0", Status: "ok", OccurredAt: time.Now().UTC(),
		RequestedModel: "openai/gpt-4o-mini", InputTokens: n}
}

// A backlog (the database slower than the requests) is kept in chunks:
// Record never copies the events already waiting to a larger array, which
// it did under the lock every request takes. What recording 100,000 events
// allocates is their chunks, not the sum of a doubling slice's arrays
// (about twice as much).
func TestStoreSinkBacklogIsNotCopied(t *testing.T) {
	sink := NewStoreSink(nil, StoreSinkOptions{FlushInterval: 1 << 62, BatchSize: 1 << 30})
	defer func() {
		sink.insert = func(_ context.Context, rows []store.UsageEvent) (int, error) { return len(rows), nil }
		sink.Close(context.Background())
	}()
	ev := sinkTestEvent(1)
	const n = 100_000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		sink.Record(ev)
	}
	runtime.ReadMemStats(&after)
	if got := sink.Pending(); got != n {
		t.Fatalf("%d events pending, want %d", got, n)
	}
	events := float64(n * unsafe.Sizeof(ev))
	allocated := float64(after.TotalAlloc - before.TotalAlloc)
	t.Logf("recording %d events allocated %.2f× their size", n, allocated/events)
	if allocated > 1.05*events {
		t.Errorf("recording %d events allocated %.0f bytes, %.2f× their %.0f", n, allocated, allocated/events, events)
	}
}

// Events recorded across chunks are inserted and named Stored in the
// order recorded; a refused flush puts them back ahead of those recorded
// since; beyond MaxPending the oldest are dropped, named Stored, and the
// rest kept in order.
func TestStoreSinkChunksKeepOrder(t *testing.T) {
	var stored []int64
	sink := NewStoreSink(nil, StoreSinkOptions{FlushInterval: 1 << 62, BatchSize: 3, MaxPending: 10,
		Stored: func(es []wire.UsageEventIn) {
			for _, e := range es {
				stored = append(stored, e.InputTokens)
			}
		}})
	// Only the test's own flushes: the sink's loop, woken once BatchSize
	// events wait, would otherwise flush (refused, requeued) between the
	// test's steps, holding events where Pending does not count them (a
	// CI run saw 4 pending for 12).
	close(sink.stop)
	<-sink.stopped
	var inserted []int64
	refuse := true
	sink.insert = func(_ context.Context, rows []store.UsageEvent) (int, error) {
		if refuse {
			return 0, errors.New("refused")
		}
		for _, r := range rows {
			inserted = append(inserted, r.InputTokens)
		}
		return len(rows), nil
	}
	seq := func(lo, hi int64) []int64 {
		var out []int64
		for i := lo; i <= hi; i++ {
			out = append(out, i)
		}
		return out
	}
	record := func(lo, hi int64) {
		for i := lo; i <= hi; i++ {
			sink.Record(sinkTestEvent(i))
		}
	}
	record(1, 7) // chunks of 3: [1 2 3] [4 5 6] [7]
	if err := sink.Flush(context.Background()); err == nil {
		t.Fatal("a refused flush succeeded")
	}
	if n := sink.Pending(); n != 7 {
		t.Fatalf("%d pending after a refused flush, want 7", n)
	}
	record(8, 12) // 12 pending: the two oldest are dropped
	if n := sink.Pending(); n != 12 {
		t.Fatalf("%d pending, want 12 (MaxPending is enforced when a flush fails)", n)
	}
	if err := sink.Flush(context.Background()); err == nil {
		t.Fatal("a refused flush succeeded")
	}
	if n := sink.Pending(); n != 10 {
		t.Fatalf("%d pending after the second refused flush, want MaxPending, 10", n)
	}
	if !slices.Equal(stored, []int64{1, 2}) {
		t.Fatalf("Stored named %v, want the two oldest, [1 2]", stored)
	}
	refuse = false
	record(13, 14)
	if err := sink.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := seq(3, 14); !slices.Equal(inserted, want) {
		t.Fatalf("inserted %v, want %v", inserted, want)
	}
	if want := seq(1, 14); !slices.Equal(stored, want) {
		t.Fatalf("Stored named %v, want %v", stored, want)
	}
	if n := sink.Pending(); n != 0 {
		t.Fatalf("%d pending after a flush, want 0", n)
	}
}

// An event that cannot be stored is given up on (named Stored, so the
// request journal lets it go) whether or not the database takes the rest
// of its flush; before, a refused flush left it neither kept nor named.
func TestStoreSinkGivesUpAnUnstorableEventWhenRefused(t *testing.T) {
	var stored []int64
	sink := NewStoreSink(nil, StoreSinkOptions{FlushInterval: 1 << 62,
		Stored: func(es []wire.UsageEventIn) {
			for _, e := range es {
				stored = append(stored, e.InputTokens)
			}
		}})
	defer func() {
		sink.insert = func(_ context.Context, rows []store.UsageEvent) (int, error) { return len(rows), nil }
		sink.Close(context.Background())
	}()
	sink.insert = func(context.Context, []store.UsageEvent) (int, error) { return 0, errors.New("refused") }
	bad := sinkTestEvent(1)
	bad.CostUSD = "a lot"
	sink.Record(bad)
	sink.Record(sinkTestEvent(2))
	if err := sink.Flush(context.Background()); err == nil {
		t.Fatal("a refused flush succeeded")
	}
	if !slices.Equal(stored, []int64{1}) {
		t.Fatalf("Stored named %v, want the unstorable event, [1]", stored)
	}
	if n := sink.Pending(); n != 1 {
		t.Fatalf("%d pending, want the storable event alone", n)
	}
}
