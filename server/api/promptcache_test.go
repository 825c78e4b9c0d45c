package api_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestPromptCacheSetting (issue 35, part 4): a workspace's prompt_cache is
// read strictly, each problem a 422 naming its field; saved, it is
// answered and audited; null turns it off.
func TestPromptCacheSetting(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		k := e.ownerKey
		good := func() map[string]any { return map[string]any{"inject": true, "min_prefix_tokens": 2048} }
		for _, c := range []struct {
			name string
			edit func(a map[string]any)
			want string
		}{
			{"inject missing", func(a map[string]any) { delete(a, "inject") }, "body.prompt_cache.inject:missing"},
			{"inject type", func(a map[string]any) { a["inject"] = "yes" }, "body.prompt_cache.inject:bool_type"},
			{"min missing", func(a map[string]any) { delete(a, "min_prefix_tokens") }, "body.prompt_cache.min_prefix_tokens:missing"},
			{"min too small", func(a map[string]any) { a["min_prefix_tokens"] = 100 }, "body.prompt_cache.min_prefix_tokens:greater_than_equal"},
			{"min too large", func(a map[string]any) { a["min_prefix_tokens"] = 2_000_000 }, "body.prompt_cache.min_prefix_tokens:less_than_equal"},
			{"min fraction", func(a map[string]any) { a["min_prefix_tokens"] = 1500.5 }, "body.prompt_cache.min_prefix_tokens:int_from_float"},
			{"extra", func(a map[string]any) { a["ttl"] = "1h" }, "body.prompt_cache.ttl:extra_forbidden"},
		} {
			a := good()
			c.edit(a)
			code, raw := e.do("PATCH", wsBase, k, map[string]any{"prompt_cache": a})
			if code != 422 || !slices.Contains(issueSet(t, raw), c.want) {
				t.Errorf("%s: %d %s, want 422 with %s", c.name, code, raw, c.want)
			}
		}
		if code, raw := e.do("PATCH", wsBase, k, map[string]any{"prompt_cache": true}); code != 422 || !slices.Contains(issueSet(t, raw), "body.prompt_cache:model_type") {
			t.Errorf("not an object: %d %s", code, raw)
		}
		raw := e.must("PATCH", wsBase, k, map[string]any{"prompt_cache": good()})
		if !strings.Contains(string(raw), `"prompt_cache":{"inject":true,"min_prefix_tokens":2048}`) {
			t.Errorf("saved: %s", raw)
		}
		if raw := e.must("GET", wsBase, k, nil); !strings.Contains(string(raw), `"min_prefix_tokens":2048`) {
			t.Errorf("read back: %s", raw)
		}
		if a := e.lastAudit("workspace.updated"); a == nil {
			t.Error("the setting is not audited")
		} else if b, _ := json.Marshal(a); !strings.Contains(string(b), "min_prefix_tokens") {
			t.Errorf("audit of the setting: %s", b)
		}
		raw = e.must("PATCH", wsBase, k, map[string]any{"prompt_cache": nil})
		if !strings.Contains(string(raw), `"prompt_cache":null`) {
			t.Errorf("cleared: %s", raw)
		}
	})
}
