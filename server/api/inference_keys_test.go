package api_test

import (
	"strings"
	"testing"

	"github.com/gw-gateway/gw/wire"
)

func TestInferenceKeys(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		raw := e.must("POST", wsBase+"/inference-keys", e.ownerKey, map[string]any{"name": "app"})
		k := decodeData[wire.InferenceKey](t, raw)
		if !strings.HasPrefix(k.Token, "sk-gw-") || k.Status != "active" || k.UserID != e.boot.User.ID || !strings.HasPrefix(k.Token, k.Prefix) {
			t.Fatalf("create: %s", raw)
		}
		for _, path := range []string{wsBase + "/inference-keys", wsBase + "/inference-keys/" + k.ID.String()} {
			if raw := e.must("GET", path, e.ownerKey, nil); strings.Contains(string(raw), k.Token) || strings.Contains(string(raw), `"token"`) {
				t.Fatalf("GET %s shows the token: %s", path, raw)
			}
		}
		// The inference key is refused by the control plane.
		if st, _ := e.do("GET", "/api/v1/auth/me", k.Token, nil); st != 401 {
			t.Fatalf("inference key on /api/v1: %d", st)
		}
		r1 := decodeData[wire.InferenceKey](t, e.must("POST", wsBase+"/inference-keys/"+k.ID.String()+"/revoke", e.ownerKey, nil))
		r2 := decodeData[wire.InferenceKey](t, e.must("POST", wsBase+"/inference-keys/"+k.ID.String()+"/revoke", e.ownerKey, nil))
		if r1.Status != "revoked" || r1.RevokedAt == nil || !r1.RevokedAt.Equal(*r2.RevokedAt) {
			t.Fatalf("revoke: %+v %+v", r1, r2)
		}
		cases := []struct {
			body any
			want string
		}{
			{map[string]any{}, "body.name:missing"},
			{map[string]any{"name": ""}, "body.name:string_too_short"},
			{map[string]any{"name": "x", "expires_at": "2001-01-01T00:00:00Z"}, "body.expires_at:value_error"},
			{map[string]any{"name": "x", "user_id": "00000000-0000-4000-8000-000000000000"}, "body.user_id:value_error"},
			{map[string]any{"name": "x", "user_id": "nope"}, "body.user_id:uuid_parsing"},
		}
		for _, c := range cases {
			st, raw := e.do("POST", wsBase+"/inference-keys", e.ownerKey, c.body)
			if st != 422 || !containsAll(issueSet(t, raw), []string{c.want}) {
				t.Errorf("%v: %d %s", c.body, st, raw)
			}
		}
		if st, _ := e.do("GET", wsBase+"/inference-keys/"+e.boot.User.ID.String(), e.ownerKey, nil); st != 404 {
			t.Fatalf("unknown key: %d", st)
		}
	})
}
