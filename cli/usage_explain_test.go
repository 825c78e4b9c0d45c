package cli

import "testing"

// TestUsageExplainWithoutEvent: a request refused before admission has no
// usage event; the answer says so, points at gw policies explain, and
// names the organization by its slug even when given its id (issue 26,
// row 8).
func TestUsageExplainWithoutEvent(t *testing.T) {
	e := newResEnv(t)
	for _, org := range []string{e.boot.Organization.Slug, e.boot.Organization.ID.String()} {
		t.Setenv("GW_ORG", org)
		r := e.code(ExitError, "", "usage", "explain", "req-refused")
		mustContain(t, "no event", r.errOut, `error: no usage event has request id "req-refused" in organization `+e.boot.Organization.Slug+"\n",
			"hint: a request refused before admission", "records none: gw policies explain --key KEY --model MODEL\nexplains")
		mustNotContain(t, "no event", r.errOut, e.boot.Organization.ID.String())
	}
}
