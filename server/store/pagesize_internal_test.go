package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pragmas reads a connection's page size and WAL checkpoint interval.
func pragmas(t *testing.T, db interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (pageSize, autocheckpoint int) {
	t.Helper()
	ctx := context.Background()
	if err := db.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, "PRAGMA wal_autocheckpoint").Scan(&autocheckpoint); err != nil {
		t.Fatal(err)
	}
	return pageSize, autocheckpoint
}

// A database gw creates has 16 KiB pages, in WAL mode, with a checkpoint
// every 40 MiB; it keeps them when opened again.
func TestSQLiteNewDatabasePageSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gw.db")
	for range 2 {
		db, _, err := openSQLite(path, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec("CREATE TABLE IF NOT EXISTS t (x TEXT)"); err != nil {
			t.Fatal(err)
		}
		size, every := pragmas(t, db)
		var mode string
		if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if size != sqlitePageSize || every != sqliteWALBytes/sqlitePageSize || mode != "wal" {
			t.Fatalf("page size %d, checkpoint every %d pages, journal %s; want %d, %d, wal", size, every, mode, sqlitePageSize, sqliteWALBytes/sqlitePageSize)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("database file %v, %v; want mode 0600", fi, err)
	}
}

// A database an earlier gw made keeps its 4 KiB pages and its data, with
// a checkpoint every 40 MiB still.
func TestSQLiteExistingDatabaseKeepsItsPageSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gw.db")
	old, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec("CREATE TABLE t (x TEXT); INSERT INTO t VALUES ('kept')"); err != nil {
		t.Fatal(err)
	}
	old.Close()
	db, _, err := openSQLite(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if size, every := pragmas(t, db); size != 4096 || every != sqliteWALBytes/4096 {
		t.Fatalf("page size %d, checkpoint every %d pages; want 4096, %d", size, every, sqliteWALBytes/4096)
	}
	var x string
	if err := db.QueryRow("SELECT x FROM t").Scan(&x); err != nil || x != "kept" {
		t.Fatalf("%q, %v", x, err)
	}
}

// A file that is not a database is refused when it is first used, as
// before, and left as it was.
func TestSQLiteNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gw.db")
	junk := []byte(strings.Repeat("not a database\n", 20))
	if err := os.WriteFile(path, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	db, _, err := openSQLite(path, true)
	if err == nil {
		err = db.Ping()
		db.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "not a database") {
		t.Fatalf("err %v; want SQLite's refusal", err)
	}
	if got, _ := os.ReadFile(path); string(got) != string(junk) {
		t.Fatal("the file was changed")
	}
}

func TestSQLiteHeaderPageSize(t *testing.T) {
	header := func(hi, lo byte) []byte {
		h := make([]byte, 100)
		copy(h, "SQLite format 3\x00")
		h[16], h[17] = hi, lo
		return h
	}
	for _, c := range []struct {
		name string
		h    []byte
		want int
	}{
		{"4 KiB", header(0x10, 0x00), 4096},
		{"16 KiB", header(0x40, 0x00), 16384},
		{"512 bytes", header(0x02, 0x00), 512},
		{"64 KiB", header(0x00, 0x01), 65536},
		{"not a power of two", header(0x30, 0x00), sqliteDefaultPageSize},
		{"too small", header(0x01, 0x00), sqliteDefaultPageSize},
		{"no magic", append([]byte("SQLite format 4\x00"), header(0x40, 0)[16:]...), sqliteDefaultPageSize},
		{"short", header(0x40, 0x00)[:50], sqliteDefaultPageSize},
		{"empty", nil, sqliteDefaultPageSize},
	} {
		if got := sqliteHeaderPageSize(c.h); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// Processes making the same new file at once take turns: each opens it,
// with gw's page size.
func TestSQLiteNewDatabaseOpenedAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gw.db")
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			db, _, err := openSQLite(path, true)
			if err != nil {
				errs <- err
				return
			}
			defer db.Close()
			var size int
			if err := db.QueryRow("PRAGMA page_size").Scan(&size); err != nil {
				errs <- err
				return
			}
			if size != sqlitePageSize {
				errs <- fmt.Errorf("page size %d", size)
				return
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
