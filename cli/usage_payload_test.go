package cli

import "testing"

// TestUsagePayloadUnknown: gw usage payload of a request with no usage
// event says so; of an event id gw does not know, the server's 404.
func TestUsagePayloadUnknown(t *testing.T) {
	e := newResEnv(t)
	t.Setenv("GW_ORG", e.boot.Organization.Slug)
	r := e.code(ExitError, "", "usage", "payload", "req-none")
	mustContain(t, "no event", r.errOut, `no usage event has request id "req-none"`)
	r = e.code(ExitError, "", "usage", "payload", "0b8e7c1e-0000-4000-8000-000000000009")
	mustContain(t, "unknown id", r.errOut, "usage event 0b8e7c1e-0000-4000-8000-000000000009 not found")
}
