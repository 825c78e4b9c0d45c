package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/uptrace/bun"
)

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
