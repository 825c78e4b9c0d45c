package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/egress/egresstest"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

const setupToken = "setup_test_token"

// env is a running API on a fresh database, bootstrapped: an instance owner
// with an all-powerful instance key, organization "default" with workspace
// "default".
type env struct {
	t        *testing.T
	srv      *httptest.Server
	api      *api.Server
	st       *store.Store
	ownerKey string
	boot     wire.BootstrapResult
}

// eachEnv runs fn against a fresh env per available database dialect.
func eachEnv(t *testing.T, fn func(t *testing.T, e *env)) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		fn(t, newEnv(t, db, api.Options{}))
	})
}

func newEnv(t *testing.T, db *bun.DB, opts api.Options) *env {
	t.Helper()
	ctx := context.Background()
	st := store.New(db)
	if opts.Egress.Resolver == nil {
		// Names given as URLs are resolved when saved: not for real here.
		opts.Egress.Resolver = egresstest.NewResolver()
	}
	s, err := api.New(ctx, st, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PrepareSetup(ctx, setupToken); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(recordAnswers(s))
	t.Cleanup(srv.Close)
	e := &env{t: t, srv: srv, api: s, st: st}
	status, body := e.do("POST", "/api/v1/bootstrap", "", map[string]any{
		"token": setupToken, "email": "owner@example.com", "password": "correct horse battery",
	})
	if status != 200 {
		t.Fatalf("bootstrap: %d %s", status, body)
	}
	e.boot = decodeData[wire.BootstrapResult](t, body)
	e.ownerKey = e.boot.ManagementKey.Token
	return e
}

// do sends a request. cred is a bearer token, "cookie:<value>" for a
// session (with the CSRF header), "cookie-nocsrf:<value>" without it, or ""
// for none. body is JSON-encoded unless it is a string or []byte.
func (e *env) do(method, path, cred string, body any) (int, []byte) {
	e.t.Helper()
	resp := e.doResp(method, path, cred, body)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

func (e *env) doResp(method, path, cred string, body any) *http.Response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	switch {
	case strings.HasPrefix(cred, "cookie:"):
		req.AddCookie(&http.Cookie{Name: api.SessionCookie, Value: strings.TrimPrefix(cred, "cookie:")})
		req.Header.Set("X-Requested-With", "XMLHttpRequest")
	case strings.HasPrefix(cred, "cookie-nocsrf:"):
		req.AddCookie(&http.Cookie{Name: api.SessionCookie, Value: strings.TrimPrefix(cred, "cookie-nocsrf:")})
	case cred != "":
		req.Header.Set("Authorization", "Bearer "+cred)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// must sends a request and fails the test unless it answers 200.
func (e *env) must(method, path, cred string, body any) []byte {
	e.t.Helper()
	status, raw := e.do(method, path, cred, body)
	if status != 200 {
		e.t.Fatalf("%s %s: %d %s", method, path, status, raw)
	}
	return raw
}

func decodeData[T any](t *testing.T, raw []byte) T {
	t.Helper()
	var env struct {
		Data T `json:"data"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&env); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return env.Data
}

// key issues a management key at the scope of prefix (an instance,
// organization or workspace path ending before /management-keys) and
// returns its token.
func (e *env) key(prefix, issuer string, perms []string, extra map[string]any) wire.ManagementKey {
	e.t.Helper()
	body := map[string]any{"permissions": perms, "label": "test"}
	for k, v := range extra {
		body[k] = v
	}
	return decodeData[wire.ManagementKey](e.t, e.must("POST", prefix+"/management-keys", issuer, body))
}

// signup creates a person and returns their session cookie value.
func (e *env) signup(email string) (wire.SessionResult, string) {
	e.t.Helper()
	resp := e.doResp("POST", "/api/v1/auth/signup", "", map[string]any{"email": email, "password": "a long enough password"})
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		e.t.Fatalf("signup %s: %d %s", email, resp.StatusCode, raw)
	}
	for _, c := range resp.Cookies() {
		if c.Name == api.SessionCookie {
			return decodeData[wire.SessionResult](e.t, raw), c.Value
		}
	}
	e.t.Fatalf("signup set no %s cookie", api.SessionCookie)
	return wire.SessionResult{}, ""
}

// jsonPath reads a dotted path (numbers index arrays) from a JSON body.
func jsonPath(t *testing.T, raw []byte, path string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	for _, part := range strings.Split(path, ".") {
		switch cur := v.(type) {
		case map[string]any:
			v = cur[part]
		case []any:
			i := 0
			for _, c := range part {
				i = i*10 + int(c-'0')
			}
			if i >= len(cur) {
				return nil
			}
			v = cur[i]
		default:
			return nil
		}
	}
	return v
}

func jsonUnmarshal(raw []byte, v any) error { return json.Unmarshal(raw, v) }

func jsonDecode(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }

// login signs a person in and returns the session cookie value.
func (e *env) login(email, password string) (wire.SessionResult, string) {
	e.t.Helper()
	resp := e.doResp("POST", "/api/v1/auth/login", "", map[string]any{"email": email, "password": password})
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		e.t.Fatalf("login %s: %d %s", email, resp.StatusCode, raw)
	}
	for _, c := range resp.Cookies() {
		if c.Name == api.SessionCookie {
			return decodeData[wire.SessionResult](e.t, raw), c.Value
		}
	}
	e.t.Fatal("login set no session cookie")
	return wire.SessionResult{}, ""
}

const wsBase = "/api/v1/organizations/default/workspaces/default"

// issueSet returns "loc:type" for each item of a 422 body, loc dotted.
func issueSet(t *testing.T, raw []byte) []string {
	t.Helper()
	var body wire.ValidationError
	if err := jsonUnmarshal(raw, &body); err != nil {
		t.Fatalf("not a validation body: %s", raw)
	}
	var out []string
	for _, is := range body.Detail {
		parts := make([]string, len(is.Loc))
		for i, p := range is.Loc {
			parts[i] = fmt.Sprint(p)
		}
		out = append(out, strings.Join(parts, ".")+":"+is.Type)
	}
	return out
}

func containsAll(have, want []string) bool {
	set := map[string]bool{}
	for _, h := range have {
		set[h] = true
	}
	for _, w := range want {
		if !set[w] {
			return false
		}
	}
	return true
}

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
