package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// noThen is a then that derives nothing.
func noThen(context.Context, bun.IDB, []store.UsageEvent) error { return nil }

// recordThen is a then that records the ids it is given, checking that the
// transaction it runs in sees them stored.
func recordThen(t *testing.T, seen *[]uuid.UUID, mu *sync.Mutex) func(context.Context, bun.IDB, []store.UsageEvent) error {
	return func(ctx context.Context, tx bun.IDB, stored []store.UsageEvent) error {
		ids := make([]uuid.UUID, len(stored))
		for i, e := range stored {
			ids[i] = e.ID
		}
		if len(ids) > 0 {
			n, err := tx.NewSelect().Model((*store.UsageEvent)(nil)).Where("id IN (?)", bun.List(ids)).Count(ctx)
			if err != nil {
				return err
			}
			if n != int64(len(ids)) {
				t.Errorf("then's transaction sees %d of the %d events stored", n, len(ids))
			}
		}
		if mu != nil {
			mu.Lock()
			defer mu.Unlock()
		}
		*seen = append(*seen, ids...)
		return nil
	}
}

func countUsageEvents(t *testing.T, db bun.IDB) int {
	t.Helper()
	n, err := db.NewSelect().Model((*store.UsageEvent)(nil)).Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

func ids(events []store.UsageEvent) []uuid.UUID {
	out := make([]uuid.UUID, len(events))
	for i, e := range events {
		out[i] = e.ID
	}
	return out
}

func sortedIDs(in []uuid.UUID) []uuid.UUID {
	out := slices.Clone(in)
	slices.SortFunc(out, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// eachPath runs fn on every way insertNewUsageEvents stores: on the
// database (COPY on PostgreSQL) and inside a transaction of the caller's.
func eachPath(t *testing.T, fn func(t *testing.T, db *bun.DB, st func(ctx context.Context, fn func(*store.Store) error) error)) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		t.Run("db", func(t *testing.T) {
			fn(t, db, func(ctx context.Context, f func(*store.Store) error) error { return f(store.New(db)) })
		})
		t.Run("tx", func(t *testing.T) {
			if _, err := db.NewDelete().Model((*store.UsageEvent)(nil)).Where("TRUE").Exec(context.Background()); err != nil {
				t.Fatal(err)
			}
			fn(t, db, func(ctx context.Context, f func(*store.Store) error) error { return store.New(db).InTx(ctx, f) })
		})
	})
}

func TestInsertNewUsageEventsSkipsDuplicates(t *testing.T) {
	eachPath(t, func(t *testing.T, db *bun.DB, run func(context.Context, func(*store.Store) error) error) {
		ctx := context.Background()
		a := usageBatch(10)
		dup := a[3]
		dup.Model = "second/copy" // the first of an id is the one kept
		batch := append(slices.Clone(a), dup, a[7])
		var seen []uuid.UUID
		var n int
		err := run(ctx, func(st *store.Store) (err error) {
			n, err = store.InsertNewUsageEvents(st, ctx, batch, recordThen(t, &seen, nil))
			return err
		})
		if err != nil || n != 10 {
			t.Fatalf("first batch: stored %d, %v; want 10", n, err)
		}
		if !slices.Equal(sortedIDs(seen), sortedIDs(ids(a))) {
			t.Fatalf("then saw %v, want %v", seen, ids(a))
		}
		var got store.UsageEvent
		if err := db.NewSelect().Model(&got).Where("id = ?", dup.ID).Scan(ctx); err != nil || got.Model != a[3].Model {
			t.Fatalf("kept %q (%v), want the first occurrence %q", got.Model, err, a[3].Model)
		}

		// Half old, half new, the new ones each twice.
		b := usageBatch(6)
		batch = append(append(slices.Clone(a[:5]), b...), b...)
		seen = nil
		err = run(ctx, func(st *store.Store) (err error) {
			n, err = store.InsertNewUsageEvents(st, ctx, batch, recordThen(t, &seen, nil))
			return err
		})
		if err != nil || n != 6 {
			t.Fatalf("second batch: stored %d, %v; want 6", n, err)
		}
		if !slices.Equal(sortedIDs(seen), sortedIDs(ids(b))) {
			t.Fatalf("then saw %v, want %v", seen, ids(b))
		}

		// All old: nothing stored, then still runs, with nothing.
		seen = []uuid.UUID{}
		called := false
		err = run(ctx, func(st *store.Store) (err error) {
			n, err = store.InsertNewUsageEvents(st, ctx, batch, func(ctx context.Context, tx bun.IDB, stored []store.UsageEvent) error {
				called = true
				if len(stored) != 0 {
					t.Errorf("then got %d events, want none", len(stored))
				}
				return nil
			})
			return err
		})
		if err != nil || n != 0 || !called {
			t.Fatalf("replay: stored %d, %v, then called %v; want 0, nil, true", n, err, called)
		}
		if c := countUsageEvents(t, db); c != 16 {
			t.Fatalf("%d events stored, want 16", c)
		}
		// InsertUsageEvents counts the same way.
		c := usageBatch(3)
		err = run(ctx, func(st *store.Store) (err error) {
			n, err = st.InsertUsageEvents(ctx, append(append(c, c[0]), a...))
			return err
		})
		if err != nil || n != 3 {
			t.Fatalf("InsertUsageEvents: stored %d, %v; want 3", n, err)
		}
	})
}

func TestInsertNewUsageEventsThenErrorRollsBack(t *testing.T) {
	eachPath(t, func(t *testing.T, db *bun.DB, run func(context.Context, func(*store.Store) error) error) {
		ctx := context.Background()
		boom := errors.New("boom")
		a := usageBatch(20)
		for range 3 { // on PostgreSQL, on the connections the pool reuses
			err := run(ctx, func(st *store.Store) error {
				_, err := store.InsertNewUsageEvents(st, ctx, a, func(context.Context, bun.IDB, []store.UsageEvent) error { return boom })
				return err
			})
			if !errors.Is(err, boom) {
				t.Fatalf("err = %v, want boom", err)
			}
			if c := countUsageEvents(t, db); c != 0 {
				t.Fatalf("%d events stored after then failed, want 0", c)
			}
		}
		// Nothing of the failed batch lingers (PostgreSQL's staging table
		// is empty): another batch stores exactly itself.
		b := usageBatch(5)
		var seen []uuid.UUID
		var n int
		err := run(ctx, func(st *store.Store) (err error) {
			n, err = store.InsertNewUsageEvents(st, ctx, b, recordThen(t, &seen, nil))
			return err
		})
		if err != nil || n != 5 || len(seen) != 5 || countUsageEvents(t, db) != 5 {
			t.Fatalf("after a failure: stored %d (%v), then saw %d, table holds %d; want 5", n, err, len(seen), countUsageEvents(t, db))
		}
		// The failed batch goes in whole when retried.
		err = run(ctx, func(st *store.Store) (err error) {
			n, err = store.InsertNewUsageEvents(st, ctx, a, noThen)
			return err
		})
		if err != nil || n != 20 {
			t.Fatalf("retry: stored %d, %v; want 20", n, err)
		}
		// A failing insert (NOT NULL) rolls back too, and leaves the path usable.
		bad := usageBatch(3)
		bad[1].Status = "x\x00" // bun and PostgreSQL refuse a NUL
		err = run(ctx, func(st *store.Store) error {
			_, err := store.InsertNewUsageEvents(st, ctx, bad, noThen)
			return err
		})
		if err == nil {
			t.Fatal("a NUL byte in a string was stored")
		}
		if c := countUsageEvents(t, db); c != 25 {
			t.Fatalf("%d events stored, want 25", c)
		}
		err = run(ctx, func(st *store.Store) (err error) {
			n, err = store.InsertNewUsageEvents(st, ctx, usageBatch(2), noThen)
			return err
		})
		if err != nil || n != 2 || countUsageEvents(t, db) != 27 {
			t.Fatalf("after a failed insert: stored %d, %v, table holds %d; want 2, nil, 27", n, err, countUsageEvents(t, db))
		}
	})
}

func TestInsertNewUsageEventsRollsBackWithCallersTx(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		boom := errors.New("boom")
		err := store.New(db).InTx(ctx, func(tx *store.Store) error {
			if n, err := tx.InsertUsageEvents(ctx, usageBatch(4)); err != nil || n != 4 {
				t.Fatalf("stored %d, %v; want 4", n, err)
			}
			return boom
		})
		if !errors.Is(err, boom) || countUsageEvents(t, db) != 0 {
			t.Fatalf("err %v, %d events stored; want boom, 0", err, countUsageEvents(t, db))
		}
	})
}

// fullUsageEvent has every field set, a time in another zone and with
// nanoseconds, and text that needs quoting.
func fullUsageEvent() store.UsageEvent {
	u := func() *uuid.UUID { id := uuid.New(); return &id }
	s := func(v string) *string { return &v }
	zone := time.FixedZone("x", -(3*3600 + 30*60))
	at := time.Date(2026, 11, 23, 9, 8, 7, 123456789, zone)
	return store.UsageEvent{ID: uuid.New(), OrgID: uuid.New(), WorkspaceID: uuid.New(),
		InferenceKeyID: u(), ManagementKeyID: u(), OwnerID: u(),
		Model: "openai/gpt-4o-mini", Provider: "o'pen\xffai\xc3", ProviderCredentialID: u(),
		InputTokens: 1 << 40, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4, CostNanoUSD: -5,
		Status: "error", LatencyMS: 6, OccurredAt: at, Bucket: store.UsageBucket(at), ReceivedAt: at.Add(time.Second + 999),
		RequestID: s("req-1"), Endpoint: s(`chat "completions" \ é 😀`), Reason: s(""), RequestedModel: "auto",
		Attempts: store.UsageAttempts{
			{Model: "a", Provider: "b", Failure: s("timeout"), LatencyMS: 7},
			{Model: "c\n", Provider: "d", LatencyMS: 8},
		},
		UsageSource: "estimated", ReasoningTokens: 9, CacheWrite1hTokens: 10,
		Provenance: &store.UsageProvenance{BundleVersion: 11,
			Prices: &wire.UsagePrices{InputPerMTok: "0.15", OutputPerMTok: "0.6", CacheReadPerMTok: "0.075", CacheWritePerMTok: "0", CacheWrite1hPerMTok: "1", LongContext: true,
				PriceClass: wire.PriceClassBatch},
			Policies: []wire.UsagePolicy{{PolicyID: uuid.New(), PolicyName: `<"allow">` + " é", Action: "allow", Effect: "allow"}},
			Budgets:  []wire.UsageBudget{{PolicyID: uuid.New(), PolicyName: "b", Counter: "budget:shared", Period: "day", Aggregation: "shared", AmountUSD: "1000000"}}},
		Tags:       store.Tags{"team": "search", "env": "p\"rod"},
		TagSetID:   u(),
		BatchID:    s("batch_0190a1b2c3d4"),
		Guardrails: store.UsageGuardrails{{ID: "g1", Name: "pii", Stage: "input", Outcome: "redacted", Detectors: []string{"email"}}},
	}
}

// rawUsageEvent is a stored event's columns as the database's own text,
// and on SQLite its storage classes, with the id left out.
func rawUsageEvent(t *testing.T, db *bun.DB, id uuid.UUID) []sql.NullString {
	t.Helper()
	var exprs []string
	for _, c := range store.UsageEventColumns[1:] {
		exprs = append(exprs, "CAST("+c+" AS TEXT)")
		if db.Dialect().Name() == dialect.SQLite {
			exprs = append(exprs, "typeof("+c+")")
		}
	}
	out := make([]sql.NullString, len(exprs))
	dest := make([]any, len(out))
	for i := range out {
		dest[i] = &out[i]
	}
	if err := db.QueryRowContext(context.Background(),
		"SELECT "+strings.Join(exprs, ", ")+" FROM usage_events WHERE id = ?", id).Scan(dest...); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestInsertNewUsageEventsRoundTrip(t *testing.T) {
	eachPath(t, func(t *testing.T, db *bun.DB, run func(context.Context, func(*store.Store) error) error) {
		ctx := context.Background()
		full, bare := fullUsageEvent(), fullUsageEvent()
		bare.InferenceKeyID, bare.ManagementKeyID, bare.OwnerID, bare.ProviderCredentialID = nil, nil, nil, nil
		bare.RequestID, bare.Endpoint, bare.Reason, bare.Attempts = nil, nil, nil, nil
		bare.Provenance, bare.Tags, bare.TagSetID, bare.Guardrails, bare.BatchID = nil, nil, nil, nil, nil
		bare.Model, bare.InputTokens, bare.OccurredAt = "", 0, time.Unix(0, 0).UTC()
		empty := fullUsageEvent()
		empty.Attempts = store.UsageAttempts{}
		events := []store.UsageEvent{full, bare, empty}
		// Enough more that PostgreSQL's COPY stream is read in several
		// parts, rows cut across them.
		for i := range 150 {
			e := fullUsageEvent()
			e.ID, e.InputTokens = uuid.Must(uuid.NewV7()), int64(i)
			e.Provenance.Policies = slices.Repeat(e.Provenance.Policies, 1+i%7)
			if i%3 == 0 {
				// Lean: the SQLite path leaves these columns to their
				// defaults, in a statement of its own.
				e.ManagementKeyID, e.Reason, e.Tags, e.TagSetID, e.Guardrails, e.BatchID = nil, nil, nil, nil, nil, nil
				e.ReasoningTokens, e.CacheWrite1hTokens, e.CacheSavingNanoUSD = 0, 0, 0
			}
			events = append(events, e)
		}
		// Runs: lean events that share the run columns, which the SQLite
		// path binds once for a statement. Two runs alike but for one
		// column that is nil in one and set in the other (a nil key is
		// NULL, not the zero uuid), a run too short to be one, and each
		// event's own values varied.
		runBase := fullUsageEvent()
		runBase.ManagementKeyID, runBase.Reason, runBase.Tags, runBase.TagSetID, runBase.Guardrails, runBase.BatchID = nil, nil, nil, nil, nil, nil
		runBase.ReasoningTokens, runBase.CacheWrite1hTokens = 0, 0
		tier := "flex"
		runBase.ServiceTier = &tier
		for run, size := range []int{20, 16, 5} {
			for i := range size {
				e := runBase
				e.ID, e.InputTokens, e.OutputTokens, e.LatencyMS = uuid.Must(uuid.NewV7()), int64(i), int64(run), int64(i*run)
				e.OccurredAt = e.OccurredAt.Add(time.Duration(i) * time.Millisecond)
				rid := fmt.Sprintf("req-run-%d-%d", run, i)
				e.RequestID = &rid
				e.Attempts = store.UsageAttempts{{Model: "m", Provider: "p", LatencyMS: int64(i)}}
				if run == 1 {
					e.InferenceKeyID = nil
				}
				events = append(events, e)
			}
		}

		// The same events, under other ids, stored as bun does.
		old := slices.Clone(events)
		for i := range old {
			old[i].ID = uuid.New()
		}
		if _, err := db.NewInsert().Model(&old).On("CONFLICT (id) DO NOTHING").Returning("NULL").Exec(ctx); err != nil {
			t.Fatal(err)
		}
		var n int
		err := run(ctx, func(st *store.Store) (err error) {
			n, err = store.InsertNewUsageEvents(st, ctx, events, noThen)
			return err
		})
		if err != nil || n != len(events) {
			t.Fatalf("stored %d, %v", n, err)
		}
		st := store.New(db)
		provCol, provIDCol := rawColumn(db, "provenance"), rawColumn(db, "provenance_id")
		for i, e := range events {
			// Read as the API reads it: the provenance from its own row.
			got := listedUsageEvent(t, st, e.OrgID, e.ID)
			var want store.UsageEvent
			if err := db.NewSelect().Model(&want).Where("id = ?", old[i].ID).Scan(ctx); err != nil {
				t.Fatal(err)
			}
			want.ID = e.ID
			// The one difference: an event with a provenance names its row.
			if (got.ProvenanceID != nil) != (e.Provenance != nil) {
				t.Fatalf("event %d: provenance id %v for provenance %v", i, got.ProvenanceID, e.Provenance)
			}
			want.ProvenanceID = got.ProvenanceID
			if !reflect.DeepEqual(got, want) {
				t.Errorf("event %d reads back\n%+v\nbun's reads back\n%+v", i, got, want)
			}
			// What bun read back is what was written, times in UTC to the
			// microsecond, a nil attempt chain as an empty one, bytes that
			// are not UTF-8 (single ones here) as U+FFFD.
			e.Provider = strings.ToValidUTF8(e.Provider, "\uFFFD")
			e.OccurredAt = e.OccurredAt.UTC().Truncate(time.Microsecond)
			e.ReceivedAt = e.ReceivedAt.UTC().Truncate(time.Microsecond)
			got.OccurredAt, got.ReceivedAt = got.OccurredAt.UTC(), got.ReceivedAt.UTC()
			if e.Attempts == nil {
				e.Attempts = store.UsageAttempts{}
			}
			if !reflect.DeepEqual(got, e) {
				t.Errorf("event %d reads back\n%+v\nwant\n%+v", i, got, e)
			}
			g, w := rawUsageEvent(t, db, e.ID), rawUsageEvent(t, db, old[i].ID)
			if e.Provenance != nil {
				// Stored once, byte for byte the JSON bun stored inline, under
				// the hash of the organization and that JSON.
				if g[provCol].Valid {
					t.Errorf("event %d stores its provenance inline too: %s", i, g[provCol].String)
				}
				body := provenanceBody(t, db, *got.ProvenanceID)
				if body != w[provCol].String || g[provIDCol].String != store.ProvenanceID(e.OrgID, []byte(body)).String() {
					t.Errorf("event %d: provenance %s stored as %s; bun stores %s", i, g[provIDCol].String, body, w[provCol].String)
				}
				g[provCol], g[provIDCol] = w[provCol], w[provIDCol]
				if db.Dialect().Name() == dialect.SQLite {
					g[provCol+1], g[provIDCol+1] = w[provCol+1], w[provIDCol+1]
				}
			}
			if !slices.Equal(g, w) {
				t.Errorf("event %d is stored as\n%v\nbun stores\n%v", i, g, w)
			}
		}
	})
}

// rawColumn is where rawUsageEvent puts column c (CAST; on SQLite its
// typeof follows).
func rawColumn(db *bun.DB, c string) int {
	i := slices.Index(store.UsageEventColumns[1:], c)
	if db.Dialect().Name() == dialect.SQLite {
		return 2 * i
	}
	return i
}

// listedUsageEvent is event id of org as ListUsageEvents reads it.
func listedUsageEvent(t *testing.T, st *store.Store, org, id uuid.UUID) store.UsageEvent {
	t.Helper()
	events, _, err := st.ListUsageEvents(context.Background(), store.UsageFilter{OrgID: org}, store.PageQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("event %s is not among its organization's %d", id, len(events))
	return store.UsageEvent{}
}

// provenanceBody is the JSON usage_provenances holds under id.
func provenanceBody(t *testing.T, db *bun.DB, id uuid.UUID) string {
	t.Helper()
	var body string
	if err := db.NewSelect().TableExpr("usage_provenances").Column("body").Where("id = ?", id).Scan(context.Background(), &body); err != nil {
		t.Fatalf("provenance %s: %v", id, err)
	}
	return body
}

func TestUsageEventColumnsAreTheModels(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		var names []string
		for _, f := range db.Table(reflect.TypeFor[store.UsageEvent]()).Fields {
			names = append(names, f.Name)
		}
		if !slices.Equal(names, store.UsageEventColumns) {
			t.Fatalf("UsageEvent's columns are %v, the insert writes %v", names, store.UsageEventColumns)
		}
	})
}

func TestInsertNewUsageEventsConcurrent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		pool := usageBatch(400)
		st := store.New(db)
		var (
			mu    sync.Mutex
			seen  []uuid.UUID
			total int
			wg    sync.WaitGroup
		)
		errs := make(chan error, 8)
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(g), 1))
				for range 6 {
					// Overlapping batches, in random orders.
					batch := make([]store.UsageEvent, 150)
					for i := range batch {
						batch[i] = pool[r.IntN(len(pool))]
					}
					n, err := st.InsertUsageEvents(ctx, nil) // nothing is nothing
					if err != nil || n != 0 {
						errs <- fmt.Errorf("empty batch: %d, %v", n, err)
						return
					}
					n, err = store.InsertNewUsageEvents(st, ctx, batch, recordThen(t, &seen, &mu))
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					total += n
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		// Store what no batch happened to draw, to know the total.
		n, err := st.InsertUsageEvents(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		if total+n != len(pool) || countUsageEvents(t, db) != len(pool) {
			t.Fatalf("batches stored %d, the rest %d, table holds %d; want %d in all", total, n, countUsageEvents(t, db), len(pool))
		}
		if len(seen) != total || len(slices.Compact(sortedIDs(seen))) != total {
			t.Fatalf("then saw %d ids (%d distinct), want %d", len(seen), len(slices.Compact(sortedIDs(seen))), total)
		}
	})
}

// The SQLite path's lean insert leaves out exactly the columns it names,
// and takes an event as lean only when each of them is at its default:
// one of them set, in turn, makes the event a full one.
func TestSQLiteLeanColumns(t *testing.T) {
	defaults := store.SQLiteDefaultColumns()
	for _, c := range defaults {
		if !slices.Contains(store.UsageEventColumns, c) || slices.Contains(store.SQLiteLeanColumns, c) {
			t.Errorf("column %q: not a column, or a lean insert's too", c)
		}
	}
	if len(defaults)+len(store.SQLiteLeanColumns) != len(store.UsageEventColumns) {
		t.Fatalf("%d lean columns and %d left out, of %d", len(store.SQLiteLeanColumns), len(defaults), len(store.UsageEventColumns))
	}
	lean := func() store.UsageEvent {
		e := fullUsageEvent()
		e.ManagementKeyID, e.Reason, e.Tags, e.TagSetID, e.Guardrails, e.BatchID = nil, nil, nil, nil, nil, nil
		e.ReasoningTokens, e.CacheWrite1hTokens, e.CacheSavingNanoUSD = 0, 0, 0
		id := uuid.New()
		e.ProvenanceID = &id // named by id: not inline
		return e
	}
	if e := lean(); !store.SQLiteLean(&e) {
		t.Fatal("an event at every default is not lean")
	}
	id, s := uuid.New(), ""
	set := map[string]func(e *store.UsageEvent){
		"management_key_id":     func(e *store.UsageEvent) { e.ManagementKeyID = &id },
		"reason":                func(e *store.UsageEvent) { e.Reason = &s },
		"reasoning_tokens":      func(e *store.UsageEvent) { e.ReasoningTokens = 1 },
		"cache_write_1h_tokens": func(e *store.UsageEvent) { e.CacheWrite1hTokens = 1 },
		"provenance":            func(e *store.UsageEvent) { e.ProvenanceID = nil },
		"tags":                  func(e *store.UsageEvent) { e.Tags = store.Tags{"a": "b"} },
		"tag_set_id":            func(e *store.UsageEvent) { e.TagSetID = &id },
		"guardrails":            func(e *store.UsageEvent) { e.Guardrails = store.UsageGuardrails{{ID: "g"}} },
		"cache_saving_nano_usd": func(e *store.UsageEvent) { e.CacheSavingNanoUSD = -1 },
		"batch_id":              func(e *store.UsageEvent) { e.BatchID = &s },
	}
	if len(set) != len(defaults) {
		t.Fatalf("the test sets %d columns; the insert leaves out %d", len(set), len(defaults))
	}
	for _, c := range defaults {
		e := lean()
		set[c](&e)
		if store.SQLiteLean(&e) {
			t.Errorf("an event with %s set is taken as lean", c)
		}
	}
}

// The SQLite insert's plan: runs of at least 16 lean events that share the
// run columns first, each whole, then the other lean events, then the full
// ones, each in the batch's order; the batch itself when that is its order.
func TestSQLitePlan(t *testing.T) {
	base := usageBatch(1)[0]
	lean := func(org uuid.UUID) store.UsageEvent {
		e := base
		e.ID, e.OrgID = uuid.New(), org
		return e
	}
	a, b := uuid.New(), uuid.New()
	t.Run("one run", func(t *testing.T) {
		events := usageBatch(20)
		ids, segs, copied := store.SQLitePlan(events)
		if copied || !slices.Equal(segs, []string{"run:20"}) || len(ids) != 20 {
			t.Fatalf("segments %v, copied %v", segs, copied)
		}
	})
	t.Run("mixed", func(t *testing.T) {
		var events []store.UsageEvent
		var wantRun, wantLean, wantFull []string
		reason := "x"
		for i := range 40 {
			var e store.UsageEvent
			switch {
			case i%5 == 4:
				e = lean(a)
				e.Reason = &reason
				wantFull = append(wantFull, e.ID.String())
			case i%5 == 3:
				e = lean(b) // 8 of these: too few for a run
				wantLean = append(wantLean, e.ID.String())
			default:
				e = lean(a) // 24 of these, one run
				wantRun = append(wantRun, e.ID.String())
			}
			events = append(events, e)
		}
		ids, segs, copied := store.SQLitePlan(events)
		want := slices.Concat(wantRun, wantLean, wantFull)
		if !copied || !slices.Equal(ids, want) || !slices.Equal(segs, []string{"run:24", "lean:32", "full:40"}) {
			t.Fatalf("planned %v as %v; want %v", segs, ids, want)
		}
	})
}
