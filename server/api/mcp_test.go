package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/wire"
)

var mcpPlaces = []string{
	"/api/v1/organizations/default/mcp-servers",
	wsBase + "/mcp-servers",
}

// MCP servers at both scopes: the body's rules (name, URL, auth kinds,
// globs, prices) refused with 422 naming the field, the secret sealed and
// never shown, a taken name 409, a new URL needing the auth again, every
// change audited, and another organization's server 404 like an unknown.
func TestMCPServers(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		for _, place := range mcpPlaces {
			refusals := []struct {
				body map[string]any
				want []string
			}{
				{map[string]any{"name": "Bad_Name", "url": "https://mcp.example.com/mcp"}, []string{"body.name:string_pattern_mismatch"}},
				{map[string]any{"name": "a", "url": "ftp://mcp.example.com/"}, []string{"body.url:url_parsing"}},
				{map[string]any{"name": "a", "url": "http://169.254.169.254/mcp"}, []string{"body.url:value_error"}},
				{map[string]any{"name": "a", "url": "https://mcp.example.com/mcp", "auth": map[string]any{"kind": "basic"}}, []string{"body.auth:union_tag_invalid"}},
				{map[string]any{"name": "a", "url": "https://mcp.example.com/mcp", "auth": map[string]any{"kind": "header", "header": "Authorization"}}, []string{"body.auth.secret:missing"}},
				{map[string]any{"name": "a", "url": "https://mcp.example.com/mcp", "auth": map[string]any{"kind": "none", "secret": "s3cret-value-xyz"}}, []string{"body.auth.secret:extra_forbidden"}},
				{map[string]any{"name": "a", "url": "https://mcp.example.com/mcp", "auth": map[string]any{"kind": "oauth_client_credentials", "token_url": "file:///x",
					"client_id": "c", "client_secret": "s3cret-value-xyz"}}, []string{"body.auth.token_url:url_parsing"}},
				{map[string]any{"name": "a", "url": "https://mcp.example.com/mcp", "tools": map[string]any{"allow": []any{"[x"}}}, []string{"body.tools.allow.0:value_error"}},
				{map[string]any{"name": "a", "url": "https://mcp.example.com/mcp", "prices": map[string]any{"search": "1e-3", "fetch": 0.1}},
					[]string{"body.prices.search:string_pattern_mismatch", "body.prices.fetch:string_type"}},
				{map[string]any{"name": "a", "url": "https://mcp.example.com/mcp", "colour": "blue"}, []string{"body.colour:extra_forbidden"}},
			}
			for _, r := range refusals {
				st, raw := e.do("POST", place, e.ownerKey, r.body)
				if got := issueSet(t, raw); st != http.StatusUnprocessableEntity || !containsAll(got, r.want) {
					t.Fatalf("%s %v: %d %s, want %v", place, r.body, st, raw, r.want)
				}
				if strings.Contains(string(raw), "s3cret-value-xyz") {
					t.Fatalf("the refusal echoes the secret: %s", raw)
				}
			}
			raw := e.must("POST", place, e.ownerKey, map[string]any{"name": "github", "url": "https://mcp.example.com/mcp",
				"auth":   map[string]any{"kind": "header", "header": "Authorization", "secret": "Bearer ghp_0123456789abcdef"},
				"tools":  map[string]any{"allow": []any{"read_*"}, "deny": []any{"read_secret"}},
				"prices": map[string]any{"read_*": "0.002"}})
			m := decodeData[wire.MCPServer](t, raw)
			if strings.Contains(string(raw), "ghp_0123456789abcdef") || m.Auth.SecretHint != "…cdef" || !m.Enabled || m.Prices["read_*"] != "0.002" ||
				m.Tools == nil || m.Tools.Allow[0] != "read_*" {
				t.Fatalf("created: %s", raw)
			}
			if a := e.lastAudit("mcp_server.created"); a == nil || strings.Contains(string(mustJSON(t, a)), "ghp_") {
				t.Fatalf("audit of the creation: %+v", a)
			}
			st, dup := e.do("POST", place, e.ownerKey, map[string]any{"name": "github", "url": "https://mcp.example.com/other"})
			if st != http.StatusConflict {
				t.Fatalf("a second server named github: %d %s", st, dup)
			}
			st, raw = e.do("PATCH", place+"/github", e.ownerKey, map[string]any{"url": "https://evil.example.com/mcp"})
			if got := issueSet(t, raw); st != http.StatusUnprocessableEntity || !containsAll(got, []string{"body.auth:missing"}) {
				t.Fatalf("a new URL without the auth: %d %s", st, raw)
			}
			raw = e.must("PATCH", place+"/github", e.ownerKey, map[string]any{"enabled": false, "prices": nil, "tools": nil})
			if m := decodeData[wire.MCPServer](t, raw); m.Enabled || len(m.Prices) != 0 || m.Tools != nil || m.Auth.Kind != "header" {
				t.Fatalf("patched: %s", raw)
			}
			list := decodeData[[]wire.MCPServer](t, e.must("GET", place, e.ownerKey, nil))
			if len(list) != 1 || list[0].Name != "github" {
				t.Fatalf("list: %+v", list)
			}
			if one := decodeData[wire.MCPServer](t, e.must("GET", place+"/github", e.ownerKey, nil)); one.Name != "github" || one.Enabled || one.Auth.SecretHint != "…cdef" {
				t.Fatalf("get one: %+v", one)
			}
		}
		// A workspace's server is deleted on its own; the organization's of
		// the same name stays.
		e.must("DELETE", mcpPlaces[1]+"/github", e.ownerKey, nil)
		if st, _ := e.do("GET", mcpPlaces[1]+"/github", e.ownerKey, nil); st != http.StatusNotFound {
			t.Fatalf("the deleted workspace server answers %d", st)
		}
		if list := decodeData[[]wire.MCPServer](t, e.must("GET", mcpPlaces[0], e.ownerKey, nil)); len(list) != 1 {
			t.Fatalf("the organization's server went with the workspace's: %+v", list)
		}
		e.must("POST", "/api/v1/instance/organizations", e.ownerKey, map[string]any{"name": "Other", "slug": "other"})
		for _, method := range []string{"GET", "PATCH", "DELETE"} {
			st, raw := e.do(method, "/api/v1/organizations/other/mcp-servers/github", e.ownerKey, map[string]any{"enabled": true})
			st2, raw2 := e.do(method, "/api/v1/organizations/default/mcp-servers/nonesuch", e.ownerKey, map[string]any{"enabled": true})
			if st != http.StatusNotFound || st2 != http.StatusNotFound {
				t.Fatalf("%s another organization's server: %d %s; unknown: %d %s", method, st, raw, st2, raw2)
			}
		}
		e.must("DELETE", mcpPlaces[0]+"/github", e.ownerKey, nil)
		if e.lastAudit("mcp_server.deleted") == nil {
			t.Fatal("the deletion is not audited")
		}
	})
}

// Tool policies are as strict as policies (422 extra_forbidden), their
// target is a policy's, and the workspace's MCP settings default to deny
// and no arguments in audit rows.
func TestToolPoliciesAndSettings(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		base := wsBase + "/tool-policies"
		st, raw := e.do("POST", base, e.ownerKey, map[string]any{"name": "p", "definition": map[string]any{
			"target": map[string]any{"kind": "workspace"}, "rules": []any{map[string]any{"match": map[string]any{}, "phase": "call",
				"action": map[string]any{"kind": "allow"}, "priority": 1}}}})
		if got := issueSet(t, raw); st != http.StatusUnprocessableEntity || !containsAll(got, []string{"body.definition.rules.0.priority:extra_forbidden"}) {
			t.Fatalf("extra member: %d %s", st, raw)
		}
		def := map[string]any{"target": map[string]any{"kind": "workspace"}, "rules": []any{
			map[string]any{"match": map[string]any{"servers": []any{"github"}}, "phase": "list", "action": map[string]any{"kind": "allow"}},
			map[string]any{"match": map[string]any{"tools": []any{"delete_*"}, "arguments": map[string]any{"/repo": map[string]any{"prefix": "prod-"}}},
				"phase": "call", "action": map[string]any{"kind": "deny", "message": "not on prod"}}}}
		p := decodeData[wire.ToolPolicy](t, e.must("POST", base, e.ownerKey, map[string]any{"name": "github", "definition": def}))
		if !p.Enabled || len(p.Definition.Rules) != 2 || p.Definition.Rules[1].Action.Message != "not on prod" || p.Definition.Target.Kind != "workspace" {
			t.Fatalf("created: %+v", p)
		}
		if st, raw := e.do("POST", base, e.ownerKey, map[string]any{"name": "github", "definition": def}); st != http.StatusConflict {
			t.Fatalf("a taken name: %d %s", st, raw)
		}
		got := decodeData[wire.ToolPolicy](t, e.must("PATCH", base+"/"+p.ID.String(), e.ownerKey, map[string]any{"enabled": false}))
		if got.Enabled {
			t.Fatalf("disabled: %+v", got)
		}
		if one := decodeData[wire.ToolPolicy](t, e.must("GET", base+"/"+p.ID.String(), e.ownerKey, nil)); one.ID != p.ID || one.Enabled || len(one.Definition.Rules) != 2 {
			t.Fatalf("get one: %+v", one)
		}
		if list := decodeData[[]wire.ToolPolicy](t, e.must("GET", base, e.ownerKey, nil)); len(list) != 1 {
			t.Fatalf("list: %+v", list)
		}
		e.must("POST", "/api/v1/instance/organizations", e.ownerKey, map[string]any{"name": "Other", "slug": "other"})
		e.must("POST", "/api/v1/organizations/other/workspaces", e.ownerKey, map[string]any{"name": "W", "slug": "w"})
		for _, method := range []string{"GET", "PATCH", "DELETE"} {
			st, raw := e.do(method, "/api/v1/organizations/other/workspaces/w/tool-policies/"+p.ID.String(), e.ownerKey, map[string]any{"enabled": true})
			if st != http.StatusNotFound {
				t.Fatalf("%s another tenant's tool policy: %d %s", method, st, raw)
			}
		}
		ws := decodeData[wire.Workspace](t, e.must("GET", wsBase, e.ownerKey, nil))
		if ws.MCPDefault != "deny" || ws.MCPAuditArguments {
			t.Fatalf("defaults: %+v", ws)
		}
		st, raw = e.do("PATCH", wsBase, e.ownerKey, map[string]any{"mcp_default": "maybe"})
		if got := issueSet(t, raw); st != http.StatusUnprocessableEntity || !containsAll(got, []string{"body.mcp_default:literal_error"}) {
			t.Fatalf("a bad mcp_default: %d %s", st, raw)
		}
		ws = decodeData[wire.Workspace](t, e.must("PATCH", wsBase, e.ownerKey, map[string]any{"mcp_default": "allow", "mcp_audit_arguments": true}))
		if ws.MCPDefault != "allow" || !ws.MCPAuditArguments {
			t.Fatalf("set: %+v", ws)
		}
		e.must("DELETE", base+"/"+p.ID.String(), e.ownerKey, nil)
		for _, a := range []string{"tool_policy.created", "tool_policy.updated", "tool_policy.deleted"} {
			if e.lastAudit(a) == nil {
				t.Fatalf("%s is not audited", a)
			}
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
