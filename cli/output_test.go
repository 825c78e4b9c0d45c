package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/db"
	"github.com/gw-gateway/gw/cli/version"
)

// runGW runs the command tree with fake IO (not a terminal).
func runGW(t *testing.T, args ...string) (code int, out, errOut string) {
	t.Helper()
	f, o, e := testFactory()
	code = Run(context.Background(), f, args)
	return code, o.String(), e.String()
}

func TestVersionOutput(t *testing.T) {
	code, out, errOut := runGW(t, "version")
	if code != ExitOK || out != "gw "+cmdutil.Version()+" ("+runtime.Version()+", "+runtime.GOOS+"/"+runtime.GOARCH+")\n" {
		t.Fatalf("version: exit %d %q %q", code, out, errOut)
	}
	want := version.Info{Version: cmdutil.Version(), Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	code, out, _ = runGW(t, "version", "-o", "json")
	var got version.Info
	if err := json.Unmarshal([]byte(out), &got); code != ExitOK || err != nil || got != want {
		t.Fatalf("version -o json: exit %d %v %q", code, err, out)
	}
	code, out, _ = runGW(t, "version", "--output", "yaml")
	var raw map[string]string
	if err := yaml.Unmarshal([]byte(out), &raw); code != ExitOK || err != nil || raw["version"] != want.Version || raw["arch"] != want.Arch {
		t.Fatalf("version -o yaml: exit %d %v %q", code, err, out)
	}
	if code, _, errOut := runGW(t, "version", "-o", "xml"); code != ExitUsage || !strings.Contains(errOut, "--output") {
		t.Fatalf("version -o xml: exit %d %q", code, errOut)
	}
}

func TestDBStatusOutput(t *testing.T) {
	dir := t.TempDir()
	if code, _, errOut := runGW(t, "db", "migrate", "--data-dir", dir); code != ExitOK {
		t.Fatalf("migrate: %s", errOut)
	}

	// Piped without -o: tab-separated rows, no header.
	code, out, errOut := runGW(t, "db", "status", "--data-dir", dir)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != ExitOK || len(lines) == 0 || !strings.HasPrefix(lines[0], "applied\t") || strings.Contains(out, "MIGRATION") {
		t.Fatalf("db status piped: exit %d %q %q", code, out, errOut)
	}

	// Piped with -o table: the header stays.
	code, out, _ = runGW(t, "db", "status", "--data-dir", dir, "-o", "table")
	tableLines := strings.Split(strings.TrimSpace(out), "\n")
	if code != ExitOK || strings.Join(strings.Fields(tableLines[0]), " ") != "STATE MIGRATION" || len(tableLines) != len(lines)+1 {
		t.Fatalf("db status -o table: exit %d %q", code, out)
	}

	code, out, _ = runGW(t, "db", "status", "--data-dir", dir, "-o", "json")
	var states []db.MigrationState
	if err := json.Unmarshal([]byte(out), &states); code != ExitOK || err != nil || len(states) != len(lines) {
		t.Fatalf("db status -o json: exit %d %v %q", code, err, out)
	}
	for _, s := range states {
		if !s.Applied || s.Name == "" {
			t.Errorf("migration %+v", s)
		}
	}

	code, out, _ = runGW(t, "db", "status", "--data-dir", dir, "-o", "yaml")
	var generic []map[string]any
	if err := yaml.Unmarshal([]byte(out), &generic); code != ExitOK || err != nil || len(generic) != len(states) || generic[0]["applied"] != true {
		t.Fatalf("db status -o yaml: exit %d %v %q", code, err, out)
	}
}

// A read-only command never creates a database: a mistyped --data-dir
// used to show a new, empty one and exit 0.
func TestDBStatusMissingDatabase(t *testing.T) {
	parent := t.TempDir()
	typo := filepath.Join(parent, "typo")
	code, out, errOut := runGW(t, "db", "status", "--data-dir", typo)
	if code != ExitError || out != "" || !strings.Contains(errOut, filepath.Join(typo, "gw.db")) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := os.Stat(typo); !os.IsNotExist(err) {
		t.Fatalf("data dir created: %v", err)
	}

	// The same for a sqlite:// URL; a data dir that exists stays empty.
	missing := filepath.Join(parent, "none.db")
	code, _, errOut = runGW(t, "db", "status", "--database-url", "sqlite://"+missing+"?_pragma=busy_timeout(1)")
	if code != ExitError || !strings.Contains(errOut, missing) {
		t.Fatalf("sqlite URL: exit %d %q", code, errOut)
	}
	t.Setenv("GW_DATA_DIR", parent)
	if code, _, _ := runGW(t, "db", "status"); code != ExitError {
		t.Fatalf("GW_DATA_DIR without a database: exit %d", code)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Fatalf("created %v", entries)
	}
}

func TestPrintEmptyTable(t *testing.T) {
	e := newResEnv(t)
	r := e.code(ExitOK, "", "inference-keys", "list")
	if r.out != "" || strings.TrimSpace(r.errOut) != "no inference keys" {
		t.Fatalf("empty list: stdout %q, stderr %q", r.out, r.errOut)
	}
	r = e.code(ExitOK, "", "inference-keys", "list", "-o", "json")
	if strings.TrimSpace(r.out) != "[]" || r.errOut != "" {
		t.Fatalf("empty list as json: stdout %q, stderr %q", r.out, r.errOut)
	}

	// Explicit messages win; commands outside a list group say something.
	var errOut bytes.Buffer
	f := &cmdutil.Factory{IO: &cmdutil.IOStreams{Out: &bytes.Buffer{}, ErrOut: &errOut}}
	for _, want := range []string{"no migrations", "nothing to show"} {
		errOut.Reset()
		empty := want
		if want == "nothing to show" {
			empty = ""
		}
		if err := (&cmdutil.Output{Format: cmdutil.OutputTable}).Print(f.IO, nil, func() cmdutil.Table { return cmdutil.Table{Headers: []string{"a"}, Empty: empty} }); err != nil || strings.TrimSpace(errOut.String()) != want {
			t.Errorf("got %q %v, want %q", errOut.String(), err, want)
		}
	}
}
