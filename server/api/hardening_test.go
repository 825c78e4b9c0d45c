package api_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// Regression tests of issue 10 ("Hardening"), one per item, each on SQLite
// and PostgreSQL where a database is involved. docs/security.md lists them.

// auditActions lists the instance's audit events, newest first.
func (e *env) auditEvents() []wire.AuditEvent {
	e.t.Helper()
	return decodeData[[]wire.AuditEvent](e.t, e.must("GET", "/api/v1/instance/activity?limit=200", e.ownerKey, nil))
}

func (e *env) lastAudit(action string) *wire.AuditEvent {
	e.t.Helper()
	for _, ev := range e.auditEvents() {
		if ev.Action == action {
			return &ev
		}
	}
	return nil
}

// Item 1: a key holding only catalog.manage re-imported a provider with its
// own base_url, and every credential without a URL of its own then sent its
// secret there.
func TestCatalogCannotRedirectCredentialSecrets(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		importProvider(e, "hosted", "https://llm.example.com/v1")
		e.must("POST", "/api/v1/organizations/default/provider-credentials", e.ownerKey,
			map[string]any{"provider": "hosted", "label": "follows the catalog", "secret": "sk-upstream-0123456789"})
		catalogOnly := e.key("/api/v1/instance", e.ownerKey, []string{"catalog.read", "catalog.manage"}, nil).Token
		evil := `{"providers":[{"id":"hosted","name":"hosted","kind":"openai-compatible","base_url":"https://attacker.example/v1"}]}`
		evilEntry := `{"id":"hosted","name":"hosted","kind":"openai-compatible","base_url":"https://attacker.example/v1"}`
		cases := []struct {
			name, path, cred string
			body             string
			status           int
			detail           string
		}{
			{"import, unconfirmed", "/api/v1/instance/catalog/import", catalogOnly, evil, 409, "https://llm.example.com/v1 → https://attacker.example/v1 (1 credential)"},
			{"provider, unconfirmed", "/api/v1/instance/catalog/providers", catalogOnly, evilEntry, 409, "confirm_base_url_change=true"},
			{"import, confirmed without credential rights", "/api/v1/instance/catalog/import?confirm_base_url_change=true", catalogOnly, evil, 403, "provider-credentials.manage"},
			{"provider, confirmed without credential rights", "/api/v1/instance/catalog/providers?confirm_base_url_change=true", catalogOnly, evilEntry, 403, "provider-credentials.manage"},
			{"owner, unconfirmed", "/api/v1/instance/catalog/import", e.ownerKey, evil, 409, "give those credentials their own base_url"},
			{"bad confirmation value", "/api/v1/instance/catalog/import?confirm_base_url_change=yes", e.ownerKey, evil, 422, "literal_error"},
		}
		for _, c := range cases {
			status, raw := e.do("POST", c.path, c.cred, c.body)
			if status != c.status || !strings.Contains(string(raw), c.detail) {
				t.Errorf("%s: %d %s, want %d containing %q", c.name, status, raw, c.status, c.detail)
			}
		}
		rows := e.must("GET", "/api/v1/instance/catalog", e.ownerKey, nil)
		if strings.Contains(string(rows), "attacker.example") {
			t.Fatalf("the refused change was written: %s", rows)
		}
		// The same key may still edit what moves no secret: a new model.
		model := `{"id":"hosted/m2","provider":"hosted","name":"M2","context_window":8192,"max_output_tokens":2048,` +
			`"pricing":{"input_per_mtok":"1","output_per_mtok":"2","cache_read_per_mtok":"0","cache_write_per_mtok":"0"},` +
			`"capabilities":["streaming"],"modalities":["text"],"created":1700000000}`
		e.must("POST", "/api/v1/instance/catalog/import", catalogOnly,
			`{"providers":[{"id":"hosted","name":"Hosted","kind":"openai-compatible","base_url":"https://llm.example.com/v1"}],"models":[`+model+`]}`)
		if ev := e.lastAudit("catalog.imported"); ev == nil || fmt.Sprint(ev.Details["models_added"]) != "[hosted/m2]" {
			t.Fatalf("import audit does not name the model added: %+v", ev)
		}
		// Someone who manages credentials may move them, explicitly; the
		// audit entry says from where to where, never the secret.
		e.must("POST", "/api/v1/instance/catalog/import?confirm_base_url_change=true", e.ownerKey, evil)
		ev := e.lastAudit("catalog.imported")
		if ev == nil {
			t.Fatal("no audit entry for the confirmed import")
		}
		got := fmt.Sprint(ev.Details["base_url_changes"])
		for _, want := range []string{"old_base_url:https://llm.example.com/v1", "new_base_url:https://attacker.example/v1", "credentials_moved:1", "provider:hosted"} {
			if !strings.Contains(got, want) {
				t.Fatalf("base_url_changes %s lacks %s", got, want)
			}
		}
		for _, ev := range e.auditEvents() {
			if strings.Contains(fmt.Sprint(ev.Details), "sk-upstream-0123456789") {
				t.Fatalf("a secret reached the audit log: %+v", ev)
			}
		}
		// A credential with its own URL is not moved, so not counted.
		importProvider(e, "own", "https://one.example/v1")
		e.must("POST", "/api/v1/instance/provider-credentials", e.ownerKey,
			map[string]any{"provider": "own", "label": "pinned", "secret": "sk-upstream-abcdefghij", "base_url": "https://one.example/v1"})
		e.must("POST", "/api/v1/instance/catalog/import", catalogOnly,
			`{"providers":[{"id":"own","name":"own","kind":"openai-compatible","base_url":"https://two.example/v1"}]}`)
	})
}

// Item 2: bodies are bounded by route, before they are read whole.
func TestBodyLimitsByRoute(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		big := func(n int) string { return `{"email":"a@example.com","password":"` + strings.Repeat("x", n) + `"}` }
		cases := []struct {
			name, method, path, cred string
			body                     string
			status                   int
		}{
			{"sign-up over 64 KiB", "POST", "/api/v1/auth/signup", "", big(70 << 10), 413},
			{"sign-in over 64 KiB", "POST", "/api/v1/auth/login", "", big(70 << 10), 413},
			{"CLI start over 64 KiB", "POST", "/api/v1/auth/cli/start", "", `{"label":"` + strings.Repeat("x", 70<<10) + `"}`, 413},
			{"invitation over 64 KiB", "POST", "/api/v1/invitations/accept", "", `{"token":"` + strings.Repeat("x", 70<<10) + `"}`, 413},
			{"sign-in under the limit is read", "POST", "/api/v1/auth/login", "", big(10), 401},
			{"organization over 1 MiB", "POST", "/api/v1/instance/organizations", e.ownerKey, `{"name":"` + strings.Repeat("x", 2<<20) + `"}`, 413},
			// A policy may be large: 2 MiB is read and validated.
			{"policy of 2 MiB is read", "POST", wsBase + "/policies", e.ownerKey, `{"name":"` + strings.Repeat("x", 2<<20) + `"}`, 422},
		}
		for _, c := range cases {
			status, raw := e.do(c.method, c.path, c.cred, c.body)
			if status != c.status {
				t.Errorf("%s: %d %.200s, want %d", c.name, status, raw, c.status)
			}
		}
		// A declared length over the limit is refused before the body is
		// sent at all: the server answers without waiting for it.
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /api/v1/auth/signup HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", 60<<20)
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufioReader(conn), nil)
		if err != nil || resp.StatusCode != 413 {
			t.Fatalf("60 MiB declared: %v %v", resp, err)
		}
	})
}

// Item 2: sign-in throttling, per account and per address, and on the
// invitation path.
func TestSignInThrottled(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		e.signup("victim@example.com")
		for i := 1; i <= 10; i++ {
			if status, raw := e.do("POST", "/api/v1/auth/login", "", map[string]any{"email": "victim@example.com", "password": fmt.Sprintf("wrong guess %d", i)}); status != 401 {
				t.Fatalf("failure %d: %d %s", i, status, raw)
			}
		}
		// The 11th attempt, even with the right password, waits.
		resp := e.doResp("POST", "/api/v1/auth/login", "", map[string]any{"email": "victim@example.com", "password": "a long enough password"})
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("after 10 failures: %d %s (Retry-After %q)", resp.StatusCode, raw, resp.Header.Get("Retry-After"))
		}
		ev := e.lastAudit("auth.sign_in_throttled")
		if ev == nil || ev.Details["email"] != "victim@example.com" || !strings.Contains(fmt.Sprint(ev.Details["locked"]), "account") {
			t.Fatalf("no audit event for the lock: %+v", ev)
		}
		// Another account from the same address is not locked by it.
		e.signup("bystander@example.com")
		e.login("bystander@example.com", "a long enough password")

		// Guessing invitation tokens is throttled per address too.
		for i := 1; i <= 10; i++ {
			if status, raw := e.do("POST", "/api/v1/invitations/accept", "", map[string]any{"token": fmt.Sprintf("guess-%d", i)}); status != 404 {
				t.Fatalf("invitation guess %d: %d %s", i, status, raw)
			}
		}
		if status, raw := e.do("POST", "/api/v1/invitations/accept", "", map[string]any{"token": "guess-11"}); status != 429 {
			t.Fatalf("11th invitation guess: %d %s", status, raw)
		}
		if e.lastAudit("invitation.accept_throttled") == nil {
			t.Fatal("no audit event for the invitation lock")
		}
	})
}

// Item 2: 200 concurrent wrong sign-ins finish with 401, 429 or 503 (never
// a 500), the password gate bounding the argon2id memory meanwhile.
func TestConcurrentWrongSignInsAreBounded(t *testing.T) {
	e := newEnv(t, storetest.Open(t, storetest.SQLite), api.Options{})
	var wg sync.WaitGroup
	statuses := make(chan int, 200)
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(e.srv.URL+"/api/v1/auth/login", "application/json",
				strings.NewReader(fmt.Sprintf(`{"email":"nobody%d@example.com","password":"wrong password"}`, i)))
			if err != nil {
				statuses <- 0
				return
			}
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(statuses)
	seen := map[int]int{}
	for s := range statuses {
		seen[s]++
	}
	for s := range seen {
		if s != 401 && s != 429 && s != 503 {
			t.Fatalf("statuses %v", seen)
		}
	}
	t.Logf("200 concurrent wrong sign-ins: %v", seen)
}

// Item 3: a body that trickles in is cut at the route's deadline (10 s for
// sign-in), not held for the server's 2 minutes. HTTP only: one dialect.
func TestSlowBodyIsCut(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 10 s")
	}
	e := newEnv(t, storetest.Open(t, storetest.SQLite), api.Options{})
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	done := make(chan struct{})
	go func() {
		// One byte a second, for as long as the server listens.
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Second):
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	defer close(done)
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufioReader(conn), nil)
	held := time.Since(start)
	if err != nil {
		t.Fatalf("no answer after %s: %v", held, err)
	}
	if resp.StatusCode != http.StatusRequestTimeout || held > 15*time.Second {
		t.Fatalf("slow body: %d after %s, want 408 within 15 s", resp.StatusCode, held)
	}
	t.Logf("a slow sign-in body held the connection %s", held.Round(100*time.Millisecond))
}

// Item 4: a NUL byte anywhere was a 500 on PostgreSQL, before
// authentication. It is a 422 naming the field; names refuse control
// characters.
func TestNULAndControlCharactersRefused(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		cases := []struct {
			name, method, path, cred string
			body                     any
			loc                      string
		}{
			{"sign-up email", "POST", "/api/v1/auth/signup", "", map[string]any{"email": "a\x00@example.com", "password": "a long enough password"}, `["body","email"]`},
			{"sign-up name", "POST", "/api/v1/auth/signup", "", map[string]any{"email": "n@example.com", "password": "a long enough password", "name": "Eve\u202e\x07"}, `["body","name"]`},
			{"sign-in email", "POST", "/api/v1/auth/login", "", map[string]any{"email": "a\x00@example.com", "password": "whatever123"}, `["body","email"]`},
			{"sign-in password", "POST", "/api/v1/auth/login", "", map[string]any{"email": "a@example.com", "password": "pass\x00word"}, `["body","password"]`},
			{"CLI start label", "POST", "/api/v1/auth/cli/start", "", map[string]any{"label": "x\x00"}, `["body","label"]`},
			{"CLI poll secret", "POST", "/api/v1/auth/cli/poll", "", map[string]any{"poll_secret": "\x00"}, `["body","poll_secret"]`},
			{"invitation token", "POST", "/api/v1/invitations/accept", "", map[string]any{"token": "\x00"}, `["body","token"]`},
			{"organization name", "POST", "/api/v1/instance/organizations", e.ownerKey, map[string]any{"name": "a\x00b"}, `["body","name"]`},
			{"organization name, newline", "POST", "/api/v1/instance/organizations", e.ownerKey, map[string]any{"name": "a\nb"}, `["body","name"]`},
			{"nested member name", "POST", "/api/v1/instance/organizations", e.ownerKey, map[string]any{"name": "ok", "x\x00": 1}, `["body"]`},
			{"path segment", "GET", "/api/v1/organizations/de%00fault", e.ownerKey, nil, `["path","org_id"]`},
			{"path segment, unauthenticated", "GET", "/api/v1/organizations/%00/workspaces", "", nil, `["path","org_id"]`},
			{"query value", "GET", "/api/v1/instance/organizations?cursor=%00", e.ownerKey, nil, `["query","cursor"]`},
		}
		for _, c := range cases {
			status, raw := e.do(c.method, c.path, c.cred, c.body)
			if status != 422 || !strings.Contains(string(raw), c.loc) {
				t.Errorf("%s: %d %s, want 422 at %s", c.name, status, raw, c.loc)
			}
		}
	})
}

// Item 6: revoking a key revoked nothing it had issued; a leaked key could
// mint a child to persist.
func TestRevokingAKeyRevokesWhatItIssued(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		perms := []string{"management-keys.read", "management-keys.issue", "management-keys.revoke", "organizations.read"}
		parent := e.key("/api/v1/instance", e.ownerKey, perms, nil)
		child := e.key("/api/v1/instance", parent.Token, perms, nil)
		grandchild := e.key("/api/v1/instance", child.Token, perms, nil)
		sibling := e.key("/api/v1/instance", e.ownerKey, perms, nil)
		if grandchild.ParentID == nil || *grandchild.ParentID != child.ID {
			t.Fatalf("parent_id does not show the chain: %+v", grandchild)
		}
		e.must("POST", "/api/v1/instance/management-keys/"+parent.ID.String()+"/revoke", e.ownerKey, nil)
		for _, k := range []wire.ManagementKey{parent, child, grandchild} {
			if status, raw := e.do("GET", "/api/v1/auth/me", k.Token, nil); status != 401 {
				t.Fatalf("key %s after its issuer was revoked: %d %s", k.Prefix, status, raw)
			}
			got := decodeData[wire.ManagementKey](t, e.must("GET", "/api/v1/instance/management-keys/"+k.ID.String(), e.ownerKey, nil))
			if got.Status != "revoked" {
				t.Fatalf("key %s reads back %s", k.Prefix, got.Status)
			}
		}
		e.must("GET", "/api/v1/auth/me", sibling.Token, nil)
		n := 0
		for _, ev := range e.auditEvents() {
			if ev.Action == "management_key.revoked" && ev.Details["reason"] == "issuing key revoked" {
				n++
			}
		}
		if n != 2 {
			t.Fatalf("%d cascade audit entries, want 2 (child, grandchild)", n)
		}

		// A key whose issuer expires stops too, and one whose issuer was
		// revoked wholesale (not through the API) is refused all the same.
		p2 := e.key("/api/v1/instance", e.ownerKey, perms, map[string]any{"expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
		c2 := e.key("/api/v1/instance", p2.Token, perms, map[string]any{"expires_at": time.Now().Add(30 * time.Minute).UTC().Format(time.RFC3339)})
		e.kpSetExpiry(p2.ID, time.Now().Add(-time.Minute))
		if status, raw := e.do("GET", "/api/v1/auth/me", c2.Token, nil); status != 401 || !strings.Contains(string(raw), "expired") {
			t.Fatalf("child of an expired key: %d %s", status, raw)
		}
		p3 := e.key("/api/v1/instance", e.ownerKey, perms, nil)
		c3 := e.key("/api/v1/instance", p3.Token, perms, nil)
		if _, err := e.st.RevokeManagementKey(context.Background(), p3.ID, time.Now()); err != nil {
			t.Fatal(err)
		}
		if status, raw := e.do("GET", "/api/v1/auth/me", c3.Token, nil); status != 401 {
			t.Fatalf("child of a key revoked outside the API: %d %s", status, raw)
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

func bufioReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }
