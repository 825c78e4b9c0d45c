package api

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/toolpolicy"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// mcpRoutes are the MCP gateway's resources (issue 30): MCP servers of an
// organization and of a workspace, and a workspace's tool policies.
func (s *Server) mcpRoutes() []*Route {
	// The spec's groups are closed: MCP servers are filed with the
	// provider credentials (the same permissions, the same sealing), tool
	// policies with the policies.
	type place struct{ tag, prefix string }
	places := []place{
		{"Provider Credentials", "/api/v1/organizations/{org_id}/mcp-servers"},
		{"Workspace Provider Credentials", orgWS + "/{workspace_ref}/mcp-servers"},
	}
	read := []auth.Permission{auth.ProviderCredentialsRead}
	manage := []auth.Permission{auth.ProviderCredentialsManage}
	var routes []*Route
	for _, p := range places {
		routes = append(routes,
			&Route{Method: "POST", Path: p.prefix, Tag: p.tag, Summary: "Configure an upstream MCP server (its secret is sealed and never returned)",
				Perms: manage, Body: wire.MCPServerCreate{}, Result: wire.MCPServer{}, RefreshesBundles: true, Handle: s.createMCPServer},
			&Route{Method: "GET", Path: p.prefix, Tag: p.tag, Summary: "List MCP servers (complete set, no secrets)",
				Perms: read, Result: []wire.MCPServer{}, Handle: s.listMCPServers},
			&Route{Method: "GET", Path: p.prefix + "/{server_name}", Tag: p.tag, Summary: "Get an MCP server (no secret)",
				Perms: read, Result: wire.MCPServer{}, Handle: s.getMCPServer},
			&Route{Method: "PATCH", Path: p.prefix + "/{server_name}", Tag: p.tag, Summary: "Change an MCP server's URL, auth, tool filter, prices or enabled flag",
				Perms: manage, Body: wire.MCPServerUpdate{}, Result: wire.MCPServer{}, RefreshesBundles: true, Handle: s.updateMCPServer},
			&Route{Method: "DELETE", Path: p.prefix + "/{server_name}", Tag: p.tag, Summary: "Delete an MCP server",
				Perms: manage, Result: wire.Deleted{}, RefreshesBundles: true, Handle: s.deleteMCPServer},
		)
	}
	const tag, base = "Workspace Policies", orgWS + "/{workspace_ref}/tool-policies"
	pread := []auth.Permission{auth.PoliciesRead}
	pmanage := []auth.Permission{auth.PoliciesManage}
	return append(routes,
		&Route{Method: "GET", Path: base, Tag: tag, Summary: "List the workspace's tool policies (complete set)",
			Perms: pread, Result: []wire.ToolPolicy{}, Handle: s.listToolPolicies},
		&Route{Method: "POST", Path: base, Tag: tag, Summary: "Create a tool policy",
			Perms: pmanage, Body: wire.ToolPolicyCreate{}, Result: wire.ToolPolicy{}, RefreshesBundles: true, Handle: s.createToolPolicy},
		&Route{Method: "GET", Path: base + "/{tool_policy_id}", Tag: tag, Summary: "Get a tool policy",
			Perms: pread, Result: wire.ToolPolicy{}, Handle: s.getToolPolicy},
		&Route{Method: "PATCH", Path: base + "/{tool_policy_id}", Tag: tag, Summary: "Update a tool policy's name, enabled flag or definition",
			Perms: pmanage, Body: wire.ToolPolicyUpdate{}, Result: wire.ToolPolicy{}, RefreshesBundles: true, Handle: s.updateToolPolicy},
		&Route{Method: "DELETE", Path: base + "/{tool_policy_id}", Tag: tag, Summary: "Delete a tool policy",
			Perms: pmanage, Result: wire.Deleted{}, RefreshesBundles: true, Handle: s.deleteToolPolicy},
	)
}

var (
	mcpNameRule   = validate.StringRule{Min: 1, Max: 63, Pattern: toolpolicy.NamePattern}
	mcpSecretRule = validate.StringRule{Min: 1, Max: toolpolicy.MaxHeaderSecret, Secret: true}
	mcpHeaderRule = validate.StringRule{Min: 1, Max: 255, Pattern: headerNamePattern}
	mcpIDRule     = validate.StringRule{Min: 1, Max: 255, NoControl: true}
)

// headerNamePattern is an HTTP header name (RFC 9110 token).
var headerNamePattern = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

func mcpScope(r *Request) store.MCPServerScope {
	sc := store.MCPServerScope{OrgID: r.Org.ID}
	if r.WS != nil {
		sc.WorkspaceID = &r.WS.ID
	}
	return sc
}

// readMCPURL reads an upstream URL: absolute http(s), no credentials or
// fragment (a query is the upstream's business), and one the egress
// policy lets gw call.
func readMCPURL(ctx context.Context, p egress.Policy, o *validate.Object, name string, required bool) *string {
	var s *string
	if required {
		v := requiredString(o, name, baseURLRule)
		if !o.Has(name) {
			return nil
		}
		s = &v
	} else {
		s = optionalString(o, name, baseURLRule)
	}
	if s == nil || *s == "" {
		return nil
	}
	loc := o.Loc().With(name)
	if msg := toolpolicy.CheckServerURL(*s); msg != "" {
		o.Errors().Add(loc, "url_parsing", msg, *s, nil)
		return nil
	}
	before := o.Errors().Len()
	checkEgress(ctx, p, o.Errors(), loc, *s, *s)
	if o.Errors().Len() > before {
		return nil
	}
	return s
}

// readMCPAuth reads an auth member: its kind and the members that kind
// takes (strictly: another kind's member is extra_forbidden).
func readMCPAuth(ctx context.Context, p egress.Policy, v any, loc validate.Loc, errs *validate.Errors) *backend.MCPServerAuth {
	o := validate.ReadObject(v, loc, errs)
	if o == nil {
		return nil
	}
	kind, ok := validate.Discriminator(o, "kind", toolpolicy.AuthKinds)
	if !ok {
		return nil
	}
	a := &backend.MCPServerAuth{Kind: kind}
	switch kind {
	case toolpolicy.AuthHeader:
		a.Header = requiredString(o, "header", mcpHeaderRule)
		a.Secret = requiredString(o, "secret", mcpSecretRule)
	case toolpolicy.AuthOAuthClientCreds:
		if u := readMCPURL(ctx, p, o, "token_url", true); u != nil {
			a.TokenURL = *u
		}
		a.ClientID = requiredString(o, "client_id", mcpIDRule)
		a.Secret = requiredString(o, "client_secret", mcpSecretRule)
		if v, ok := o.Raw("scopes"); ok {
			a.Scopes = []string{}
			validate.List(v, loc.With("scopes"), validate.ListRule{Max: toolpolicy.MaxScopes}, errs, func(v any, l validate.Loc) {
				if s, ok := validate.String(v, l, mcpIDRule, errs); ok {
					a.Scopes = append(a.Scopes, s)
				}
			})
		}
	}
	// A secret member the kind does not take is refused without its
	// value: a 422 must not echo a secret back.
	for _, name := range []string{"secret", "client_secret"} {
		if o.Has(name) && !(kind == toolpolicy.AuthHeader && name == "secret") && !(kind == toolpolicy.AuthOAuthClientCreds && name == "client_secret") {
			o.Raw(name)
			errs.Add(loc.With(name), "extra_forbidden", "Extra inputs are not permitted", nil, nil)
		}
	}
	o.Close()
	return a
}

func readMCPTools(o *validate.Object) (bool, *toolpolicy.Filter) {
	v, ok := o.Raw("tools")
	if !ok {
		return false, nil
	}
	if v == nil {
		return true, nil
	}
	f := toolpolicy.ParseFilter(v, o.Loc().With("tools"), o.Errors())
	return true, &f
}

func readMCPPrices(o *validate.Object) (bool, toolpolicy.Prices) {
	v, ok := o.Raw("prices")
	if !ok {
		return false, nil
	}
	if v == nil {
		return true, nil
	}
	return true, toolpolicy.ParsePrices(v, o.Loc().With("prices"), o.Errors())
}

func (s *Server) sealMCPSecret(secret []byte, id uuid.UUID) (string, error) {
	return s.opts.Keyring.Seal(secret, backend.MCPServerAAD(id))
}

func (s *Server) createMCPServer(r *Request) (any, error) {
	policy, err := s.egressPolicy(r.ctx)
	if err != nil {
		return nil, err
	}
	in := backend.MCPServerCreate{Scope: mcpScope(r), Enabled: true, Auth: backend.MCPServerAuth{Kind: toolpolicy.AuthNone}, Seal: s.sealMCPSecret}
	if err := r.body(func(o *validate.Object) {
		in.Name = requiredString(o, "name", mcpNameRule)
		if u := readMCPURL(r.ctx, policy, o, "url", true); u != nil {
			in.URL = *u
		}
		if e := readEnabled(o); e != nil {
			in.Enabled = *e
		}
		if v, ok := o.Raw("auth"); ok {
			if a := readMCPAuth(r.ctx, policy, v, o.Loc().With("auth"), o.Errors()); a != nil {
				in.Auth = *a
			}
		}
		_, in.Tools = readMCPTools(o)
		_, in.Prices = readMCPPrices(o)
	}); err != nil {
		return nil, err
	}
	m, err := backend.CreateMCPServer(r.ctx, s.store, r.actor(), in)
	if err != nil {
		return nil, err
	}
	return toMCPServer(m), nil
}

func (s *Server) listMCPServers(r *Request) (any, error) {
	ms, err := s.store.ListMCPServers(r.ctx, mcpScope(r))
	if err != nil {
		return nil, err
	}
	out := make([]wire.MCPServer, len(ms))
	for i := range ms {
		out[i] = toMCPServer(&ms[i])
	}
	return out, nil
}

func (s *Server) getMCPServer(r *Request) (any, error) {
	m, err := backend.ScopedMCPServer(r.ctx, s.store, mcpScope(r), r.R.PathValue("server_name"))
	if err != nil {
		return nil, err
	}
	return toMCPServer(m), nil
}

func (s *Server) updateMCPServer(r *Request) (any, error) {
	policy, err := s.egressPolicy(r.ctx)
	if err != nil {
		return nil, err
	}
	in := backend.MCPServerUpdate{Seal: s.sealMCPSecret}
	if err := r.body(func(o *validate.Object) {
		in.URL = readMCPURL(r.ctx, policy, o, "url", false)
		in.Enabled = readEnabled(o)
		if v, ok := o.Raw("auth"); ok {
			in.Auth = readMCPAuth(r.ctx, policy, v, o.Loc().With("auth"), o.Errors())
		}
		in.ToolsSet, in.Tools = readMCPTools(o)
		in.PricesSet, in.Prices = readMCPPrices(o)
	}); err != nil {
		return nil, err
	}
	m, err := backend.UpdateMCPServer(r.ctx, s.store, r.actor(), mcpScope(r), r.R.PathValue("server_name"), in)
	if err != nil {
		return nil, err
	}
	return toMCPServer(m), nil
}

func (s *Server) deleteMCPServer(r *Request) (any, error) {
	now := store.Now()
	m, err := backend.DeleteMCPServer(r.ctx, s.store, r.actor(), mcpScope(r), r.R.PathValue("server_name"))
	if err != nil {
		return nil, err
	}
	return wire.Deleted{ID: m.ID, DeletedAt: now}, nil
}

func toMCPServer(m *store.MCPServer) wire.MCPServer {
	out := wire.MCPServer{ID: m.ID, OrgID: m.OrgID, WorkspaceID: m.WorkspaceID, Name: m.Name, URL: m.URL, Enabled: m.Enabled,
		Prices: map[string]string{}, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}
	var a backend.MCPServerAuth
	_ = json.Unmarshal([]byte(m.Auth), &a)
	out.Auth = wire.MCPAuthOut{Kind: a.Kind, Header: a.Header, TokenURL: a.TokenURL, ClientID: a.ClientID, Scopes: a.Scopes, SecretHint: m.SecretHint}
	if m.Tools != nil {
		var f wire.MCPToolFilter
		if json.Unmarshal([]byte(*m.Tools), &f) == nil {
			out.Tools = &f
		}
	}
	if m.Prices != nil {
		_ = json.Unmarshal([]byte(*m.Prices), &out.Prices)
	}
	return out
}

func toToolPolicy(p *store.ToolPolicy) (wire.ToolPolicy, error) {
	out := wire.ToolPolicy{ID: p.ID, OrgID: p.OrgID, WorkspaceID: p.WorkspaceID, Name: p.Name, Enabled: p.Enabled,
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
	if err := json.Unmarshal([]byte(p.Definition), &out.Definition); err != nil {
		return out, fmt.Errorf("stored definition of tool policy %s: %w", p.ID, err)
	}
	return out, nil
}

func readToolDefinition(o *validate.Object, required bool) *toolpolicy.Definition {
	var v any
	var ok bool
	if required {
		v, ok = o.Require("definition")
	} else {
		v, ok = o.Raw("definition")
	}
	if !ok {
		return nil
	}
	before := o.Errors().Len()
	d := toolpolicy.ParseDefinition(v, o.Loc().With("definition"), o.Errors())
	if o.Errors().Len() > before {
		return nil
	}
	return &d
}

func (s *Server) listToolPolicies(r *Request) (any, error) {
	ps, err := s.store.ListToolPolicies(r.ctx, r.WS.ID)
	if err != nil {
		return nil, err
	}
	return convertEach(ps, toToolPolicy)
}

func (s *Server) createToolPolicy(r *Request) (any, error) {
	in := backend.ToolPolicyCreate{Workspace: r.WS, Enabled: true}
	if err := r.body(func(o *validate.Object) {
		in.Name = requiredString(o, "name", nameRule)
		if e := readEnabled(o); e != nil {
			in.Enabled = *e
		}
		if d := readToolDefinition(o, true); d != nil {
			in.Definition = *d
		}
	}); err != nil {
		return nil, err
	}
	p, err := backend.CreateToolPolicy(r.ctx, s.store, r.actor(), in)
	if err != nil {
		return nil, err
	}
	return toToolPolicy(p)
}

func (s *Server) getToolPolicy(r *Request) (any, error) {
	id, err := r.pathUUID("tool_policy_id")
	if err != nil {
		return nil, err
	}
	p, err := backend.ToolPolicyIn(r.ctx, s.store, r.WS.ID, id)
	if err != nil {
		return nil, err
	}
	return toToolPolicy(p)
}

func (s *Server) updateToolPolicy(r *Request) (any, error) {
	var in backend.ToolPolicyUpdate
	if err := r.body(func(o *validate.Object) {
		in.Name = optionalString(o, "name", nameRule)
		in.Enabled = readEnabled(o)
		in.Definition = readToolDefinition(o, false)
	}); err != nil {
		return nil, err
	}
	id, err := r.pathUUID("tool_policy_id")
	if err != nil {
		return nil, err
	}
	p, err := backend.UpdateToolPolicy(r.ctx, s.store, r.actor(), r.WS, id, in)
	if err != nil {
		return nil, err
	}
	return toToolPolicy(p)
}

func (s *Server) deleteToolPolicy(r *Request) (any, error) {
	now := store.Now()
	id, err := r.pathUUID("tool_policy_id")
	if err != nil {
		return nil, err
	}
	p, err := backend.DeleteToolPolicy(r.ctx, s.store, r.actor(), r.WS, id)
	if err != nil {
		return nil, err
	}
	return wire.Deleted{ID: p.ID, DeletedAt: now}, nil
}

// readMCPSettings reads a workspace update's mcp_default and
// mcp_audit_arguments.
func readMCPSettings(o *validate.Object, in *backend.WorkspaceUpdate) {
	if v, ok := o.Raw("mcp_default"); ok {
		if s, ok := validate.Literal(v, o.Loc().With("mcp_default"), toolpolicy.Defaults, o.Errors()); ok {
			in.MCPDefault = &s
		}
	}
	if v, ok := o.Raw("mcp_audit_arguments"); ok {
		if b, ok := validate.Bool(v, o.Loc().With("mcp_audit_arguments"), o.Errors()); ok {
			in.MCPAuditArguments = &b
		}
	}
}
