package dataplane_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/store/fixture"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// acme is one organization with a key that sees openai and groq models
// (groq's ids have several slashes) and is denied openai/gpt-4o.
type acme struct {
	*fixture.Org
	ws, owner uuid.UUID
	token     string
	expiry    time.Time
	// expiringToken's key expires at expiry.
	expiringToken string
}

func newAcme(t *testing.T, e *env) *acme {
	t.Helper()
	o := fixture.NewOrg(t, e.st, fixture.Keyring(t), "acme")
	wsID := o.Workspace("main")
	owner := o.Member(auth.MembershipActive)
	token, _ := o.Key(wsID, owner, nil)
	expiry := e.clock.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
	expiring, _ := o.Key(wsID, owner, &expiry)
	o.OrgCredential("openai")
	o.WorkspaceCredential(wsID, "groq")
	o.Policy(wsID, "no gpt-4o", true, `{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"request","models":["openai/gpt-4o"],"stream":null,"capabilities":[]},"action":{"kind":"deny","message":"no"}}]}`)
	return &acme{Org: o, ws: wsID, owner: owner, token: token, expiry: expiry, expiringToken: expiring}
}

func TestGetModelWithSlashesRawOrEscaped(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newEnv(t, db)
		a := newAcme(t, e)
		e.sync(t)
		for _, path := range []string{
			"/inf/v1/models/openai/gpt-4o-mini",
			"/inf/v1/models/openai%2Fgpt-4o-mini",
			"/inf/v1/models/groq/meta-llama/llama-4-scout-17b-16e-instruct",
			"/inf/v1/models/groq%2Fmeta-llama%2Fllama-4-scout-17b-16e-instruct",
		} {
			w := e.get(a.token, path)
			if w.Code != http.StatusOK {
				t.Errorf("GET %s: %d %s", path, w.Code, w.Body)
			}
		}
	})
}

// Rule 6: nothing tells a hidden model from one that does not exist.
func TestUnknownAndHiddenModelsGiveIdentical404s(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newEnv(t, db)
		a := newAcme(t, e)
		e.sync(t)
		// openai/gpt-4o exists and is denied by policy; anthropic's models
		// exist but have no credential; the third exists nowhere.
		for _, id := range []string{"openai/gpt-4o", "anthropic/claude-3-haiku-20240307", "openai/gpt-4o-nonexistent"} {
			w := e.get(a.token, "/inf/v1/models/"+id)
			if w.Code != http.StatusNotFound {
				t.Fatalf("GET %s: %d", id, w.Code)
			}
			body := decodeError(t, w)
			if body.Error.Code == nil || *body.Error.Code != "model_not_found" || body.Error.Param == nil || *body.Error.Param != "model" ||
				body.Error.Type != "invalid_request_error" {
				t.Fatalf("404 body %s", w.Body)
			}
		}
		// The same id, hidden and then unknown once retired from the
		// catalog: the answers are the same bytes.
		hidden := e.get(a.token, "/inf/v1/models/openai/gpt-4o")
		e.catalogWithout(t, "openai/gpt-4o")
		unknown := e.get(a.token, "/inf/v1/models/openai/gpt-4o")
		if unknown.Code != hidden.Code || unknown.Body.String() != hidden.Body.String() || !sameHeader(unknown.Header(), hidden.Header()) {
			t.Fatalf("hidden: %d %v %s\nunknown: %d %v %s", hidden.Code, hidden.Header(), hidden.Body, unknown.Code, unknown.Header(), unknown.Body)
		}
	})
}

// catalogWithout retires a model and resyncs, so that it is unknown.
func (e *env) catalogWithout(t *testing.T, id string) {
	t.Helper()
	ctx := context.Background()
	models, err := e.st.ListCatalogModels(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range models {
		if m.ID == id {
			at := time.Now().UTC()
			m.RetiredAt = &at
			if err := e.st.UpsertCatalogModel(ctx, &m); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.sync(t)
}

func sameHeader(a, b http.Header) bool {
	// Every answer has its own request id, which tells nothing about
	// the model.
	a, b = a.Clone(), b.Clone()
	a.Del("X-Request-Id")
	b.Del("X-Request-Id")
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func TestEveryResponseDisablesCaching(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newEnv(t, db)
		a := newAcme(t, e)
		notReady := e.get(a.token, "/inf/v1/models")
		e.sync(t)
		post := httptest.NewRequest(http.MethodPost, "/inf/v1/models", nil)
		post.Header.Set("Authorization", "Bearer "+a.token)
		postW := httptest.NewRecorder()
		e.plane.ServeHTTP(postW, post)

		for name, w := range map[string]*httptest.ResponseRecorder{
			"503":         notReady,
			"list":        e.get(a.token, "/inf/v1/models"),
			"get":         e.get(a.token, "/inf/v1/models/openai/gpt-4o-mini"),
			"404":         e.get(a.token, "/inf/v1/models/nope/nope"),
			"401":         e.get("", "/inf/v1/models"),
			"405":         postW,
			"unknown url": e.get(a.token, "/inf/v1/nothing-here"),
		} {
			if got := w.Header().Values("Cache-Control"); !slices.Equal(got, []string{"no-store"}) {
				t.Errorf("%s: Cache-Control %v", name, got)
			}
		}
		if postW.Code != http.StatusMethodNotAllowed || postW.Header().Get("Allow") != http.MethodGet {
			t.Errorf("POST: %d, Allow %q", postW.Code, postW.Header().Get("Allow"))
		}
	})
}

func TestDiscoveryRefusesAllButActiveInferenceKeys(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newEnv(t, db)
		a := newAcme(t, e)
		revokedToken, revokedID := a.Key(a.ws, a.owner, nil)
		suspendedUser := a.Member(auth.MembershipActive)
		suspendedToken, _ := a.Key(a.ws, suspendedUser, nil)
		mgmtToken, _, _ := auth.NewToken(auth.ManagementKeyPrefix)
		e.sync(t)
		for _, tok := range []string{a.token, a.expiringToken, revokedToken, suspendedToken} {
			if w := e.get(tok, "/inf/v1/models"); w.Code != http.StatusOK {
				t.Fatalf("before revocation: %d %s", w.Code, w.Body)
			}
		}
		a.RevokeKey(revokedID)
		a.SetMemberStatus(suspendedUser, auth.MembershipSuspended)
		if err := e.refresh.Refresh(context.Background(), a.ID); err != nil {
			t.Fatal(err)
		}
		e.clock.Set(a.expiry)

		unknown, _, _ := auth.NewToken(auth.InferenceKeyPrefix)
		cases := []struct {
			name, header, wantMessage string
		}{
			{"no header", "", "Missing inference key"},
			{"basic auth", "Basic dXNlcjpwYXNz", "Missing inference key"},
			{"empty bearer", "Bearer ", "Missing inference key"},
			{"not a gw key", "Bearer sk-proj-abc", "Invalid inference key."},
			{"unknown key", "Bearer " + unknown, "Invalid inference key."},
			{"revoked key, after recompile", "Bearer " + revokedToken, "Invalid inference key."},
			{"suspended member's key, after recompile", "Bearer " + suspendedToken, "Invalid inference key."},
			{"expired key", "Bearer " + a.expiringToken, "The inference key has expired."},
			{"management key", "Bearer " + mgmtToken, "Management keys"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				for _, path := range []string{"/inf/v1/models", "/inf/v1/models/openai/gpt-4o-mini"} {
					r := httptest.NewRequest(http.MethodGet, path, nil)
					if c.header != "" {
						r.Header.Set("Authorization", c.header)
					}
					w := httptest.NewRecorder()
					e.plane.ServeHTTP(w, r)
					if w.Code != http.StatusUnauthorized || w.Header().Get("Www-Authenticate") == "" {
						t.Fatalf("%s: %d %v", path, w.Code, w.Header())
					}
					body := decodeError(t, w)
					if body.Error.Type != "invalid_request_error" || body.Error.Code == nil || *body.Error.Code != "invalid_api_key" ||
						body.Error.Param != nil || !startsWith(body.Error.Message, c.wantMessage) {
						t.Fatalf("%s: body %s", path, w.Body)
					}
				}
			})
		}
		// A second before expiry the key worked; the active key still does.
		e.clock.Set(a.expiry.Add(-time.Second))
		if w := e.get(a.expiringToken, "/inf/v1/models"); w.Code != http.StatusOK {
			t.Fatalf("before expiry: %d", w.Code)
		}
		if w := e.get(a.token, "/inf/v1/models"); w.Code != http.StatusOK {
			t.Fatalf("active key: %d", w.Code)
		}
		// Lowercase scheme is the same scheme.
		r := httptest.NewRequest(http.MethodGet, "/inf/v1/models", nil)
		r.Header.Set("Authorization", "bearer "+a.token)
		w := httptest.NewRecorder()
		e.plane.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("lowercase bearer: %d", w.Code)
		}
	})
}

func startsWith(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }

func TestNotReadyAnswers503(t *testing.T) {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p := dataplane.NewPlane(pub, dataplane.Options{})
	for _, path := range []string{"/inf/v1/models", "/inf/v1/models/openai/gpt-4o", "/inf/v1/anything"} {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Header.Set("Authorization", "Bearer sk-gw-whatever")
		w := httptest.NewRecorder()
		p.ServeHTTP(w, r)
		body := decodeError(t, w)
		if w.Code != http.StatusServiceUnavailable || body.Error.Type != "server_error" || body.Error.Code == nil ||
			*body.Error.Code != "bundle_not_ready" || w.Header().Get("Retry-After") == "" {
			t.Fatalf("%s: %d %v %s", path, w.Code, w.Header(), w.Body)
		}
	}
	if p.Ready() {
		t.Fatal("ready before MarkReady")
	}
	p.MarkReady()
	if !p.Ready() {
		t.Fatal("not ready after MarkReady")
	}
}

// Refusals made before an endpoint takes the request (an unknown path, no
// configuration yet) are in the shape the caller reads: Anthropic's under
// /inf/v1/messages and for requests that say anthropic-version, OpenAI's
// otherwise (issue 35).
func TestUnknownPathsAnswerInTheCallersDialect(t *testing.T) {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p := dataplane.NewPlane(pub, dataplane.Options{})
	check := func(path string, header map[string]string, status int, anthropic bool) {
		t.Helper()
		r := httptest.NewRequest(http.MethodPost, path, strings.NewReader("{}"))
		for k, v := range header {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		p.ServeHTTP(w, r)
		var body struct {
			Type  string `json:"type"`
			Error struct {
				Type    string  `json:"type"`
				Message string  `json:"message"`
				Code    *string `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != status || body.Error.Message == "" ||
			(anthropic && (body.Type != "error" || body.Error.Code != nil)) || (!anthropic && (body.Type != "" || body.Error.Code == nil)) {
			t.Errorf("%s %v: %d %s, want %d in %s's shape", path, header, w.Code, w.Body, status, map[bool]string{true: "Anthropic", false: "OpenAI"}[anthropic])
		}
	}
	version := map[string]string{"anthropic-version": "2023-06-01"}
	check("/inf/v1/messages", nil, http.StatusServiceUnavailable, true)
	check("/inf/v1/chat/completions", nil, http.StatusServiceUnavailable, false)
	p.MarkReady()
	check("/inf/v1/messages/nope", nil, http.StatusNotFound, true)
	// Anthropic's Message Batches: a request without a key is refused in its shape.
	check("/inf/v1/messages/batches", nil, http.StatusUnauthorized, true)
	check("/inf/v1/messages/count_tokens/x", nil, http.StatusNotFound, true)
	check("/inf/v1/complete", version, http.StatusNotFound, true)
	check("/inf/v1/complete", nil, http.StatusNotFound, false)
	check("/inf/v1/chat/completion", nil, http.StatusNotFound, false)
}

// Rule 5: discovery reads the admitted bundle only. With the database
// closed, it answers as before.
func TestDiscoveryWorksWithTheDatabaseClosed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newEnv(t, db)
		a := newAcme(t, e)
		e.sync(t)
		before := e.get(a.token, "/inf/v1/models").Body.String()
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if err := db.Ping(); err == nil {
			t.Fatal("database still answers after Close")
		}
		list := e.get(a.token, "/inf/v1/models")
		one := e.get(a.token, "/inf/v1/models/openai/gpt-4o-mini")
		if list.Code != http.StatusOK || list.Body.String() != before || one.Code != http.StatusOK {
			t.Fatalf("with the database closed: list %d, get %d", list.Code, one.Code)
		}
		if w := e.get("sk-gw-unknown", "/inf/v1/models"); w.Code != http.StatusUnauthorized {
			t.Fatalf("unknown key with the database closed: %d", w.Code)
		}
	})
}
