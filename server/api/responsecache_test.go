package api_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestResponseCacheSetting (issue 35): a workspace's response_cache is
// read strictly, each problem a 422 naming its field; saved, it is
// answered and audited; null turns it off.
func TestResponseCacheSetting(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		k := e.ownerKey
		good := func() map[string]any {
			return map[string]any{"enabled": true, "ttl_seconds": 300, "max_entry_bytes": 65536}
		}
		for _, c := range []struct {
			name string
			edit func(a map[string]any)
			want string
		}{
			{"enabled missing", func(a map[string]any) { delete(a, "enabled") }, "body.response_cache.enabled:missing"},
			{"enabled type", func(a map[string]any) { a["enabled"] = "yes" }, "body.response_cache.enabled:bool_type"},
			{"ttl missing", func(a map[string]any) { delete(a, "ttl_seconds") }, "body.response_cache.ttl_seconds:missing"},
			{"ttl zero", func(a map[string]any) { a["ttl_seconds"] = 0 }, "body.response_cache.ttl_seconds:greater_than_equal"},
			{"ttl over a day", func(a map[string]any) { a["ttl_seconds"] = 86401 }, "body.response_cache.ttl_seconds:less_than_equal"},
			{"entry too small", func(a map[string]any) { a["max_entry_bytes"] = 10 }, "body.response_cache.max_entry_bytes:greater_than_equal"},
			{"entry too large", func(a map[string]any) { a["max_entry_bytes"] = 9 << 20 }, "body.response_cache.max_entry_bytes:less_than_equal"},
			{"extra", func(a map[string]any) { a["shared"] = true }, "body.response_cache.shared:extra_forbidden"},
		} {
			a := good()
			c.edit(a)
			code, raw := e.do("PATCH", wsBase, k, map[string]any{"response_cache": a})
			if code != 422 || !slices.Contains(issueSet(t, raw), c.want) {
				t.Errorf("%s: %d %s, want 422 with %s", c.name, code, raw, c.want)
			}
		}
		if code, raw := e.do("PATCH", wsBase, k, map[string]any{"response_cache": "on"}); code != 422 || !slices.Contains(issueSet(t, raw), "body.response_cache:model_type") {
			t.Errorf("not an object: %d %s", code, raw)
		}
		raw := e.must("PATCH", wsBase, k, map[string]any{"response_cache": good()})
		if !strings.Contains(string(raw), `"response_cache":{"enabled":true,"ttl_seconds":300,"max_entry_bytes":65536}`) {
			t.Errorf("saved: %s", raw)
		}
		if raw := e.must("GET", wsBase, k, nil); !strings.Contains(string(raw), `"ttl_seconds":300`) {
			t.Errorf("read back: %s", raw)
		}
		if a := e.lastAudit("workspace.updated"); a == nil {
			t.Error("the setting is not audited")
		} else if b, _ := json.Marshal(a); !strings.Contains(string(b), "ttl_seconds") {
			t.Errorf("audit of the setting: %s", b)
		}
		raw = e.must("PATCH", wsBase, k, map[string]any{"response_cache": nil})
		if !strings.Contains(string(raw), `"response_cache":null`) {
			t.Errorf("cleared: %s", raw)
		}
	})
}
