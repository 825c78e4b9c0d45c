package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// Store runs queries on a database or inside one transaction.
type Store struct {
	db   bun.IDB
	root *bun.DB
	// gate queues the writers of an SQLite database (nil on PostgreSQL).
	gate writeGate
	// writer is the connection an SQLite database's writers use in their
	// turn at the gate (nil on PostgreSQL).
	writer *writerConn
	// inserts keeps the usage insert's statements of an SQLite database
	// prepared (nil on PostgreSQL).
	inserts *sqliteInserts
}

// New wraps an open database. A process keeps one Store per database: its
// writers queue at the Store's gate.
func New(db *bun.DB) *Store {
	s := &Store{db: db, root: db}
	if db.Dialect().Name() == dialect.SQLite {
		s.gate = make(writeGate, 1)
		s.writer = newWriterConn(db)
		s.inserts = &sqliteInserts{}
	}
	return s
}

// Close gives back the connection an SQLite database's writers hold; the
// database itself is the caller's to close, after. A Store used after
// Close takes a connection again at its next write.
func (s *Store) Close() error {
	if s.writer == nil {
		return nil
	}
	if err := s.gate.enter(context.Background()); err != nil {
		return err
	}
	defer s.gate.leave()
	return s.writer.drop()
}

// writeGate makes the process's writers to an SQLite database take turns
// in Go, first come first served, rather than race for SQLite's one write
// lock in its busy handler, which sleeps and retries and lets no waiter
// know its place: in issue 27 (row 7) a burst of new tag sets kept the
// lock busy for seconds at a time and a heartbeat, a budget lease and a
// policy change, each waiting in the busy handler, failed with SQLITE_BUSY
// after its 10 s. At the gate a writer waits for the writers ahead of it,
// each a short transaction, for as long as its context lets it. (Another
// process on the same file, gw admin, still meets the busy timeout.)
type writeGate chan struct{}

// gateWait bounds a writer's wait at the gate, well past what any turn
// takes: a writer that waited this long is refused as SQLite's busy
// timeout would refuse it, not left waiting (say, for a transaction of
// its own goroutine that it is called from).
const gateWait = 30 * time.Second

// errGateWait is a writer's wait at the gate run out.
var errGateWait = errors.New("the database had no turn for this write within " + gateWait.String())

// enter waits for the writer's turn; leave ends it. A nil gate has no
// queue.
func (g writeGate) enter(ctx context.Context) error {
	if g == nil {
		return nil
	}
	select {
	case g <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(gateWait)
	defer t.Stop()
	select {
	case g <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait to write: %w", context.Cause(ctx))
	case <-t.C:
		return errGateWait
	}
}

func (g writeGate) leave() {
	if g != nil {
		<-g
	}
}

// write runs fn, a write outside any transaction, on db in its turn at
// the gate: the writers' connection on SQLite (in a transaction, the
// transaction, at once: it had its turn).
func (s *Store) write(ctx context.Context, fn func(db bun.IDB) error) error {
	if _, ok := s.db.(bun.Tx); ok || s.writer == nil {
		return fn(s.db)
	}
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	return s.writer.exec(ctx, fn)
}

// DB is the underlying database handle.
func (s *Store) DB() *bun.DB { return s.root }

// InTx runs fn in a transaction, or in the current one when s is already
// transactional, so operations compose.
func (s *Store) InTx(ctx context.Context, fn func(tx *Store) error) error {
	if _, ok := s.db.(bun.Tx); ok {
		return fn(s)
	}
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	run := func(ctx context.Context, tx bun.Tx) error {
		return fn(&Store{db: tx, root: s.root, gate: s.gate, writer: s.writer, inserts: s.inserts})
	}
	if s.writer == nil {
		return s.root.RunInTx(ctx, nil, run)
	}
	return s.writer.inTx(ctx, run)
}

// PageKey is a sort position in a keyset-paginated collection.
type PageKey struct {
	CreatedAt time.Time
	ID        uuid.UUID
}

// PageQuery asks for up to Limit items after the position After.
type PageQuery struct {
	After *PageKey
	Limit int
}

// paginate applies keyset pagination on (created_at, id) and fetches one
// extra row so the caller knows whether a next page exists. A position
// compares by value, so deleting the boundary row does not break traversal.
func paginate(q *bun.SelectQuery, p PageQuery, desc bool) *bun.SelectQuery {
	return paginateOn(q, "created_at", p, desc)
}

// paginateOn is paginate on another time column.
func paginateOn(q *bun.SelectQuery, timeCol string, p PageQuery, desc bool) *bun.SelectQuery {
	op, dir := ">", "ASC"
	if desc {
		op, dir = "<", "DESC"
	}
	if p.After != nil {
		q = q.Where(fmt.Sprintf("(%s, id) %s (?, ?)", timeCol, op), p.After.CreatedAt, p.After.ID)
	}
	return q.OrderExpr(fmt.Sprintf("%s %s, id %s", timeCol, dir, dir)).Limit(int64(p.Limit + 1))
}

// trimPage cuts the extra row and returns the key of the last kept item.
func trimPage[T any](items []T, limit int, key func(T) PageKey) ([]T, *PageKey) {
	if len(items) <= limit {
		return items, nil
	}
	items = items[:limit]
	k := key(items[len(items)-1])
	return items, &k
}

// GetInstanceState reads the instance row, creating it on first use. The
// insert is idempotent, so replicas starting together agree on one row.
func (s *Store) GetInstanceState(ctx context.Context) (*InstanceState, error) {
	st := new(InstanceState)
	err := s.db.NewSelect().Model(st).Where("id = 1").Scan(ctx)
	if err == nil || !errors.Is(mapErr(err), ErrNotFound) {
		return st, mapErr(err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("read random: %w", err)
	}
	row := &InstanceState{ID: 1, CursorKey: hex.EncodeToString(key), CreatedAt: Now()}
	if _, err := s.db.NewInsert().Model(row).On("CONFLICT (id) DO NOTHING").Exec(ctx); err != nil {
		return nil, fmt.Errorf("create instance state: %w", mapErr(err))
	}
	if err := s.db.NewSelect().Model(st).Where("id = 1").Scan(ctx); err != nil {
		return nil, fmt.Errorf("read instance state: %w", mapErr(err))
	}
	return st, nil
}

// MaxSetupTokens is how many one-time setup tokens an instance without an
// owner keeps at once. Each process that starts on it adds its own, so
// that replicas starting together on an empty database each print a
// token that works (issue 27, row 8: the second replaced the first's);
// past the bound the oldest goes. Bootstrapping clears them all.
const MaxSetupTokens = 8

// AddSetupToken adds the hash of a one-time setup token to those that may
// bootstrap the instance, while it has no owner.
func (s *Store) AddSetupToken(ctx context.Context, hash string) error {
	return s.InTx(ctx, func(tx *Store) error {
		st := new(InstanceState)
		q := tx.db.NewSelect().Model(st).Where("id = 1")
		if tx.root.Dialect().Name() == dialect.PG {
			q = q.For("UPDATE") // replicas add one after the other
		}
		if err := q.Scan(ctx); err != nil {
			return mapErr(err)
		}
		hashes := st.SetupTokenHashes()
		if !slices.Contains(hashes, hash) {
			hashes = append(hashes, hash)
		}
		hashes = hashes[max(0, len(hashes)-MaxSetupTokens):]
		_, err := tx.db.NewUpdate().Model((*InstanceState)(nil)).Set("setup_token_hash = ?", strings.Join(hashes, " ")).
			Where("id = 1").Where("bootstrapped_at IS NULL").Exec(ctx)
		return mapErr(err)
	})
}

// SetupTokenHashes are the hashes of the setup tokens that may bootstrap
// the instance (kept space-separated in setup_token_hash).
func (st *InstanceState) SetupTokenHashes() []string {
	if st.SetupTokenHash == nil {
		return nil
	}
	return strings.Fields(*st.SetupTokenHash)
}

// MarkBootstrapped records the first owner's creation. It succeeds for
// exactly one caller: the update is conditional on the instance being empty.
func (s *Store) MarkBootstrapped(ctx context.Context, at time.Time) (bool, error) {
	res, err := s.db.NewUpdate().Model((*InstanceState)(nil)).
		Set("bootstrapped_at = ?", at).Set("setup_token_hash = NULL").
		Where("id = 1").Where("bootstrapped_at IS NULL").Exec(ctx)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
