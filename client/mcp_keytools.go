package client

import (
	"context"

	"github.com/gw-gateway/gw/wire"
)

// KeyMCPTools reads what an inference key of the workspace would see of
// its MCP servers: every tool, listed or not for the key, and the rule
// that decided (gw mcp tools --key-name).
func (c *Client) KeyMCPTools(ctx context.Context, org, ws, keyID string) (wire.KeyMCPTools, error) {
	return getData[wire.KeyMCPTools](ctx, c, "GET", wsPath(org, ws)+"/inference-keys/"+esc(keyID)+"/mcp-tools", nil, nil)
}
