package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/wire"
)

// recorder is a fake gw that answers {"data":{}} and remembers each
// request's method, path and credentials.
type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	line := r.Method + " " + r.URL.Path + " auth=" + r.Header.Get("Authorization") + " xrw=" + r.Header.Get("X-Requested-With")
	if c, err := r.Cookie(sessionCookie); err == nil {
		line += " cookie=" + c.Value
	}
	rec.mu.Lock()
	rec.seen = append(rec.seen, line)
	rec.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == "/api/v1/auth/login" {
		http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "sess_1", Path: "/", HttpOnly: true})
	}
	if r.URL.Path == "/api/v1/auth/cli/poll" {
		_, _ = w.Write([]byte(`{"data":{"status":"pending","interval_seconds":5}}`))
		return
	}
	_, _ = w.Write([]byte(`{"data":{}}`))
}

func (rec *recorder) lines() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]string(nil), rec.seen...)
}

func TestCLIPollSendsTheCurrentKeyOnlyOnThatRequest(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c, err := New(Options{Server: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := c.CLIPoll(ctx, "cli_secret", "sk-cp-old")
	if err != nil || res.Status != "pending" || res.IntervalSeconds != 5 {
		t.Fatalf("poll: %+v %v", res, err)
	}
	if _, err := c.CLIPoll(ctx, "cli_secret", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CLIStart(ctx, "laptop"); err != nil {
		t.Fatal(err)
	}
	got := rec.lines()
	want := []string{
		"POST /api/v1/auth/cli/poll auth=Bearer sk-cp-old xrw=",
		"POST /api/v1/auth/cli/poll auth= xrw=",
		"POST /api/v1/auth/cli/start auth= xrw=",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestLoginMakesASessionClient(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c, _ := New(Options{Server: srv.URL})
	ctx := context.Background()
	if _, err := c.Login(ctx, wire.Credentials{Email: "a@example.com", Password: "long enough"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CLIApprove(ctx, wire.CLIApprove{UserCode: "BCDF-GHJK", OrgID: "default"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Logout(ctx); err != nil {
		t.Fatal(err)
	}
	got := rec.lines()
	if len(got) != 3 || got[1] != "POST /api/v1/auth/cli/approve auth= xrw=XMLHttpRequest cookie=sess_1" ||
		got[2] != "POST /api/v1/auth/logout auth= xrw=XMLHttpRequest cookie=sess_1" {
		t.Fatalf("requests:\n%s", strings.Join(got, "\n"))
	}
}

func TestRevokeKeyUsesTheKeysOwnScope(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c, _ := New(Options{Server: srv.URL, Token: "sk-cp-k"})
	ctx := context.Background()
	org, ws := uuid.New(), uuid.New()
	for _, s := range []wire.KeyScope{
		{Level: wire.ScopeInstance},
		{Level: wire.ScopeOrganization, OrgID: &org},
		{Level: wire.ScopeWorkspace, OrgID: &org, WorkspaceID: &ws},
	} {
		scope, err := ScopeOfKey(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.RevokeManagementKey(ctx, scope, "k1"); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"POST /api/v1/instance/management-keys/k1/revoke auth=Bearer sk-cp-k xrw=",
		"POST /api/v1/organizations/" + org.String() + "/management-keys/k1/revoke auth=Bearer sk-cp-k xrw=",
		"POST /api/v1/organizations/" + org.String() + "/workspaces/" + ws.String() + "/management-keys/k1/revoke auth=Bearer sk-cp-k xrw=",
	}
	if got := rec.lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests:\n%s", strings.Join(got, "\n"))
	}
	for _, bad := range []wire.KeyScope{{Level: "galaxy"}, {Level: wire.ScopeOrganization}, {Level: wire.ScopeWorkspace, OrgID: &org}} {
		if _, err := ScopeOfKey(bad); err == nil {
			t.Errorf("scope %+v accepted", bad)
		}
	}
}
