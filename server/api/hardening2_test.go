package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
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

// Row 4: platform credentials reach a data plane only if its enrollment
// says so. A new enrollment starts without; the choice is a boolean; a
// change republishes the organization's bundle under a new version (a data
// plane admits only newer ones) and changes the poll's ETag.
func TestEnrollmentPlatformCredentials(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newEnrollEnv(t, db)
		asked := decodeData[wire.DataPlaneEnrollment](t, e.must("POST", "/api/v1/data-plane/enrollments", e.dpToken,
			map[string]any{"id": "dp-1", "public_key": e.dp.Public().String()}))
		if asked.PlatformCredentials {
			t.Fatal("a new enrollment asks with platform credentials")
		}
		const approve = "/api/v1/instance/data-planes/enrollments/dp-1/approve"
		if status, raw := e.do("POST", approve, e.ownerKey, map[string]any{"organizations": []string{"default"}, "platform_credentials": "yes"}); status != 422 ||
			!strings.Contains(string(raw), `["body","platform_credentials"]`) {
			t.Fatalf("a platform_credentials that is not a boolean: %d %s", status, raw)
		}
		poll := func() (string, int64) {
			t.Helper()
			resp := e.doResp("GET", "/api/v1/data-plane/bundles?data_plane_id=dp-1", e.dpToken, nil)
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			b := decodeData[wire.DataPlaneBundles](t, raw)
			if len(b.Bundles) != 1 {
				t.Fatalf("poll: %d bundles", len(b.Bundles))
			}
			return resp.Header.Get("ETag"), b.Bundles[0].Version
		}
		got := decodeData[wire.DataPlaneEnrollment](t, e.must("POST", approve, e.ownerKey, map[string]any{"organizations": []string{"default"}}))
		if got.PlatformCredentials {
			t.Fatal("approved without asking, with platform credentials")
		}
		tag1, v1 := poll()
		got = decodeData[wire.DataPlaneEnrollment](t, e.must("POST", approve, e.ownerKey, map[string]any{"organizations": []string{"default"}, "platform_credentials": true}))
		if !got.PlatformCredentials {
			t.Fatal("platform_credentials true not kept")
		}
		tag2, v2 := poll()
		if tag2 == tag1 || v2 != v1+1 {
			t.Fatalf("after allowing platform credentials: ETag %s → %s, version %d → %d", tag1, tag2, v1, v2)
		}
		ev := e.lastAudit("data_plane.enrollment_approved")
		if ev == nil || ev.Details["platform_credentials"] != true || ev.Details["previous_platform_credentials"] != false {
			t.Fatalf("audit: %+v", ev)
		}
		// Approving again without the member keeps the setting, and
		// republishes nothing.
		got = decodeData[wire.DataPlaneEnrollment](t, e.must("POST", approve, e.ownerKey, map[string]any{"organizations": []string{"default"}}))
		if _, v3 := poll(); !got.PlatformCredentials || v3 != v2 {
			t.Fatalf("an approval without the member: platform %v, version %d → %d", got.PlatformCredentials, v2, v3)
		}
	})
}

// Row 5: each replica counted sign-in and invitation failures on its own,
// so N replicas gave N times the allowance. On PostgreSQL two servers on
// one database now share one count: ten failures split between them lock
// the account on both, and ten invitation guesses the address. SQLite is
// one process and counts in memory: the same ten lock it there.
func TestThrottlesSharedAcrossReplicas(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			url, err := storetest.URL(t, d)
			if err != nil {
				t.Fatal(err)
			}
			open := func() *bun.DB {
				db, err := store.Open(ctx, url, filepath.Join(t.TempDir(), "data"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				return db
			}
			first := open()
			if _, err := store.Migrate(ctx, first); err != nil {
				t.Fatal(err)
			}
			a := newEnv(t, first, api.Options{})
			replicas := []*env{a}
			if d == storetest.Postgres {
				// A second replica: its own pool and its own process state.
				s, err := api.New(ctx, store.New(open()), api.Options{})
				if err != nil {
					t.Fatal(err)
				}
				srv := httptest.NewServer(s)
				t.Cleanup(srv.Close)
				replicas = append(replicas, &env{t: t, srv: srv, api: s, st: a.st, ownerKey: a.ownerKey, boot: a.boot})
			}
			a.signup("target@example.com")
			for i := range 10 {
				r := replicas[i%len(replicas)]
				if status, raw := r.do("POST", "/api/v1/auth/login", "", map[string]any{"email": "target@example.com", "password": fmt.Sprintf("wrong guess %d", i)}); status != 401 {
					t.Fatalf("guess %d: %d %s", i, status, raw)
				}
			}
			for i, r := range replicas {
				resp := r.doResp("POST", "/api/v1/auth/login", "", map[string]any{"email": "target@example.com", "password": "a long enough password"})
				resp.Body.Close()
				if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
					t.Fatalf("replica %d after 10 failures across %d replicas: %d, want 429 with Retry-After", i, len(replicas), resp.StatusCode)
				}
			}
			if ev := a.lastAudit("auth.sign_in_throttled"); ev == nil || ev.Details["email"] != "target@example.com" {
				t.Fatalf("no audit entry for the lock: %+v", ev)
			}
			for i := range 10 {
				r := replicas[i%len(replicas)]
				if status, raw := r.do("POST", "/api/v1/invitations/accept", "", map[string]any{"token": fmt.Sprintf("guess-%d", i)}); status != 404 {
					t.Fatalf("invitation guess %d: %d %s", i, status, raw)
				}
			}
			for i, r := range replicas {
				if status, raw := r.do("POST", "/api/v1/invitations/accept", "", map[string]any{"token": "guess-11"}); status != 429 {
					t.Fatalf("replica %d, 11th invitation guess: %d %s", i, status, raw)
				}
			}
			// Another account is not locked by it, on any replica.
			a.signup("bystander@example.com")
			for _, r := range replicas {
				r.login("bystander@example.com", "a long enough password")
			}
		})
	}
}
