package client

import (
	"context"

	"github.com/gw-gateway/gw/wire"
)

// ListMCPServers lists the MCP servers of an organization or a workspace.
func (c *Client) ListMCPServers(ctx context.Context, s Scope) ([]wire.MCPServer, error) {
	return getData[[]wire.MCPServer](ctx, c, "GET", s.prefix()+"/mcp-servers", nil, nil)
}

// CreateMCPServer configures an MCP server; its secret travels in the
// body only and is never returned.
func (c *Client) CreateMCPServer(ctx context.Context, s Scope, in wire.MCPServerCreate) (wire.MCPServer, error) {
	return getData[wire.MCPServer](ctx, c, "POST", s.prefix()+"/mcp-servers", nil, in)
}

// UpdateMCPServer changes an MCP server.
func (c *Client) UpdateMCPServer(ctx context.Context, s Scope, name string, in wire.MCPServerUpdate) (wire.MCPServer, error) {
	return getData[wire.MCPServer](ctx, c, "PATCH", s.prefix()+"/mcp-servers/"+esc(name), nil, in)
}

// DeleteMCPServer deletes an MCP server.
func (c *Client) DeleteMCPServer(ctx context.Context, s Scope, name string) (wire.Deleted, error) {
	return getData[wire.Deleted](ctx, c, "DELETE", s.prefix()+"/mcp-servers/"+esc(name), nil, nil)
}

// ListToolPolicies lists a workspace's tool policies.
func (c *Client) ListToolPolicies(ctx context.Context, org, ws string) ([]wire.ToolPolicy, error) {
	return getData[[]wire.ToolPolicy](ctx, c, "GET", wsPath(org, ws)+"/tool-policies", nil, nil)
}

// CreateToolPolicy creates a tool policy.
func (c *Client) CreateToolPolicy(ctx context.Context, org, ws string, in wire.ToolPolicyCreate) (wire.ToolPolicy, error) {
	return getData[wire.ToolPolicy](ctx, c, "POST", wsPath(org, ws)+"/tool-policies", nil, in)
}

// UpdateToolPolicy replaces a tool policy's name, enabled flag or
// definition.
func (c *Client) UpdateToolPolicy(ctx context.Context, org, ws, id string, in wire.ToolPolicyUpdate) (wire.ToolPolicy, error) {
	return getData[wire.ToolPolicy](ctx, c, "PATCH", wsPath(org, ws)+"/tool-policies/"+esc(id), nil, in)
}
