package store

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/uptrace/bun"
)

func openTestSQLite(t *testing.T) *bun.DB {
	t.Helper()
	db, _, err := openSQLite(filepath.Join(t.TempDir(), "gw.db"), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// An SQLite database's writers, in transactions and alone, use one
// connection: a temporary table, which only the connection that made it
// sees, is there for every later write, and a reader on the pool meanwhile
// leaves it alone.
func TestSQLiteWritersShareOneConnection(t *testing.T) {
	ctx := context.Background()
	db := openTestSQLite(t)
	st := New(db)
	defer st.Close()
	if err := st.InTx(ctx, func(tx *Store) error {
		_, err := tx.db.NewRaw("CREATE TEMP TABLE writer_seen (n INTEGER)").Exec(ctx)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		// A reader on the pool during the write, as the budget sync's: it
		// takes the connection the pool gave back last.
		reader, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var one int
		if err := reader.NewRaw("SELECT 1").Scan(ctx, &one); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			err := st.InTx(ctx, func(tx *Store) error {
				_, err := tx.db.NewRaw("INSERT INTO writer_seen VALUES (?)", i).Exec(ctx)
				return err
			})
			if err != nil {
				t.Fatalf("write %d in a transaction: %v", i, err)
			}
		} else {
			err := st.write(ctx, func(db bun.IDB) error {
				_, err := db.NewRaw("INSERT INTO writer_seen VALUES (?)", i).Exec(ctx)
				return err
			})
			if err != nil {
				t.Fatalf("write %d alone: %v", i, err)
			}
		}
		reader.Close()
	}
	var n int
	if err := st.write(ctx, func(db bun.IDB) error {
		return db.NewRaw("SELECT count(*) FROM writer_seen").Scan(ctx, &n)
	}); err != nil || n != 5 {
		t.Fatalf("the writers' table holds %d rows (%v), want 5", n, err)
	}
}

// A writers' connection that broke is given back, and the write that
// found it so runs on another; Close gives the connection back, and a
// later write takes one again.
func TestSQLiteWriterConnectionReplaced(t *testing.T) {
	ctx := context.Background()
	st := New(openTestSQLite(t))
	defer st.Close()
	write := func(what string) {
		t.Helper()
		if err := st.InTx(ctx, func(tx *Store) error {
			_, err := tx.db.NewRaw("SELECT 1").Exec(ctx)
			return err
		}); err != nil {
			t.Fatalf("%s, a transaction: %v", what, err)
		}
		if err := st.write(ctx, func(db bun.IDB) error {
			_, err := db.NewRaw("SELECT 1").Exec(ctx)
			return err
		}); err != nil {
			t.Fatalf("%s, a write alone: %v", what, err)
		}
	}
	write("first")
	// Given back behind the Store's back: every use of it now fails
	// with sql.ErrConnDone, as a broken one does.
	if err := st.writer.conn.Close(); err != nil {
		t.Fatal(err)
	}
	write("after the connection broke")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if st.writer.conn != nil {
		t.Fatal("Close kept the connection")
	}
	write("after Close")
	// A write alone on a broken connection too.
	st.writer.conn.Close()
	if err := st.write(ctx, func(db bun.IDB) error {
		_, err := db.NewRaw("SELECT 1").Exec(ctx)
		return err
	}); err != nil {
		t.Fatalf("a write alone after the connection broke: %v", err)
	}
}

// A writers' connection left inside a transaction (a COMMIT that failed,
// a context that ended while SQLite ran it) is closed, not kept: the next
// transaction runs on a new one, and the stale one's write lock is gone,
// so writers on other connections are not held up by it.
func TestSQLiteWriterConnectionLeftInATransaction(t *testing.T) {
	ctx := context.Background()
	db := openTestSQLite(t)
	st := New(db)
	defer st.Close()
	if _, err := db.NewRaw("CREATE TABLE writer_rows (n INTEGER)").Exec(ctx); err != nil {
		t.Fatal(err)
	}
	insert := func(ctx context.Context, n int) error {
		return st.InTx(ctx, func(tx *Store) error {
			_, err := tx.db.NewRaw("INSERT INTO writer_rows VALUES (?)", n).Exec(ctx)
			return err
		})
	}
	if err := insert(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// A transaction SQLite still holds open on the writers' connection.
	if _, err := st.writer.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	if err := insert(ctx, 2); err != nil {
		t.Fatalf("a transaction after one left open: %v", err)
	}

	// A context that ends while the transaction runs.
	cctx, cancel := context.WithCancel(ctx)
	err := st.InTx(cctx, func(tx *Store) error {
		if _, err := tx.db.NewRaw("INSERT INTO writer_rows VALUES (3)").Exec(cctx); err != nil {
			return err
		}
		cancel()
		_, err := tx.db.NewRaw("INSERT INTO writer_rows VALUES (4)").Exec(cctx)
		return err
	})
	if err == nil {
		t.Fatal("a transaction whose context ended committed")
	}
	if err := insert(ctx, 5); err != nil {
		t.Fatalf("a transaction after one whose context ended: %v", err)
	}

	// No write lock is left behind: a write on another connection goes
	// through at once.
	other, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.ExecContext(ctx, "INSERT INTO writer_rows VALUES (6)"); err != nil {
		t.Fatalf("a write on another connection: %v", err)
	}
	var got []int
	if err := db.NewRaw("SELECT n FROM writer_rows ORDER BY n").Scan(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 2, 5, 6}; !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
}
