package api_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gw-gateway/gw/wire"
)

// Regressions for an independent review's findings: each test fails on the
// code before its fix.

func TestCLIApprovalNeedsABrowserSession(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		st := e.cliStart("x")
		for _, path := range []string{"/api/v1/auth/cli/approve", "/api/v1/auth/cli/deny"} {
			code, body := e.do("POST", path, e.ownerKey, map[string]any{"user_code": st.UserCode, "org_id": "default"})
			if code != 403 || !strings.Contains(string(body), "browser session") {
				t.Fatalf("%s with a key: %d %s", path, code, body)
			}
		}
	})
}

func TestNoGrantingBeyondOwnRights(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		u2, cookie := e.signup("u2@example.com")
		e.must("POST", "/api/v1/organizations/default/members", e.ownerKey, map[string]any{"user_id": u2.User.ID, "role": "member"})
		e.must("POST", wsBase+"/members", e.ownerKey, map[string]any{"user_id": u2.User.ID, "role": "member"})
		// A member cannot issue an inference key owned by someone else.
		code, _ := e.do("POST", wsBase+"/inference-keys", "cookie:"+cookie, map[string]any{"name": "x", "user_id": e.boot.User.ID})
		if code != 403 {
			t.Fatalf("member issuing a key for the owner: %d", code)
		}
		// A key holding only members.manage cannot make an owner.
		narrow := e.key("/api/v1/organizations/default", e.ownerKey, []string{"members.manage"}, nil)
		code, body := e.do("PATCH", "/api/v1/organizations/default/members/"+u2.User.ID.String(), narrow.Token, map[string]any{"role": "owner"})
		if code != 403 {
			t.Fatalf("narrow key granting owner: %d %s", code, body)
		}
		code, _ = e.do("POST", "/api/v1/organizations/default/invitations", narrow.Token, map[string]any{"email": "x@example.com", "role": "admin"})
		if code != 403 {
			t.Fatalf("narrow key inviting an admin: %d", code)
		}
	})
}

func TestInstanceKeyListFilterIsHonoured(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		u2, cookie := e.signup("u2@example.com")
		e.must("POST", "/api/v1/organizations/default/members", e.ownerKey, map[string]any{"user_id": u2.User.ID, "role": "member"})
		theirs := e.key("/api/v1/organizations/default", "cookie:"+cookie, []string{"organizations.read"}, nil)
		reader := e.key("/api/v1/instance", e.ownerKey, []string{"management-keys.read"}, nil)
		list := decodeData[[]wire.ManagementKey](t, e.must("GET", "/api/v1/instance/management-keys?user_id="+u2.User.ID.String(), reader.Token, nil))
		if len(list) != 1 || list[0].ID != theirs.ID {
			t.Fatalf("filtered list: %+v", list)
		}
	})
}

func TestSuspensionRevokesManagementKeys(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		u2, cookie := e.signup("u2@example.com")
		e.must("POST", "/api/v1/organizations/default/members", e.ownerKey, map[string]any{"user_id": u2.User.ID, "role": "member"})
		k := e.key("/api/v1/organizations/default", "cookie:"+cookie, []string{"organizations.read"}, nil)
		member := "/api/v1/organizations/default/members/" + u2.User.ID.String()
		e.must("PATCH", member, e.ownerKey, map[string]any{"status": "suspended"})
		e.must("PATCH", member, e.ownerKey, map[string]any{"status": "active"})
		if code, _ := e.do("GET", "/api/v1/organizations/default", k.Token, nil); code != 401 {
			t.Fatalf("key of a suspended-then-reactivated member: %d", code)
		}
	})
}

func TestOrganizationListsHonourTheKeyCeiling(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		k := e.key("/api/v1/instance", e.ownerKey, []string{"usage.ingest"}, nil)
		orgs := decodeData[[]wire.Organization](t, e.must("GET", "/api/v1/organizations", k.Token, nil))
		choices := decodeData[[]wire.EnrollmentChoice](t, e.must("GET", "/api/v1/enrollment/choices", k.Token, nil))
		// The owner belongs to the default organization, so it is listed as
		// a membership — but not every organization as staff would see.
		e.must("POST", "/api/v1/instance/organizations", e.ownerKey, map[string]any{"name": "Other"})
		orgs2 := decodeData[[]wire.Organization](t, e.must("GET", "/api/v1/organizations", k.Token, nil))
		if len(orgs) != 1 || len(orgs2) != 1 || len(choices) != 1 {
			t.Fatalf("a key without organizations.read lists %d then %d organizations, %d choices", len(orgs), len(orgs2), len(choices))
		}
	})
}

func TestConcurrentRevokesAgree(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		k := e.key("/api/v1/organizations/default", e.ownerKey, []string{"organizations.read"}, nil)
		var wg sync.WaitGroup
		times := make(chan string, 10)
		for i := 0; i < 10; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp := e.doResp("POST", "/api/v1/organizations/default/management-keys/"+k.ID.String()+"/revoke", e.ownerKey, nil)
				defer resp.Body.Close()
				var body struct{ Data wire.ManagementKey }
				if jsonDecode(resp.Body, &body) == nil && body.Data.RevokedAt != nil {
					times <- body.Data.RevokedAt.String()
				}
			}()
		}
		wg.Wait()
		close(times)
		seen := map[string]bool{}
		for tm := range times {
			seen[tm] = true
		}
		raw := e.must("GET", "/api/v1/organizations/default/activity?limit=200", e.ownerKey, nil)
		if len(seen) != 1 || strings.Count(string(raw), `"management_key.revoked"`) != 1 {
			t.Fatalf("revoked_at values %v; events %d", seen, strings.Count(string(raw), `"management_key.revoked"`))
		}
	})
}

func TestConcurrentCreatesWithDerivedSlugs(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		var wg sync.WaitGroup
		codes := make(chan int, 8)
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, _ := e.do("POST", "/api/v1/organizations/default/workspaces", e.ownerKey, map[string]any{"name": "Race"})
				codes <- code
			}()
		}
		wg.Wait()
		close(codes)
		for c := range codes {
			if c != 200 {
				t.Fatalf("a concurrent create with a derived slug answered %d", c)
			}
		}
	})
}

func TestUnknownRoutesAndMethods(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		resp := e.doResp("GET", "/api/v1/nowhere", "", nil)
		resp.Body.Close()
		if resp.StatusCode != 404 || resp.Header.Get("X-Request-Id") == "" || resp.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("unknown path: %d %v", resp.StatusCode, resp.Header)
		}
		resp = e.doResp("PUT", "/api/v1/organizations/default/workspaces", e.ownerKey, map[string]any{})
		resp.Body.Close()
		if resp.StatusCode != 405 || !strings.Contains(resp.Header.Get("Allow"), "GET") {
			t.Fatalf("wrong method: %d %v", resp.StatusCode, resp.Header)
		}
		req, _ := http.NewRequest("POST", e.srv.URL+"/api/v1/auth/login", strings.NewReader(`{"email":"owner@example.com","password":"correct horse battery"}`))
		req.Header.Set("Content-Type", "text/plain")
		r2, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r2.Body.Close()
		if r2.StatusCode != 415 {
			t.Fatalf("login posted as text/plain: %d", r2.StatusCode)
		}
	})
}

func TestHeartbeatKeepsFirstSeen(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		hb := map[string]any{"id": "dp", "version": "1", "bundle_versions": map[string]any{}, "spool_depth": 0}
		first := decodeData[wire.DataPlaneInstance](t, e.must("POST", "/api/v1/data-plane/heartbeats", e.ownerKey, hb))
		again := decodeData[wire.DataPlaneInstance](t, e.must("POST", "/api/v1/data-plane/heartbeats", e.ownerKey, hb))
		if !again.FirstSeenAt.Equal(first.FirstSeenAt) || again.LastSeenAt.Before(first.LastSeenAt) {
			t.Fatalf("first %+v, again %+v", first, again)
		}
	})
}

// A credential's destination cannot change without its secret being given
// again: otherwise whoever manages it could send the sealed secret to a
// host of theirs.
func TestCredentialBaseURLNeedsTheSecret(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		base := "/api/v1/organizations/default/provider-credentials"
		c := decodeData[wire.ProviderCredential](t, e.must("POST", base, e.ownerKey,
			map[string]any{"provider": "openai", "label": "x", "secret": "sk-real-0123456789abcdef", "base_url": "https://legit.example/v1"}))
		code, raw := e.do("PATCH", base+"/"+c.ID.String(), e.ownerKey, map[string]any{"base_url": "https://evil.example/v1"})
		if code != 422 || !containsAll(issueSet(t, raw), []string{"body.secret:missing"}) {
			t.Fatalf("moving the secret: %d %s", code, raw)
		}
		if code, _ := e.do("PATCH", base+"/"+c.ID.String(), e.ownerKey, map[string]any{"base_url": nil}); code != 422 {
			t.Fatalf("clearing base_url without the secret: %d", code)
		}
		e.must("PATCH", base+"/"+c.ID.String(), e.ownerKey, map[string]any{"base_url": "https://new.example/v1", "secret": "sk-new-0123456789abcdef"})
	})
}

func TestIngestBoundsTokenCounts(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		ev := e.usageEvent(time.Now(), "openai/gpt-4o", 1<<62, 1, "1")
		code, raw := e.do("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{ev}})
		if code != 422 || !containsAll(issueSet(t, raw), []string{"body.events.0.input_tokens:less_than_equal"}) {
			t.Fatalf("huge token count: %d %s", code, raw)
		}
	})
}
