package api_test

import (
	"net/http"
	"testing"
)

// TestSSOSignInKeepsAHandMadeMembership: a person whom an administrator
// made a member by hand signs in through a provider whose mapping gives
// the same organization: the sign-in succeeds on both databases (on
// PostgreSQL a refused insert used to abort the transaction: a 500), and
// the hand-made role stays.
func TestSSOSignInKeepsAHandMadeMembership(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		s := newSSOEnv(t, e)
		res, _ := e.signup("ada@example.com")
		e.must("POST", "/api/v1/organizations/default/members", e.ownerKey, map[string]any{"user_id": res.User.ID.String(), "role": "viewer"})
		resp, cookie := s.signIn(t, browser(t), "ada", "pw-ada", "/")
		if resp.StatusCode != http.StatusSeeOther || cookie == "" {
			t.Fatalf("callback: %d, cookie %t", resp.StatusCode, cookie != "")
		}
		if got := memberships(t, e, cookie)[e.boot.Organization.ID.String()]; got != "viewer" {
			t.Fatalf("hand-made membership after sign-in: %q", got)
		}
	})
}
