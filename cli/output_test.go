package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// runGW runs the command tree with fake IO (not a terminal).
func runGW(t *testing.T, args ...string) (code int, out, errOut string) {
	t.Helper()
	f, o, e := testFactory()
	code = Run(context.Background(), f, args)
	return code, o.String(), e.String()
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
	f := &Factory{IO: &IOStreams{Out: &bytes.Buffer{}, ErrOut: &errOut}}
	for _, want := range []string{"no migrations", "nothing to show"} {
		errOut.Reset()
		empty := want
		if want == "nothing to show" {
			empty = ""
		}
		if err := f.Print(OutputTable, nil, func() Table { return Table{Headers: []string{"a"}, Empty: empty} }); err != nil || strings.TrimSpace(errOut.String()) != want {
			t.Errorf("got %q %v, want %q", errOut.String(), err, want)
		}
	}
}
