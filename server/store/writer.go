package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"runtime"
	"strings"

	"github.com/uptrace/bun"
)

// writerConn is the one connection an SQLite database's writers use, each
// in its turn at the gate (which is what makes one enough).
//
// On a connection that finds the database changed by another since its
// last transaction, SQLite empties its page cache (up to 32 MiB, SQLiteDSN)
// and reads the pages again. With writes on any pooled connection, the
// pool handed the usage writer's connection, its cache full of the usage
// indexes' pages, to the next reader: the budget sync's reads, every two
// seconds, emptied it, page by page, a fortieth of gw's CPU under load
// (issue 33, tenth round). Writes on a connection of their own keep its
// cache of what they write, and no reader ever finds one full.
type writerConn struct {
	db *bun.DB
	*held
}

// held is the connection, apart from writerConn so that a cleanup can
// close it once writerConn is unreachable.
type held struct {
	conn *bun.Conn // nil until the first write, and after a broken one
}

func newWriterConn(db *bun.DB) *writerConn {
	w := &writerConn{db: db, held: &held{}}
	// A Store dropped without Close (a test's, say) gives its connection
	// back once nothing refers to it.
	runtime.AddCleanup(w, func(h *held) {
		if h.conn != nil {
			h.conn.Close()
		}
	}, w.held)
	return w
}

// inTx runs fn in a transaction on the connection, in the caller's turn
// at the gate. A connection that broke is given back; when it broke
// before the transaction began, the transaction begins again on another.
//
// A transaction whose BEGIN or COMMIT failed, or whose context ended
// while it ran (SQLite interrupts the statement, a COMMIT too), may have
// left SQLite's transaction open on the connection, holding the write
// lock: the connection is closed then, not kept, and a BEGIN that finds
// such a transaction begins again on a new one. (On the pool such a
// connection went back to be reused; held for every write, it would fail
// them all.)
func (w *writerConn) inTx(ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	for attempt := 0; ; attempt++ {
		c, err := w.get(ctx)
		if err != nil {
			return err
		}
		began := false
		var fnErr error
		err = c.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			began = true
			fnErr = fn(ctx, tx)
			return fnErr
		})
		switch {
		case err == nil:
			return nil
		case broken(err):
			w.drop()
			if !began && attempt == 0 {
				continue
			}
		case !began || fnErr == nil || ctx.Err() != nil:
			w.discard()
			if !began && attempt == 0 && strings.Contains(err.Error(), "within a transaction") {
				continue
			}
		}
		return err
	}
}

// exec runs fn, one statement, on the connection, in the caller's turn at
// the gate; on a broken connection, which ran nothing, again on another.
func (w *writerConn) exec(ctx context.Context, fn func(db bun.IDB) error) error {
	for attempt := 0; ; attempt++ {
		c, err := w.get(ctx)
		if err != nil {
			return err
		}
		err = fn(c)
		if broken(err) {
			w.drop()
			if attempt == 0 {
				continue
			}
		}
		return err
	}
}

// get is the connection, taken from the pool if there is none.
func (w *writerConn) get(ctx context.Context) (bun.Conn, error) {
	if w.conn == nil {
		c, err := w.db.Conn(ctx)
		if err != nil {
			return bun.Conn{}, mapErr(err)
		}
		w.conn = &c
	}
	return *w.conn, nil
}

// broken says err is a connection's that can run nothing more: the
// driver's bad connection (which database/sql promises ran nothing), or a
// connection already given back.
func broken(err error) bool {
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone)
}

// discard closes the connection instead of giving it back to the pool:
// it may be inside a transaction, which closing rolls back.
func (w *writerConn) discard() {
	if w.conn == nil {
		return
	}
	// A function that says the connection is bad has database/sql close it.
	_ = w.conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = w.conn.Close()
	w.conn = nil
}

// drop gives the connection back to the pool (which closes a broken one).
func (w *writerConn) drop() error {
	if w.conn == nil {
		return nil
	}
	err := w.conn.Close()
	w.conn = nil
	if errors.Is(err, sql.ErrConnDone) {
		return nil
	}
	return err
}
