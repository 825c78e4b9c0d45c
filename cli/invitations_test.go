package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/wire"
)

// TestInvitationAcceptForAnAccountWithoutOrganization: a person who signed
// up but belongs to no organization cannot gw login (a key is always for
// one), so gw invitations accept signs in to the account with its
// password, through the real API's session and CSRF rules, and accepts.
func TestInvitationAcceptForAnAccountWithoutOrganization(t *testing.T) {
	e := newResEnv(t)
	const email, password = "dave@example.com", "daves own password"
	body, _ := json.Marshal(wire.Signup{Email: email, Password: password, Name: "Dave"})
	resp, err := http.Post(e.url+"/api/v1/auth/signup", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("signup: %s", resp.Status)
	}
	token := strings.TrimSpace(e.ok("invitations", "create", "--email", email, "--role", "viewer"))

	// Without a credential gw finds that the account exists; in a script it
	// asks for --email rather than trying to create the account again.
	t.Setenv("GW_TOKEN", "")
	r := e.code(ExitUsage, password+"\n", "invitations", "accept", token, "--password-stdin")
	mustContain(t, "stderr", r.errOut, "an account with the invited email exists", "--email")
	e.code(ExitAuth, "not the password\n", "invitations", "accept", token, "--email", email, "--password-stdin")

	r = e.code(ExitOK, password+"\n", "invitations", "accept", token, "--email", email, "--password-stdin", "-o", "json")
	acc := decodeJSONOut[wire.InvitationAccepted](t, r.out)
	if acc.User.Email != email || acc.Membership.Role != "viewer" || acc.Membership.OrgID != e.boot.Organization.ID {
		t.Fatalf("accepted %+v", acc)
	}
	mustContain(t, "stderr", r.errOut, "Signed in as "+email+" and joined organization "+e.boot.Organization.Name+" as viewer", "gw login")
	if n := e.hitCount("POST /api/v1/auth/logout"); n != 1 {
		t.Fatalf("the session was not ended: %d logouts", n)
	}

	t.Setenv("GW_TOKEN", e.boot.ManagementKey.Token)
	var found bool
	for _, m := range decodeJSONOut[[]wire.Member](t, e.ok("members", "list", "-o", "json")) {
		found = found || (m.Email == email && m.Status == "active")
	}
	if !found {
		t.Fatal("dave is not an active member")
	}
	// The token is spent.
	t.Setenv("GW_TOKEN", "")
	r = e.code(ExitError, password+"\n", "invitations", "accept", token, "--email", email, "--password-stdin")
	mustContain(t, "stderr", r.errOut, "already accepted")
}
