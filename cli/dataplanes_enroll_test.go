package cli

import (
	"strings"
	"testing"
)

// A data plane that never asked: without --wait gw suggests it; to one
// who passed --wait it does not, and names the likely causes instead
// (issue 26, row 12). A --wait shorter than one retry asks once.
func TestDataPlanesEnrollNeverAsked(t *testing.T) {
	e := newResEnv(t)
	r := e.code(ExitError, "", "data-planes", "enroll", "dp-nowhere", "--org", "default")
	mustContain(t, "without --wait", r.errOut, `data plane "dp-nowhere" has not asked to be enrolled`, "or pass --wait 2m")
	r = e.code(ExitError, "", "data-planes", "enroll", "dp-nowhere", "--org", "default", "--wait", "1s")
	mustContain(t, "with --wait", r.errOut, `data plane "dp-nowhere" did not ask to be enrolled within --wait 1s: is it running, with --data-plane-id dp-nowhere`)
	if strings.Contains(r.errOut, "pass --wait") {
		t.Fatalf("--wait suggested to one who passed it: %s", r.errOut)
	}
}

func ptr[T any](v T) *T { return &v }
