package client

import (
	"context"

	"github.com/gw-gateway/gw/wire"
)

// A workspace's batches (issue 34) as the control plane shows them;
// submitting one is the data plane's (POST /inf/v1/batches).

// ListBatches lists one page of the workspace's batches of a kind
// ("batch", OpenAI's shape, or "message_batch", Anthropic's; "" is
// "batch"), newest first.
func (c *Client) ListBatches(ctx context.Context, org, ws, kind string, limit int, cursor string) (wire.Page[wire.Batch], error) {
	var p wire.Page[wire.Batch]
	q := pageQuery(limit, cursor)
	if kind != "" {
		q.Set("kind", kind)
	}
	err := c.do(ctx, "GET", wsPath(org, ws)+"/batches", q, nil, &p)
	return p, err
}

// GetBatch reads one of the workspace's batches.
func (c *Client) GetBatch(ctx context.Context, org, ws, id string) (wire.Batch, error) {
	return getData[wire.Batch](ctx, c, "GET", wsPath(org, ws)+"/batches/"+esc(id), nil, nil)
}

// CancelBatch cancels a batch's pending lines; a line in flight ends.
func (c *Client) CancelBatch(ctx context.Context, org, ws, id string) (wire.Batch, error) {
	return getData[wire.Batch](ctx, c, "POST", wsPath(org, ws)+"/batches/"+esc(id)+"/cancel", nil, nil)
}
