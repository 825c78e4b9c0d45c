package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/wire"
)

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

// Row 2: disabling a user left their inference keys answering; only
// management keys were revoked. Disabling now revokes, in the same
// transaction, every inference key the account owns and every one it
// issued for someone else (it was shown their plaintext); enabling it
// again brings none back; wire.User shows the state.
func TestDisablingRevokesInferenceKeys(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		admin, adminSession := e.signup("admin@example.com")
		colleague, _ := e.signup("colleague@example.com")
		for _, u := range []wire.SessionResult{admin, colleague} {
			role := "member"
			if u.User.ID == admin.User.ID {
				role = "admin"
			}
			e.must("POST", "/api/v1/organizations/default/members", e.ownerKey, map[string]any{"user_id": u.User.ID.String(), "role": role})
			e.must("POST", wsBase+"/members", e.ownerKey, map[string]any{"user_id": u.User.ID.String(), "role": "member"})
		}
		issue := func(cred string, owner *wire.User) wire.InferenceKey {
			body := map[string]any{"name": "k"}
			if owner != nil {
				body["user_id"] = owner.ID.String()
			}
			return decodeData[wire.InferenceKey](t, e.must("POST", wsBase+"/inference-keys", cred, body))
		}
		own := issue("cookie:"+adminSession, nil)                  // the admin's own
		forOther := issue("cookie:"+adminSession, &colleague.User) // the admin issued, the colleague owns
		untouched := issue(e.ownerKey, &colleague.User)            // neither
		ownersOwn := issue(e.ownerKey, nil)                        // the instance owner's

		got := decodeData[wire.User](t, e.must("POST", "/api/v1/instance/users/"+admin.User.ID.String()+"/disable", e.ownerKey, nil))
		if got.DisabledAt == nil {
			t.Fatalf("the disabled user reads back without disabled_at: %+v", got)
		}
		listed := decodeData[[]wire.User](t, e.must("GET", "/api/v1/instance/users", e.ownerKey, nil))
		for _, u := range listed {
			if (u.ID == admin.User.ID) != (u.DisabledAt != nil) {
				t.Errorf("user %s listed with disabled_at %v", u.Email, u.DisabledAt)
			}
		}
		status := func(k wire.InferenceKey) string {
			return decodeData[wire.InferenceKey](t, e.must("GET", wsBase+"/inference-keys/"+k.ID.String(), e.ownerKey, nil)).Status
		}
		for _, c := range []struct {
			key  wire.InferenceKey
			want string
		}{{own, "revoked"}, {forOther, "revoked"}, {untouched, "active"}, {ownersOwn, "active"}} {
			if s := status(c.key); s != c.want {
				t.Errorf("key %s: %s, want %s", c.key.Prefix, s, c.want)
			}
		}
		reasons := map[string]string{}
		for _, ev := range e.auditEvents() {
			if ev.Action == "inference_key.revoked" {
				reasons[ev.Target.ID] = fmt.Sprint(ev.Details["reason"])
			}
		}
		if reasons[own.ID.String()] != "owner's account disabled" || reasons[forOther.ID.String()] != "issuer's account disabled" || len(reasons) != 2 {
			t.Fatalf("revocation audit: %v", reasons)
		}
		if ev := e.lastAudit("user.disabled"); ev == nil || !strings.Contains(fmt.Sprint(ev.Details["inference_keys_revoked"]), forOther.ID.String()) {
			t.Fatalf("user.disabled does not list the inference keys: %+v", ev)
		}
		// No new key for a disabled account.
		if status, raw := e.do("POST", wsBase+"/inference-keys", e.ownerKey, map[string]any{"name": "k", "user_id": admin.User.ID.String()}); status != 422 ||
			!strings.Contains(string(raw), "disabled") {
			t.Fatalf("a key for a disabled account: %d %s", status, raw)
		}
		// Enabling lets the person sign in again; the keys stay revoked.
		got = decodeData[wire.User](t, e.must("POST", "/api/v1/instance/users/"+admin.User.ID.String()+"/enable", e.ownerKey, nil))
		if got.DisabledAt != nil {
			t.Fatalf("enabled user still reads disabled: %+v", got)
		}
		if status(own) != "revoked" || status(forOther) != "revoked" {
			t.Fatal("enabling brought a revoked key back")
		}
	})
}

// Item 7: sessions can be listed and ended; a password change ends the
// others; an instance admin disables an account.
func TestSessionsCanBeEnded(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		const pw = "a long enough password"
		me, s1 := e.signup("person@example.com")
		_, s2 := e.login("person@example.com", pw)
		_, s3 := e.login("person@example.com", pw)

		list := decodeData[[]wire.Session](t, e.must("GET", "/api/v1/auth/sessions", "cookie:"+s1, nil))
		if len(list) != 3 {
			t.Fatalf("%d sessions listed, want 3", len(list))
		}
		current := 0
		for _, se := range list {
			if se.Current {
				current++
			}
		}
		if current != 1 || list[0].ClientAddress != "127.0.0.1" {
			t.Fatalf("sessions %+v", list)
		}
		// End one (the newest, s3) from s1.
		e.must("DELETE", "/api/v1/auth/sessions/"+list[0].ID.String(), "cookie:"+s1, nil)
		if status, _ := e.do("GET", "/api/v1/auth/me", "cookie:"+s3, nil); status != 401 {
			t.Fatalf("ended session still works: %d", status)
		}
		// Someone else's session is not found.
		_, other := e.signup("other@example.com")
		otherList := decodeData[[]wire.Session](t, e.must("GET", "/api/v1/auth/sessions", "cookie:"+other, nil))
		if status, _ := e.do("DELETE", "/api/v1/auth/sessions/"+otherList[0].ID.String(), "cookie:"+s1, nil); status != 404 {
			t.Fatalf("ending another's session: %d", status)
		}

		// A password change needs the current password and ends the
		// other sessions, not this one.
		if status, raw := e.do("POST", "/api/v1/auth/password", "cookie:"+s1, map[string]any{"current_password": "not it", "new_password": "another long password"}); status != 422 {
			t.Fatalf("wrong current password: %d %s", status, raw)
		}
		res := decodeData[wire.PasswordChanged](t, e.must("POST", "/api/v1/auth/password", "cookie:"+s1,
			map[string]any{"current_password": pw, "new_password": "another long password"}))
		if res.SessionsEnded != 1 {
			t.Fatalf("password change ended %d sessions, want 1 (s2)", res.SessionsEnded)
		}
		if status, _ := e.do("GET", "/api/v1/auth/me", "cookie:"+s2, nil); status != 401 {
			t.Fatal("another session survived the password change")
		}
		e.must("GET", "/api/v1/auth/me", "cookie:"+s1, nil)
		if status, _ := e.do("POST", "/api/v1/auth/login", "", map[string]any{"email": "person@example.com", "password": pw}); status != 401 {
			t.Fatal("the old password still signs in")
		}
		_, s4 := e.login("person@example.com", "another long password")

		// Sign out everywhere.
		ended := decodeData[wire.SessionsEnded](t, e.must("DELETE", "/api/v1/auth/sessions", "cookie:"+s1, nil))
		if ended.SessionsEnded != 2 {
			t.Fatalf("signed out of %d sessions, want 2", ended.SessionsEnded)
		}
		for _, s := range []string{s1, s4} {
			if status, _ := e.do("GET", "/api/v1/auth/me", "cookie:"+s, nil); status != 401 {
				t.Fatal("a session survived signing out everywhere")
			}
		}

		// Disable: sessions end, keys (and what they issued) are revoked,
		// sign-in is refused; enable lets the person sign in again.
		_, s5 := e.login("person@example.com", "another long password")
		e.must("POST", "/api/v1/instance/users/"+me.User.ID.String()+"/disable", e.ownerKey, nil)
		if status, _ := e.do("GET", "/api/v1/auth/me", "cookie:"+s5, nil); status != 401 {
			t.Fatal("a disabled account's session works")
		}
		if status, _ := e.do("POST", "/api/v1/auth/login", "", map[string]any{"email": "person@example.com", "password": "another long password"}); status != 401 {
			t.Fatal("a disabled account signs in")
		}
		if status, _ := e.do("POST", "/api/v1/instance/users/"+e.boot.User.ID.String()+"/disable", e.ownerKey, nil); status != 409 {
			t.Fatal("the owner disabled themselves")
		}
		ev := e.lastAudit("user.disabled")
		if ev == nil || ev.Target.ID != me.User.ID.String() {
			t.Fatalf("no audit event for disabling: %+v", ev)
		}
		e.must("POST", "/api/v1/instance/users/"+me.User.ID.String()+"/enable", e.ownerKey, nil)
		e.login("person@example.com", "another long password")
	})
}

// Item 7: disabling an account revokes its management keys.
func TestDisablingRevokesKeys(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		me, _ := e.signup("keyholder@example.com")
		e.must("PATCH", "/api/v1/instance/users/"+me.User.ID.String(), e.ownerKey, map[string]any{"instance_role": "admin"})
		_, sess := e.login("keyholder@example.com", "a long enough password")
		k := e.key("/api/v1/instance", "cookie:"+sess, []string{"management-keys.issue", "management-keys.read"}, nil)
		child := e.key("/api/v1/instance", k.Token, []string{"management-keys.read"}, nil)
		e.must("POST", "/api/v1/instance/users/"+me.User.ID.String()+"/disable", e.ownerKey, nil)
		for _, tok := range []string{k.Token, child.Token} {
			if status, raw := e.do("GET", "/api/v1/auth/me", tok, nil); status != 401 {
				t.Fatalf("a disabled account's key works: %d %s", status, raw)
			}
		}
	})
}
