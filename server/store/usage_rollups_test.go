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
	if err := db.NewSelect().Model(&out).Order("tier", "bucket", "inference_key_id", "owner_id", "management_key_id",
		"provider_credential_id", "model", "requested_model", "status").Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRollupBackfill runs the rollup migration over events stored before
// it and expects the rows that ingest itself writes.
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
		want := rollups(t, db)
		if len(want) == 0 {
			t.Fatal("ingest wrote no rollups")
		}
		// Forget the rollups and the migration that made them, then
		// migrate again: the back-fill must rebuild the same rows.
		if _, err := db.ExecContext(ctx, "DROP TABLE usage_rollups"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "DELETE FROM bun_migrations WHERE name = '20261125000001_usage_rollups'"); err != nil {
			t.Fatal(err)
		}
		if names, err := store.Migrate(ctx, db); err != nil || len(names) != 1 {
			t.Fatal(names, err)
		}
		got := rollups(t, db)
		if len(got) != len(want) {
			t.Fatalf("back-fill made %d rows, ingest %d", len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("row %d: back-fill %+v, ingest %+v", i, got[i], want[i])
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }
