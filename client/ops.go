package client

import (
	"context"
)

// Probe asks one of the server's health endpoints (/healthz, /readyz),
// which sit outside /api/v1, and returns the status and body it answered:
// a 503 is an answer, not an error.
func (c *Client) Probe(ctx context.Context, path string) (int, string, error) {
	resp, err := c.r.R().SetContext(ctx).Get(path)
	if err != nil {
		return 0, "", c.transportError("GET", path, err)
	}
	return resp.StatusCode(), string(resp.Body()), nil
}
