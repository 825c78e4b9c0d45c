package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/mcpgw"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/toolpolicy"
	"github.com/gw-gateway/gw/wire"
)

// keyToolRoutes answer what an inference key would see through the MCP
// gateway (gw mcp tools --key-name, issue 30): gw shows a key's secret
// only when it is issued, so a key is named here by its id, and the
// control plane lists each server's tools itself.
func (s *Server) keyToolRoutes() []*Route {
	return []*Route{
		{Method: "GET", Path: orgWS + "/{workspace_ref}/inference-keys/{key_id}/mcp-tools", Tag: "Workspace Inference Keys",
			Summary: "What an inference key would see of the workspace's MCP servers: each server's tools, listed or not for the key, and the rule that decided",
			Perms:   []auth.Permission{auth.InferenceKeysRead, auth.PoliciesRead}, Result: wire.KeyMCPTools{}, Handle: s.keyMCPTools},
	}
}

// mcpGateway is the control plane's MCP client, made on first use: its
// connections dial through server/egress under the instance's policy, as
// the data plane's do.
func (s *Server) mcpGateway() *mcpgw.Gateway {
	s.mcpOnce.Do(func() {
		s.mcp = mcpgw.New(mcpgw.Options{HTTP: providers.NewGuardedHTTPClient(func() egress.Policy {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			p, err := s.egressPolicy(ctx)
			if err != nil {
				return s.opts.Egress
			}
			return p
		})})
	})
	return s.mcp
}

// keyMCPTools lists, for one inference key of the workspace, every tool of
// the enabled MCP servers the workspace reaches (its own shadowing the
// organization's), with what tools/list would decide for the key: the
// server's tools filter first, then the workspace's enabled tool policies
// and its mcp_default (toolpolicy.Decide, the data plane's evaluator).
// Another workspace's key is a 404 like an unknown one.
func (s *Server) keyMCPTools(r *Request) (any, error) {
	id, err := r.pathUUID("key_id")
	if err != nil {
		return nil, err
	}
	key, err := backend.InferenceKeyIn(r.ctx, s.store, r.WS.ID, id)
	if err != nil {
		return nil, err
	}
	policies, err := s.enabledToolPolicies(r.ctx, r.WS)
	if err != nil {
		return nil, err
	}
	servers, err := s.store.MCPServersForOrg(r.ctx, r.Org.ID)
	if err != nil {
		return nil, err
	}
	inForce := map[string]store.MCPServer{}
	for _, m := range servers {
		if m.WorkspaceID != nil && *m.WorkspaceID != r.WS.ID {
			continue
		}
		if cur, ok := inForce[m.Name]; ok && cur.WorkspaceID != nil {
			continue // the workspace's own shadows the organization's
		}
		inForce[m.Name] = m
	}
	names := make([]string, 0, len(inForce))
	for n, m := range inForce {
		if m.Enabled {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	mcpDefault := backend.WorkspaceMCPDefault(r.WS)
	out := wire.KeyMCPTools{KeyID: key.ID, MCPDefault: mcpDefault, Servers: make([]wire.KeyMCPServer, len(names))}
	var wg sync.WaitGroup
	for i, n := range names {
		m := inForce[n]
		out.Servers[i] = wire.KeyMCPServer{Server: n, Scope: "org", Tools: []wire.KeyMCPTool{}}
		if m.WorkspaceID != nil {
			out.Servers[i].Scope = "workspace"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.serverToolsFor(r.ctx, &out.Servers[i], &m, policies, toolpolicy.Request{KeyID: key.ID.String(), OwnerUserID: key.UserID,
				Phase: toolpolicy.PhaseList, Server: n}, mcpDefault == toolpolicy.DefaultAllow)
		}()
	}
	wg.Wait()
	return out, nil
}

// serverToolsFor fills one server's tools as the key would see them; a
// server whose tools cannot be listed says why, and the others are still
// answered.
func (s *Server) serverToolsFor(ctx context.Context, out *wire.KeyMCPServer, m *store.MCPServer, policies []toolpolicy.Policy,
	req toolpolicy.Request, defaultAllow bool) {
	up, err := s.mcpUpstream(m)
	if err != nil {
		out.Error = err.Error()
		return
	}
	tools, err := s.mcpGateway().ListUpstreamTools(ctx, up)
	if err != nil {
		out.Error = err.Error()
		return
	}
	sort.SliceStable(tools, func(a, b int) bool { return tools[a].Name < tools[b].Name })
	for _, t := range tools {
		if t == nil {
			continue
		}
		kt := wire.KeyMCPTool{Name: t.Name, Description: t.Description}
		if !up.Filter.Admits(t.Name) {
			kt.Rule = "server filter"
		} else {
			req.Tool = t.Name
			d := toolpolicy.Decide(policies, req, defaultAllow)
			kt.Listed, kt.Rule = d.Allowed, d.Rule
			if kt.Rule == "" {
				kt.Rule = "mcp_default"
			}
			if !d.Allowed {
				kt.Message = d.Message
			}
		}
		out.Tools = append(out.Tools, kt)
	}
}

// mcpUpstream is a stored server as the gateway reaches it: its auth's
// secret opened with the instance key, its tools filter read.
func (s *Server) mcpUpstream(m *store.MCPServer) (*mcpgw.Upstream, error) {
	var a struct {
		Kind     string   `json:"kind"`
		Header   string   `json:"header"`
		TokenURL string   `json:"token_url"`
		ClientID string   `json:"client_id"`
		Scopes   []string `json:"scopes"`
	}
	if err := json.Unmarshal([]byte(m.Auth), &a); err != nil {
		return nil, fmt.Errorf("MCP server %s: its auth does not read", m.Name)
	}
	up := &mcpgw.Upstream{ID: m.ID.String(), Name: m.Name, URL: m.URL,
		Auth: mcpgw.Auth{Kind: a.Kind, Header: a.Header, TokenURL: a.TokenURL, ClientID: a.ClientID, Scopes: a.Scopes}}
	if m.Tools != nil {
		if err := json.Unmarshal([]byte(*m.Tools), &up.Filter); err != nil {
			return nil, fmt.Errorf("MCP server %s: its tools filter does not read", m.Name)
		}
	}
	if m.SecretSealed != nil && *m.SecretSealed != "" {
		secret, err := s.opts.Keyring.Open(*m.SecretSealed, secrets.MCPServerAAD(m.ID))
		if err != nil {
			return nil, fmt.Errorf("MCP server %s: its secret could not be opened with this instance's key", m.Name)
		}
		if a.Kind == toolpolicy.AuthOAuthClientCreds {
			up.Auth.ClientSecret = string(secret)
		} else {
			up.Auth.Secret = string(secret)
		}
	}
	return up, nil
}

// enabledToolPolicies are the workspace's enabled tool policies, read as
// the data plane reads them.
func (s *Server) enabledToolPolicies(ctx context.Context, ws *store.Workspace) ([]toolpolicy.Policy, error) {
	tps, err := s.store.ListToolPolicies(ctx, ws.ID)
	if err != nil {
		return nil, err
	}
	var out []toolpolicy.Policy
	for _, p := range tps {
		if !p.Enabled {
			continue
		}
		d, err := toolpolicy.ParseDefinitionJSON([]byte(p.Definition))
		if err != nil {
			return nil, errorf(http.StatusInternalServerError, "tool policy %s does not read: %v", p.Name, err)
		}
		out = append(out, toolpolicy.Policy{ID: p.ID.String(), Name: p.Name, Definition: d})
	}
	return out, nil
}
