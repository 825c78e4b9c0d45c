package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/gw-gateway/gw/wire"
)

// usageEventColumns are usage_events' columns in the order usageEventRow
// lists a row's values. A test holds it to UsageEvent's bun fields.
var usageEventColumns = []string{
	"id", "org_id", "workspace_id", "inference_key_id", "management_key_id", "owner_id",
	"model", "provider", "provider_credential_id",
	"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_nano_usd",
	"status", "latency_ms", "occurred_at", "bucket", "received_at",
	"request_id", "endpoint", "reason", "requested_model", "attempts",
	"usage_source", "reasoning_tokens", "cache_write_1h_tokens", "provenance", "tags", "tag_set_id",
	"guardrails",
	"cache_saving_nano_usd", "service_tier", "batch_id", "provenance_id",
}

// usageEventsIn is the session temporary table a PostgreSQL connection
// copies a batch into. ON COMMIT DELETE ROWS and the copy running inside
// the transaction leave it empty after every batch, committed or not.
const usageEventsIn = "gw_usage_events_in"

// usageEventsInReady marks, in a pgx connection's CustomData, that the
// connection's session has its usageEventsIn.
const usageEventsInReady = "gw.store.usage_events_in"

// insertNewUsageEvents stores events in one transaction, skipping ids
// already stored, and calls then inside that same transaction with exactly
// the events it newly stored (in any order), so derived data commits or
// rolls back with them. It returns how many it stored.
//
// An id twice in events is stored once, from its first occurrence. On
// PostgreSQL rows are inserted in id order, so concurrent batches sharing
// ids wait for each other instead of deadlocking. (SQLite has one writer.)
func (s *Store) insertNewUsageEvents(ctx context.Context, events []UsageEvent, then func(ctx context.Context, tx bun.IDB, stored []UsageEvent) error) (int, error) {
	if len(events) == 0 {
		return 0, nil
	}
	events = uniqueByID(events)
	var stored []UsageEvent
	var err error
	_, inTx := s.db.(bun.Tx)
	pg := s.root.Dialect().Name() == dialect.PG
	if pg && !inTx {
		stored, err = s.copyNewUsageEvents(ctx, events, then)
	} else {
		err = s.InTx(ctx, func(tx *Store) error {
			if err := internProvenances(ctx, tx.db, events); err != nil {
				return err
			}
			var err error
			if pg {
				// In id order, as the COPY path inserts.
				stored, err = insertReturningNew(ctx, tx.db, sortedByID(events))
			} else {
				stored, err = tx.inserts.insertNew(ctx, tx.root.DB, tx.db.(bun.Tx).Tx, events)
			}
			if err != nil {
				return err
			}
			return then(ctx, tx.db, stored)
		})
	}
	if err != nil {
		return 0, err
	}
	return len(stored), nil
}

// uniqueByID returns events without repeated ids, keeping the first of
// each: events itself when no id repeats, a new slice otherwise.
func uniqueByID(events []UsageEvent) []UsageEvent {
	seen := make(map[uuid.UUID]struct{}, len(events))
	var out []UsageEvent
	for i := range events {
		if _, dup := seen[events[i].ID]; !dup {
			seen[events[i].ID] = struct{}{}
			if out != nil {
				out = append(out, events[i])
			}
			continue
		}
		if out == nil {
			out = append(make([]UsageEvent, 0, len(events)-1), events[:i]...)
		}
	}
	if out == nil {
		return events
	}
	return out
}

// sortedByID returns a copy of events (unique ids) sorted by id.
func sortedByID(events []UsageEvent) []UsageEvent {
	out := slices.Clone(events)
	slices.SortFunc(out, func(a, b UsageEvent) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	return out
}

// newlyStored picks from events (unique ids) those whose id is in ids.
func newlyStored(events []UsageEvent, ids []uuid.UUID) []UsageEvent {
	if len(ids) == len(events) {
		return events
	}
	in := make(map[uuid.UUID]struct{}, len(ids))
	for _, id := range ids {
		in[id] = struct{}{}
	}
	out := make([]UsageEvent, 0, len(ids))
	for _, e := range events {
		if _, ok := in[e.ID]; ok {
			out = append(out, e)
		}
	}
	return out
}

// insertReturningNew is the plain path: bun's multi-row insert, learning
// from RETURNING which rows were new. events is the caller's own copy: an
// event naming its provenance by id has the inline value dropped, so bun
// stores what the other paths store.
func insertReturningNew(ctx context.Context, db bun.IDB, events []UsageEvent) ([]UsageEvent, error) {
	for i := range events {
		if events[i].ProvenanceID != nil {
			events[i].Provenance = nil
		}
	}
	ids := make([]uuid.UUID, 0, len(events))
	err := db.NewInsert().Model(&events).On("CONFLICT (id) DO NOTHING").Returning("id").Scan(ctx, &ids)
	if err != nil {
		return nil, mapErr(err)
	}
	return newlyStored(events, ids), nil
}

// copyNewUsageEvents is the PostgreSQL path. On one dedicated connection, a
// transaction copies the batch into the session's temporary table, inserts
// from there what is new, and runs then.
func (s *Store) copyNewUsageEvents(ctx context.Context, events []UsageEvent, then func(ctx context.Context, tx bun.IDB, stored []UsageEvent) error) ([]UsageEvent, error) {
	conn, err := s.root.Conn(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	defer conn.Close()
	if err := ensureUsageEventsIn(ctx, conn); err != nil {
		return nil, err
	}
	var stored []UsageEvent
	err = conn.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := internProvenances(ctx, tx, events); err != nil {
			return err
		}
		err := conn.Raw(func(dc any) error {
			pc, err := pgxConn(dc)
			if err != nil {
				return err
			}
			src := newUsageCopyReader(events)
			if _, err = pc.PgConn().CopyFrom(ctx, src, copyUsageEventsInSQL); err == nil {
				// Only then: on some errors pgconn returns before its
				// reading goroutine is done with src.
				src.release()
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("copy usage events: %w", mapErr(err))
		}
		rows, err := tx.QueryContext(ctx, insertFromUsageEventsIn)
		if err != nil {
			return mapErr(err)
		}
		ids := make([]uuid.UUID, 0, len(events))
		for rows.Next() {
			var id uuid.UUID
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		if err := rows.Err(); err != nil {
			return mapErr(err)
		}
		stored = newlyStored(events, ids)
		return then(ctx, tx, stored)
	})
	return stored, err
}

// insertFromUsageEventsIn moves the copied batch into usage_events.
var insertFromUsageEventsIn = func() string {
	cols := ""
	for i, c := range usageEventColumns {
		if i > 0 {
			cols += ", "
		}
		cols += c
	}
	return "INSERT INTO usage_events (" + cols + ") SELECT " + cols + " FROM " + usageEventsIn +
		" ORDER BY id ON CONFLICT (id) DO NOTHING RETURNING id"
}()

// ensureUsageEventsIn creates the connection's temporary table, once per
// session. It runs outside the batch's transaction, so a batch rolled back
// does not take the table with it.
func ensureUsageEventsIn(ctx context.Context, conn bun.Conn) error {
	ready := false
	if err := conn.Raw(func(dc any) error {
		pc, err := pgxConn(dc)
		if err == nil {
			_, ready = pc.PgConn().CustomData()[usageEventsInReady]
		}
		return err
	}); err != nil {
		return mapErr(err)
	}
	if ready {
		return nil
	}
	if _, err := conn.ExecContext(ctx, "CREATE TEMP TABLE IF NOT EXISTS "+usageEventsIn+
		" (LIKE usage_events) ON COMMIT DELETE ROWS"); err != nil {
		return fmt.Errorf("create %s: %w", usageEventsIn, mapErr(err))
	}
	return conn.Raw(func(dc any) error {
		pc, err := pgxConn(dc)
		if err == nil {
			pc.PgConn().CustomData()[usageEventsInReady] = true
		}
		return err
	})
}

// pgxConn is the pgx connection under a database/sql driver connection.
func pgxConn(driverConn any) (*pgx.Conn, error) {
	c, ok := driverConn.(*stdlib.Conn)
	if !ok {
		return nil, fmt.Errorf("usage ingest needs the pgx driver, not %T", driverConn)
	}
	return c.Conn(), nil
}

// tagsText is an event's tags as stored (nil: NULL).
func tagsText(e *UsageEvent) (*string, error) {
	v, err := e.Tags.Value()
	if err != nil || v == nil {
		if err != nil {
			err = fmt.Errorf("usage event %s tags: %w", e.ID, err)
		}
		return nil, err
	}
	s := v.(string)
	return &s, nil
}

// provenanceText is an event's provenance as stored inline (nil: NULL),
// what UsageProvenance.Value writes; NULL when the event names it by
// ProvenanceID.
func provenanceText(e *UsageEvent) *string {
	if e.Provenance == nil || e.ProvenanceID != nil {
		return nil
	}
	var scratch [1024]byte
	s := string(wire.AppendUsageProvenanceJSON(scratch[:0], (*wire.UsageProvenance)(e.Provenance)))
	return &s
}

// attemptsText is an event's attempts as stored, what UsageAttempts.Value
// writes.
func attemptsText(e *UsageEvent) string {
	if e.Attempts == nil {
		return "[]"
	}
	var scratch [256]byte
	return string(wire.AppendUsageAttemptsJSON(scratch[:0], e.Attempts))
}

// sqliteChunk is how many rows one statement of the SQLite path inserts.
const sqliteChunk = 100

// sqliteInserts keeps the SQLite path's statements prepared for as long as
// the database is open, one per chunk size and kind (sqliteShape): a
// batch is planned in stretches of one kind (sqlitePlan), each inserted in
// chunks of sqliteChunk rows and a remainder in chunks of powers of two
// (1,003 rows: ten of 100, one of 2, one of 1), so at most 24 are kept. Preparing the 100-row statement (2,700 placeholders for SQLite to
// parse) once or twice a batch was 5 % of the writer's CPU under the
// harness's load (issue 33, eighth round). database/sql prepares a
// statement again on each connection a transaction runs on, once.
type sqliteInserts struct {
	mu    sync.Mutex
	stmts map[sqliteShape]*sql.Stmt
}

// sqliteShape is one prepared insert: n rows of one kind.
type sqliteShape struct {
	n    int
	kind sqliteKind
}

// sqliteKind is which values an insert binds for its rows.
type sqliteKind uint8

const (
	// sqliteFull binds every column of every row.
	sqliteFull sqliteKind = iota
	// sqliteLeanRows binds the lean columns (sqliteLeanColumns) of every
	// row: its events hold the others at their default.
	sqliteLeanRows
	// sqliteRun is lean rows that also share every run column
	// (sqliteRunColumns), bound once for the statement.
	sqliteRun
)

// sqliteDefaults are the columns a lean insert leaves out, each with what
// tells that an event holds the column's default there: NULL, or 0 where
// the schema defaults the column to 0. Most events carry none of them (no
// management key, reason, reasoning or one-hour cache tokens, inline
// provenance, tags, guardrails, cache saving or batch), and SQLite fills a
// column left out with its default, which is what binding the event's
// value would store. Binding is per value (the driver copies each text
// into C memory and takes the connection's mutex twice), so leaving ten of
// 35 out took the loader benchmark's CPU an event to 0.92× (issue 33,
// fifteenth round, docs/performance.md).
var sqliteDefaults = []sqliteDefault{
	{"management_key_id", func(e *UsageEvent) bool { return e.ManagementKeyID == nil }},
	{"reason", func(e *UsageEvent) bool { return e.Reason == nil }},
	{"reasoning_tokens", func(e *UsageEvent) bool { return e.ReasoningTokens == 0 }},
	{"cache_write_1h_tokens", func(e *UsageEvent) bool { return e.CacheWrite1hTokens == 0 }},
	{"provenance", func(e *UsageEvent) bool { return e.Provenance == nil || e.ProvenanceID != nil }},
	{"tags", func(e *UsageEvent) bool { return len(e.Tags) == 0 }},
	{"tag_set_id", func(e *UsageEvent) bool { return e.TagSetID == nil }},
	{"guardrails", func(e *UsageEvent) bool { return len(e.Guardrails) == 0 }},
	{"cache_saving_nano_usd", func(e *UsageEvent) bool { return e.CacheSavingNanoUSD == 0 }},
	{"batch_id", func(e *UsageEvent) bool { return e.BatchID == nil }},
}

type sqliteDefault struct {
	column    string
	isDefault func(e *UsageEvent) bool
}

// sqliteLeanColumns are the columns of a lean insert, in
// usageEventColumns' order, and sqliteLeanKept their indexes there.
var sqliteLeanColumns, sqliteLeanKept = leanColumns()

func leanColumns() (columns []string, kept []int) {
	for i, c := range usageEventColumns {
		if !slices.ContainsFunc(sqliteDefaults, func(d sqliteDefault) bool { return d.column == c }) {
			columns, kept = append(columns, c), append(kept, i)
		}
	}
	return columns, kept
}

// sqliteLean reports whether e holds the default in every column a lean
// insert leaves out.
func sqliteLean(e *UsageEvent) bool {
	for _, d := range sqliteDefaults {
		if !d.isDefault(e) {
			return false
		}
	}
	return true
}

// sqliteRunColumns are the lean columns a run of events shares: one key's
// calls to one model, received in one batch, most often do. A run's insert
// binds them once for its rows rather than once a row, and its rows bind
// only the columns of their own (sqliteRunOwn): 14 and 11 of the 25 lean
// columns, so a run of 100 rows binds 1,114 values where lean rows bind
// 2,500.
var sqliteRunColumns = []string{"org_id", "workspace_id", "inference_key_id", "owner_id", "model", "provider",
	"provider_credential_id", "status", "received_at", "endpoint", "requested_model", "usage_source", "service_tier",
	"provenance_id"}

// sqliteRunShared and sqliteRunOwn are the indexes in usageEventColumns of
// the run columns and of the other lean columns.
var sqliteRunShared, sqliteRunOwn = runColumns()

func runColumns() (shared, own []int) {
	for _, c := range sqliteRunColumns {
		shared = append(shared, slices.Index(usageEventColumns, c))
	}
	for _, i := range sqliteLeanKept {
		if !slices.Contains(sqliteRunColumns, usageEventColumns[i]) {
			own = append(own, i)
		}
	}
	return shared, own
}

// sqliteRunMin is the fewest lean events sharing the run columns that are
// inserted as a run; fewer go with the other lean rows, so a batch of many
// keys' few calls each is not cut into many small statements.
const sqliteRunMin = 16

// sqliteRunKey is the run columns' values of an event: events with equal
// keys bind the same values there. (received is the time's instant, which
// is what its text says.)
type sqliteRunKey struct {
	org, workspace, key, owner, credential, provenance uuid.UUID
	// has tells which of key, owner, credential, provenance, endpoint and
	// service tier are set (bits 0 to 5): a nil one is NULL, not a zero.
	has                                                        uint8
	model, provider, status, endpoint, requested, source, tier string
	received                                                   int64
}

func runKeyOf(e *UsageEvent) sqliteRunKey {
	k := sqliteRunKey{org: e.OrgID, workspace: e.WorkspaceID, model: e.Model, provider: e.Provider, status: e.Status,
		requested: e.RequestedModel, source: e.UsageSource, received: e.ReceivedAt.UnixNano()}
	ids := [...]struct {
		from *uuid.UUID
		to   *uuid.UUID
	}{{e.InferenceKeyID, &k.key}, {e.OwnerID, &k.owner}, {e.ProviderCredentialID, &k.credential}, {e.ProvenanceID, &k.provenance}}
	for bit, id := range ids {
		if id.from != nil {
			k.has |= 1 << bit
			*id.to = *id.from
		}
	}
	for bit, text := range [...]struct {
		from *string
		to   *string
	}{{e.Endpoint, &k.endpoint}, {e.ServiceTier, &k.tier}} {
		if text.from != nil {
			k.has |= 1 << (4 + bit)
			*text.to = *text.from
		}
	}
	return k
}

// sqliteSegment is a stretch of a planned batch inserted by statements of
// one kind: the events before end, from the previous segment's end.
type sqliteSegment struct {
	kind sqliteKind
	end  int
}

// sqlitePlan orders a batch for the SQLite insert: each run of at least
// sqliteRunMin lean events sharing the run columns together, then the
// other lean events, then the rest, each in the batch's order within. It
// returns events itself when that is their order already (one key's run,
// the usual batch), else a copy.
func sqlitePlan(events []UsageEvent) ([]UsageEvent, []sqliteSegment) {
	var (
		runOf = map[sqliteRunKey]int{}
		runs  [][]int // each run's events, the runs first seen first
		full  []int
	)
	for i := range events {
		e := &events[i]
		if !sqliteLean(e) {
			full = append(full, i)
			continue
		}
		k := runKeyOf(e)
		r, seen := runOf[k]
		if !seen {
			r = len(runs)
			runOf[k], runs = r, append(runs, nil)
		}
		runs[r] = append(runs[r], i)
	}
	idx := make([]int, 0, len(events))
	var segs []sqliteSegment
	for _, r := range runs {
		if len(r) >= sqliteRunMin {
			idx = append(idx, r...)
			segs = append(segs, sqliteSegment{sqliteRun, len(idx)})
		}
	}
	before := len(idx)
	for _, r := range runs {
		if len(r) < sqliteRunMin {
			idx = append(idx, r...)
		}
	}
	if len(idx) > before {
		segs = append(segs, sqliteSegment{sqliteLeanRows, len(idx)})
	}
	if len(full) > 0 {
		idx = append(idx, full...)
		segs = append(segs, sqliteSegment{sqliteFull, len(idx)})
	}
	inOrder := true
	for i, j := range idx {
		inOrder = inOrder && i == j
	}
	if inOrder {
		return events, segs
	}
	out := make([]UsageEvent, len(idx))
	for i, j := range idx {
		out[i] = events[j]
	}
	return out, segs
}

// chunkSize is how many of n remaining rows the next statement inserts.
func chunkSize(n int) int {
	if n >= sqliteChunk {
		return sqliteChunk
	}
	return 1 << (bits.Len(uint(n)) - 1)
}

// stmt is the insert of shape, within tx.
func (c *sqliteInserts) stmt(ctx context.Context, db *sql.DB, tx *sql.Tx, shape sqliteShape) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stmts[shape]
	if s == nil {
		var text string
		switch shape.kind {
		case sqliteFull:
			text = sqliteInsertSQL(usageEventColumns, shape.n)
		case sqliteLeanRows:
			text = sqliteInsertSQL(sqliteLeanColumns, shape.n)
		default:
			text = sqliteRunSQL(shape.n)
		}
		var err error
		if s, err = db.PrepareContext(ctx, text); err != nil {
			return nil, mapErr(err)
		}
		if c.stmts == nil {
			c.stmts = map[sqliteShape]*sql.Stmt{}
		}
		c.stmts[shape] = s
	}
	return tx.StmtContext(ctx, s), nil
}

// insertNew is the SQLite path: multi-row INSERTs with placeholders, each
// prepared once (sqliteInserts), instead of bun's single statement with
// every value inlined, which SQLite spends most of its time parsing. Values
// are bound as bun would inline them (times as bun's text; uuids, attempts
// as their Value), so what is stored is the same.
func (c *sqliteInserts) insertNew(ctx context.Context, db *sql.DB, tx *sql.Tx, events []UsageEvent) ([]UsageEvent, error) {
	ids := make([]uuid.UUID, 0, len(events))
	args := make([]any, 0, len(usageEventColumns)*min(sqliteChunk, len(events)))
	shared := sqliteShared{uuids: map[uuid.UUID]any{}, texts: map[string]any{}}
	planned, segs := sqlitePlan(events)
	for start, seg := 0, 0; start < len(planned); {
		if start == segs[seg].end {
			seg++
		}
		shape := sqliteShape{kind: segs[seg].kind, n: chunkSize(segs[seg].end - start)}
		chunk := planned[start : start+shape.n]
		start += len(chunk)
		stmt, err := c.stmt(ctx, db, tx, shape)
		if err != nil {
			return nil, err
		}
		args = args[:0]
		var keep []int // each row's columns: nil for every one
		switch shape.kind {
		case sqliteLeanRows:
			keep = sqliteLeanKept
		case sqliteRun:
			keep = sqliteRunOwn
			// The run's values, once: every event of the chunk has them.
			if args, err = shared.appendRow(args, &chunk[0], sqliteRunShared); err != nil {
				return nil, err
			}
		}
		for i := range chunk {
			if args, err = shared.appendRow(args, &chunk[i], keep); err != nil {
				return nil, err
			}
		}
		res, err := stmt.ExecContext(ctx, args...)
		// The transaction's copy only: the prepared statement stays with
		// its connection. (The transaction's end would close it too.)
		stmt.Close()
		if err != nil {
			return nil, mapErr(err)
		}
		if ids, err = appendInserted(ctx, tx, ids, chunk, res); err != nil {
			return nil, err
		}
	}
	if len(ids) < len(events) {
		if err := sqliteAllThere(ctx, tx, events, ids); err != nil {
			return nil, err
		}
	}
	return newlyStored(events, ids), nil
}

// appendInserted appends to ids those of chunk's events the insert res
// stored. Most often that is all of them, told by the count alone: reading
// them back (RETURNING) cost a result row and a scan an event. Otherwise
// the rows it stored are the last it inserted: SQLite gives a new row the
// rowid one past the table's largest, so one statement's rows have
// consecutive rowids ending at the last one inserted (the ignored rows take
// none), and those rows are read back by rowid. SQLite picks a rowid at
// random only once the largest possible is taken; what is read back is
// checked (as many rows, each an event of the chunk), so that case fails
// the batch rather than misreport it.
func appendInserted(ctx context.Context, tx *sql.Tx, ids []uuid.UUID, chunk []UsageEvent, res sql.Result) ([]uuid.UUID, error) {
	n, err := res.RowsAffected()
	if err != nil {
		return nil, mapErr(err)
	}
	if n == int64(len(chunk)) {
		for i := range chunk {
			ids = append(ids, chunk[i].ID)
		}
		return ids, nil
	}
	if n == 0 {
		return ids, nil
	}
	last, err := res.LastInsertId()
	if err != nil {
		return nil, mapErr(err)
	}
	rows, err := tx.QueryContext(ctx, "SELECT id FROM usage_events WHERE rowid > ? AND rowid <= ?", last-n, last)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	read := int64(0)
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(chunk, func(e UsageEvent) bool { return e.ID == id }) {
			return nil, fmt.Errorf("usage events: rowid %d..%d holds %s, not an event of the insert", last-n+1, last, id)
		}
		ids = append(ids, id)
		read++
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err)
	}
	if read != n {
		return nil, fmt.Errorf("usage events: the insert stored %d rows but %d were found by their rowids", n, read)
	}
	return ids, nil
}

// sqliteAllThere checks that the events an insert OR IGNORE did not store
// (those not in ids) are stored already: repeated ids, not rows SQLite
// ignored for another conflict.
func sqliteAllThere(ctx context.Context, tx *sql.Tx, events []UsageEvent, ids []uuid.UUID) error {
	stored := make(map[uuid.UUID]struct{}, len(ids))
	for _, id := range ids {
		stored[id] = struct{}{}
	}
	for i := range events {
		if _, ok := stored[events[i].ID]; ok {
			continue
		}
		var one int
		err := tx.QueryRowContext(ctx, "SELECT 1 FROM usage_events WHERE id = ?", events[i].ID.String()).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("usage event %s: the database refused the row", events[i].ID)
		}
		if err != nil {
			return mapErr(err)
		}
	}
	return nil
}

// sqliteInsertSQL is the insert of n rows of columns. OR IGNORE rather than ON
// CONFLICT (id) DO NOTHING: a statement that may abort half-way (on a NOT
// NULL column, which DO NOTHING leaves to abort) makes SQLite keep a
// statement journal, a copy of every page the statement changes, which
// was a tenth of the usage writer's CPU. One that ignores every conflict
// cannot abort and keeps none. Ignoring more than a repeated id is no
// licence to lose an event: insertNew checks that every event it
// did not store was there already.
func sqliteInsertSQL(columns []string, n int) string {
	row := "(?" + strings.Repeat(", ?", len(columns)-1) + ")"
	var b strings.Builder
	b.WriteString("INSERT OR IGNORE INTO usage_events (" + strings.Join(columns, ", ") + ") VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	return b.String()
}

// sqliteRunSQL is the insert of a run of n rows: the run columns bound
// once, as the first 14 parameters (SQLite numbers parameters in the
// order the text has them, and the SELECT list comes first), and each
// row's own columns from a VALUES list. Every parameter is a plain ?: the
// driver asks SQLite each parameter's name as it binds it, and a
// statement with any numbered one (?1) looks every parameter up in the
// list of those, which cost 0.4 µs an event with ?1 to ?14 here
// (VListNumToName; issue 33, sixteenth round).
func sqliteRunSQL(n int) string {
	var b strings.Builder
	b.WriteString("INSERT OR IGNORE INTO usage_events (" + strings.Join(sqliteRunColumns, ", "))
	for _, i := range sqliteRunOwn {
		b.WriteString(", " + usageEventColumns[i])
	}
	b.WriteString(") SELECT ")
	b.WriteString("?" + strings.Repeat(", ?", len(sqliteRunShared)-1))
	for j := range sqliteRunOwn {
		b.WriteString(", column" + strconv.Itoa(j+1))
	}
	b.WriteString(" FROM (VALUES ")
	row := "(?" + strings.Repeat(", ?", len(sqliteRunOwn)-1) + ")"
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	b.WriteString(")")
	return b.String()
}

// bunTimeFormat is how bun writes a time.Time into SQL (in UTC).
const bunTimeFormat = "2006-01-02 15:04:05.999999-07:00"

// sqliteShared holds a batch's values that most of its events repeat (the
// organization, workspace, key, owner and credential, the model, provider,
// status and endpoint, the provenance), each made into its text and boxed
// into an interface once per batch instead of once per event: allocating
// them was a tenth of the SQLite writer's CPU (issue 33). Values unique to
// an event (its id, times, request id, attempts) are made per event.
type sqliteShared struct {
	uuids map[uuid.UUID]any
	texts map[string]any
	// received is the last received_at written, and its text: a batch's
	// events share one.
	received     time.Time
	receivedText any
}

func (sh *sqliteShared) receivedAt(t time.Time) any {
	if sh.receivedText == nil || !t.Equal(sh.received) {
		sh.received, sh.receivedText = t, t.UTC().Format(bunTimeFormat)
	}
	return sh.receivedText
}

func (sh *sqliteShared) uuid(id *uuid.UUID) any {
	if id == nil {
		return nil
	}
	v, ok := sh.uuids[*id]
	if !ok {
		v = id.String()
		sh.uuids[*id] = v
	}
	return v
}

func (sh *sqliteShared) text(s string) any {
	v, ok := sh.texts[s]
	if !ok {
		v = bunText(s)
		sh.texts[s] = v
	}
	return v
}

func (sh *sqliteShared) optText(s *string) any {
	if s == nil {
		return nil
	}
	return sh.text(*s)
}

// appendRow appends e's values in usageEventColumns' order, or those at
// the indexes keep lists, bound so SQLite stores exactly the text bun's
// inlined insert stores.
func (sh *sqliteShared) appendRow(args []any, e *UsageEvent, keep []int) ([]any, error) {
	attempts, provenance := attemptsText(e), provenanceText(e)
	tagsText, err := tagsText(e)
	if err != nil {
		return nil, err
	}
	guardrails, err := guardrailsText(e)
	if err != nil {
		return nil, err
	}
	// bun refuses a string holding a NUL byte; so does this.
	for _, s := range []*string{&e.Model, &e.Provider, &e.Status, &e.RequestedModel, e.RequestID, e.Endpoint, e.Reason, &e.UsageSource, provenance, tagsText, guardrails, e.ServiceTier, e.BatchID} {
		if s != nil && strings.IndexByte(*s, 0) >= 0 {
			return nil, fmt.Errorf("usage event %s: string contains a NUL byte", e.ID)
		}
	}
	row := [...]any{
		e.ID.String(), sh.uuid(&e.OrgID), sh.uuid(&e.WorkspaceID), sh.uuid(e.InferenceKeyID), sh.uuid(e.ManagementKeyID), sh.uuid(e.OwnerID),
		sh.text(e.Model), sh.text(e.Provider), sh.uuid(e.ProviderCredentialID),
		e.InputTokens, e.OutputTokens, e.CacheReadTokens, e.CacheWriteTokens, e.CostNanoUSD,
		sh.text(e.Status), e.LatencyMS, e.OccurredAt.UTC().Format(bunTimeFormat), e.Bucket, sh.receivedAt(e.ReceivedAt),
		sqliteText(e.RequestID), sh.optText(e.Endpoint), sh.optText(e.Reason), sh.text(e.RequestedModel), attempts,
		sh.text(e.UsageSource), e.ReasoningTokens, e.CacheWrite1hTokens, sqliteText(provenance), sqliteText(tagsText), sh.uuid(e.TagSetID),
		sqliteText(guardrails),
		e.CacheSavingNanoUSD, sh.optText(e.ServiceTier), sh.optText(e.BatchID), sh.uuid(e.ProvenanceID),
	}
	if keep == nil {
		return append(args, row[:]...), nil
	}
	for _, i := range keep {
		args = append(args, row[i])
	}
	return args, nil
}

func sqliteText(s *string) any {
	if s == nil {
		return nil
	}
	return bunText(*s)
}

// bunText is s as bun writes it into SQL: each byte that is not valid
// UTF-8 as U+FFFD.
func bunText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r)
	}
	return b.String()
}
