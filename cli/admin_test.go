package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestAdminRefusesAPlaceWithoutADatabase: gw admin create-key and
// rotate-secret-key with a wrong --data-dir used to create a fresh
// database there (and a key file), then fail on the empty instance
// (issue 26, row 7). They refuse, name the place, and create nothing.
func TestAdminRefusesAPlaceWithoutADatabase(t *testing.T) {
	ctx := context.Background()
	empty := t.TempDir()
	// An empty SQLite file is no gw database either.
	emptyFile := t.TempDir()
	if err := os.WriteFile(filepath.Join(emptyFile, "gw.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{empty, emptyFile} {
		for _, args := range [][]string{
			{"admin", "create-key", "--label", "recovery", "--data-dir", dir},
			{"admin", "rotate-secret-key", "--data-dir", dir},
		} {
			f, _, errOut := testFactory()
			if code := Run(ctx, f, args); code != ExitError {
				t.Fatalf("gw %v: exit %d, %s", args, code, errOut)
			}
			mustContain(t, args[1], errOut.String(), "no gw database at "+filepath.Join(dir, "gw.db")+"; pass the data dir of the running server")
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.Name() != "gw.db" || dir == empty {
				t.Errorf("%s left behind in %s", e.Name(), dir)
			}
		}
	}

	// A server's data dir works; its key file must be there too.
	dir := t.TempDir()
	f, _, errOut := testFactory()
	if code := Run(ctx, f, []string{"db", "migrate", "--data-dir", dir}); code != ExitOK {
		t.Fatalf("migrate: %s", errOut)
	}
	f, _, errOut = testFactory()
	if code := Run(ctx, f, []string{"admin", "rotate-secret-key", "--data-dir", dir}); code != ExitError {
		t.Fatalf("rotate without a key file: exit %d", code)
	}
	mustContain(t, "no key file", errOut.String(), "no secret key at "+filepath.Join(dir, "secret.key"))
	if _, err := os.Stat(filepath.Join(dir, "secret.key")); err == nil {
		t.Fatal("rotate-secret-key created a key file")
	}
}
