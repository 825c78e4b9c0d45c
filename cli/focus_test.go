package cli

import (
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/server/usage"
)

// gw usage export --format focus writes the server's FOCUS CSV, valid
// for the version asked for, on both databases (issue 34).
func TestUsageExportFocusCLI(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newResEnvOn(t, db)
		tagUsage(t, e)
		for _, version := range []string{"1.3", "1.4"} {
			out := e.ok("usage", "export", "--format", "focus", "--focus-version", version, "--start-date", "2026-03-10", "--end-date", "2026-03-11")
			if err := usage.ValidateFocusCSV(version, []byte(out)); err != nil {
				t.Fatalf("FOCUS %s: %v\n%s", version, err, out)
			}
			// Four events of one model: input and output rows each, the
			// tag sets apart.
			if n := strings.Count(out, "\n"); n != 1+8 || !strings.Contains(out, `"{""env"":""prod"",""team"":""ads""}"`) {
				t.Fatalf("FOCUS %s rows:\n%s", version, out)
			}
		}
		e.code(ExitUsage, "", "usage", "export", "--format", "focus", "--start-date", "2026-03-10")
		e.code(ExitUsage, "", "usage", "export", "--format", "focus", "--focus-version", "2", "--start-date", "2026-03-10", "--end-date", "2026-03-11")
		e.code(ExitUsage, "", "usage", "export", "--format", "focus", "--by", "model", "--start-date", "2026-03-10", "--end-date", "2026-03-11")
	})
}
