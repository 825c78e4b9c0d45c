package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/mcpgw"
	"github.com/gw-gateway/gw/server/oauth"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/toolpolicy"
	"github.com/gw-gateway/gw/wire"
)

// The MCP gateway's paths (issue 30; docs/mcp.md).
const (
	mcpPath = "/inf/v1/mcp"
	// mcpResourceMetadataPath is the OAuth protected resource metadata of
	// the MCP endpoint (RFC 9728), which a 401 names.
	mcpResourceMetadataPath = "/.well-known/oauth-protected-resource" + mcpPath
	// endpointMCP names a tools/call in its usage event.
	endpointMCP = "mcp"
	// mcpProvider is a tool call's provider in its usage event.
	mcpProvider = "mcp"
)

// mcpOrg is what an organization's bundle says of MCP: its servers (the
// organization's by name, each workspace's by name), the enabled tool
// policies and the MCP settings of each workspace.
type mcpOrg struct {
	orgServers map[string]*mcpServer
	wsServers  map[uuid.UUID]map[string]*mcpServer
	policies   map[uuid.UUID][]toolpolicy.Policy
	allow      map[uuid.UUID]bool
	// auditArgs: the workspaces whose tool calls' audit rows record the
	// arguments (mcp_audit_arguments).
	auditArgs map[uuid.UUID]bool
}

// mcpServer is a bundle's server, its secret opened on first use.
type mcpServer struct {
	b    bundle.MCPServer
	once sync.Once
	up   *mcpgw.Upstream
	err  error
}

func newMCPOrg(b *bundle.Body) *mcpOrg {
	o := &mcpOrg{orgServers: map[string]*mcpServer{}, wsServers: map[uuid.UUID]map[string]*mcpServer{},
		policies: map[uuid.UUID][]toolpolicy.Policy{}, allow: map[uuid.UUID]bool{}, auditArgs: map[uuid.UUID]bool{}}
	for _, m := range b.MCPServers {
		s := &mcpServer{b: m}
		if m.WorkspaceID == nil {
			o.orgServers[m.Name] = s
			continue
		}
		if o.wsServers[*m.WorkspaceID] == nil {
			o.wsServers[*m.WorkspaceID] = map[string]*mcpServer{}
		}
		o.wsServers[*m.WorkspaceID][m.Name] = s
	}
	for _, p := range b.ToolPolicies {
		o.policies[p.WorkspaceID] = append(o.policies[p.WorkspaceID], toolpolicy.Policy{ID: p.ID.String(), Name: p.Name, Definition: p.Definition})
	}
	for _, w := range b.Workspaces {
		o.allow[w.ID] = w.MCPDefault == toolpolicy.DefaultAllow
		o.auditArgs[w.ID] = w.MCPAuditArguments
	}
	return o
}

// upstream is the server with its secret opened (once).
func (s *mcpServer) upstream(kr SecretOpener) (*mcpgw.Upstream, error) {
	s.once.Do(func() {
		var a struct {
			Kind     string   `json:"kind"`
			Header   string   `json:"header"`
			TokenURL string   `json:"token_url"`
			ClientID string   `json:"client_id"`
			Scopes   []string `json:"scopes"`
		}
		if err := json.Unmarshal(s.b.Auth, &a); err != nil {
			s.err = err
			return
		}
		up := &mcpgw.Upstream{ID: s.b.ID.String(), Name: s.b.Name, URL: s.b.URL, Prices: s.b.Prices,
			Auth: mcpgw.Auth{Kind: a.Kind, Header: a.Header, TokenURL: a.TokenURL, ClientID: a.ClientID, Scopes: a.Scopes}}
		if s.b.Tools != nil {
			up.Filter = *s.b.Tools
		}
		if s.b.SecretSealed != "" {
			secret, err := kr.Open(s.b.SecretSealed, secrets.MCPServerAAD(s.b.ID))
			if err != nil {
				s.err = err
				return
			}
			if a.Kind == toolpolicy.AuthOAuthClientCreds {
				up.Auth.ClientSecret = string(secret)
			} else {
				up.Auth.Secret = string(secret)
			}
		}
		s.up = up
	})
	return s.up, s.err
}

// mcpGateway is the plane's MCP gateway, made on first use: its upstream
// client dials through server/egress like every provider's.
func (p *Plane) mcpGateway() *mcpgw.Gateway {
	p.mcpOnce.Do(func() {
		p.mcp = mcpgw.New(mcpgw.Options{HTTP: providers.NewGuardedHTTPClient(p.egressPolicy), Timeout: p.mcpTimeout,
			MaxMessage: p.inference.maxBody})
	})
	return p.mcp
}

// MCPResourceMetadataPath is where the MCP endpoint's protected resource
// metadata is served (the assembly routes it to the plane).
const MCPResourceMetadataPath = mcpResourceMetadataPath

// serveMCP answers /inf/v1/mcp (single "") and /inf/v1/mcp/{server}. The
// request is admitted like any inference request (the key, tags, tag
// sets) except its rate limit, which only a tools/call spends; a
// tools/call is then decided, reserved and metered through the same
// admission as a chat completion: one usage event each.
func (p *Plane) serveMCP(w http.ResponseWriter, r *http.Request, single string) {
	a := p.beginRequest(w, r, endpointMCP)
	defer a.end()
	p.limitBodyTime(a.w)
	key, refusal := p.authenticate(r)
	if key != nil {
		a.key, a.view = key.inference, key.models
	}
	if refusal != nil {
		a.endAdmission()
		p.mcpUnauthorized(a.w, r, refusal)
		return
	}
	if !p.inference.enabled() {
		refusal = errInferenceNotConfigured
	}
	if refusal == nil {
		a.tags, refusal = tagsOf(r, a.key)
	}
	if refusal == nil {
		refusal = p.tagSets.admit(a.key.id, a.tags, p.now())
	}
	if refusal != nil {
		a.endAdmission()
		mcpRefuser{}.refuse(a.w, refusal)
		return
	}
	var body []byte
	if r.Method == http.MethodGet {
		// A session's own event stream (mcpgw's listen) lasts up to
		// mcpgw.MaxListen: no read deadline cuts it, the write deadline
		// is its length.
		rc := http.NewResponseController(a.w)
		_ = rc.SetReadDeadline(time.Time{})
		_ = rc.SetWriteDeadline(time.Now().Add(mcpgw.MaxListen + streamWriteGrace))
	}
	if r.Method == http.MethodPost {
		var hold *bodyHold
		if body, hold = a.readBody(mcpRefuser{}); body == nil {
			return
		}
		defer hold.release()
	}
	token, _ := bearerToken(r.Header.Get("Authorization"))
	if id := a.key.oauthGrant; id != uuid.Nil {
		// An OAuth access token is replaced at every refresh: the
		// session is bound to its grant instead (oauth.go).
		token = "oauth-grant:" + id.String()
	}
	g := &mcpGuard{a: a, org: a.key.org.mcp, ws: a.key.workspace}
	p.mcpGateway().Serve(a.w, r, body, g, single, token)
	a.endAdmission()
}

// mcpUnauthorized answers a request without a valid key: 401 naming the
// protected resource metadata (the MCP authorization spec's discovery).
func (p *Plane) mcpUnauthorized(w http.ResponseWriter, r *http.Request, refusal *response) {
	if refusal.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+baseURL(r)+mcpResourceMetadataPath+`"`)
	}
	mcpRefuser{}.refuse(w, refusal)
}

// serveMCPResourceMetadata answers the MCP endpoint's OAuth protected
// resource metadata (RFC 9728): gw's own endpoint is the resource, an
// inference key or an OAuth access token of gw's authorization server
// (the control plane: Options.OAuthIssuer, or this origin in process) its
// bearer token.
func (p *Plane) serveMCPResourceMetadata(w http.ResponseWriter, r *http.Request) {
	issuer := p.oauthIssuer
	if issuer == "" {
		issuer = baseURL(r)
	}
	b, _ := json.Marshal(oauth.ProtectedResourceMetadata(baseURL(r)+mcpPath, issuer, "gw MCP gateway"))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	_, _ = w.Write(b)
}

// baseURL is the scheme and host the caller reached gw at.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// mcpRefuser writes a refusal as a JSON-RPC error, the HTTP status kept.
type mcpRefuser struct{}

func (mcpRefuser) refuse(w http.ResponseWriter, r *response) {
	mcpgw.WriteError(w, r.status, mcpgw.CodeInvalidRequest, refusalMessage(r))
}

// refusalMessage is a refusal's message (its error.message).
func refusalMessage(r *response) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(r.body, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	return http.StatusText(r.status)
}

// mcpGuard is the data plane's side of one MCP request: what the key may
// reach, and the admission of each tools/call.
type mcpGuard struct {
	a   *admission
	org *mcpOrg
	ws  uuid.UUID

	once    sync.Once
	servers []*mcpgw.Upstream
}

// Servers are the enabled servers of the key's organization and
// workspace, a workspace's shadowing the organization's of its name.
func (g *mcpGuard) Servers() []*mcpgw.Upstream {
	g.once.Do(func() {
		if g.org == nil {
			return
		}
		byName := map[string]*mcpServer{}
		for n, s := range g.org.orgServers {
			byName[n] = s
		}
		for n, s := range g.org.wsServers[g.ws] {
			byName[n] = s
		}
		for _, s := range byName {
			up, err := s.upstream(g.a.p.inference.keyring)
			if err != nil {
				g.a.p.inference.log.Error("MCP server secret", "server", s.b.ID, "error", err)
				continue
			}
			g.servers = append(g.servers, up)
		}
		sort.Slice(g.servers, func(i, j int) bool { return g.servers[i].Name < g.servers[j].Name })
	})
	return g.servers
}

// Decide applies the workspace's tool policies to the key.
func (g *mcpGuard) Decide(phase, server, tool string, args any) toolpolicy.Decision {
	if g.org == nil {
		return toolpolicy.Decision{Message: "no tool policy allows this tool"}
	}
	return toolpolicy.Decide(g.org.policies[g.ws], toolpolicy.Request{KeyID: g.a.key.idString, OwnerUserID: g.a.owner(), Phase: phase,
		Server: server, Tool: tool, Arguments: args}, g.org.allow[g.ws])
}

func toolModel(c mcpgw.Call) string { return "mcp/" + c.Server + "/" + c.Tool }

// observe records the call's OpenTelemetry MCP attributes and duration.
// A metered read (resources/read, prompts/get, completion/complete) is
// observed as the operation it is (Observe), not as a tool call.
func (g *mcpGuard) observe(c mcpgw.Call, status, reason string) {
	if c.Method != "" {
		return
	}
	observeToolCall(g.a.p.inference.metrics, g.a.r, c, status, reason, time.Since(g.a.started))
}

// Observe records any other request's OpenTelemetry MCP attributes and
// duration (initialize, tools/list, server/discover, …).
func (g *mcpGuard) Observe(op mcpgw.Operation) {
	observeOperation(g.a.p.inference.metrics, g.a.r, op)
}

// toolRecord is a tool call's usage record, carrying its arguments for
// the audit row when the workspace's mcp_audit_arguments is true (never
// otherwise): as sent, when they fit wire.MaxToolArgumentsBytes; else
// only their size.
func (g *mcpGuard) toolRecord(c mcpgw.Call, status, reason string) usageRecord {
	u := usageRecord{status: status, reason: reason, model: toolModel(c), provider: mcpProvider}
	if g.org == nil || !g.org.auditArgs[g.ws] {
		return u
	}
	args := bytes.TrimSpace(c.Arguments)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	u.toolArgumentsBytes = int64(len(args))
	if len(args) <= wire.MaxToolArgumentsBytes && args[0] == '{' && json.Valid(args) {
		u.toolArguments = append(json.RawMessage(nil), args...)
	}
	return u
}

// Admit spends the key's rate limit on the call, then reserves its price
// against every budget rule matching all_requests in the policies that
// target the key, exactly as a chat completion's bound is reserved.
func (g *mcpGuard) Admit(_ context.Context, c mcpgw.Call) (func(mcpgw.Outcome), error) {
	a := g.a
	model := toolModel(c)
	if refusal := a.admitRate(); refusal != nil {
		return nil, errors.New(refusalMessage(refusal))
	}
	// The decision is admission.decide's, on the key's policies' budget
	// rules alone (a copy of the key holds them for this request).
	key := a.key
	onlyBudgets := *key
	onlyBudgets.policies = budgetRules(key.policies)
	a.key = &onlyBudgets
	// A tool call needs no provider credential (its server's auth is its
	// own): every scope is given, so only the policies speak.
	d, refusal := a.decide(policy.Request{Model: model, Provider: mcpProvider,
		CredentialScopes: []policy.CredentialScope{policy.ScopePlatform, policy.ScopeOrg, policy.ScopeWorkspace}})
	a.key = key
	if refusal == nil {
		refusal = a.reserve(d, func() (int64, error) { return c.PriceNano, nil })
	}
	if refusal != nil {
		g.observe(c, statusDenied, refusalReason(refusal))
		a.finish(g.toolRecord(c, statusDenied, refusalReason(refusal)))
		return nil, errors.New(refusalMessage(refusal))
	}
	a.endAdmission()
	return func(o mcpgw.Outcome) {
		u := g.toolRecord(c, statusOK, "")
		if o.Delivered {
			u.costNano = c.PriceNano
		}
		if o.Status != "ok" {
			u.status, u.reason = statusError, failUpstreamError
			if !o.Delivered {
				u.reason = failUnavailable
			}
		}
		g.observe(c, u.status, u.reason)
		a.finish(u)
	}, nil
}

// Refused records a call a tool policy or the server's filter refused.
func (g *mcpGuard) Refused(_ context.Context, c mcpgw.Call, _ mcpgw.Outcome) {
	a := g.a
	a.occurred = a.p.now().UTC()
	g.observe(c, statusDenied, "tool_denied")
	a.finish(g.toolRecord(c, statusDenied, "tool_denied"))
}

// budgetRules are the budget rules of the policies that match every
// request: what a tool call is charged to. A policy's model or provider
// allowlist, price ceilings and the like speak of models, not tools
// (tool policies decide tools), so they take no part.
func budgetRules(ps []policy.Policy) []policy.Policy {
	out := make([]policy.Policy, 0, len(ps))
	for _, p := range ps {
		var rules []policy.Rule
		for _, r := range p.Definition.Rules {
			if r.Match.Kind == policy.MatchAllRequests && r.Action.Kind == policy.ActionBudget {
				rules = append(rules, r)
			}
		}
		if len(rules) > 0 {
			q := p
			q.Definition.Rules = rules
			out = append(out, q)
		}
	}
	return out
}
