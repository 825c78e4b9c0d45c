package cli

import (
	"context"
	"strings"
	"testing"
)

// runGW runs the real command tree with args and returns the exit code,
// stdout and stderr.
func runWith(t *testing.T, f *Factory, args ...string) (int, string, string) {
	t.Helper()
	out, errOut := &strings.Builder{}, &strings.Builder{}
	f.IO = &IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut}
	code := Run(context.Background(), f, args)
	return code, out.String(), errOut.String()
}

// A misspelt subcommand of a group is a usage error with a suggestion, as
// at the top level (issue 22, row 4).
func TestUnknownSubcommandIsAUsageError(t *testing.T) {
	for _, c := range []struct {
		args    []string
		suggest string
	}{
		{[]string{"policies", "aply"}, "apply"},
		{[]string{"context", "lst"}, "list"},
		{[]string{"data-planes", "enrolments"}, "enrollments"},
		{[]string{"aply"}, ""},
	} {
		code, out, errOut := runWith(t, &Factory{ConfigPath: t.TempDir() + "/config.yaml"}, c.args...)
		if code != ExitUsage || out != "" || !strings.Contains(errOut, "unknown command") || !strings.Contains(errOut, c.suggest) {
			t.Errorf("gw %v: exit %d, stdout %q, stderr %q", c.args, code, out, errOut)
		}
	}
	// The group alone still shows its help.
	if code, out, _ := runWith(t, &Factory{ConfigPath: t.TempDir() + "/config.yaml"}, "policies"); code != ExitOK || !strings.Contains(out, "apply") {
		t.Errorf("gw policies: exit %d, %q", code, out)
	}
}
