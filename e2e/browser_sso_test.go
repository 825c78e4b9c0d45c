package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/auth/oidctest"
	"github.com/gw-gateway/gw/wire"
)

// TestBrowserSSOLogin signs in through a real OpenID provider (zitadel/
// oidc's op on 127.0.0.1) in headless Chromium: gw login --sso opens the
// provider's start, the person signs in on the provider's form, comes back
// to gw's approval page with a session (their account made on this first
// sign-in, with the membership the group mapping gives) and approves; the
// login stores a working key. Then require_sso refuses their organization's
// password sign-in on the sign-in page, which offers the provider.
func TestBrowserSSOLogin(t *testing.T) {
	chromium := chromiumPath(t)
	srv := startServe(t, "GW_DATA_DIR="+t.TempDir(), "GW_BOOTSTRAP_TOKEN=setup_sso")
	ctx := context.Background()
	anon, err := client.New(client.Options{Server: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_sso", Email: "owner@example.com", Password: "owner passphrase", OrganizationName: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	op := oidctest.Start(t, "gw", "gw-secret-0123456789abcdef", srv.URL+"/api/v1/auth/oidc/corp/callback")
	op.AddUser(oidctest.User{Username: "ada", Password: "ada passphrase", Email: "ada@example.com", EmailVerified: true,
		FirstName: "Ada", LastName: "Lovelace", Groups: []string{"eng"}})
	call := func(method, path string, body any) []byte {
		t.Helper()
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, srv.URL+path, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+boot.ManagementKey.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, buf.String())
		}
		return buf.Bytes()
	}
	call("POST", "/api/v1/instance/identity-providers", map[string]any{"name": "corp", "issuer": op.Issuer, "client_id": "gw",
		"client_secret": "gw-secret-0123456789abcdef", "allowed_email_domains": []string{"example.com"},
		"group_mappings": []map[string]any{{"group": "eng", "org": boot.Organization.Slug, "role": "admin"}}})

	configHome := t.TempDir()
	login := startLoginMatching(t, regexp.MustCompile(`^\s+(http://\S+/api/v1/auth/oidc/corp/start\?return_to=\S+)$`),
		configHome, srv.URL, "--sso", "corp", "--label", "sso laptop")
	start := login.verificationURL(t)

	browser, step := headless(t, ctx, chromium, 900)
	text := func(id string) string {
		t.Helper()
		s, err := chromedp.Run(browser, chromedp.Text(chromedp.ID(id)))
		if err != nil {
			t.Fatalf("text of #%s: %v", id, err)
		}
		return strings.TrimSpace(s)
	}
	step("provider sign-in",
		chromedp.Navigate(start),
		chromedp.WaitVisible(chromedp.ID("login")),
		chromedp.SendKeys(chromedp.ID("username"), "ada"),
		chromedp.SendKeys(chromedp.ID("password"), "ada passphrase"),
		chromedp.Click(chromedp.ID("submit")),
		chromedp.WaitVisible(chromedp.ID("decide")),
	)
	if who := text("who-email"); who != "ada@example.com" {
		t.Fatalf("approval page signed in as %q", who)
	}
	screenshot(t, browser, "sso-authorize")
	step("approve",
		chromedp.SetValue(chromedp.ID("org"), boot.Organization.ID.String()),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("org").dispatchEvent(new Event("change"))`),
		chromedp.Click(chromedp.ID("approve")),
		chromedp.WaitVisible(chromedp.ID("outcome")),
	)
	if outcome := text("outcome"); !contains(outcome, "Approved") {
		t.Fatalf("outcome: %q", outcome)
	}
	if code := login.wait(t); code != 0 {
		t.Fatalf("gw login exited %d\n%s", code, login.errText())
	}
	if !contains(login.errText(), "as ada@example.com for organization Acme") {
		t.Errorf("gw login said:\n%s", login.errText())
	}
	env := []string{"XDG_CONFIG_HOME=" + configHome, "GW_CONTEXT=", "GW_SERVER=", "GW_TOKEN="}
	if out, _ := runGW(t, env, "whoami"); !contains(out, "ada@example.com") {
		t.Fatalf("whoami:\n%s", out)
	}
	members := string(call("GET", "/api/v1/organizations/"+boot.Organization.Slug+"/members", nil))
	if !strings.Contains(members, `"email":"ada@example.com"`) || !strings.Contains(members, `"role":"admin"`) {
		t.Fatalf("mapped membership: %s", members)
	}

	// require_sso: a member's password is refused on the sign-in page,
	// naming the provider the page offers.
	resp, err := http.Post(srv.URL+"/api/v1/auth/signup", "application/json",
		strings.NewReader(`{"email":"bob@example.com","password":"bob passphrase"}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("sign-up: %v %v", err, resp)
	}
	resp.Body.Close()
	owner, _ := client.New(client.Options{Server: srv.URL, Token: boot.ManagementKey.Token})
	if _, err := owner.AddMember(ctx, boot.Organization.Slug, wire.MemberAdd{Email: "bob@example.com", Role: "member"}); err != nil {
		t.Fatal(err)
	}
	call("PATCH", "/api/v1/organizations/"+boot.Organization.Slug, map[string]any{"require_sso": []string{"corp"}})
	step("password refused",
		chromedp.Click(chromedp.ID("signout")),
		chromedp.WaitVisible(chromedp.ID("signin")),
		chromedp.SendKeys(chromedp.ID("email"), "bob@example.com"),
		chromedp.SendKeys(chromedp.ID("password"), "bob passphrase"),
		chromedp.Click(chromedp.ID("submit")),
		chromedp.WaitVisible(chromedp.Search(`//p[@id="error" and normalize-space(text()) != ""]`)),
	)
	if got := text("error"); !strings.Contains(got, "requires single sign-on") || !strings.Contains(got, `"corp"`) {
		t.Fatalf("require_sso refusal shows %q", got)
	}
	if got := text("sso-corp"); got != "Sign in with corp" {
		t.Fatalf("sign-in page offers %q", got)
	}
	screenshot(t, browser, "sso-required")

	// A group change in the directory moves the person at their next
	// sign-in: the membership the "eng" mapping made (admin) becomes the
	// one the "ops" mapping makes (member). require_sso does not stand in
	// the way: it refuses passwords, not the provider.
	call("PATCH", "/api/v1/instance/identity-providers/corp", map[string]any{"group_mappings": []map[string]any{
		{"group": "eng", "org": boot.Organization.Slug, "role": "admin"},
		{"group": "ops", "org": boot.Organization.Slug, "role": "member"}}})
	op.SetGroups("ada", "ops")
	step("provider sign-in after the group change",
		chromedp.Navigate(srv.URL+"/api/v1/auth/oidc/corp/start?return_to=%2F"),
		chromedp.WaitVisible(chromedp.ID("login")),
		chromedp.SendKeys(chromedp.ID("username"), "ada"),
		chromedp.SendKeys(chromedp.ID("password"), "ada passphrase"),
		chromedp.Click(chromedp.ID("submit")),
	)
	var roles string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var listed struct {
			Data []struct {
				Email string `json:"email"`
				Role  string `json:"role"`
			} `json:"data"`
		}
		if err := json.Unmarshal(call("GET", "/api/v1/organizations/"+boot.Organization.Slug+"/members", nil), &listed); err != nil {
			t.Fatal(err)
		}
		roles = ""
		for _, m := range listed.Data {
			if m.Email == "ada@example.com" {
				roles += m.Role + " "
			}
		}
		if roles == "member " {
			break
		}
	}
	if roles != "member " {
		t.Fatalf("after the group change ada's memberships are %q, want one as member", roles)
	}
	screenshot(t, browser, "sso-group-moved")
}
