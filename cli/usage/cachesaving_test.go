package usage

import (
	"bytes"
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil"
)

// The usage report says what the response cache saved (issue 35): below
// the table on a terminal, as a note on stderr when piped, nothing when it
// saved nothing.
func TestPrintCacheSaving(t *testing.T) {
	for _, c := range []struct {
		name, saving string
		terminal     bool
		out, errOut  string
	}{
		{"terminal", "0.0125", true, "\nResponse cache: 0.0125 USD saved (answers served from the cache, not in the cost above)\n", ""},
		{"piped", "0.0125", false, "", "Note: Response cache: 0.0125 USD saved (answers served from the cache, not in the cost above)\n"},
		{"none", "0", true, "", ""},
		{"empty", "", false, "", ""},
	} {
		var out, errOut bytes.Buffer
		printCacheSaving(&cmdutil.IOStreams{Out: &out, ErrOut: &errOut, ForceTerminal: c.terminal}, c.saving)
		if out.String() != c.out || errOut.String() != c.errOut {
			t.Errorf("%s: out %q, stderr %q", c.name, out.String(), errOut.String())
		}
	}
}
