package store_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server/store"
)

// Issue 10, item 5: the embedded database and its -wal and -shm files were
// 0644 in a 0755 data dir. They are the owner's alone, and a data dir open
// to others is reported.
func TestEmbeddedDatabaseIsPrivate(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "gw")
	db, err := store.Open(ctx, "", dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gw.db", "gw.db-wal", "gw.db-shm"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %04o, want 0600", name, fi.Mode().Perm())
		}
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("data dir has mode %04o, want 0700", fi.Mode().Perm())
	}
	if msg := store.LooseDataDir(dir); msg != "" {
		t.Errorf("a private data dir is reported: %s", msg)
	}
	db.Close()

	// An older gw left the files readable by all: opening tightens them,
	// and the open directory is reported.
	for _, name := range []string{"gw.db", "gw.db-wal", "gw.db-shm"} {
		_ = os.Chmod(filepath.Join(dir, name), 0o644)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if msg := store.LooseDataDir(dir); !strings.Contains(msg, "0755") || !strings.Contains(msg, "chmod 700") {
		t.Errorf("a 0755 data dir is not reported: %q", msg)
	}
	db, err = store.Open(ctx, "", dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fi, _ := os.Stat(filepath.Join(dir, "gw.db"))
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("reopened gw.db has mode %04o, want 0600", fi.Mode().Perm())
	}
}
