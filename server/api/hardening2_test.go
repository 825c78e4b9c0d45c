package api_test

import (
	"strings"
	"testing"

	"github.com/gw-gateway/gw/wire"
)

// Regression tests of issue 17 ("Hardening, round 2"), each on SQLite and
// PostgreSQL. docs/security.md lists them.

// Row 3: a management key, whatever its permissions, ended its user's
// browser sessions and, given the password, changed it. These are the
// account holder's actions: a browser session only.
func TestAccountActionsNeedTheAccountHolder(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		const pw = "a long enough password"
		me, browser := e.signup("holder@example.com")
		_, other := e.login("holder@example.com", pw)
		// The person's own key, with every permission a member may hold at
		// their organization, and the owner's instance key with all.
		e.must("POST", "/api/v1/organizations/default/members", e.ownerKey, map[string]any{"user_id": me.User.ID.String(), "role": "admin"})
		own := e.key("/api/v1/organizations/default", "cookie:"+browser, []string{"members.read", "members.manage", "management-keys.issue"}, nil).Token
		sessions := decodeData[[]wire.Session](t, e.must("GET", "/api/v1/auth/sessions", "cookie:"+browser, nil))
		for _, key := range []string{own, e.ownerKey} {
			cases := []struct {
				method, path string
				body         any
			}{
				{"DELETE", "/api/v1/auth/sessions", nil},
				{"DELETE", "/api/v1/auth/sessions/" + sessions[0].ID.String(), nil},
				{"POST", "/api/v1/auth/password", map[string]any{"current_password": pw, "new_password": "taken over by a key"}},
			}
			for _, c := range cases {
				status, raw := e.do(c.method, c.path, key, c.body)
				if status != 403 || !strings.Contains(string(raw), "browser session") || !strings.Contains(string(raw), "management key") {
					t.Errorf("%s %s with a management key: %d %s, want 403 naming the reason", c.method, c.path, status, raw)
				}
			}
		}
		// Nothing changed: both sessions work, the password is the old one.
		for _, s := range []string{browser, other} {
			e.must("GET", "/api/v1/auth/me", "cookie:"+s, nil)
		}
		e.login("holder@example.com", pw)
		// Reading the session list stays open to keys (it changes nothing).
		e.must("GET", "/api/v1/auth/sessions", own, nil)
		// The holder, in the browser, may.
		e.must("POST", "/api/v1/auth/password", "cookie:"+browser, map[string]any{"current_password": pw, "new_password": "changed in the browser"})
		e.must("DELETE", "/api/v1/auth/sessions", "cookie:"+browser, nil)
	})
}
