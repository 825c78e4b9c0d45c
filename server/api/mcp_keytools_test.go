package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gw-gateway/gw/wire"
)

type keyToolsIn struct {
	Text string `json:"text"`
}

// keyToolsUpstream is a real MCP server (the Go SDK's) that wants a
// header, with three tools.
func keyToolsUpstream(t *testing.T, secret string) *httptest.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	for _, name := range []string{"echo", "oops", "internal_admin"} {
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: "The " + name + " tool."}, func(context.Context, *mcp.CallToolRequest, keyToolsIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != secret {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// What a key would see (gw mcp tools --key-name, issue 30), on both
// databases: the control plane lists each enabled server's tools with
// the server's own auth, and marks each listed or not for the key with
// what decided — the server's filter, a tool policy's rule, or the
// mcp_default; a server that cannot be listed says why; another
// workspace's key is a 404 like an unknown one.
func TestKeyMCPTools(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		up := keyToolsUpstream(t, "sk-upstream-header-secret")
		e.must("POST", wsBase+"/mcp-servers", e.ownerKey, map[string]any{"name": "up", "url": up.URL,
			"auth":  map[string]any{"kind": "header", "header": "X-Api-Key", "secret": "sk-upstream-header-secret"},
			"tools": map[string]any{"deny": []string{"internal_*"}}})
		down := httptest.NewServer(http.NotFoundHandler())
		down.Close()
		e.must("POST", "/api/v1/organizations/default/mcp-servers", e.ownerKey, map[string]any{"name": "down", "url": down.URL})
		e.must("POST", "/api/v1/organizations/default/mcp-servers", e.ownerKey, map[string]any{"name": "off", "url": down.URL, "enabled": false})
		key := decodeData[wire.InferenceKey](t, e.must("POST", wsBase+"/inference-keys", e.ownerKey, map[string]any{"name": "app"}))
		e.must("POST", wsBase+"/tool-policies", e.ownerKey, map[string]any{"name": "echo-only", "definition": map[string]any{
			"target": map[string]any{"kind": "workspace"},
			"rules": []any{map[string]any{"match": map[string]any{"servers": []string{"up"}, "tools": []string{"echo"}}, "phase": "list",
				"action": map[string]any{"kind": "allow"}}}}})

		raw := e.must("GET", wsBase+"/inference-keys/"+key.ID.String()+"/mcp-tools", e.ownerKey, nil)
		got := decodeData[wire.KeyMCPTools](t, raw)
		if got.KeyID != key.ID || got.MCPDefault != "deny" || len(got.Servers) != 2 {
			t.Fatalf("answer: %s", raw)
		}
		dn, u := got.Servers[0], got.Servers[1]
		if dn.Server != "down" || dn.Scope != "org" || dn.Error == "" || len(dn.Tools) != 0 {
			t.Errorf("a server that cannot be listed: %+v", dn)
		}
		if u.Server != "up" || u.Scope != "workspace" || u.Error != "" || len(u.Tools) != 3 {
			t.Fatalf("the upstream's tools: %+v", u)
		}
		want := map[string]wire.KeyMCPTool{
			"echo":           {Name: "echo", Description: "The echo tool.", Listed: true, Rule: "echo-only#1"},
			"internal_admin": {Name: "internal_admin", Description: "The internal_admin tool.", Rule: "server filter"},
			"oops":           {Name: "oops", Description: "The oops tool.", Rule: "mcp_default"},
		}
		for _, tl := range u.Tools {
			w := want[tl.Name]
			if tl.Listed != w.Listed || tl.Rule != w.Rule || tl.Description != w.Description {
				t.Errorf("%s: %+v, want %+v", tl.Name, tl, w)
			}
		}
		if strings.Contains(string(raw), "sk-upstream-header-secret") {
			t.Errorf("the answer shows the server's secret: %s", raw)
		}
		// Another workspace's key, and an unknown one, are 404.
		other := decodeData[wire.Workspace](t, e.must("POST", "/api/v1/organizations/default/workspaces", e.ownerKey, map[string]any{"name": "Other"}))
		theirs := decodeData[wire.InferenceKey](t, e.must("POST", "/api/v1/organizations/default/workspaces/"+other.Slug+"/inference-keys", e.ownerKey, map[string]any{"name": "theirs"}))
		for _, id := range []string{theirs.ID.String(), "0b8e7c1e-0000-4000-8000-0000000000cc"} {
			if code, body := e.do("GET", wsBase+"/inference-keys/"+id+"/mcp-tools", e.ownerKey, nil); code != 404 {
				t.Errorf("key %s: %d %s", id, code, body)
			}
		}
		// Needs policies.read beside inference-keys.read.
		k := e.key("/api/v1/organizations/default/workspaces/default", e.ownerKey, []string{"inference-keys.read"}, nil)
		if code, _ := e.do("GET", wsBase+"/inference-keys/"+key.ID.String()+"/mcp-tools", k.Token, nil); code != 403 {
			t.Errorf("without policies.read: %d", code)
		}
	})
}
