package store_test

import (
	"context"
	"database/sql"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// usageBatch is n events shaped like the data plane's: an inference key,
// no management key, no reason.
func usageBatch(n int) []store.UsageEvent {
	org, ws, key, owner, cred := uuid.New(), uuid.New(), uuid.New(), uuid.New(), uuid.New()
	now := time.Now().UTC().Truncate(time.Microsecond)
	rid, ep := "req", "chat.completions"
	rows := make([]store.UsageEvent, n)
	for i := range rows {
		rows[i] = store.UsageEvent{ID: uuid.New(), OrgID: org, WorkspaceID: ws, InferenceKeyID: &key, OwnerID: &owner,
			Model: "openai/gpt-4o-mini", Provider: "openai", ProviderCredentialID: &cred,
			InputTokens: 19, OutputTokens: 10, CostNanoUSD: 8850, Status: "ok", LatencyMS: 1,
			OccurredAt: now, Bucket: store.UsageBucket(now), ReceivedAt: now, RequestID: &rid, Endpoint: &ep,
			RequestedModel: "openai/gpt-4o-mini", Attempts: store.UsageAttempts{{Model: "openai/gpt-4o-mini", Provider: "openai"}}}
	}
	return rows
}

// BenchmarkUsageIngest stores batches of 1,000 events, as the ingest
// endpoint receives them, on each available database, and reports events/s:
//
//	go test -run '^$' -bench UsageIngest -benchtime 400x ./server/store
//
// (400 batches make a table of 400,000 events; a shorter run measures a
// table small enough to sit in SQLite's page cache.)
//
// "bun" is the insert InsertUsageEvents made before issue 12, one multi-row
// INSERT … ON CONFLICT DO NOTHING with the values inlined, on SQLite with
// the connection settings of then: the baseline, measured in the same run.
// "bun-newdsn" is that insert with today's SQLite settings. Each variant
// runs on a fresh database: inserts slow down as the table grows, which
// would favour whichever runs first.
func BenchmarkUsageIngest(b *testing.B) {
	const size = 1000
	ctx := context.Background()
	report := func(b *testing.B) {
		b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "events/s")
	}
	bunInsert := func(b *testing.B, db *bun.DB) {
		for b.Loop() {
			rows := usageBatch(size)
			res, err := db.NewInsert().Model(&rows).On("CONFLICT (id) DO NOTHING").Returning("NULL").Exec(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if n, _ := res.RowsAffected(); n != size {
				b.Fatal(n)
			}
		}
		report(b)
	}
	for _, d := range storetest.Dialects(b) {
		if d == storetest.SQLite {
			b.Run("sqlite/bun", func(b *testing.B) { bunInsert(b, openSQLiteAsBefore(b)) })
			b.Run("sqlite/bun-newdsn", func(b *testing.B) { bunInsert(b, storetest.Open(b, d)) })
		} else {
			b.Run(string(d)+"/bun", func(b *testing.B) { bunInsert(b, storetest.Open(b, d)) })
		}
		b.Run(string(d)+"/InsertUsageEvents", func(b *testing.B) {
			st := store.New(storetest.Open(b, d))
			for b.Loop() {
				if n, err := st.InsertUsageEvents(ctx, usageBatch(size)); err != nil || n != size {
					b.Fatal(n, err)
				}
			}
			report(b)
		})
	}
}

// openSQLiteAsBefore opens a fresh, migrated SQLite database with the
// connection settings store.SQLiteDSN had before issue 12.
func openSQLiteAsBefore(b *testing.B) *bun.DB {
	q := url.Values{}
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	sqldb, err := sql.Open("sqlite", "file:"+filepath.Join(b.TempDir(), "gw.db")+"?"+q.Encode())
	if err != nil {
		b.Fatal(err)
	}
	db := bun.NewDB(sqldb, sqlitedialect.New())
	b.Cleanup(func() { db.Close() })
	if _, err := store.Migrate(context.Background(), db); err != nil {
		b.Fatal(err)
	}
	return db
}
