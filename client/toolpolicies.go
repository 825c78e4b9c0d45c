package client

import (
	"context"

	"github.com/gw-gateway/gw/wire"
)

// DeleteToolPolicy deletes a workspace's tool policy.
func (c *Client) DeleteToolPolicy(ctx context.Context, org, ws, id string) (wire.Deleted, error) {
	return getData[wire.Deleted](ctx, c, "DELETE", wsPath(org, ws)+"/tool-policies/"+esc(id), nil, nil)
}
