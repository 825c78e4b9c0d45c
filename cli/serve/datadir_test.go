package serve

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/dbflags"
)

// Issue 27, row 8: a data plane said nothing about a data dir others may
// read, which it did not create (its key, bundles and usage spool go
// there); the control plane warned. Both warn now, before anything is
// created in it.
func TestDataPlaneWarnsAboutALooseDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(filepath.Join(dir, "dataplane"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var logs bytes.Buffer
	opts := &Options{IO: &cmdutil.IOStreams{ErrOut: &bytes.Buffer{}}, Role: RoleDataPlane, DBOptions: dbflags.DBOptions{DataDir: dir}}
	if _, err := opts.serverConfig(context.Background(), slog.New(slog.NewTextHandler(&logs, nil)), ln); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Join(dir, "dataplane")} {
		if !strings.Contains(logs.String(), "data dir "+d+" has mode 0755") {
			t.Errorf("no warning about %s:\n%s", d, logs.String())
		}
	}
	// A private one draws none.
	for _, d := range []string{dir, filepath.Join(dir, "dataplane")} {
		if err := os.Chmod(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	logs.Reset()
	if _, err := opts.serverConfig(context.Background(), slog.New(slog.NewTextHandler(&logs, nil)), ln); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "has mode") {
		t.Errorf("a warning about a private data dir:\n%s", logs.String())
	}
}
