package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/dbflags"

	"github.com/gw-gateway/gw/server/reseal"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
)

func testFactory() (*cmdutil.Factory, *bytes.Buffer, *bytes.Buffer) {
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	return &cmdutil.Factory{IO: &cmdutil.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut}}, out, errOut
}

func TestExitCodes(t *testing.T) {
	cases := []struct {
		args []string
		code int
	}{
		{[]string{"version"}, ExitOK},
		{[]string{"no-such-command"}, ExitUsage},
		{[]string{"serve", "--no-such-flag"}, ExitUsage},
		{[]string{"admin", "create-key"}, ExitUsage},
		{[]string{"db", "status", "--database-url", "mysql://nope"}, ExitError},
	}
	for _, c := range cases {
		f, out, errOut := testFactory()
		if got := Run(context.Background(), f, c.args); got != c.code {
			t.Errorf("gw %v: exit %d, want %d (%s%s)", c.args, got, c.code, out, errOut)
		}
	}
	f, out, _ := testFactory()
	Run(context.Background(), f, []string{"version"})
	if !strings.HasPrefix(out.String(), "gw ") {
		t.Fatalf("version output %q", out)
	}
}

func TestDBMigrateAndStatus(t *testing.T) {
	dir := t.TempDir()
	f, out, errOut := testFactory()
	if code := Run(context.Background(), f, []string{"db", "migrate", "--data-dir", dir}); code != 0 {
		t.Fatalf("migrate: %d %s", code, errOut)
	}
	if !strings.Contains(out.String(), "applied 2026") {
		t.Fatalf("migrate output %q", out)
	}
	f, out, _ = testFactory()
	Run(context.Background(), f, []string{"db", "status", "--data-dir", dir})
	if !strings.HasPrefix(out.String(), "applied") {
		t.Fatalf("status output %q", out)
	}
}

func TestRotateSecretKey(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	f, _, errOut := testFactory()
	if code := Run(ctx, f, []string{"db", "migrate", "--data-dir", dir}); code != 0 {
		t.Fatalf("migrate: %s", errOut)
	}
	keyFile := filepath.Join(dir, "secret.key")
	old, err := dbflags.LoadKeyring(dbflags.SecretOptions{KeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	db, err := dbflags.OpenDB(ctx, dbflags.DBOptions{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(db)
	now := store.Now()
	c := &store.ProviderCredential{ID: uuid.New(), Provider: "openai", Label: "x", CreatedAt: now, UpdatedAt: now}
	c.SecretSealed, _ = old.Seal([]byte("upstream"), reseal.CredentialAAD(c.ID))
	if err := st.CreateProviderCredential(ctx, c); err != nil {
		t.Fatal(err)
	}
	db.Close()

	f, out, errOut := testFactory()
	if code := Run(ctx, f, []string{"admin", "rotate-secret-key", "--data-dir", dir}); code != 0 {
		t.Fatalf("rotate: %s", errOut)
	}
	if !strings.Contains(out.String(), "re-sealed 1 secrets") {
		t.Fatalf("output %q", out)
	}
	newRing, err := dbflags.LoadKeyring(dbflags.SecretOptions{KeyFile: keyFile})
	if err != nil || newRing.CurrentID() == old.CurrentID() {
		t.Fatalf("key file not replaced: %v", err)
	}
	if _, err := os.Stat(keyFile + ".previous"); err != nil {
		t.Fatalf("old key not kept: %v", err)
	}
	db, _ = dbflags.OpenDB(ctx, dbflags.DBOptions{DataDir: dir})
	defer db.Close()
	got, _ := store.New(db).GetProviderCredential(ctx, c.ID)
	raw, _ := os.ReadFile(keyFile)
	onlyNew, _ := secrets.ParseKey(string(raw))
	if plain, err := secrets.NewKeyring(onlyNew).Open(got.SecretSealed, reseal.CredentialAAD(c.ID)); err != nil || string(plain) != "upstream" {
		t.Fatalf("credential under the new key: %q %v", plain, err)
	}

	f, _, errOut = testFactory()
	t.Setenv("GW_SECRET_KEY", onlyNew.Encode())
	if code := Run(ctx, f, []string{"admin", "rotate-secret-key", "--data-dir", dir}); code != ExitUsage {
		t.Fatalf("env key without --new-key-file: exit %d %s", code, errOut)
	}
}
