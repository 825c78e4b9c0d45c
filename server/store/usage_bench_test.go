package store_test

import (
	"context"
	"testing"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// BenchmarkInsertUsageEvents stores batches of 100 events shaped like the
// data plane's (an inference key, no management key, no reason), as the
// in-process usage sink does, on each available database:
//
//	go test -run '^$' -bench InsertUsageEvents ./server/store
//
// "returning" is the insert as bun builds it by default, which asks for
// the NULL columns back (RETURNING) and scans them into the rows: the
// baseline InsertUsageEvents is measured against in the same run.
func BenchmarkInsertUsageEvents(b *testing.B) {
	for _, d := range storetest.Dialects(b) {
		batch := func() []store.UsageEvent { return usageBatch(100) }
		ctx := context.Background()
		// Each run on a fresh database: inserts slow down as the table
		// grows, which would favour whichever runs first.
		b.Run(string(d)+"/returning", func(b *testing.B) {
			db := storetest.Open(b, d)
			for b.Loop() {
				rows := batch()
				if _, err := db.NewInsert().Model(&rows).On("CONFLICT (id) DO NOTHING").Exec(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(string(d)+"/InsertUsageEvents", func(b *testing.B) {
			st := store.New(storetest.Open(b, d))
			for b.Loop() {
				if n, err := st.InsertUsageEvents(ctx, batch()); err != nil || n != 100 {
					b.Fatal(n, err)
				}
			}
		})
	}
}
