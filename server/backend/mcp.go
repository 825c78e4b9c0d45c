package backend

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/toolpolicy"
	"github.com/gw-gateway/gw/server/validate"
)

// MCPServerAuth is a server's auth: its non-secret part (kind, header
// name, token URL, client id, scopes; stored as JSON) and its secret (a
// header's value, an OAuth client secret), sealed and never stored in the
// clear. Secret is empty for kind none.
type MCPServerAuth struct {
	Kind     string   `json:"kind"`
	Header   string   `json:"header,omitempty"`
	TokenURL string   `json:"token_url,omitempty"`
	ClientID string   `json:"client_id,omitempty"`
	Scopes   []string `json:"scopes,omitempty"`
	Secret   string   `json:"-"`
}

// MCPServerCreate is a new MCP server at a scope.
type MCPServerCreate struct {
	Scope   store.MCPServerScope
	Name    string
	URL     string
	Enabled bool
	Auth    MCPServerAuth
	Tools   *toolpolicy.Filter
	Prices  toolpolicy.Prices
	Seal    Sealer
}

// CreateMCPServer stores a server under a name no other server of its
// scope has, its secret sealed, and audits it (never the secret).
func CreateMCPServer(ctx context.Context, st *store.Store, actor Actor, in MCPServerCreate) (*store.MCPServer, error) {
	now := store.Now()
	m := &store.MCPServer{ID: uuid.New(), OrgID: in.Scope.OrgID, WorkspaceID: in.Scope.WorkspaceID, Name: in.Name, URL: in.URL,
		Enabled: in.Enabled, CreatedAt: now, UpdatedAt: now}
	if err := setMCPAuth(m, in.Auth, in.Seal); err != nil {
		return nil, err
	}
	m.Tools, m.Prices = jsonColumn(in.Tools), pricesColumn(in.Prices)
	err := st.InTx(ctx, func(tx *store.Store) error {
		if _, err := tx.GetMCPServer(ctx, in.Scope, in.Name); err == nil {
			return errorf(Conflict, "an MCP server named %q exists at this scope: choose another name, or update that one", in.Name)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := tx.CreateMCPServer(ctx, m); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "mcp_server.created", TargetType: "mcp_server", TargetID: m.ID.String(),
			OrgID: &m.OrgID, WorkspaceID: m.WorkspaceID, Details: mcpServerDetail(m)})
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// MCPServerUpdate changes what it sets. Auth replaces the whole auth
// (secret included); ToolsSet/PricesSet replace those (nil clears).
type MCPServerUpdate struct {
	URL       *string
	Enabled   *bool
	Auth      *MCPServerAuth
	ToolsSet  bool
	Tools     *toolpolicy.Filter
	PricesSet bool
	Prices    toolpolicy.Prices
	Seal      Sealer
}

// UpdateMCPServer applies in to the scope's server name and audits the
// change, before and after (never the secret). A server with a secret
// whose URL changes must be given its auth again: its secret goes wherever
// the URL points, so moving it without re-entering the secret would let
// anyone who manages servers send it to a host of theirs.
func UpdateMCPServer(ctx context.Context, st *store.Store, actor Actor, scope store.MCPServerScope, name string, in MCPServerUpdate) (*store.MCPServer, error) {
	var out *store.MCPServer
	err := st.InTx(ctx, func(tx *store.Store) error {
		m, err := ScopedMCPServer(ctx, tx, scope, name)
		if err != nil {
			return err
		}
		before := mcpServerDetail(m)
		if in.URL != nil && *in.URL != m.URL && in.Auth == nil && m.SecretSealed != nil {
			var errs validate.Errors
			errs.Add(validate.Loc{"body", "auth"}, "missing",
				"Field required: changing url needs the auth (and its secret) again, so the secret is never sent to a new host unasked", nil, nil)
			return errs.Err()
		}
		if in.URL != nil {
			m.URL = *in.URL
		}
		if in.Enabled != nil {
			m.Enabled = *in.Enabled
		}
		if in.Auth != nil {
			if err := setMCPAuth(m, *in.Auth, in.Seal); err != nil {
				return err
			}
		}
		if in.ToolsSet {
			m.Tools = jsonColumn(in.Tools)
		}
		if in.PricesSet {
			m.Prices = pricesColumn(in.Prices)
		}
		m.UpdatedAt = store.Now()
		if err := tx.UpdateMCPServer(ctx, m); err != nil {
			return err
		}
		out = m
		details := map[string]any{"before": before, "after": mcpServerDetail(m), "secret_changed": in.Auth != nil}
		return Audit(ctx, tx, actor, AuditEntry{Action: "mcp_server.updated", TargetType: "mcp_server", TargetID: m.ID.String(),
			OrgID: &m.OrgID, WorkspaceID: m.WorkspaceID, Details: details})
	})
	return out, err
}

// DeleteMCPServer deletes the scope's server name.
func DeleteMCPServer(ctx context.Context, st *store.Store, actor Actor, scope store.MCPServerScope, name string) (*store.MCPServer, error) {
	var out *store.MCPServer
	err := st.InTx(ctx, func(tx *store.Store) error {
		m, err := ScopedMCPServer(ctx, tx, scope, name)
		if err != nil {
			return err
		}
		if err := tx.DeleteMCPServer(ctx, m.ID); err != nil {
			return err
		}
		out = m
		return Audit(ctx, tx, actor, AuditEntry{Action: "mcp_server.deleted", TargetType: "mcp_server", TargetID: m.ID.String(),
			OrgID: &m.OrgID, WorkspaceID: m.WorkspaceID, Details: map[string]any{"name": m.Name, "url": m.URL}})
	})
	return out, err
}

// ScopedMCPServer is the server name of exactly the scope; any other,
// another tenant's included, is not found.
func ScopedMCPServer(ctx context.Context, st *store.Store, scope store.MCPServerScope, name string) (*store.MCPServer, error) {
	m, err := st.GetMCPServer(ctx, scope, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(NotFound, "MCP server %q not found", name)
	}
	return m, err
}

// MCPServerAAD binds an MCP server's sealed secret to its row.
func MCPServerAAD(id uuid.UUID) string { return secrets.MCPServerAAD(id) }

func setMCPAuth(m *store.MCPServer, a MCPServerAuth, seal Sealer) error {
	text, err := json.Marshal(a)
	if err != nil {
		return err
	}
	m.Auth, m.SecretSealed, m.SecretHint = string(text), nil, ""
	if a.Secret != "" {
		sealed, err := seal([]byte(a.Secret), m.ID)
		if err != nil {
			return err
		}
		m.SecretSealed, m.SecretHint = &sealed, SecretHint(a.Secret)
	}
	return nil
}

func jsonColumn(f *toolpolicy.Filter) *string {
	if f == nil {
		return nil
	}
	b, _ := json.Marshal(f)
	s := string(b)
	return &s
}

func pricesColumn(p toolpolicy.Prices) *string {
	if len(p) == 0 {
		return nil
	}
	b, _ := json.Marshal(p)
	s := string(b)
	return &s
}

// mcpServerDetail is what the audit log records of a server: where it is
// and how it authenticates, never the secret.
func mcpServerDetail(m *store.MCPServer) map[string]any {
	var auth map[string]any
	_ = json.Unmarshal([]byte(m.Auth), &auth)
	d := map[string]any{"name": m.Name, "url": m.URL, "enabled": m.Enabled, "auth": auth}
	if m.Tools != nil {
		d["tools"] = json.RawMessage(*m.Tools)
	}
	if m.Prices != nil {
		d["prices"] = json.RawMessage(*m.Prices)
	}
	return d
}

// ToolPolicyCreate is a tool policy of a workspace.
type ToolPolicyCreate struct {
	Workspace  *store.Workspace
	Name       string
	Enabled    bool
	Definition toolpolicy.Definition
}

// CreateToolPolicy stores a tool policy, its definition in canonical
// form, under a name no other tool policy of the workspace has.
func CreateToolPolicy(ctx context.Context, st *store.Store, actor Actor, in ToolPolicyCreate) (*store.ToolPolicy, error) {
	text, err := json.Marshal(in.Definition)
	if err != nil {
		return nil, err
	}
	now := store.Now()
	ws := in.Workspace
	p := &store.ToolPolicy{ID: uuid.New(), OrgID: ws.OrgID, WorkspaceID: ws.ID, Name: in.Name, Enabled: in.Enabled, Definition: string(text),
		CreatedAt: now, UpdatedAt: now}
	err = st.InTx(ctx, func(tx *store.Store) error {
		if err := toolPolicyNameFree(ctx, tx, p); err != nil {
			return err
		}
		if err := tx.CreateToolPolicy(ctx, p); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "tool_policy.created", TargetType: "tool_policy", TargetID: p.ID.String(),
			OrgID: &ws.OrgID, WorkspaceID: &ws.ID, Details: map[string]any{"name": p.Name, "enabled": p.Enabled}})
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

func toolPolicyNameFree(ctx context.Context, tx *store.Store, p *store.ToolPolicy) error {
	all, err := tx.ListToolPolicies(ctx, p.WorkspaceID)
	if err != nil {
		return err
	}
	for _, o := range all {
		if o.ID != p.ID && o.Name == p.Name {
			return errorf(Conflict, "a tool policy named %q exists in this workspace", p.Name)
		}
	}
	return nil
}

// ToolPolicyIn is the workspace's tool policy id; any other is not found.
func ToolPolicyIn(ctx context.Context, st *store.Store, workspaceID, id uuid.UUID) (*store.ToolPolicy, error) {
	p, err := st.GetToolPolicy(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && p.WorkspaceID != workspaceID) {
		return nil, errorf(NotFound, "tool policy %s not found", id)
	}
	return p, err
}

// ToolPolicyUpdate changes what is set of a tool policy.
type ToolPolicyUpdate struct {
	Name       *string
	Enabled    *bool
	Definition *toolpolicy.Definition
}

// UpdateToolPolicy applies in to the workspace's tool policy id.
func UpdateToolPolicy(ctx context.Context, st *store.Store, actor Actor, ws *store.Workspace, id uuid.UUID, in ToolPolicyUpdate) (*store.ToolPolicy, error) {
	var p *store.ToolPolicy
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if p, err = ToolPolicyIn(ctx, tx, ws.ID, id); err != nil {
			return err
		}
		changed := []string{}
		if in.Name != nil {
			p.Name = *in.Name
			changed = append(changed, "name")
			if err := toolPolicyNameFree(ctx, tx, p); err != nil {
				return err
			}
		}
		if in.Enabled != nil {
			p.Enabled = *in.Enabled
			changed = append(changed, "enabled")
		}
		if in.Definition != nil {
			text, err := json.Marshal(*in.Definition)
			if err != nil {
				return err
			}
			p.Definition = string(text)
			changed = append(changed, "definition")
		}
		p.UpdatedAt = store.Now()
		if err := tx.UpdateToolPolicy(ctx, p); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "tool_policy.updated", TargetType: "tool_policy", TargetID: p.ID.String(),
			OrgID: &ws.OrgID, WorkspaceID: &ws.ID, Details: map[string]any{"name": p.Name, "enabled": p.Enabled, "changed": changed}})
	})
	return p, err
}

// DeleteToolPolicy deletes the workspace's tool policy id.
func DeleteToolPolicy(ctx context.Context, st *store.Store, actor Actor, ws *store.Workspace, id uuid.UUID) (*store.ToolPolicy, error) {
	var p *store.ToolPolicy
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if p, err = ToolPolicyIn(ctx, tx, ws.ID, id); err != nil {
			return err
		}
		if err := tx.DeleteToolPolicy(ctx, p.ID); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "tool_policy.deleted", TargetType: "tool_policy", TargetID: p.ID.String(),
			OrgID: &ws.OrgID, WorkspaceID: &ws.ID, Details: map[string]any{"name": p.Name}})
	})
	return p, err
}
