package store

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// MCPServer is an upstream MCP server of an organization (WorkspaceID nil)
// or of a workspace (issue 30). Auth is the non-secret part of its auth (a
// JSON object); the secret is sealed (SecretSealed nil for kind none).
type MCPServer struct {
	bun.BaseModel `bun:"table:mcp_servers"`

	ID           uuid.UUID  `bun:"id,pk,type:uuid"`
	OrgID        uuid.UUID  `bun:"org_id,type:uuid"`
	WorkspaceID  *uuid.UUID `bun:"workspace_id,type:uuid"`
	Name         string     `bun:"name"`
	URL          string     `bun:"url"`
	Enabled      bool       `bun:"enabled"`
	Auth         string     `bun:"auth"`
	SecretSealed *string    `bun:"secret_sealed"`
	SecretHint   string     `bun:"secret_hint"`
	// Tools is the server-wide tool filter (JSON), nil for none.
	Tools *string `bun:"tools"`
	// Prices are the tools' prices (JSON), nil for none.
	Prices    *string   `bun:"prices"`
	CreatedAt time.Time `bun:"created_at"`
	UpdatedAt time.Time `bun:"updated_at"`
}

// ToolPolicy is a workspace's tool policy.
type ToolPolicy struct {
	bun.BaseModel `bun:"table:tool_policies"`

	ID          uuid.UUID `bun:"id,pk,type:uuid"`
	OrgID       uuid.UUID `bun:"org_id,type:uuid"`
	WorkspaceID uuid.UUID `bun:"workspace_id,type:uuid"`
	Name        string    `bun:"name"`
	Enabled     bool      `bun:"enabled"`
	Definition  string    `bun:"definition"`
	CreatedAt   time.Time `bun:"created_at"`
	UpdatedAt   time.Time `bun:"updated_at"`
}

// MCPServerScope is an organization's scope (WorkspaceID nil) or a
// workspace's.
type MCPServerScope struct {
	OrgID       uuid.UUID
	WorkspaceID *uuid.UUID
}

func (sc MCPServerScope) where(q *bun.SelectQuery) *bun.SelectQuery {
	q = q.Where("org_id = ?", sc.OrgID)
	if sc.WorkspaceID == nil {
		return q.Where("workspace_id IS NULL")
	}
	return q.Where("workspace_id = ?", *sc.WorkspaceID)
}

// CreateMCPServer inserts a server.
func (s *Store) CreateMCPServer(ctx context.Context, m *MCPServer) error {
	_, err := s.db.NewInsert().Model(m).Exec(ctx)
	return mapErr(err)
}

// ListMCPServers lists the servers of exactly one scope, by name.
func (s *Store) ListMCPServers(ctx context.Context, sc MCPServerScope) ([]MCPServer, error) {
	out := []MCPServer{}
	q := sc.where(s.db.NewSelect().Model(&out))
	return out, mapErr(q.OrderExpr("name ASC").Scan(ctx))
}

// GetMCPServer finds the server of the scope by name.
func (s *Store) GetMCPServer(ctx context.Context, sc MCPServerScope, name string) (*MCPServer, error) {
	m := new(MCPServer)
	return m, mapErr(sc.where(s.db.NewSelect().Model(m)).Where("name = ?", name).Scan(ctx))
}

// MCPServersForOrg lists every server of the organization and its
// workspaces (what its bundle carries).
func (s *Store) MCPServersForOrg(ctx context.Context, orgID uuid.UUID) ([]MCPServer, error) {
	out := []MCPServer{}
	return out, mapErr(s.db.NewSelect().Model(&out).Where("org_id = ?", orgID).OrderExpr("id ASC").Scan(ctx))
}

// ListAllMCPServers returns every server (for re-sealing).
func (s *Store) ListAllMCPServers(ctx context.Context) ([]MCPServer, error) {
	out := []MCPServer{}
	return out, mapErr(s.db.NewSelect().Model(&out).OrderExpr("id ASC").Scan(ctx))
}

// UpdateMCPServer writes the mutable fields.
func (s *Store) UpdateMCPServer(ctx context.Context, m *MCPServer) error {
	_, err := s.db.NewUpdate().Model(m).Column("url", "enabled", "auth", "secret_sealed", "secret_hint", "tools", "prices", "updated_at").
		WherePK().Exec(ctx)
	return mapErr(err)
}

// DeleteMCPServer removes a server.
func (s *Store) DeleteMCPServer(ctx context.Context, id uuid.UUID) error {
	res, err := s.db.NewDelete().Model((*MCPServer)(nil)).Where("id = ?", id).Exec(ctx)
	return affectedOne(res, err)
}

// CreateToolPolicy inserts a tool policy.
func (s *Store) CreateToolPolicy(ctx context.Context, p *ToolPolicy) error {
	_, err := s.db.NewInsert().Model(p).Exec(ctx)
	return mapErr(err)
}

// GetToolPolicy finds a tool policy by id.
func (s *Store) GetToolPolicy(ctx context.Context, id uuid.UUID) (*ToolPolicy, error) {
	p := new(ToolPolicy)
	return p, mapErr(s.db.NewSelect().Model(p).Where("id = ?", id).Scan(ctx))
}

// ListToolPolicies lists a workspace's tool policies, oldest first.
func (s *Store) ListToolPolicies(ctx context.Context, wsID uuid.UUID) ([]ToolPolicy, error) {
	out := []ToolPolicy{}
	return out, mapErr(s.db.NewSelect().Model(&out).Where("workspace_id = ?", wsID).OrderExpr("created_at ASC, id ASC").Scan(ctx))
}

// EnabledToolPoliciesForOrg lists the enabled tool policies of an
// organization's workspaces (what its bundle carries).
func (s *Store) EnabledToolPoliciesForOrg(ctx context.Context, orgID uuid.UUID) ([]ToolPolicy, error) {
	out := []ToolPolicy{}
	return out, mapErr(s.db.NewSelect().Model(&out).Where("org_id = ?", orgID).Where("enabled = ?", true).OrderExpr("id ASC").Scan(ctx))
}

// UpdateToolPolicy writes the mutable fields.
func (s *Store) UpdateToolPolicy(ctx context.Context, p *ToolPolicy) error {
	_, err := s.db.NewUpdate().Model(p).Column("name", "enabled", "definition", "updated_at").WherePK().Exec(ctx)
	return mapErr(err)
}

// DeleteToolPolicy removes a tool policy.
func (s *Store) DeleteToolPolicy(ctx context.Context, id uuid.UUID) error {
	res, err := s.db.NewDelete().Model((*ToolPolicy)(nil)).Where("id = ?", id).Exec(ctx)
	return affectedOne(res, err)
}

// recordsArguments reads mcp_audit_arguments of the workspaces whose tool
// calls carry arguments (none: no query).
func recordsArguments(ctx context.Context, db bun.IDB, stored []UsageEvent) (map[uuid.UUID]bool, error) {
	var ids []uuid.UUID
	for _, e := range stored {
		if e.ToolArgumentsBytes > 0 && !slices.Contains(ids, e.WorkspaceID) {
			ids = append(ids, e.WorkspaceID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	var ws []Workspace
	if err := db.NewSelect().Model(&ws).Column("id", "mcp_audit_arguments").Where("id IN (?)", bun.In(ids)).Scan(ctx); err != nil {
		return nil, mapErr(err)
	}
	out := make(map[uuid.UUID]bool, len(ws))
	for _, w := range ws {
		out[w.ID] = w.MCPAuditArguments != nil && *w.MCPAuditArguments
	}
	return out, nil
}

// auditToolCalls derives the audit row of each MCP tool call from its
// usage event (endpoint "mcp"), in the transaction that stores the event
// (issue 30; docs/mcp.md): both planes ship tool calls as usage events,
// so the row is written once, wherever the event lands, and an event
// shipped twice is stored, and audited, once. The row says who (the key's
// owner; the key in details), which server and tool, the outcome and the
// duration; never the result, and the arguments only when the event
// carries them (the data plane sends them when the workspace's
// mcp_audit_arguments is true) and the workspace's setting, read here in
// the same transaction, still says so.
func auditToolCalls(ctx context.Context, db bun.IDB, stored []UsageEvent) error {
	var rows []AuditEvent
	record, err := recordsArguments(ctx, db, stored)
	if err != nil {
		return err
	}
	for _, e := range stored {
		if e.Endpoint == nil || *e.Endpoint != "mcp" {
			continue
		}
		server, tool, _ := strings.Cut(strings.TrimPrefix(e.Model, "mcp/"), "/")
		details := JSONMap{"server": server, "tool": tool, "status": e.Status, "duration_ms": e.LatencyMS,
			"cost_nano_usd": e.CostNanoUSD, "usage_event_id": e.ID.String()}
		if e.Reason != nil {
			details["reason"] = *e.Reason
		}
		if e.InferenceKeyID != nil {
			details["inference_key_id"] = e.InferenceKeyID.String()
		}
		if record[e.WorkspaceID] && e.ToolArgumentsBytes > 0 {
			details["arguments_bytes"] = e.ToolArgumentsBytes
			var args map[string]any
			if len(e.ToolArguments) > 0 && json.Unmarshal(e.ToolArguments, &args) == nil {
				details["arguments"] = args
			} else {
				details["arguments_omitted"] = "too_large"
			}
		}
		requestID := ""
		if e.RequestID != nil {
			requestID = *e.RequestID
		}
		org, ws := e.OrgID, e.WorkspaceID
		rows = append(rows, AuditEvent{ID: uuid.New(), OrgID: &org, WorkspaceID: &ws, ActorType: "user", ActorID: e.OwnerID,
			Action: "mcp.tool_called", TargetType: "mcp_tool", TargetID: server + "/" + tool, RequestID: requestID,
			Details: details, CreatedAt: e.OccurredAt})
	}
	if len(rows) == 0 {
		return nil
	}
	_, err = db.NewInsert().Model(&rows).Exec(ctx)
	return mapErr(err)
}
