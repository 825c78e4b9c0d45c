package api_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/auth/oidctest"
	"github.com/gw-gateway/gw/wire"
)

// ssoEnv is a gw with a real OpenID provider (zitadel/oidc's op on
// 127.0.0.1, server/auth/oidctest) saved as identity provider "corp".
type ssoEnv struct {
	*env
	op *oidctest.Provider
}

func newSSOEnv(t *testing.T, e *env) *ssoEnv {
	t.Helper()
	op := oidctest.Start(t, "gw-client", "gw-client-secret-0123456789", e.srv.URL+"/api/v1/auth/oidc/corp/callback")
	op.AddUser(oidctest.User{Username: "ada", Password: "pw-ada", Email: "ada@example.com", EmailVerified: true,
		FirstName: "Ada", LastName: "Lovelace", Groups: []string{"eng"}})
	op.AddUser(oidctest.User{Username: "eve", Password: "pw-eve", Email: "eve@elsewhere.test", EmailVerified: true, Groups: []string{"eng"}})
	op.AddUser(oidctest.User{Username: "una", Password: "pw-una", Email: "una@example.com", EmailUnverified: true, Groups: []string{"eng"}})
	raw := e.must("POST", "/api/v1/instance/identity-providers", e.ownerKey, map[string]any{
		"name": "corp", "issuer": op.Issuer, "client_id": "gw-client", "client_secret": "gw-client-secret-0123456789",
		"allowed_email_domains": []string{"example.com"},
		"group_mappings": []map[string]any{
			{"group": "eng", "org": "default", "role": "member", "workspaces": []map[string]any{{"workspace": "default", "role": "member"}}},
			{"group": "admins", "org": "default", "role": "admin"},
		},
	})
	p := decodeData[wire.IdentityProvider](t, raw)
	if strings.Contains(string(raw), "gw-client-secret") || !p.HasClientSecret || p.StartURL != "/api/v1/auth/oidc/corp/start" {
		t.Fatalf("provider answer: %s", raw)
	}
	return &ssoEnv{env: e, op: op}
}

// browser is a cookie-keeping client that does not follow redirects.
func browser(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// signIn goes through start, the provider's login form and gw's
// callback; it returns the callback's answer and the session cookie, if
// one was set.
func (s *ssoEnv) signIn(t *testing.T, c *http.Client, user, password, returnTo string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(s.srv.URL + "/api/v1/auth/oidc/corp/start?return_to=" + url.QueryEscape(returnTo))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("start: %d", resp.StatusCode)
	}
	authURL := resp.Header.Get("Location")
	if !strings.HasPrefix(authURL, s.op.Issuer) || !strings.Contains(authURL, "code_challenge_method=S256") || !strings.Contains(authURL, "nonce=") {
		t.Fatalf("start redirects to %s", authURL)
	}
	callback, err := s.op.Login(c, authURL, user, password)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(callback, s.srv.URL+"/api/v1/auth/oidc/corp/callback?") {
		t.Fatalf("provider returns to %s", callback)
	}
	resp, err = c.Get(callback)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp, sessionCookie(resp)
}

func sessionCookie(resp *http.Response) string {
	for _, c := range resp.Cookies() {
		if c.Name == api.SessionCookie && c.Value != "" {
			return c.Value
		}
	}
	return ""
}

func memberships(t *testing.T, e *env, cookie string) map[string]string {
	t.Helper()
	me := decodeData[wire.Me](t, e.must("GET", "/api/v1/auth/me", "cookie:"+cookie, nil))
	out := map[string]string{}
	for _, m := range me.Memberships {
		out[m.OrgID.String()] = m.Role
	}
	return out
}

func TestSSOSignInJITAndGroupMappings(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		s := newSSOEnv(t, e)
		orgID := e.boot.Organization.ID.String()
		// An organization whose membership an administrator makes by hand:
		// mappings never touch it.
		other := decodeData[wire.Organization](t, e.must("POST", "/api/v1/instance/organizations", e.ownerKey, map[string]any{"name": "Other"}))

		resp, cookie := s.signIn(t, browser(t), "ada", "pw-ada", "/playground?x=1")
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/playground?x=1" || cookie == "" {
			t.Fatalf("callback: %d %s cookie %q", resp.StatusCode, resp.Header.Get("Location"), cookie)
		}
		if got := memberships(t, e, cookie); got[orgID] != "member" || len(got) != 1 {
			t.Fatalf("first sign-in memberships: %v", got)
		}
		me := decodeData[wire.Me](t, e.must("GET", "/api/v1/auth/me", "cookie:"+cookie, nil))
		if me.User.Email != "ada@example.com" || me.User.Name != "Ada Lovelace" {
			t.Fatalf("JIT user: %+v", me.User)
		}
		if ev := e.lastAudit("user.created_by_sso"); ev == nil || ev.Details["identity_provider"] != "corp" {
			t.Fatalf("no user.created_by_sso audit: %+v", ev)
		}
		wsMembers := string(e.must("GET", "/api/v1/organizations/default/workspaces/default/members", e.ownerKey, nil))
		if !strings.Contains(wsMembers, "ada@example.com") {
			t.Fatalf("workspace membership not made: %s", wsMembers)
		}
		e.must("POST", "/api/v1/organizations/"+other.ID.String()+"/members", e.ownerKey, map[string]any{"email": "ada@example.com", "role": "viewer"})

		// A group change at the provider moves the memberships at the next
		// sign-in: admin of default by mapping, the workspace membership
		// the eng mapping made removed, the hand-made one kept.
		s.op.SetGroups("ada", "admins")
		_, cookie = s.signIn(t, browser(t), "ada", "pw-ada", "/")
		got := memberships(t, e, cookie)
		if got[orgID] != "admin" || got[other.ID.String()] != "viewer" {
			t.Fatalf("after group change: %v", got)
		}
		wsMembers = string(e.must("GET", "/api/v1/organizations/default/workspaces/default/members", e.ownerKey, nil))
		if strings.Contains(wsMembers, "ada@example.com") {
			t.Fatalf("workspace membership the mapping made was kept: %s", wsMembers)
		}
		// The provider rotates its signing key: gw fetches the new key set.
		s.op.RotateKey()
		if resp, c := s.signIn(t, browser(t), "ada", "pw-ada", "/"); resp.StatusCode != http.StatusSeeOther || c == "" {
			t.Fatalf("sign-in after key rotation: %d", resp.StatusCode)
		}
		// Out of every mapped group: the mapped membership goes, the hand-made stays.
		s.op.SetGroups("ada")
		_, cookie = s.signIn(t, browser(t), "ada", "pw-ada", "/")
		if got := memberships(t, e, cookie); got[orgID] != "" || got[other.ID.String()] != "viewer" {
			t.Fatalf("after leaving the groups: %v", got)
		}
	})
}

func TestSSORefusals(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		s := newSSOEnv(t, e)
		refused := func(t *testing.T, resp *http.Response, cookie string, status int, reason string) {
			t.Helper()
			if resp.StatusCode != status || cookie != "" {
				t.Fatalf("want %d and no session, got %d (cookie %q)", status, resp.StatusCode, cookie)
			}
			ev := e.lastAudit("auth.sign_in_refused")
			if ev == nil || ev.Details["reason"] != reason {
				t.Fatalf("want audit reason %s, got %+v", reason, ev)
			}
		}
		tamper := []struct {
			name   string
			change func(c map[string]any) (resign, otherKey bool)
		}{
			{"bad signature", func(c map[string]any) (bool, bool) { c["email"] = "mallory@example.com"; return false, false }},
			{"signed by another key", func(c map[string]any) (bool, bool) { return true, true }},
			{"wrong iss", func(c map[string]any) (bool, bool) { c["iss"] = "https://idp.invalid"; return true, false }},
			{"wrong aud", func(c map[string]any) (bool, bool) { c["aud"] = []string{"another-client"}; return true, false }},
			{"expired", func(c map[string]any) (bool, bool) {
				c["exp"] = time.Now().Add(-time.Hour).Unix()
				c["iat"] = time.Now().Add(-2 * time.Hour).Unix()
				return true, false
			}},
		}
		for _, tc := range tamper {
			t.Run(tc.name, func(t *testing.T) {
				s.op.Tamper(tc.change)
				resp, cookie := s.signIn(t, browser(t), "ada", "pw-ada", "/")
				refused(t, resp, cookie, http.StatusUnauthorized, "id_token_invalid")
			})
		}
		t.Run("wrong nonce", func(t *testing.T) {
			s.op.Tamper(func(c map[string]any) (bool, bool) { c["nonce"] = "not-this-sign-in"; return true, false })
			resp, cookie := s.signIn(t, browser(t), "ada", "pw-ada", "/")
			refused(t, resp, cookie, http.StatusUnauthorized, "nonce_mismatch")
		})
		t.Run("email domain", func(t *testing.T) {
			resp, cookie := s.signIn(t, browser(t), "eve", "pw-eve", "/")
			refused(t, resp, cookie, http.StatusForbidden, "email_domain")
		})
		t.Run("email_verified false", func(t *testing.T) {
			resp, cookie := s.signIn(t, browser(t), "una", "pw-una", "/")
			refused(t, resp, cookie, http.StatusForbidden, "email_unverified")
		})
		t.Run("replayed state", func(t *testing.T) {
			c := browser(t)
			resp, err := c.Get(s.srv.URL + "/api/v1/auth/oidc/corp/start")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			callback, err := s.op.Login(c, resp.Header.Get("Location"), "ada", "pw-ada")
			if err != nil {
				t.Fatal(err)
			}
			first, _ := c.Get(callback)
			first.Body.Close()
			if first.StatusCode != http.StatusSeeOther {
				t.Fatalf("first callback: %d", first.StatusCode)
			}
			again, _ := c.Get(callback)
			again.Body.Close()
			refused(t, again, sessionCookie(again), http.StatusBadRequest, "state_unknown")
		})
		t.Run("return_to another origin", func(t *testing.T) {
			for _, rt := range []string{"https://evil.example/", "//evil.example/x", "/\\evil.example", "javascript:alert(1)"} {
				status, body := e.do("GET", "/api/v1/auth/oidc/corp/start?return_to="+url.QueryEscape(rt), "", nil)
				if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), "return_to") {
					t.Fatalf("return_to %q: %d %s", rt, status, body)
				}
			}
		})
		t.Run("disabled account", func(t *testing.T) {
			_, cookie := s.signIn(t, browser(t), "ada", "pw-ada", "/")
			me := decodeData[wire.Me](t, e.must("GET", "/api/v1/auth/me", "cookie:"+cookie, nil))
			e.must("POST", "/api/v1/instance/users/"+me.User.ID.String()+"/disable", e.ownerKey, nil)
			resp, cookie := s.signIn(t, browser(t), "ada", "pw-ada", "/")
			refused(t, resp, cookie, http.StatusForbidden, "account_refused")
		})
		t.Run("no account and jit off", func(t *testing.T) {
			e.must("PATCH", "/api/v1/instance/identity-providers/corp", e.ownerKey, map[string]any{"jit": false})
			s.op.AddUser(oidctest.User{Username: "ned", Password: "pw-ned", Email: "ned@example.com", EmailVerified: true})
			resp, cookie := s.signIn(t, browser(t), "ned", "pw-ned", "/")
			refused(t, resp, cookie, http.StatusForbidden, "account_refused")
		})
		t.Run("unknown provider", func(t *testing.T) {
			if status, _ := e.do("GET", "/api/v1/auth/oidc/nobody/start", "", nil); status != http.StatusNotFound {
				t.Fatalf("unknown provider start: %d", status)
			}
		})
	})
}

func TestIdentityProviderSaveChecks(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		cases := []struct {
			issuer, want string
		}{
			{"http://idp.example.com", "https"},
			{"http://127.0.0.1:1", "discovery document"},
			{"https://idp.example.com?x=1", "query"},
		}
		for _, c := range cases {
			status, body := e.do("POST", "/api/v1/instance/identity-providers", e.ownerKey,
				map[string]any{"name": "x", "issuer": c.issuer, "client_id": "c"})
			if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), c.want) || !strings.Contains(string(body), "issuer") {
				t.Fatalf("issuer %s: %d %s", c.issuer, status, body)
			}
		}
		s := newSSOEnv(t, e)
		_ = s
		list := decodeData[[]wire.IdentityProvider](t, e.must("GET", "/api/v1/instance/identity-providers", e.ownerKey, nil))
		if len(list) != 1 || list[0].Name != "corp" || list[0].Scopes[0] != "openid" || list[0].Claims.Groups != "groups" || !list[0].JIT {
			t.Fatalf("list: %+v", list)
		}
		if status, _ := e.do("POST", "/api/v1/instance/identity-providers", e.ownerKey,
			map[string]any{"name": "corp", "issuer": s.op.Issuer, "client_id": "c"}); status != http.StatusConflict {
			t.Fatalf("duplicate name: %d", status)
		}
		status, body := e.do("POST", "/api/v1/instance/identity-providers", e.ownerKey, map[string]any{"name": "y", "issuer": s.op.Issuer,
			"client_id": "c", "group_mappings": []map[string]any{{"group": "g", "org": "no-such-org", "role": "member"}}})
		if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), "group_mappings") {
			t.Fatalf("unknown org in a mapping: %d %s", status, body)
		}
		p := decodeData[wire.IdentityProvider](t, e.must("PATCH", "/api/v1/instance/identity-providers/corp", e.ownerKey,
			map[string]any{"jit": false, "claims": map[string]any{"groups": "roles"}}))
		if p.JIT || p.Claims.Groups != "roles" || p.Claims.Email != "email" {
			t.Fatalf("patched: %+v", p)
		}
		if got := decodeData[wire.IdentityProvider](t, e.must("GET", "/api/v1/instance/identity-providers/corp", e.ownerKey, nil)); got.Name != "corp" || got.JIT {
			t.Fatalf("get: %+v", got)
		}
		if status, _ := e.do("GET", "/api/v1/instance/identity-providers/nobody", e.ownerKey, nil); status != http.StatusNotFound {
			t.Fatalf("unknown name: %d", status)
		}
		provs := decodeData[[]wire.SignInProvider](t, e.must("GET", "/api/v1/auth/identity-providers", "", nil))
		if len(provs) != 1 || provs[0].Name != "corp" {
			t.Fatalf("sign-in providers: %+v", provs)
		}
		e.must("DELETE", "/api/v1/instance/identity-providers/corp", e.ownerKey, nil)
	})
}

func TestRequireSSO(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		s := newSSOEnv(t, e)
		e.signup("bob@example.com")
		e.must("POST", "/api/v1/organizations/default/members", e.ownerKey, map[string]any{"email": "bob@example.com", "role": "member"})
		status, body := e.do("PATCH", "/api/v1/organizations/default", e.ownerKey, map[string]any{"require_sso": []string{"nope"}})
		if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), "require_sso") {
			t.Fatalf("unknown provider in require_sso: %d %s", status, body)
		}
		org := decodeData[wire.Organization](t, e.must("PATCH", "/api/v1/organizations/default", e.ownerKey, map[string]any{"require_sso": []string{"corp"}}))
		if len(org.RequireSSO) != 1 || org.RequireSSO[0] != "corp" {
			t.Fatalf("require_sso: %+v", org)
		}
		status, body = e.do("POST", "/api/v1/auth/login", "", map[string]any{"email": "bob@example.com", "password": "a long enough password"})
		if status != http.StatusForbidden || !strings.Contains(string(body), `corp`) {
			t.Fatalf("password sign-in under require_sso: %d %s", status, body)
		}
		if ev := e.lastAudit("auth.sign_in_refused"); ev == nil || ev.Details["reason"] != "require_sso" {
			t.Fatalf("refusal not audited: %+v", ev)
		}
		// A wrong password still says only that.
		if status, _ := e.do("POST", "/api/v1/auth/login", "", map[string]any{"email": "bob@example.com", "password": "wrong wrong wrong"}); status != http.StatusUnauthorized {
			t.Fatalf("wrong password: %d", status)
		}
		// The instance owner's break glass, audited.
		status, body = e.do("POST", "/api/v1/auth/login", "", map[string]any{"email": "owner@example.com", "password": "correct horse battery"})
		if status != http.StatusOK {
			t.Fatalf("owner break glass: %d %s", status, body)
		}
		if ev := e.lastAudit("auth.break_glass_sign_in"); ev == nil {
			t.Fatal("break glass not audited")
		}
		// SSO still signs in; deleting the required provider is refused.
		if resp, cookie := s.signIn(t, browser(t), "ada", "pw-ada", "/"); resp.StatusCode != http.StatusSeeOther || cookie == "" {
			t.Fatalf("sso under require_sso: %d", resp.StatusCode)
		}
		if status, _ := e.do("DELETE", "/api/v1/instance/identity-providers/corp", e.ownerKey, nil); status != http.StatusConflict {
			t.Fatalf("delete a required provider: %d", status)
		}
		e.must("PATCH", "/api/v1/organizations/default", e.ownerKey, map[string]any{"require_sso": []string{}})
		e.must("POST", "/api/v1/auth/login", "", map[string]any{"email": "bob@example.com", "password": "a long enough password"})
	})
}
