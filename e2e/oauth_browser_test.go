package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// TestOAuthBrowserConsent plays an MCP or CLI client's person in headless
// Chromium: a client registered with `gw oauth clients add` sends them to
// /oauth/authorize; without a session gw's sign-in page takes their
// password and returns to the request; the consent page names the client
// and offers the workspace; Allow sends the browser back to the client's
// redirect URI with the code, the state and iss. The code and the PKCE
// verifier then give tokens accepted by /inf/v1/mcp, and `gw oauth grants
// list` and `revoke` show and end the grant.
func TestOAuthBrowserConsent(t *testing.T) {
	chromium := chromiumPath(t)
	ctx := context.Background()
	srv := startServe(t, "GW_DATA_DIR="+t.TempDir(), "GW_BOOTSTRAP_TOKEN=setup_oauth_browser")
	anon, _ := client.New(client.Options{Server: srv.URL})
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_oauth_browser", Email: "ops@example.com", Password: "a long passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	back := make(chan url.Values, 1)
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case back <- r.URL.Query():
		default:
		}
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<!doctype html><title>client</title><p id="done">back at the client</p>`))
	}))
	defer cb.Close()
	redirect := cb.URL + "/callback"

	env := []string{"XDG_CONFIG_HOME=" + t.TempDir(), "GW_CONTEXT=", "GW_SERVER=" + srv.URL, "GW_TOKEN=" + boot.ManagementKey.Token,
		"GW_ORG=default", "GW_WORKSPACE=default"}
	out, _ := runGW(t, env, "oauth", "clients", "add", "browser client", "--redirect-uri", redirect, "-o", "json")
	var registered wire.OAuthClient
	if err := json.Unmarshal([]byte(out), &registered); err != nil || !strings.HasPrefix(registered.ClientID, "gwc_") {
		t.Fatalf("gw oauth clients add: %v\n%s", err, out)
	}
	if out, _ := runGW(t, env, "oauth", "clients", "list"); !contains(out, registered.ClientID, "browser client") {
		t.Fatalf("gw oauth clients list:\n%s", out)
	}

	verifier := strings.Repeat("v3rifier-", 6)
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {registered.ClientID}, "redirect_uri": {redirect}, "state": {"browser-state"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
		"resource": {srv.URL + "/inf/v1/mcp"}}
	browser, step := headless(t, ctx, chromium, 900)
	step("sign in",
		chromedp.Navigate(srv.URL+"/oauth/authorize?"+q.Encode()),
		chromedp.WaitVisible(chromedp.ID("signin")),
		chromedp.SendKeys(chromedp.ID("email"), "ops@example.com"),
		chromedp.SendKeys(chromedp.ID("password"), "a long passphrase"),
		chromedp.Click(chromedp.ID("submit")),
		chromedp.WaitVisible(chromedp.ID("workspace")),
	)
	page, err := chromedp.Run(browser, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil || !contains(page, "Authorize browser client", "ops@example.com", srv.URL+"/inf/v1/mcp", "Default / Default") {
		t.Fatalf("consent page: %v\n%s", err, page)
	}
	screenshot(t, browser, "oauth-consent")
	step("allow", chromedp.Click(chromedp.ID("allow")), chromedp.WaitVisible(chromedp.ID("done")))
	got := <-back
	if got.Get("state") != "browser-state" || got.Get("iss") != srv.URL || got.Get("code") == "" {
		t.Fatalf("back at the client: %v", got)
	}

	resp, err := http.PostForm(srv.URL+"/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {got.Get("code")},
		"code_verifier": {verifier}, "client_id": {registered.ClientID}, "redirect_uri": {redirect}})
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	if resp.StatusCode != 200 || tok.AccessToken == "" {
		t.Fatalf("token: %d %+v", resp.StatusCode, tok)
	}
	initialize := func() int {
		req, _ := http.NewRequest("POST", srv.URL+"/inf/v1/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize",`+
			`"params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`))
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := initialize(); s != 200 {
		t.Fatalf("the token at /inf/v1/mcp: %d", s)
	}

	out, _ = runGW(t, env, "oauth", "grants", "list", "-o", "json")
	var grants []wire.OAuthGrant
	if err := json.Unmarshal([]byte(out), &grants); err != nil || len(grants) != 1 || grants[0].ClientName != "browser client" ||
		grants[0].UserID != boot.User.ID || grants[0].Status != wire.OAuthGrantActive {
		t.Fatalf("gw oauth grants list: %v\n%s", err, out)
	}
	runGW(t, env, "oauth", "grants", "revoke", grants[0].ID.String(), "--yes")
	if s := initialize(); s != 401 {
		t.Fatalf("the token of a revoked grant: %d", s)
	}
	runGW(t, env, "oauth", "clients", "delete", registered.ClientID, "--yes")
}
