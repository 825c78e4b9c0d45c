package api_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/store/storetest"
)

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

func bufioReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }

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
