// Package storetest opens fresh, migrated databases for tests: always an
// SQLite file, and PostgreSQL too when GW_TEST_DATABASE_URL is set. Each
// PostgreSQL database is a schema of its own, dropped when the test ends, so
// tests run in parallel without seeing each other.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store"
)

// EnvDatabaseURL names the PostgreSQL server used by the tests.
const EnvDatabaseURL = "GW_TEST_DATABASE_URL"

// EnvRequirePostgres makes a missing or unreachable PostgreSQL a failure
// instead of a skip; CI sets it so the PostgreSQL suite cannot vanish quietly.
const EnvRequirePostgres = "GW_TEST_REQUIRE_POSTGRES"

// Dialect names a database engine under test.
type Dialect string

// The engines.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// Dialects lists the engines available to this test run.
func Dialects(t testing.TB) []Dialect {
	t.Helper()
	if os.Getenv(EnvDatabaseURL) != "" {
		return []Dialect{SQLite, Postgres}
	}
	if os.Getenv(EnvRequirePostgres) != "" {
		t.Fatalf("%s is set but %s is empty", EnvRequirePostgres, EnvDatabaseURL)
	}
	return []Dialect{SQLite}
}

// Each runs fn as a subtest per available dialect, with a fresh database.
func Each(t *testing.T, fn func(t *testing.T, db *bun.DB)) {
	t.Helper()
	for _, d := range Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			fn(t, Open(t, d))
		})
	}
}

// Open returns a fresh, migrated database of the given dialect, closed and
// removed when the test ends.
func Open(t testing.TB, d Dialect) *bun.DB {
	t.Helper()
	url, err := URL(t, d)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := store.Open(ctx, url, filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatalf("open %s: %v", d, err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := store.Migrate(ctx, db); err != nil {
		t.Fatalf("migrate %s: %v", d, err)
	}
	return db
}

// URL returns a database URL for a fresh database of the given dialect: an
// SQLite file in a temporary directory, or a new PostgreSQL schema.
func URL(t testing.TB, d Dialect) (string, error) {
	t.Helper()
	if d == SQLite {
		return "sqlite://" + filepath.Join(t.TempDir(), "gw.db"), nil
	}
	base := os.Getenv(EnvDatabaseURL)
	if base == "" {
		return "", fmt.Errorf("%s is not set", EnvDatabaseURL)
	}
	return freshSchema(t, base)
}

func freshSchema(t testing.TB, base string) (string, error) {
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	schema := "gwtest_" + hex.EncodeToString(suffix)
	admin, err := sql.Open("pgx", base)
	if err != nil {
		return "", fmt.Errorf("open postgres: %w", err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		return "", fmt.Errorf("postgres at %s unreachable or unusable: %w", EnvDatabaseURL, err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer db.Close()
		_, _ = db.Exec("DROP SCHEMA " + schema + " CASCADE")
	})
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("parse %s: %w", EnvDatabaseURL, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
