package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/wire"
)

const tnPassword = "a long enough password"

// Signup sets an HttpOnly, SameSite=Lax session cookie; cookie requests need
// the CSRF header.
func TestSignupSession(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		a := tnNewAuditor(e)
		r := a.mut(tnInstEv("user.signed_up", "user"), "POST", "/api/v1/auth/signup", "",
			map[string]any{"email": "Ann@Example.com", "password": tnPassword, "name": "Ann"})
		tnWantStatus(t, "signup", r, 200)
		m := tnWantKeys(t, "signup result", tnData(t, r.body), "user", "expires_at")
		tnWantKeys(t, "signup user", m["user"], "id", "email", "name", "instance_role", "service_account", "managing_org_id",
			"created_at", "updated_at", "orgs")
		res := decodeData[wire.SessionResult](t, r.body)
		if res.User.Email != "ann@example.com" || res.User.Name != "Ann" || res.User.InstanceRole != auth.InstanceMember ||
			res.User.ServiceAccount || len(res.User.Orgs) != 0 {
			t.Fatalf("signup user: %+v", res.User)
		}
		if d := time.Until(res.ExpiresAt); d < 24*time.Hour || d > 31*24*time.Hour {
			t.Fatalf("session expires in %v", d)
		}
		uid := res.User.ID
		a.wants[len(a.wants)-1].actor = tnActorWant{Type: "user", ID: &uid}
		a.secret(tnPassword)

		c := tnSessionCookie(r.cookies)
		if c == nil {
			t.Fatalf("signup set no %s cookie: %v", api.SessionCookie, r.header.Values("Set-Cookie"))
		}
		raw := strings.Join(r.header.Values("Set-Cookie"), "\n")
		if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure || c.MaxAge <= 0 ||
			!strings.Contains(raw, "HttpOnly") || !strings.Contains(raw, "SameSite=Lax") {
			t.Fatalf("cookie attributes: %s", raw)
		}
		if !strings.HasPrefix(c.Value, auth.SessionPrefix) || len(c.Value) < 40 {
			t.Fatalf("session token looks weak: %q", c.Value)
		}
		a.user("cookie:"+c.Value, uid)

		cases := []struct {
			name   string
			cred   string
			status int
		}{
			{"cookie with the CSRF header", "cookie:" + c.Value, 200},
			{"cookie without the CSRF header", "cookie-nocsrf:" + c.Value, 403},
			{"unknown cookie", "cookie:ses_not_a_session", 401},
			{"unknown cookie without the header", "cookie-nocsrf:ses_not_a_session", 401},
			{"no credential", "", 401},
			{"inference key", auth.InferenceKeyPrefix + "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG", 401},
			{"not a key", "hello", 401},
			{"unknown management key", auth.ManagementKeyPrefix + "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG", 401},
		}
		for _, c := range cases {
			r := e.tnCall("GET", "/api/v1/auth/me", c.cred, nil)
			if c.status != 200 {
				tnWantDetail(t, c.name, r, c.status)
				if c.status == 401 && r.header.Get("WWW-Authenticate") == "" {
					t.Errorf("%s: 401 without WWW-Authenticate", c.name)
				}
				continue
			}
			tnWantStatus(t, c.name, r, 200)
			mm := tnWantKeys(t, "me", tnData(t, r.body), "user", "credential", "key", "memberships")
			if mm["credential"] != "session" || mm["key"] != nil || len(mm["memberships"].([]any)) != 0 ||
				jsonPath(t, r.body, "data.user.id") != uid.String() {
				t.Fatalf("me: %s", r.body)
			}
		}
		// The header must say XMLHttpRequest; any other value is refused.
		req, _ := http.NewRequest("GET", e.srv.URL+"/api/v1/auth/me", nil)
		req.AddCookie(&http.Cookie{Name: api.SessionCookie, Value: c.Value})
		req.Header.Set("X-Requested-With", "fetch")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Fatalf("X-Requested-With: fetch → %d", resp.StatusCode)
		}
		// A cookie without the header cannot mutate either.
		tnWantDetail(t, "mutation without the CSRF header", a.mut(tnNoEvent, "POST", "/api/v1/auth/logout", "cookie-nocsrf:"+c.Value, nil), 403)
		e.must("GET", "/api/v1/auth/me", "cookie:"+c.Value, nil)
		a.verify(e.ownerKey)
	})
}

// Behind TLS (a https public URL) the cookie is Secure.
func TestSessionCookieSecureBehindTLS(t *testing.T) {
	t.Parallel()
	tnEachEnvOpts(t, api.Options{PublicURL: "https://gw.example.com"}, func(t *testing.T, e *env) {
		r := e.tnCall("POST", "/api/v1/auth/signup", "", map[string]any{"email": "tls@example.com", "password": tnPassword})
		tnWantStatus(t, "signup", r, 200)
		if c := tnSessionCookie(r.cookies); c == nil || !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode {
			t.Fatalf("cookie behind TLS: %v", r.header.Values("Set-Cookie"))
		}
	})
}

func TestLogin(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		ann, signupCookie := e.signup("ann@example.com")
		cases := []struct {
			name   string
			body   any
			status int
			loc    []any
			typ    string
		}{
			{"correct", map[string]any{"email": "ann@example.com", "password": tnPassword}, 200, nil, ""},
			{"email in another case", map[string]any{"email": "ANN@example.COM", "password": tnPassword}, 200, nil, ""},
			{"wrong password", map[string]any{"email": "ann@example.com", "password": tnPassword + "!"}, 401, nil, ""},
			{"unknown email", map[string]any{"email": "nobody@example.com", "password": tnPassword}, 401, nil, ""},
			{"password in another case", map[string]any{"email": "ann@example.com", "password": strings.ToUpper(tnPassword)}, 401, nil, ""},
			{"missing password", map[string]any{"email": "ann@example.com"}, 422, []any{"body", "password"}, "missing"},
			{"bad email", map[string]any{"email": "ann", "password": tnPassword}, 422, []any{"body", "email"}, "string_pattern_mismatch"},
			{"extra member", map[string]any{"email": "ann@example.com", "password": tnPassword, "remember": true}, 422,
				[]any{"body", "remember"}, "extra_forbidden"},
			{"malformed JSON", `{"email": `, 422, nil, "json_invalid"},
		}
		var failBodies []string
		var cookies []string
		for _, c := range cases {
			r := e.tnCall("POST", "/api/v1/auth/login", "", c.body)
			switch c.status {
			case 200:
				tnWantStatus(t, c.name, r, 200)
				res := decodeData[wire.SessionResult](t, r.body)
				if res.User.ID != ann.User.ID {
					t.Fatalf("%s: signed in as %+v", c.name, res.User)
				}
				ck := tnSessionCookie(r.cookies)
				if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Value == signupCookie {
					t.Fatalf("%s: cookie %v", c.name, r.header.Values("Set-Cookie"))
				}
				cookies = append(cookies, ck.Value)
			case 401:
				tnWantDetail(t, c.name, r, 401)
				failBodies = append(failBodies, string(r.body))
				if tnSessionCookie(r.cookies) != nil {
					t.Fatalf("%s: failed login set a cookie", c.name)
				}
			default:
				if c.loc == nil {
					tnWantStatus(t, c.name, r, 422)
					if jsonPath(t, r.body, "detail.0.type") != c.typ {
						t.Fatalf("%s: %s", c.name, r.body)
					}
				} else {
					tnWantValidation(t, c.name, r, c.loc, c.typ)
				}
			}
		}
		// Wrong password and unknown email are indistinguishable.
		for _, b := range failBodies[1:] {
			if b != failBodies[0] {
				t.Fatalf("failed logins differ: %q vs %q", failBodies[0], b)
			}
		}
		// Every session is its own and all are valid together.
		for _, c := range append(cookies, signupCookie) {
			if me := decodeData[wire.Me](t, e.must("GET", "/api/v1/auth/me", "cookie:"+c, nil)); me.User.ID != ann.User.ID {
				t.Fatalf("me: %+v", me)
			}
		}
		if cookies[0] == cookies[1] {
			t.Fatal("two logins share a session token")
		}
	})
}

func TestLogout(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		_, first := e.signup("ann@example.com")
		r := e.tnCall("POST", "/api/v1/auth/login", "", map[string]any{"email": "ann@example.com", "password": tnPassword})
		tnWantStatus(t, "login", r, 200)
		second := tnSessionCookie(r.cookies).Value

		tnWantDetail(t, "logout without a credential", e.tnCall("POST", "/api/v1/auth/logout", "", nil), 401)
		tnWantDetail(t, "logout without the CSRF header", e.tnCall("POST", "/api/v1/auth/logout", "cookie-nocsrf:"+first, nil), 403)
		e.must("GET", "/api/v1/auth/me", "cookie:"+first, nil)
		tnWantStatus(t, "logout with a management key", e.tnCall("POST", "/api/v1/auth/logout", e.ownerKey, nil), 400)
		e.must("GET", "/api/v1/auth/me", e.ownerKey, nil)

		r = e.tnCall("POST", "/api/v1/auth/logout", "cookie:"+first, nil)
		tnWantStatus(t, "logout", r, 200)
		tnWantKeys(t, "logout result", tnData(t, r.body), "logged_out")
		if jsonPath(t, r.body, "data.logged_out") != true {
			t.Fatalf("logout: %s", r.body)
		}
		if c := tnSessionCookie(r.cookies); c == nil || c.Value != "" || c.MaxAge >= 0 || !c.HttpOnly {
			t.Fatalf("logout does not clear the cookie: %v", r.header.Values("Set-Cookie"))
		}
		tnWantDetail(t, "signed-out cookie", e.tnCall("GET", "/api/v1/auth/me", "cookie:"+first, nil), 401)
		tnWantDetail(t, "signed-out cookie logs out again", e.tnCall("POST", "/api/v1/auth/logout", "cookie:"+first, nil), 401)
		tnWantDetail(t, "signed-out cookie without the header", e.tnCall("GET", "/api/v1/auth/me", "cookie-nocsrf:"+first, nil), 401)
		// The other session lives on.
		e.must("GET", "/api/v1/auth/me", "cookie:"+second, nil)
	})
}

func TestSignupErrors(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		a := tnNewAuditor(e)
		e.signup("taken@example.com")
		cases := []struct {
			name   string
			body   any
			status int
			loc    []any
			typ    string
			also   [][]any // further locations reported at once
		}{
			{"duplicate email", map[string]any{"email": "taken@example.com", "password": tnPassword}, 409, nil, "", nil},
			{"duplicate email in another case", map[string]any{"email": "Taken@EXAMPLE.com", "password": tnPassword}, 409, nil, "", nil},
			{"short password", map[string]any{"email": "new@example.com", "password": "short12"}, 422, []any{"body", "password"}, "string_too_short", nil},
			{"long password", map[string]any{"email": "new@example.com", "password": strings.Repeat("p", 257)}, 422, []any{"body", "password"}, "string_too_long", nil},
			{"bad email", map[string]any{"email": "not-an-email", "password": tnPassword}, 422, []any{"body", "email"}, "string_pattern_mismatch", nil},
			{"email with spaces inside", map[string]any{"email": "a b@example.com", "password": tnPassword}, 422, []any{"body", "email"}, "string_pattern_mismatch", nil},
			{"extra member", map[string]any{"email": "new@example.com", "password": tnPassword, "instance_role": "owner"}, 422,
				[]any{"body", "instance_role"}, "extra_forbidden", nil},
			{"name too long", map[string]any{"email": "new@example.com", "password": tnPassword, "name": strings.Repeat("n", 101)}, 422,
				[]any{"body", "name"}, "string_too_long", nil},
			{"password not a string", map[string]any{"email": "new@example.com", "password": 12345678}, 422, []any{"body", "password"}, "string_type", nil},
			{"every problem at once", map[string]any{"email": "no-at-sign", "password": "short", "admin": true}, 422, []any{"body", "email"},
				"string_pattern_mismatch", [][]any{{"body", "password"}, {"body", "admin"}}},
			{"empty object", map[string]any{}, 422, []any{"body", "email"}, "missing", [][]any{{"body", "password"}}},
			{"not an object", `["new@example.com"]`, 422, []any{"body"}, "model_type", nil},
			{"no body", "", 422, []any{"body"}, "missing", nil},
		}
		for _, c := range cases {
			r := a.mut(tnInstEv("user.signed_up", "user"), "POST", "/api/v1/auth/signup", "", c.body)
			if tnSessionCookie(r.cookies) != nil {
				t.Fatalf("%s: a failed signup set a cookie", c.name)
			}
			if c.status != 422 {
				tnWantDetail(t, c.name, r, c.status)
				continue
			}
			tnWantValidation(t, c.name, r, c.loc, c.typ)
			n := len(jsonPath(t, r.body, "detail").([]any))
			if n != 1+len(c.also) {
				t.Fatalf("%s: %d problems reported, want %d: %s", c.name, n, 1+len(c.also), r.body)
			}
			for _, loc := range c.also {
				found := false
				for _, it := range jsonPath(t, r.body, "detail").([]any) {
					found = found || tnLocEqual(it.(map[string]any)["loc"].([]any), loc)
				}
				if !found {
					t.Fatalf("%s: no problem at %v: %s", c.name, loc, r.body)
				}
			}
		}
		// None of the refused signups made an account.
		users := decodeData[[]wire.User](t, e.must("GET", "/api/v1/instance/users", e.ownerKey, nil))
		if len(users) != 2 {
			t.Fatalf("%d users after refused signups, want 2", len(users))
		}
		a.verify(e.ownerKey)
	})
}

func TestSignupDisabled(t *testing.T) {
	t.Parallel()
	tnEachEnvOpts(t, api.Options{SignupDisabled: true}, func(t *testing.T, e *env) {
		for _, body := range []any{
			map[string]any{"email": "new@example.com", "password": tnPassword},
			map[string]any{"email": "bad", "password": "x"}, // refused before validation: nothing to learn
		} {
			r := e.tnCall("POST", "/api/v1/auth/signup", "", body)
			if d := tnWantDetail(t, "signup", r, 403); !strings.Contains(strings.ToLower(d), "disabled") {
				t.Fatalf("403 does not say why: %s", d)
			}
		}
		users := decodeData[[]wire.User](t, e.must("GET", "/api/v1/instance/users", e.ownerKey, nil))
		if len(users) != 1 {
			t.Fatalf("signup disabled, yet %d users", len(users))
		}
		// Existing accounts still sign in.
		tnWantStatus(t, "owner login", e.tnCall("POST", "/api/v1/auth/login", "",
			map[string]any{"email": "owner@example.com", "password": "correct horse battery"}), 200)
	})
}

// /auth/me through a management key names the key, never its token.
func TestMeWithManagementKey(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		keyShape := []string{"id", "user_id", "org_id", "workspace_id", "parent_id", "prefix", "permissions", "label", "expires_at",
			"revoked_at", "created_at", "updated_at", "scope", "status"}
		ws := e.key("/api/v1/organizations/default/workspaces/default", e.ownerKey, []string{"workspaces.read"}, nil)
		cases := []struct {
			name  string
			token string
			id    uuid.UUID
			level string
		}{
			{"instance key", e.ownerKey, e.boot.ManagementKey.ID, wire.ScopeInstance},
			{"workspace key", ws.Token, ws.ID, wire.ScopeWorkspace},
		}
		for _, c := range cases {
			raw := e.must("GET", "/api/v1/auth/me", c.token, nil)
			m := tnWantKeys(t, c.name, tnData(t, raw), "user", "credential", "key", "memberships")
			if m["credential"] != "management_key" {
				t.Fatalf("%s: credential %v", c.name, m["credential"])
			}
			km := tnWantKeys(t, c.name+" key", m["key"], keyShape...)
			if km["id"] != c.id.String() || jsonPath(t, raw, "data.key.scope.level") != c.level || km["status"] != "active" {
				t.Fatalf("%s: key %v", c.name, km)
			}
			if strings.Contains(string(raw), c.token) {
				t.Fatalf("%s: /auth/me shows the token", c.name)
			}
			me := decodeData[wire.Me](t, raw)
			if me.User.ID != e.boot.User.ID || me.User.InstanceRole != auth.InstanceOwner || len(me.Memberships) != 1 ||
				me.Memberships[0].OrgID != e.boot.Organization.ID || me.Memberships[0].Role != auth.OrgOwner ||
				me.Memberships[0].Status != "active" {
				t.Fatalf("%s: %+v", c.name, me)
			}
		}
		// A revoked key is refused with 401.
		e.must("POST", "/api/v1/organizations/default/workspaces/default/management-keys/"+ws.ID.String()+"/revoke", e.ownerKey, nil)
		tnWantDetail(t, "revoked key", e.tnCall("GET", "/api/v1/auth/me", ws.Token, nil), 401)
	})
}
