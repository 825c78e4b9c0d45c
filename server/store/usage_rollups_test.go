package store_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

func rollups(t *testing.T, db *bun.DB) []store.UsageRollup {
	t.Helper()
	var out []store.UsageRollup
	if err := db.NewSelect().Model(&out).Order("grouped_by", "tier", "bucket", "inference_key_id", "owner_id", "management_key_id",
		"provider_credential_id", "model", "requested_model", "status").Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRollupBackfill runs the rollup migration over events stored before
// it and expects the rows that ingest and the roller write.
func TestRollupBackfill(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st := store.New(db)
		r := rand.New(rand.NewPCG(7, 8))
		org, ws := uuid.New(), uuid.New()
		keys := []*uuid.UUID{nil, ptr(uuid.New()), ptr(uuid.New())}
		base := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
		var events []store.UsageEvent
		for i := 0; i < 500; i++ {
			// Some before 1970, where buckets round down.
			at := base.Add(time.Duration(r.Int64N(int64(72*time.Hour))) - 36*time.Hour).Truncate(time.Microsecond)
			if i%50 == 0 {
				at = time.Unix(-r.Int64N(200_000), 0).UTC()
			}
			events = append(events, store.UsageEvent{ID: uuid.New(), OrgID: org, WorkspaceID: ws, InferenceKeyID: keys[r.IntN(3)],
				OwnerID: keys[r.IntN(3)], Model: []string{"a/x", "b/y"}[r.IntN(2)], Provider: "a", Status: "ok",
				InputTokens: r.Int64N(100), CostNanoUSD: r.Int64N(1e6), OccurredAt: at, Bucket: store.UsageBucket(at),
				ReceivedAt: base, RequestedModel: "a/x"})
		}
		if n, err := st.InsertUsageEvents(ctx, events); err != nil || n != len(events) {
			t.Fatal(n, err)
		}
		rollAll(t, st, 97)
		want := rollups(t, db)
		if len(want) == 0 {
			t.Fatal("the roller wrote no rollups")
		}
		// Forget the rollups and the migration that made them, then
		// migrate again: the back-fill must rebuild the same rows.
		for _, table := range []string{"usage_rollups", "usage_rollup_queue"} {
			if _, err := db.ExecContext(ctx, "DROP TABLE "+table); err != nil {
				t.Fatal(err)
			}
		}
		// The tag set dimension's rebuild (issue 21) runs after it again.
		// So does the response cache's saving column (issue 35).
		if _, err := db.ExecContext(ctx, "DELETE FROM bun_migrations WHERE name IN ('20261125000001_usage_rollups', "+
			"'20261126000043_usage_rollups_tagged', '20261130060002_usage_cache_saving_rollups')"); err != nil {
			t.Fatal(err)
		}
		if names, err := store.Migrate(ctx, db); err != nil || len(names) != 3 {
			t.Fatal(names, err)
		}
		rollAll(t, st, 1000)
		got := rollups(t, db)
		if len(got) != len(want) {
			t.Fatalf("back-fill made %d rows, the roller %d", len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("row %d: back-fill %+v, roller %+v", i, got[i], want[i])
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }

// rollAll rolls the whole queue up, chunk by chunk.
func rollAll(t *testing.T, st *store.Store, chunk int) {
	t.Helper()
	for {
		n, err := st.RollUpUsage(context.Background(), chunk)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

// TestRollerRacesIngest rolls up from two goroutines while four others
// ingest: every event ends up counted once in every tier.
func TestRollerRacesIngest(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st := store.New(db)
		org, ws := uuid.New(), uuid.New()
		done := make(chan struct{})
		errs := make(chan error, 8)
		const writers, batches, perBatch = 4, 15, 40
		for w := 0; w < writers; w++ {
			go func() {
				r := rand.New(rand.NewPCG(uint64(w), 1))
				for b := 0; b < batches; b++ {
					var rows []store.UsageEvent
					for i := 0; i < perBatch; i++ {
						at := time.Now().Add(-time.Duration(r.Int64N(int64(48 * time.Hour)))).UTC().Truncate(time.Microsecond)
						rows = append(rows, store.UsageEvent{ID: uuid.New(), OrgID: org, WorkspaceID: ws, Model: "a/x", Provider: "a",
							Status: "ok", CostNanoUSD: 1, OccurredAt: at, Bucket: store.UsageBucket(at), ReceivedAt: at, RequestedModel: "a/x"})
					}
					if _, err := st.InsertUsageEvents(ctx, rows); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for range 2 {
			go func() {
				for {
					select {
					case <-done:
						errs <- nil
						return
					default:
					}
					if _, err := st.RollUpUsage(ctx, 50); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		for range writers {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		close(done)
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		rollAll(t, st, 1000)
		var counts []struct {
			GroupedBy string `bun:"grouped_by"`
			Tier      int64  `bun:"tier"`
			Requests  int64  `bun:"requests"`
		}
		if err := db.NewRaw("SELECT grouped_by, tier, SUM(requests) AS requests FROM usage_rollups GROUP BY grouped_by, tier").Scan(ctx, &counts); err != nil {
			t.Fatal(err)
		}
		// The grouping by no dimension in three tiers, the other eleven in
		// two (their quarter hours are read from the events).
		if len(counts) != 3+11*2 {
			t.Fatalf("%d groupings and tiers, want %d", len(counts), 3+11*2)
		}
		for _, c := range counts {
			if c.Requests != writers*batches*perBatch {
				t.Fatalf("grouping %s tier %d counts %d events, want %d", c.GroupedBy, c.Tier, c.Requests, writers*batches*perBatch)
			}
		}
	})
}
