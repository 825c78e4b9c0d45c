package dataplane_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/server/usage"
)

// TestStoreSinkReusesBuffersLosingNothing: the sink's flushes reuse their
// buffers, and neither that nor a flush the database refuses loses or
// changes an event: after many flushes, one refused, every event recorded
// is stored once, as recorded.
func TestStoreSinkReusesBuffersLosingNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.sync(t)
		sink := usage.NewStoreSink(e.st, usage.StoreSinkOptions{FlushInterval: time.Hour, BatchSize: 1_000_000})
		ev := usageEvent(e)
		want := map[uuid.UUID]int64{}
		record := func(n int) {
			for range n {
				x := ev()
				x.InputTokens = int64(len(want) + 1)
				want[x.ID] = x.InputTokens
				sink.Record(x)
			}
		}
		for round := range 5 {
			record(7 + round)
			if round == 2 {
				// Refused: the events go back, and wait for the next flush.
				canceled, cancel := context.WithCancel(context.Background())
				cancel()
				if err := sink.Flush(canceled); err == nil {
					t.Fatal("a flush with a canceled context succeeded")
				}
				if n := sink.Pending(); n != 7+round {
					t.Fatalf("%d events pending after a refused flush, want %d", n, 7+round)
				}
				record(3)
			}
			if err := sink.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if err := sink.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		rows, _, err := e.st.ListUsageEvents(context.Background(), store.UsageFilter{OrgID: e.org.ID}, pageOf(1000))
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(want) {
			t.Fatalf("%d events stored, %d recorded", len(rows), len(want))
		}
		for _, r := range rows {
			if tokens, ok := want[r.ID]; !ok || r.InputTokens != tokens {
				t.Fatalf("stored %s with %d input tokens; recorded: %v %d", r.ID, r.InputTokens, ok, tokens)
			}
		}
	})
}
