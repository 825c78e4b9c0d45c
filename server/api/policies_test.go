package api_test

import (
	"strings"
	"testing"

	"github.com/gw-gateway/gw/wire"
)

func policyBody(name string, rules ...map[string]any) map[string]any {
	if len(rules) == 0 {
		rules = []map[string]any{{"match": map[string]any{"kind": "all_requests"}, "action": map[string]any{"kind": "models", "names": []string{"openai/gpt-4o-mini"}}}}
	}
	return map[string]any{"name": name, "definition": map[string]any{"target": map[string]any{"kind": "workspace"}, "rules": rules}}
}

func TestPolicies(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		base := wsBase + "/policies"
		raw := e.must("POST", base, e.ownerKey, policyBody("allow-mini"))
		p := decodeData[wire.Policy](t, raw)
		for _, member := range []string{"id", "org_id", "workspace_id", "name", "enabled", "definition", "created_at", "updated_at"} {
			if jsonPath(t, raw, "data."+member) == nil {
				t.Errorf("policy lacks %s: %s", member, raw)
			}
		}
		if !p.Enabled || jsonPath(t, raw, "data.definition.rules.0.action.kind") != "models" {
			t.Fatalf("create: %s", raw)
		}
		// List (spec 4.1): complete set, no page member.
		e.must("POST", base, e.ownerKey, policyBody("second"))
		raw = e.must("GET", base, e.ownerKey, nil)
		if jsonPath(t, raw, "page") != nil || len(decodeData[[]wire.Policy](t, raw)) != 2 {
			t.Fatalf("list: %s", raw)
		}
		if st, raw := e.do("POST", base, e.ownerKey, policyBody("second")); st != 409 {
			t.Fatalf("duplicate name: %d %s", st, raw)
		}
		if got := decodeData[wire.Policy](t, e.must("POST", base+"/"+p.ID.String()+"/disable", e.ownerKey, nil)); got.Enabled {
			t.Fatal("disable did not disable")
		}
		if got := decodeData[wire.Policy](t, e.must("POST", base+"/"+p.ID.String()+"/enable", e.ownerKey, nil)); !got.Enabled {
			t.Fatal("enable did not enable")
		}
		upd := decodeData[wire.Policy](t, e.must("PATCH", base+"/"+p.ID.String(), e.ownerKey, map[string]any{"name": "renamed", "enabled": false}))
		if upd.Name != "renamed" || upd.Enabled {
			t.Fatalf("update: %+v", upd)
		}
		// Validation goes through the policy package with full body paths,
		// all problems at once.
		bad := map[string]any{"name": "", "definition": map[string]any{"target": map[string]any{"kind": "team"}, "rules": []any{}, "x": 1}}
		st, raw := e.do("POST", base, e.ownerKey, bad)
		want := []string{"body.name:string_too_short", "body.definition.target:union_tag_invalid", "body.definition.rules:too_short", "body.definition.x:extra_forbidden"}
		if st != 422 || !containsAll(issueSet(t, raw), want) {
			t.Fatalf("bad policy: %d %s", st, raw)
		}
		twoFallbacks := policyBody("fb", fallbackRule(), fallbackRule())
		if st, raw := e.do("POST", base, e.ownerKey, twoFallbacks); st != 422 || !strings.Contains(string(raw), `"rules"]`) {
			t.Fatalf("two fallback rules: %d %s", st, raw)
		}
		cands := decodeData[[]wire.PolicyCandidate](t, e.must("GET", base+"/candidates?target=users", e.ownerKey, nil))
		if len(cands) != 1 || cands[0].ID != e.boot.User.ID.String() {
			t.Fatalf("user candidates: %+v", cands)
		}
		if st, _ := e.do("GET", base+"/candidates?target=teams", e.ownerKey, nil); st != 422 {
			t.Fatalf("bad candidate target: %d", st)
		}
		del := decodeData[wire.Deleted](t, e.must("DELETE", base+"/"+p.ID.String(), e.ownerKey, nil))
		if del.ID != p.ID {
			t.Fatal("delete answered another id")
		}
		if st, _ := e.do("GET", base+"/"+p.ID.String(), e.ownerKey, nil); st != 404 {
			t.Fatalf("deleted policy: %d", st)
		}
	})
}

func fallbackRule() map[string]any {
	return map[string]any{"match": map[string]any{"kind": "all_requests"}, "action": map[string]any{
		"kind": "fallback", "models": []string{"openai/gpt-4o"}, "on": []string{"timeout"}, "max_attempts": 2, "timeout_ms": 1000}}
}
