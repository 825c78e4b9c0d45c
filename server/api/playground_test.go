package api_test

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// fakePlayground stands in for the data plane: it records who each
// request ran as. The data plane's own part (admission, policies,
// attribution) is tested end to end in server/playground_test.go.
type fakePlayground struct {
	mu      sync.Mutex
	callers []dataplane.Caller
}

func (f *fakePlayground) record(c dataplane.Caller) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.callers = append(f.callers, c)
}

func (f *fakePlayground) last() dataplane.Caller {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.callers[len(f.callers)-1]
}

// Its answers have the data plane's shapes (a discovery object, a chat
// completion), which the recorded answers are held to (TestMain): the
// data plane encodes the same wire.ModelObject.
func (f *fakePlayground) PlaygroundModels(_, _ uuid.UUID, c dataplane.Caller) ([]json.RawMessage, error) {
	f.record(c)
	obj, err := json.Marshal(wire.ModelObject{ID: "openai/gpt-4o-mini", Object: "model", Created: 1721172741, OwnedBy: "openai",
		Name: "GPT-4o mini", Provider: "openai", ContextWindow: 128000, MaxOutputTokens: 16384,
		Pricing:      wire.ModelPricing{InputPerMTok: "0.15", OutputPerMTok: "0.6", CacheReadPerMTok: "0.075", CacheWritePerMTok: "0"},
		Capabilities: []string{"streaming", "tools"}, Modalities: []string{"text", "image"}, Type: "chat",
		Endpoints: []string{"chat/completions", "responses", "messages"}})
	return []json.RawMessage{obj}, err
}

func (f *fakePlayground) ServePlayground(w http.ResponseWriter, _ *http.Request, _, _ uuid.UUID, c dataplane.Caller) {
	f.record(c)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1767225600,"model":"openai/gpt-4o-mini",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`))
}

// TestPlaygroundPermissions is the playground's permission matrix: who may
// list the models and run a chat completion in a workspace, and as whom
// the request runs.
func TestPlaygroundPermissions(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		fake := &fakePlayground{}
		e := newEnv(t, db, api.Options{Playground: fake})
		const org = "/api/v1/organizations/default"
		member, memberCookie := e.signup("member@example.com")
		viewer, viewerCookie := e.signup("viewer@example.com")
		outsider, outsiderCookie := e.signup("outsider@example.com")
		_, strangerCookie := e.signup("stranger@example.com")
		for _, u := range []struct {
			id     uuid.UUID
			wsRole string
		}{{member.User.ID, "member"}, {viewer.User.ID, "viewer"}, {outsider.User.ID, ""}} {
			e.must("POST", org+"/members", e.ownerKey, map[string]any{"user_id": u.id, "role": "member"})
			if u.wsRole != "" {
				e.must("POST", wsBase+"/members", e.ownerKey, map[string]any{"user_id": u.id, "role": u.wsRole})
			}
		}
		e.must("POST", "/api/v1/instance/organizations", e.ownerKey, map[string]any{"name": "Other", "slug": "other"})
		otherOrgKey := e.key("/api/v1/organizations/other", e.ownerKey, []string{"playground.execute"}, nil)
		wsKey := e.key(wsBase, e.ownerKey, []string{"playground.execute"}, nil)
		noPlayKey := e.key(wsBase, e.ownerKey, []string{"usage.read", "policies.read"}, nil)
		ownerKeyID := e.boot.ManagementKey.ID

		chat := map[string]any{"model": "openai/gpt-4o-mini", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
		cases := []struct {
			name    string
			cred    string
			status  int
			user    uuid.UUID
			keyID   *uuid.UUID // the management key the request is attributed to
			noCheck bool
		}{
			{name: "no credential", cred: "", status: 401},
			{name: "instance owner key", cred: e.ownerKey, status: 200, user: e.boot.User.ID, keyID: &ownerKeyID},
			{name: "workspace key with playground.execute", cred: wsKey.Token, status: 200, user: e.boot.User.ID, keyID: &wsKey.ID},
			{name: "workspace key without playground.execute", cred: noPlayKey.Token, status: 403},
			{name: "another organization's key", cred: otherOrgKey.Token, status: 403},
			{name: "workspace member session", cred: "cookie:" + memberCookie, status: 200, user: member.User.ID},
			{name: "session without X-Requested-With", cred: "cookie-nocsrf:" + memberCookie, status: 403},
			{name: "workspace viewer session", cred: "cookie:" + viewerCookie, status: 403},
			{name: "organization member outside the workspace", cred: "cookie:" + outsiderCookie, status: 404},
			{name: "stranger session", cred: "cookie:" + strangerCookie, status: 404},
		}
		for _, c := range cases {
			for _, call := range []struct {
				method, path string
				body         any
			}{
				{"GET", wsBase + "/playground/models", nil},
				{"POST", wsBase + "/playground/chat/completions", chat},
			} {
				st, body := e.do(call.method, call.path, c.cred, call.body)
				if st != c.status {
					t.Errorf("%s: %s %s: %d %s", c.name, call.method, call.path, st, body)
					continue
				}
				if st != 200 {
					continue
				}
				got := fake.last()
				if got.UserID != c.user || (got.ManagementKeyID == nil) != (c.keyID == nil) ||
					(c.keyID != nil && *got.ManagementKeyID != *c.keyID) {
					t.Errorf("%s: %s ran as %+v, want user %s key %v", c.name, call.path, got, c.user, c.keyID)
				}
				switch call.method {
				case "GET":
					if jsonPath(t, body, "data.0.id") != "openai/gpt-4o-mini" {
						t.Errorf("%s: models: %s", c.name, body)
					}
				case "POST":
					// The model's answer, as the data plane wrote it: not
					// enveloped.
					if jsonPath(t, body, "object") != "chat.completion" || jsonPath(t, body, "data") != nil {
						t.Errorf("%s: chat: %s", c.name, body)
					}
				}
			}
		}
	})
}

// TestPlaygroundWithoutDataPlane: a control plane without a data plane in
// process (role control-plane) answers the playground 503, after the
// permission check.
func TestPlaygroundWithoutDataPlane(t *testing.T) {
	e := newEnv(t, storetest.Open(t, storetest.SQLite), api.Options{})
	for _, call := range []struct {
		method, path string
		body         any
	}{
		{"GET", wsBase + "/playground/models", nil},
		{"POST", wsBase + "/playground/chat/completions", map[string]any{"model": "m", "messages": []any{}}},
	} {
		st, body := e.do(call.method, call.path, e.ownerKey, call.body)
		if st != 503 || jsonPath(t, body, "detail") == nil {
			t.Errorf("%s %s: %d %s", call.method, call.path, st, body)
		}
		if st, _ := e.do(call.method, call.path, "", call.body); st != 401 {
			t.Errorf("%s %s without credential: %d", call.method, call.path, st)
		}
	}
}
