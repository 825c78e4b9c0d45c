package cli

import (
	"strings"
	"testing"

	"github.com/gw-gateway/gw/wire"
)

// TestSCIMTokensCommands: gw scim-tokens create prints the secret once
// (and the SCIM base URL on stderr), list never shows it, delete asks
// unless --yes and removes the token.
func TestSCIMTokensCommands(t *testing.T) {
	e := newResEnv(t)
	r := e.code(ExitOK, "", "scim-tokens", "create", "--label", "okta")
	secret := strings.TrimSpace(r.out)
	if !strings.HasPrefix(secret, "scim_") || !strings.Contains(r.errOut, "/scim/v2") || !strings.Contains(r.errOut, "shown only once") {
		t.Fatalf("create: %q %q", r.out, r.errOut)
	}
	list := e.ok("scim-tokens", "list")
	if !strings.Contains(list, "okta") || strings.Contains(list, secret) {
		t.Fatalf("list: %s", list)
	}
	ts := decodeJSONOut[[]wire.SCIMToken](t, e.ok("scim-tokens", "list", "-o", "json"))
	if len(ts) != 1 || ts[0].Token != "" || ts[0].Label != "okta" {
		t.Fatalf("list json: %+v", ts)
	}
	e.code(ExitUsage, "", "scim-tokens", "delete", ts[0].ID.String())
	e.ok("scim-tokens", "delete", ts[0].ID.String(), "--yes")
	if ts := decodeJSONOut[[]wire.SCIMToken](t, e.ok("scim-tokens", "list", "-o", "json")); len(ts) != 0 {
		t.Fatalf("after delete: %+v", ts)
	}
	r = e.code(ExitError, "", "scim-tokens", "delete", ts[0].ID.String(), "--yes")
	if !strings.Contains(r.errOut, "not found") {
		t.Fatalf("delete again: %q", r.errOut)
	}
}
