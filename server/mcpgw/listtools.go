package mcpgw

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ListUpstreamTools lists one upstream's tools, every page, as the
// gateway reaches it (statelessly, or in a session it keeps for no
// caller's key), with the server's own auth and cut at the gateway's
// timeout: the control plane's view of a server, for what a key would
// see (gw mcp tools --key-name). No caller credential is involved.
func (g *Gateway) ListUpstreamTools(ctx context.Context, up *Upstream) ([]*mcp.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, g.opts.Timeout)
	defer cancel()
	rq := &request{g: g}
	return rq.upstreamTools(ctx, up)
}
