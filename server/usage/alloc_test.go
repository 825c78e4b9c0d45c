package usage_test

import (
	"context"
	"testing"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/server/usage"
)

// The usage path's allocation budget (issue 33), per event, held by
// counts rather than timings: the sink's append on the request's path,
// the conversion to a row, and the loader's whole batch (conversion,
// statement, driver, rollup queue) divided by its events. The request
// path's own budget (≤ 100 per non-streaming request) is held by the
// data plane's test once its exchange is restructured.
const (
	sinkRecordAllocs = 0
	rowAllocs        = 1 // the attempts copied
	// The loader per event, in batches of 1,000, the test's own 3 (its
	// request id, attempts and provenance) included: SQLite binds each
	// value boxed, those a batch's events share boxed once (15.5
	// measured; 25.5 when the test's events allocated their provenance's
	// lists too, 46 when each event boxed its own values and its
	// provenance's JSON); PostgreSQL's COPY is encoded as bytes (9.2
	// measured; 16 with the test's lists, 45 when pgx boxed it).
	loaderAllocsSQLite   = 18
	loaderAllocsPostgres = 11
)

func TestUsagePathAllocations(t *testing.T) {
	src := newLoaderEvents()
	e := src.next()
	t.Run("Row", func(t *testing.T) {
		received := store.Now()
		got := testing.AllocsPerRun(1000, func() {
			if _, err := usage.Row(e, received); err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("Row: %.1f allocations per event", got)
		if got > rowAllocs {
			t.Errorf("Row allocates %.1f times per event; the budget is %d", got, rowAllocs)
		}
	})
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			st := store.New(storetest.Open(t, d))
			sink := usage.NewStoreSink(st, usage.StoreSinkOptions{BatchSize: 1 << 30, FlushInterval: 1 << 62})
			defer sink.Close(context.Background())
			const batch = 1000
			fill := func() {
				for range batch {
					sink.Record(src.next())
				}
			}
			// Warm: the buffers grow to a batch, the statements are prepared.
			fill()
			if err := sink.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			ev := src.next()
			recorded := testing.AllocsPerRun(batch-1, func() { sink.Record(ev) })
			t.Logf("Record: %.2f allocations per event", recorded)
			if recorded > sinkRecordAllocs {
				t.Errorf("the sink's Record allocates %.2f times per event; the budget is %d", recorded, sinkRecordAllocs)
			}
			if err := sink.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			var flushErr error
			loaded := testing.AllocsPerRun(5, func() {
				fill()
				flushErr = sink.Flush(context.Background())
			}) / batch
			if flushErr != nil {
				t.Fatal(flushErr)
			}
			t.Logf("loader: %.1f allocations per event (events made by the test included)", loaded)
			budget := loaderAllocsPostgres
			if d == storetest.SQLite {
				budget = loaderAllocsSQLite
			}
			if loaded > float64(budget) {
				t.Errorf("the loader allocates %.1f times per event; the budget is %d", loaded, budget)
			}
		})
	}
}
