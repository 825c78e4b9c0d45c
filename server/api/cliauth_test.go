package api_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/wire"
)

// cliFlow starts a CLI sign-in and returns its start answer.
func (e *env) cliStart(label string) wire.CLIStarted {
	e.t.Helper()
	body := map[string]any{}
	if label != "" {
		body["label"] = label
	}
	return decodeData[wire.CLIStarted](e.t, e.must("POST", "/api/v1/auth/cli/start", "", body))
}

// unthrottle clears the poll gate so a test can poll again at once.
func (e *env) unthrottle() {
	_, err := e.st.DB().NewUpdate().Model((*store.CLIAuthorization)(nil)).Set("last_poll_at = NULL").Where("TRUE").Exec(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) poll(secret, cred string) wire.CLIPollResult {
	e.t.Helper()
	e.unthrottle()
	return decodeData[wire.CLIPollResult](e.t, e.must("POST", "/api/v1/auth/cli/poll", cred, map[string]any{"poll_secret": secret}))
}

func TestCLIAuthorizationFlow(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		_, cookie := e.login("owner@example.com", "correct horse battery")
		st := e.cliStart("laptop")
		if len(st.UserCode) != 9 || st.IntervalSeconds != 5 || st.VerificationURL == "" {
			t.Fatalf("start: %+v", st)
		}
		if p := e.poll(st.PollSecret, ""); p.Status != "pending" || p.Token != nil {
			t.Fatalf("before approval: %+v", p)
		}
		info := decodeData[wire.CLIAuthorization](t, e.must("GET", "/api/v1/auth/cli/authorizations/"+st.UserCode, "cookie:"+cookie, nil))
		if info.Label != "laptop" || info.Status != "pending" {
			t.Fatalf("describe: %+v", info)
		}
		// The page may send the code as typed.
		lower := map[string]any{"user_code": "  " + string([]rune(st.UserCode)[:4]) + string([]rune(st.UserCode)[5:]), "org_id": "default"}
		e.must("POST", "/api/v1/auth/cli/approve", "cookie:"+cookie, lower)
		if st, _ := e.do("POST", "/api/v1/auth/cli/approve", "cookie:"+cookie, map[string]any{"user_code": st.UserCode, "org_id": "default"}); st != 409 {
			t.Fatalf("second approval: %d", st)
		}
		p := e.poll(st.PollSecret, "")
		if p.Status != "approved" || p.Token == nil || *p.Scope != "organization" || *p.OrgName != "Default" || *p.OrgID != e.boot.Organization.ID {
			t.Fatalf("delivery: %+v", p)
		}
		if again := e.poll(st.PollSecret, ""); again.Status != "consumed" || again.Token != nil {
			t.Fatalf("after delivery: %+v", again)
		}
		me := decodeData[wire.Me](t, e.must("GET", "/api/v1/auth/me", *p.Token, nil))
		if me.Key == nil || me.Key.Scope.Level != "organization" || me.Key.Label != "laptop" || me.User.ID != e.boot.User.ID {
			t.Fatalf("delivered key: %+v", me)
		}

		// Re-login replaces the key of the same user and scope, whatever
		// its label; a key of another scope is left alone.
		other := e.key("/api/v1/organizations/default/workspaces/default", e.ownerKey, []string{"workspaces.read"}, nil)
		st2 := e.cliStart("a different label")
		e.must("POST", "/api/v1/auth/cli/approve", "cookie:"+cookie, map[string]any{"user_code": st2.UserCode, "org_id": e.boot.Organization.ID})
		p2 := e.poll(st2.PollSecret, *p.Token)
		if p2.Status != "approved" || p2.ReplacedKeyID == nil || *p2.ReplacedKeyID != me.Key.ID {
			t.Fatalf("replacement: %+v", p2)
		}
		if code, _ := e.do("GET", "/api/v1/auth/me", *p.Token, nil); code != 401 {
			t.Fatalf("replaced key still works: %d", code)
		}
		st3 := e.cliStart("")
		e.must("POST", "/api/v1/auth/cli/approve", "cookie:"+cookie, map[string]any{"user_code": st3.UserCode, "org_id": "default"})
		if p3 := e.poll(st3.PollSecret, other.Token); p3.ReplacedKeyID != nil {
			t.Fatalf("a key of another scope was replaced: %+v", p3)
		}
		if code, _ := e.do("GET", "/api/v1/auth/me", other.Token, nil); code != 200 {
			t.Fatalf("workspace key revoked by an organization sign-in: %d", code)
		}
	})
}

func TestCLIAuthorizationOutcomes(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		_, cookie := e.login("owner@example.com", "correct horse battery")
		denied := e.cliStart("x")
		e.must("POST", "/api/v1/auth/cli/deny", "cookie:"+cookie, map[string]any{"user_code": denied.UserCode})
		if p := e.poll(denied.PollSecret, ""); p.Status != "denied" || p.Token != nil {
			t.Fatalf("denied: %+v", p)
		}
		expired := e.cliStart("x")
		if _, err := e.st.DB().NewUpdate().Model((*store.CLIAuthorization)(nil)).Set("expires_at = ?", store.Now().Add(-time.Second)).
			Where("user_code = ?", expired.UserCode).Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
		if p := e.poll(expired.PollSecret, ""); p.Status != "expired" {
			t.Fatalf("expired: %+v", p)
		}
		if code, _ := e.do("POST", "/api/v1/auth/cli/approve", "cookie:"+cookie, map[string]any{"user_code": expired.UserCode, "org_id": "default"}); code != 409 {
			t.Fatalf("approving an expired sign-in: %d", code)
		}
		fast := e.cliStart("x")
		e.poll(fast.PollSecret, "")
		p := decodeData[wire.CLIPollResult](t, e.must("POST", "/api/v1/auth/cli/poll", "", map[string]any{"poll_secret": fast.PollSecret}))
		if p.Status != "slow_down" || p.IntervalSeconds != 10 {
			t.Fatalf("fast poll: %+v", p)
		}
		if code, _ := e.do("POST", "/api/v1/auth/cli/poll", "", map[string]any{"poll_secret": "cli_nope"}); code != 404 {
			t.Fatalf("unknown secret: %d", code)
		}
		if code, _ := e.do("POST", "/api/v1/auth/cli/poll", "", map[string]any{}); code != 422 {
			t.Fatalf("missing secret: %d", code)
		}
		// A stranger cannot approve into an organization they are not in.
		_, stranger := e.signup("stranger@example.com")
		s := e.cliStart("x")
		if code, _ := e.do("POST", "/api/v1/auth/cli/approve", "cookie:"+stranger, map[string]any{"user_code": s.UserCode, "org_id": "default"}); code != 404 {
			t.Fatalf("stranger approval: %d", code)
		}
		if code, _ := e.do("POST", "/api/v1/auth/cli/approve", "", map[string]any{"user_code": s.UserCode, "org_id": "default"}); code != 401 {
			t.Fatalf("anonymous approval: %d", code)
		}
	})
}

// Many simultaneous polls after approval: exactly one gets the key.
func TestCLIAuthorizationDeliversExactlyOnce(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		_, cookie := e.login("owner@example.com", "correct horse battery")
		for round := 0; round < 3; round++ {
			st := e.cliStart("race")
			e.must("POST", "/api/v1/auth/cli/approve", "cookie:"+cookie, map[string]any{"user_code": st.UserCode, "org_id": "default"})
			e.unthrottle()
			// With no interval every poll passes the rate gate, so the polls
			// race on the delivery itself.
			if _, err := e.st.DB().NewUpdate().Model((*store.CLIAuthorization)(nil)).Set("interval_seconds = 0").
				Where("user_code = ?", st.UserCode).Exec(context.Background()); err != nil {
				t.Fatal(err)
			}
			const n = 16
			var wg sync.WaitGroup
			tokens := make(chan string, n)
			statuses := make(chan int, n)
			start := make(chan struct{})
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					resp := e.doResp("POST", "/api/v1/auth/cli/poll", "", map[string]any{"poll_secret": st.PollSecret})
					defer resp.Body.Close()
					statuses <- resp.StatusCode
					var body struct{ Data wire.CLIPollResult }
					if err := jsonDecode(resp.Body, &body); err == nil && body.Data.Token != nil {
						tokens <- *body.Data.Token
					}
				}()
			}
			close(start)
			wg.Wait()
			close(tokens)
			close(statuses)
			for code := range statuses {
				if code != 200 {
					t.Fatalf("a concurrent poll answered %d", code)
				}
			}
			var got []string
			for tok := range tokens {
				got = append(got, tok)
			}
			if len(got) > 1 {
				t.Fatalf("round %d: %d tokens delivered", round, len(got))
			}
			if len(got) == 0 {
				if p := e.poll(st.PollSecret, ""); p.Token == nil {
					t.Fatalf("round %d: no token delivered at all: %+v", round, p)
				}
			}
			keys, err := e.st.ListManagementKeys(context.Background(), store.KeyFilter{OrgID: &e.boot.Organization.ID})
			if err != nil {
				t.Fatal(err)
			}
			minted := 0
			for _, k := range keys {
				if k.Label == "race" {
					minted++
				}
			}
			if minted != round+1 {
				t.Fatalf("round %d: %d keys minted in all", round, minted)
			}
		}
	})
}

// An instance owner approves an instance-scope key through the same flow
// (gw login --instance); nobody else can, and the scope names no
// organization (issue 22, row 2).
func TestCLIAuthorizationInstanceScope(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		_, cookie := e.login("owner@example.com", "correct horse battery")
		st := e.cliStart("ops laptop")
		if code, body := e.do("POST", "/api/v1/auth/cli/approve", "cookie:"+cookie,
			map[string]any{"user_code": st.UserCode, "scope": "instance", "org_id": "default"}); code != 422 || !strings.Contains(string(body), "org_id") {
			t.Fatalf("instance scope with an organization: %d %s", code, body)
		}
		e.must("POST", "/api/v1/auth/cli/approve", "cookie:"+cookie, map[string]any{"user_code": st.UserCode, "scope": "instance"})
		p := e.poll(st.PollSecret, "")
		if p.Status != "approved" || p.Token == nil || *p.Scope != "instance" || p.OrgID != nil || p.OrgName != nil {
			t.Fatalf("delivery: %+v", p)
		}
		me := decodeData[wire.Me](t, e.must("GET", "/api/v1/auth/me", *p.Token, nil))
		if me.Key == nil || me.Key.Scope.Level != "instance" || !slices.Contains(me.Key.Permissions, "catalog.manage") {
			t.Fatalf("delivered key: %+v", me.Key)
		}
		e.must("GET", "/api/v1/instance/data-planes", *p.Token, nil)

		// Logging in again at instance scope replaces that key.
		st2 := e.cliStart("ops laptop")
		e.must("POST", "/api/v1/auth/cli/approve", "cookie:"+cookie, map[string]any{"user_code": st2.UserCode, "scope": "instance"})
		if p2 := e.poll(st2.PollSecret, *p.Token); p2.ReplacedKeyID == nil || *p2.ReplacedKeyID != me.Key.ID {
			t.Fatalf("replacement: %+v", p2)
		}

		// A member without an instance role is refused, and told why.
		_, member := e.signup("member@example.com")
		s := e.cliStart("x")
		code, body := e.do("POST", "/api/v1/auth/cli/approve", "cookie:"+member, map[string]any{"user_code": s.UserCode, "scope": "instance"})
		if code != 403 || !strings.Contains(string(body), "instance owner or admin") {
			t.Fatalf("instance approval by a member: %d %s", code, body)
		}
	})
}

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
