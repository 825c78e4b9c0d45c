package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/wire"
)

const wsBase = "/api/v1/organizations/default/workspaces/default"

func TestProviderCredentials(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		const secret = "sk-upstream-secret-0123456789abcd"
		places := []struct{ path, level string }{
			{"/api/v1/instance/provider-credentials", "platform"},
			{"/api/v1/organizations/default/provider-credentials", "org"},
			{wsBase + "/provider-credentials", "workspace"},
		}
		for _, p := range places {
			raw := e.must("POST", p.path, e.ownerKey, map[string]any{"provider": "openai", "label": "main", "secret": secret})
			c := decodeData[wire.ProviderCredential](t, raw)
			if strings.Contains(string(raw), secret) || c.Scope.Level != p.level || c.SecretHint != "…abcd" {
				t.Fatalf("%s create: %s", p.path, raw)
			}
			for _, path := range []string{p.path, p.path + "/" + c.ID.String()} {
				if raw := e.must("GET", path, e.ownerKey, nil); strings.Contains(string(raw), secret) || strings.Contains(string(raw), "sealed") {
					t.Fatalf("GET %s leaks the secret: %s", path, raw)
				}
			}
			raw = e.must("PATCH", p.path+"/"+c.ID.String(), e.ownerKey, map[string]any{"label": "renamed", "secret": "another-secret-value-wxyz"})
			if c := decodeData[wire.ProviderCredential](t, raw); c.Label != "renamed" || c.SecretHint != "…wxyz" {
				t.Fatalf("update: %s", raw)
			}
		}
		// A credential is only reachable through its own scope's URL.
		list := decodeData[[]wire.ProviderCredential](t, e.must("GET", places[1].path, e.ownerKey, nil))
		if len(list) != 1 {
			t.Fatalf("org list: %+v", list)
		}
		if st, _ := e.do("GET", places[2].path+"/"+list[0].ID.String(), e.ownerKey, nil); st != 404 {
			t.Fatalf("org credential through the workspace URL: %d", st)
		}

		cases := []struct {
			name string
			body any
			want []string // "loc:type"
		}{
			{"unknown provider", map[string]any{"provider": "nope", "label": "x", "secret": "s"}, []string{"body.provider:value_error"}},
			{"missing fields", map[string]any{}, []string{"body.provider:missing", "body.label:missing", "body.secret:missing"}},
			{"label too long", map[string]any{"provider": "openai", "label": strings.Repeat("l", 81), "secret": "s"}, []string{"body.label:string_too_long"}},
			{"bad base url", map[string]any{"provider": "openai", "label": "x", "secret": "s", "base_url": "ftp://u:p@h"}, []string{"body.base_url:url_parsing"}},
			{"compatible needs url", map[string]any{"provider": "openai-compatible", "label": "x", "secret": "s"}, []string{"body.base_url:missing"}},
			{"extra member", map[string]any{"provider": "openai", "label": "x", "secret": "s", "kind": 1}, []string{"body.kind:extra_forbidden"}},
		}
		for _, c := range cases {
			st, raw := e.do("POST", places[1].path, e.ownerKey, c.body)
			if st != 422 {
				t.Errorf("%s: %d %s", c.name, st, raw)
				continue
			}
			if got := issueSet(t, raw); !containsAll(got, c.want) {
				t.Errorf("%s: issues %v, want %v", c.name, got, c.want)
			}
		}
		del := decodeData[wire.Deleted](t, e.must("DELETE", places[1].path+"/"+list[0].ID.String(), e.ownerKey, nil))
		if del.ID != list[0].ID {
			t.Fatalf("delete: %+v", del)
		}
		if raw := e.must("GET", "/api/v1/instance/activity?limit=200", e.ownerKey, nil); strings.Contains(string(raw), secret) {
			t.Fatal("the audit log contains a provider secret")
		}
	})
}

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

func TestCatalog(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		cat := decodeData[wire.Catalog](t, e.must("GET", "/api/v1/instance/catalog", e.ownerKey, nil))
		if len(cat.Models) < 40 || len(cat.Providers) < 7 {
			t.Fatalf("seeded catalog: %d models, %d providers", len(cat.Models), len(cat.Providers))
		}
		model := map[string]any{"id": "openai/gw-test-model", "provider": "openai", "name": "Test", "context_window": 1000, "max_output_tokens": 100,
			"pricing":      map[string]any{"input_per_mtok": "1", "output_per_mtok": "2.5", "cache_read_per_mtok": "0.1", "cache_write_per_mtok": "1"},
			"capabilities": []string{"streaming"}, "modalities": []string{"text"}, "created": 1700000000}
		e.must("POST", "/api/v1/instance/catalog/models", e.ownerKey, model)
		model["pricing"].(map[string]any)["input_per_mtok"] = "1e3"
		if st, raw := e.do("POST", "/api/v1/instance/catalog/models", e.ownerKey, model); st != 422 || !strings.Contains(string(raw), "input_per_mtok") {
			t.Fatalf("bad price: %d %s", st, raw)
		}
		// Organization view: availability follows credentials.
		orgCat := func() map[string]bool {
			c := decodeData[wire.Catalog](t, e.must("GET", "/api/v1/organizations/default/catalog", e.ownerKey, nil))
			out := map[string]bool{}
			for _, m := range c.Models {
				out[m.ID] = *m.Available
			}
			return out
		}
		if orgCat()["openai/gw-test-model"] {
			t.Fatal("available without a credential")
		}
		e.must("POST", "/api/v1/organizations/default/provider-credentials", e.ownerKey, map[string]any{"provider": "openai", "label": "x", "secret": "s"})
		if !orgCat()["openai/gw-test-model"] || orgCat()["anthropic/claude-sonnet-4-5-20250929"] {
			t.Fatal("availability does not follow the openai credential")
		}
		retired := decodeData[wire.CatalogModel](t, e.must("DELETE", "/api/v1/instance/catalog/models/openai/gw-test-model", e.ownerKey, nil))
		if retired.RetiredAt == nil {
			t.Fatalf("retire: %+v", retired)
		}
		if _, ok := orgCat()["openai/gw-test-model"]; ok {
			t.Fatal("retired model still in force")
		}
		if st, _ := e.do("DELETE", "/api/v1/instance/catalog/models/openai/none", e.ownerKey, nil); st != 404 {
			t.Fatalf("retire unknown: %d", st)
		}
		doc := `{"providers":[{"id":"local","name":"Local vLLM","kind":"openai-compatible"}],"models":[{"id":"local/llama","provider":"local","name":"Llama","context_window":8192,"max_output_tokens":2048,"pricing":{"input_per_mtok":"0","output_per_mtok":"0","cache_read_per_mtok":"0","cache_write_per_mtok":"0"},"capabilities":["streaming"],"modalities":["text"],"created":1700000000}]}`
		res := decodeData[wire.CatalogImportResult](t, e.must("POST", "/api/v1/instance/catalog/import", e.ownerKey, doc))
		if res.Providers != 1 || res.Models != 1 {
			t.Fatalf("import: %+v", res)
		}
		orphan := `{"providers":[],"models":[{"id":"ghost/m","provider":"ghost","name":"G","context_window":1,"max_output_tokens":1,"pricing":{"input_per_mtok":"0","output_per_mtok":"0","cache_read_per_mtok":"0","cache_write_per_mtok":"0"},"capabilities":[],"modalities":["text"],"created":1}]}`
		if st, raw := e.do("POST", "/api/v1/instance/catalog/import", e.ownerKey, orphan); st != 422 {
			t.Fatalf("model without provider: %d %s", st, raw)
		}
	})
}

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

// An organization member manages their own management keys only: others'
// keys are invisible to them (404, absent from lists), and so cannot be
// revoked by them.
func TestMemberSeesOwnManagementKeysOnly(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		member, cookie := e.signup("member@example.com")
		e.must("POST", "/api/v1/organizations/default/members", e.ownerKey, map[string]any{"user_id": member.User.ID, "role": "member"})
		ownerOrgKey := e.key("/api/v1/organizations/default", e.ownerKey, []string{"organizations.read"}, nil)
		mine := e.key("/api/v1/organizations/default", "cookie:"+cookie, []string{"organizations.read"}, nil)
		list := decodeData[[]wire.ManagementKey](t, e.must("GET", "/api/v1/organizations/default/management-keys", "cookie:"+cookie, nil))
		if len(list) != 1 || list[0].ID != mine.ID {
			t.Fatalf("member's list: %+v", list)
		}
		for _, path := range []string{"", "/revoke"} {
			method := map[string]string{"": "GET", "/revoke": "POST"}[path]
			if st, _ := e.do(method, "/api/v1/organizations/default/management-keys/"+ownerOrgKey.ID.String()+path, "cookie:"+cookie, nil); st != 404 {
				t.Fatalf("%s another's key: %d", method, st)
			}
		}
		if all := decodeData[[]wire.ManagementKey](t, e.must("GET", "/api/v1/organizations/default/management-keys", e.ownerKey, nil)); len(all) < 2 {
			t.Fatalf("owner's list: %d keys", len(all))
		}
	})
}
