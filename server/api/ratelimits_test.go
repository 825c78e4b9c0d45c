package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/wire"
)

func limitsOf(t *testing.T, raw []byte) string {
	t.Helper()
	var v struct {
		Data struct {
			RateLimits json.RawMessage `json:"rate_limits"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return string(v.Data.RateLimits)
}

func TestRateLimitsSettings(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		keys := wsBase + "/inference-keys"
		settings := wsBase + "/settings"
		steps := []struct {
			name, method, path string
			body               any
			want               string // the record's rate_limits
		}{
			{"no limits by default", "GET", settings, nil, "null"},
			{"workspace default", "PATCH", settings, map[string]any{"rate_limits": map[string]any{"requests_per_minute": 100, "tokens_per_minute": 50000}},
				`{"requests_per_minute":100,"tokens_per_minute":50000}`},
			{"absent member kept", "PATCH", settings, map[string]any{"rate_limits": map[string]any{"tokens_per_minute": 40000}},
				`{"requests_per_minute":100,"tokens_per_minute":40000}`},
			{"rename keeps limits", "PATCH", settings, map[string]any{"name": "Default"},
				`{"requests_per_minute":100,"tokens_per_minute":40000}`},
			{"null member clears it", "PATCH", wsBase, map[string]any{"rate_limits": map[string]any{"requests_per_minute": nil}},
				`{"requests_per_minute":null,"tokens_per_minute":40000}`},
			{"read back", "GET", settings, nil, `{"requests_per_minute":null,"tokens_per_minute":40000}`},
			{"set again", "PATCH", settings, map[string]any{"rate_limits": map[string]any{"requests_per_minute": 100}},
				`{"requests_per_minute":100,"tokens_per_minute":40000}`},
		}
		for _, s := range steps {
			if got := limitsOf(t, e.must(s.method, s.path, e.ownerKey, s.body)); got != s.want {
				t.Fatalf("%s: rate_limits %s, want %s", s.name, got, s.want)
			}
		}

		k := decodeData[wire.InferenceKey](t, e.must("POST", keys, e.ownerKey,
			map[string]any{"name": "app", "rate_limits": map[string]any{"requests_per_minute": 10}}))
		if k.RateLimits == nil || *k.RateLimits.RequestsPerMinute != 10 || k.RateLimits.TokensPerMinute != nil {
			t.Fatalf("create: %+v", k.RateLimits)
		}
		keyPath := keys + "/" + k.ID.String()
		for _, s := range []struct {
			name string
			body any
			want string
		}{
			{"tokens added", map[string]any{"rate_limits": map[string]any{"tokens_per_minute": 40000}}, `{"requests_per_minute":10,"tokens_per_minute":40000}`},
			{"renamed only", map[string]any{"name": "renamed"}, `{"requests_per_minute":10,"tokens_per_minute":40000}`},
			{"cleared", map[string]any{"rate_limits": nil}, "null"},
		} {
			if got := limitsOf(t, e.must("PATCH", keyPath, e.ownerKey, s.body)); got != s.want {
				t.Fatalf("%s: rate_limits %s, want %s", s.name, got, s.want)
			}
		}
		got := decodeData[wire.InferenceKey](t, e.must("GET", keyPath, e.ownerKey, nil))
		if got.Name != "renamed" || got.RateLimits != nil {
			t.Fatalf("get: %+v", got)
		}

		// Lowering the workspace below a key's own limit is allowed; the key
		// keeps its record (the lower applies at enforcement).
		e.must("PATCH", keyPath, e.ownerKey, map[string]any{"rate_limits": map[string]any{"requests_per_minute": 50}})
		e.must("PATCH", settings, e.ownerKey, map[string]any{"rate_limits": map[string]any{"requests_per_minute": 20}})
		if got := limitsOf(t, e.must("PATCH", keyPath, e.ownerKey, map[string]any{"name": "still"})); got != `{"requests_per_minute":50,"tokens_per_minute":null}` {
			t.Fatalf("rename after lowering the workspace: %s", got)
		}

		raw := e.must("GET", "/api/v1/organizations/default/activity?limit=200", e.ownerKey, nil)
		for _, action := range []string{"inference_key.updated", "workspace.updated"} {
			if !strings.Contains(string(raw), action) {
				t.Errorf("no %s audit event", action)
			}
		}
	})
}

func TestRateLimitsValidation(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		keys := wsBase + "/inference-keys"
		e.must("PATCH", wsBase+"/settings", e.ownerKey, map[string]any{"rate_limits": map[string]any{"requests_per_minute": 100, "tokens_per_minute": 1000}})
		k := decodeData[wire.InferenceKey](t, e.must("POST", keys, e.ownerKey, map[string]any{"name": "app"}))
		cases := []struct {
			name, method, path string
			body               any
			want               string // "loc:type"
		}{
			{"key above workspace rpm", "POST", keys, map[string]any{"name": "x", "rate_limits": map[string]any{"requests_per_minute": 101}},
				"body.rate_limits.requests_per_minute:less_than_equal"},
			{"key above workspace tpm on update", "PATCH", keys + "/" + k.ID.String(), map[string]any{"rate_limits": map[string]any{"tokens_per_minute": 1001}},
				"body.rate_limits.tokens_per_minute:less_than_equal"},
			{"zero", "POST", keys, map[string]any{"name": "x", "rate_limits": map[string]any{"requests_per_minute": 0}},
				"body.rate_limits.requests_per_minute:greater_than_equal"},
			{"negative on workspace", "PATCH", wsBase + "/settings", map[string]any{"rate_limits": map[string]any{"tokens_per_minute": -5}},
				"body.rate_limits.tokens_per_minute:greater_than_equal"},
			{"fraction", "PATCH", keys + "/" + k.ID.String(), map[string]any{"rate_limits": map[string]any{"requests_per_minute": 1.5}},
				"body.rate_limits.requests_per_minute:int_from_float"},
			{"string", "PATCH", wsBase + "/settings", map[string]any{"rate_limits": map[string]any{"requests_per_minute": "10"}},
				"body.rate_limits.requests_per_minute:int_type"},
			{"unknown member", "PATCH", keys + "/" + k.ID.String(), map[string]any{"rate_limits": map[string]any{"rpm": 10}},
				"body.rate_limits.rpm:extra_forbidden"},
			{"not an object", "POST", keys, map[string]any{"name": "x", "rate_limits": 10}, "body.rate_limits:model_type"},
			{"empty name", "PATCH", keys + "/" + k.ID.String(), map[string]any{"name": ""}, "body.name:string_too_short"},
			{"unknown key member", "PATCH", keys + "/" + k.ID.String(), map[string]any{"expires_at": nil}, "body.expires_at:extra_forbidden"},
		}
		for _, c := range cases {
			st, raw := e.do(c.method, c.path, e.ownerKey, c.body)
			if st != 422 || !containsAll(issueSet(t, raw), []string{c.want}) {
				t.Errorf("%s: %d %s, want 422 %s", c.name, st, raw, c.want)
			}
		}
		// Nothing was changed by a refused request.
		if got := decodeData[wire.InferenceKey](t, e.must("GET", keys+"/"+k.ID.String(), e.ownerKey, nil)); got.RateLimits != nil {
			t.Fatalf("a refused update changed the key: %+v", got.RateLimits)
		}
		if st, _ := e.do("PATCH", keys+"/"+e.boot.User.ID.String(), e.ownerKey, map[string]any{"name": "x"}); st != 404 {
			t.Fatalf("unknown key: %d", st)
		}
	})
}
