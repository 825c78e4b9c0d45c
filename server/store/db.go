// Package store is gw's persistence: bun models and the queries over them, on
// embedded SQLite or PostgreSQL. Every method runs on whatever bun.IDB the
// Store was made with, so the service layer decides where transactions begin.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/migrate"
	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver

	"github.com/gw-gateway/gw/migrations"
)

// Open connects to databaseURL, or, when it is empty, to the embedded SQLite
// file gw.db inside dataDir (created if needed).
func Open(ctx context.Context, databaseURL, dataDir string) (*bun.DB, error) {
	db, sqlitePath, err := openURL(databaseURL, dataDir)
	if err != nil {
		return nil, err
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to database: %w", redactErr(err, databaseURL))
	}
	if sqlitePath != "" {
		if err := keepPrivate(sqlitePath); err != nil {
			db.Close()
			return nil, err
		}
	}
	return db, nil
}

// openURL opens (without connecting) the database a URL names: the
// embedded SQLite file in dataDir for none. sqlitePath is a database file
// to keep private, if there is one.
func openURL(databaseURL, dataDir string) (db *bun.DB, sqlitePath string, err error) {
	switch {
	case databaseURL == "":
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return nil, "", fmt.Errorf("create data dir: %w", err)
		}
		return openSQLite(filepath.Join(dataDir, "gw.db"), true)
	case strings.HasPrefix(databaseURL, "postgres://"), strings.HasPrefix(databaseURL, "postgresql://"):
		sqldb, err := sql.Open("pgx", databaseURL)
		if err != nil {
			return nil, "", fmt.Errorf("open postgres: %w", err)
		}
		sqldb.SetMaxOpenConns(20)
		return bun.NewDB(sqldb, pgdialect.New()), "", nil
	case strings.HasPrefix(databaseURL, "sqlite://"), strings.HasPrefix(databaseURL, "file:"):
		path := strings.TrimPrefix(strings.TrimPrefix(databaseURL, "sqlite://"), "file:")
		if i := strings.IndexByte(path, '?'); i >= 0 {
			path = path[:i]
		}
		onDisk := path != "" && !strings.HasPrefix(path, ":memory:") && !strings.Contains(databaseURL, "mode=memory")
		return openSQLite(path, onDisk)
	}
	return nil, "", fmt.Errorf("unsupported database URL scheme (want postgres://, sqlite:// or empty for the embedded default)")
}

// openSQLite opens a SQLite database; a file on disk is created private
// first, and a new one with gw's page size (sqlitePageSize).
func openSQLite(path string, onDisk bool) (*bun.DB, string, error) {
	private := ""
	pageSize := sqliteDefaultPageSize
	if onDisk {
		if err := createPrivate(path); err != nil {
			return nil, "", err
		}
		private = path
		var err error
		if pageSize, err = sqlitePageSizeOf(path); err != nil {
			return nil, "", err
		}
	}
	sqldb, err := sql.Open("sqlite", SQLiteDSN(path, pageSize))
	if err != nil {
		return nil, "", fmt.Errorf("open sqlite: %w", err)
	}
	return bun.NewDB(sqldb, sqlitedialect.New()), private, nil
}

// sqlitePageSize is the page size of a database file gw creates: 16 KiB,
// not SQLite's 4. The usage writer's batches append to the events' table
// and indexes, and SQLite writes each page it changed to the WAL as a
// frame, in two pwrite(2) calls, and copies it back at the checkpoint in
// two more: with pages four times larger, a batch is a quarter of the
// calls for the same bytes (BenchmarkUsageLoader on SQLite: 73,000
// pwrite(2) calls for 100,000 events at 4 KiB, 18,500 at 16 KiB; CPU an
// event 16.6 → 14.2 µs, the medians of seven runs each, alternated; issue
// 33, sixteenth round). An existing database keeps the page size it has:
// SQLite changes it only by rewriting the file (docs/operations.md).
const (
	sqlitePageSize        = 16384
	sqliteDefaultPageSize = 4096
	// sqliteWALBytes is how far the WAL grows before a commit checkpoints
	// it, whatever the page size (wal_autocheckpoint counts pages).
	sqliteWALBytes = 40 << 20
)

// sqlitePageSizeOf is the page size of the database file at path, made
// with sqlitePageSize first if the file is new (empty): SQLite fixes the
// size when it writes the file's first page, which switching to WAL does,
// and the driver runs the DSN's pragmas in alphabetical order, journal_mode
// before page_size, so the DSN cannot set it. A file that is not a SQLite
// database is left for the driver to refuse.
func sqlitePageSizeOf(path string) (int, error) {
	header := make([]byte, 100)
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("read database file: %w", err)
	}
	n, err := f.ReadAt(header, 0)
	f.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("read database file: %w", err)
	}
	if n == 0 {
		// Another process making the same file at once waits its turn.
		raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
		if err != nil {
			return 0, fmt.Errorf("create database file %s: %w", path, err)
		}
		defer raw.Close()
		for _, pragma := range []string{"PRAGMA page_size = " + strconv.Itoa(sqlitePageSize), "PRAGMA journal_mode = WAL"} {
			if err := execWhileBusy(raw, pragma, 10*time.Second); err != nil {
				return 0, fmt.Errorf("create database file %s: %s: %w", path, pragma, err)
			}
		}
		var size int
		if err := raw.QueryRow("PRAGMA page_size").Scan(&size); err != nil {
			return 0, fmt.Errorf("create database file %s: %w", path, err)
		}
		return size, nil
	}
	return sqliteHeaderPageSize(header[:n]), nil
}

// execWhileBusy runs a statement, again while another connection holds
// the lock it needs, for up to patience: SQLite answers a change of
// journal mode that finds the file locked at once (SQLITE_BUSY), without
// the busy handler, and two processes may make the same new file at once.
func execWhileBusy(db *sql.DB, stmt string, patience time.Duration) error {
	deadline := time.Now().Add(patience)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		_, err := db.Exec(stmt)
		var coded interface{ Code() int }
		if err == nil || !errors.As(err, &coded) || coded.Code()&0xff != sqliteBusy || time.Now().After(deadline) {
			return err
		}
		time.Sleep(wait)
	}
}

// sqliteBusy is SQLITE_BUSY, the primary code of an error whose extended
// code says more.
const sqliteBusy = 5

// sqliteHeaderPageSize reads a page size from a database file's header
// (its 16th and 17th bytes, big-endian, 1 meaning 65,536); anything that
// is not such a header is SQLite's default, for the driver to judge.
func sqliteHeaderPageSize(h []byte) int {
	if len(h) < 100 || string(h[:16]) != "SQLite format 3\x00" {
		return sqliteDefaultPageSize
	}
	switch size := int(h[16])<<8 | int(h[17]); {
	case size == 1:
		return 65536
	case size >= 512 && size&(size-1) == 0:
		return size
	}
	return sqliteDefaultPageSize
}

// keepPrivate restricts a database file to its owner: it holds password
// hashes and sealed secrets. SQLite gives the -wal and -shm files the
// mode of the database file; those made before, or by an older gw, are
// tightened here.
func keepPrivate(path string) error {
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(f, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("restrict %s to its owner: %w", f, err)
		}
	}
	return nil
}

// createPrivate creates an absent database file readable by its owner
// only, so it is never, even for a moment, readable by others.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("create database file: %w", err)
	}
	return f.Close()
}

// LooseDataDir describes a data directory that others may enter or read
// ("" when it is private or absent): gw serve warns about it at start.
// gw does not change an existing directory's mode itself: it may be shared
// on purpose, and the files in it are private regardless.
func LooseDataDir(dir string) string {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return ""
	}
	if mode := fi.Mode().Perm(); mode&0o077 != 0 {
		return fmt.Sprintf("data dir %s has mode %04o: others may list or read it; chmod 700 %s", dir, mode, dir)
	}
	return ""
}

// SQLiteDSN is the connection string for an embedded database file: foreign
// keys on, WAL so readers never wait on the writer, a busy timeout instead of
// immediate SQLITE_BUSY, and IMMEDIATE transactions so a read-then-write
// transaction cannot deadlock upgrading its lock.
//
// For usage ingest (issue 12), a page cache of up to 32 MiB per connection
// instead of 2 MiB, so inserting into the usage indexes, keyed by random
// ids, stops reading pages back from the file once the table outgrows 2
// MiB; and a checkpoint every 40 MiB of WAL (sqliteWALBytes: 10,240 pages
// of 4 KiB, 2,560 of 16) instead of every 1,000 pages, so a page dirtied
// by several batches is copied back once. Durability is unchanged: WAL,
// synchronous=NORMAL. pageSize is the database's (sqlitePageSizeOf).
//
// And temporary storage in memory (issue 33): a multi-row insert inside a
// transaction keeps a statement journal, the pages it changed as they
// were, so that it alone can be undone; past 64 KiB SQLite spilled it to
// a temporary file, a pwrite(2) per page, which was a fifth of the usage
// writer's CPU. In memory it is a copy. (Temporary tables and indexes
// live in memory too; gw's queries make none larger than a report.)
func SQLiteDSN(path string, pageSize int) string {
	q := url.Values{}
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "cache_size(-32768)")
	q.Add("_pragma", "wal_autocheckpoint("+strconv.Itoa(sqliteWALBytes/pageSize)+")")
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}

// redactErr keeps a password in the URL out of error messages.
func redactErr(err error, databaseURL string) error {
	u, perr := url.Parse(databaseURL)
	if perr != nil || u.User == nil {
		return err
	}
	if pw, ok := u.User.Password(); ok && pw != "" && strings.Contains(err.Error(), pw) {
		return fmt.Errorf("%s", strings.ReplaceAll(err.Error(), pw, "xxxxx"))
	}
	return err
}

// Migrator returns bun's migrator over the embedded migrations.
func Migrator(db *bun.DB) (*migrate.Migrator, error) {
	ms, err := migrations.New()
	if err != nil {
		return nil, err
	}
	return migrate.NewMigrator(db, ms, migrate.WithMarkAppliedOnSuccess(true)), nil
}

// Migrate brings the schema up to date and returns the names it applied.
func Migrate(ctx context.Context, db *bun.DB) ([]string, error) {
	m, err := Migrator(db)
	if err != nil {
		return nil, err
	}
	if err := m.Init(ctx); err != nil {
		return nil, fmt.Errorf("init migrations table: %w", err)
	}
	if err := m.Lock(ctx); err != nil {
		return nil, fmt.Errorf("lock migrations: %w", err)
	}
	defer m.Unlock(ctx) //nolint:errcheck // unlock failure leaves a lock row an operator can clear
	group, err := m.Migrate(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	var names []string
	for _, mig := range group.Migrations {
		names = append(names, mig.Name)
	}
	return names, nil
}

// MigrationStatus lists each known migration and whether it is applied.
type MigrationStatus struct {
	Name    string
	Applied bool
}

// Status reports the migrations applied and pending.
func Status(ctx context.Context, db *bun.DB) ([]MigrationStatus, error) {
	m, err := Migrator(db)
	if err != nil {
		return nil, err
	}
	// A read: the bookkeeping table is not created here. Without it,
	// nothing was ever applied.
	var exists bool
	if db.Dialect().Name() == dialect.PG {
		err = db.NewRaw("SELECT to_regclass('bun_migrations') IS NOT NULL").Scan(ctx, &exists)
	} else {
		err = db.NewRaw("SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'bun_migrations'").Scan(ctx, &exists)
	}
	if err != nil {
		return nil, fmt.Errorf("read migrations table: %w", err)
	}
	if !exists {
		all, err := migrations.New()
		if err != nil {
			return nil, err
		}
		out := []MigrationStatus{}
		for _, mig := range all.Sorted() {
			out = append(out, MigrationStatus{Name: mig.Name})
		}
		return out, nil
	}
	ms, err := m.MigrationsWithStatus(ctx)
	if err != nil {
		return nil, fmt.Errorf("migration status: %w", err)
	}
	out := make([]MigrationStatus, 0, len(ms))
	for _, mig := range ms {
		out = append(out, MigrationStatus{Name: mig.Name, Applied: mig.IsApplied()})
	}
	return out, nil
}
