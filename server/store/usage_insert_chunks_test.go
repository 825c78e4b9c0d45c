package store_test

import (
	"context"
	"testing"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// A batch of any size is inserted by statements of at most eight sizes
// (100 and the powers of two below it) in each of three kinds (full rows,
// lean rows, runs), each prepared once for the database, not once per
// batch.
func TestSQLiteInsertChunks(t *testing.T) {
	sizes := map[int]bool{100: true, 64: true, 32: true, 16: true, 8: true, 4: true, 2: true, 1: true}
	for n := 1; n <= 1100; n++ {
		total, last := 0, 0
		for rest := n; rest > 0; {
			c := store.ChunkSize(rest)
			if !sizes[c] || c > rest || (last != 0 && last < 100 && c >= last) {
				t.Fatalf("%d rows: a chunk of %d after %d with %d left", n, c, last, rest)
			}
			total, last, rest = total+c, c, rest-c
		}
		if total != n {
			t.Fatalf("%d rows: chunks add up to %d", n, total)
		}
	}

	ctx := context.Background()
	db := storetest.Open(t, storetest.SQLite)
	st := store.New(db)
	want := 0
	for _, n := range []int{1, 3, 99, 100, 101, 163, 250, 1003, 7} {
		// A third of them not lean (a reason), among the lean ones.
		batch := usageBatch(n)
		for i := range batch {
			if i%3 == 1 {
				reason := "refused"
				batch[i].Reason = &reason
			}
		}
		got, err := st.InsertUsageEvents(ctx, batch)
		if err != nil || got != n {
			t.Fatalf("a batch of %d: stored %d, %v", n, got, err)
		}
		want += n
		if c := countUsageEvents(t, db); c != want {
			t.Fatalf("after a batch of %d: %d events stored, want %d", n, c, want)
		}
	}
	if k := store.SQLiteInsertStatements(st); k == 0 || k > 3*len(sizes) {
		t.Fatalf("%d statements kept prepared, want 1 to %d", k, 3*len(sizes))
	}
	// A batch inside a caller's transaction uses the same statements.
	if err := st.InTx(ctx, func(tx *store.Store) error {
		_, err := tx.InsertUsageEvents(ctx, usageBatch(37))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if c := countUsageEvents(t, db); c != want+37 {
		t.Fatalf("after a batch in a transaction: %d events, want %d", c, want+37)
	}
}
