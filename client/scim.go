package client

import (
	"context"

	"github.com/gw-gateway/gw/wire"
)

// ListSCIMTokens lists an organization's SCIM tokens (never their secrets).
func (c *Client) ListSCIMTokens(ctx context.Context, org string) ([]wire.SCIMToken, error) {
	return getData[[]wire.SCIMToken](ctx, c, "GET", orgPath(org)+"/scim-tokens", nil, nil)
}

// CreateSCIMToken creates a SCIM token, whose secret the result carries
// once.
func (c *Client) CreateSCIMToken(ctx context.Context, org string, in wire.SCIMTokenCreate) (wire.SCIMToken, error) {
	return getData[wire.SCIMToken](ctx, c, "POST", orgPath(org)+"/scim-tokens", nil, in)
}

// DeleteSCIMToken deletes a SCIM token.
func (c *Client) DeleteSCIMToken(ctx context.Context, org, id string) (wire.Deleted, error) {
	return getData[wire.Deleted](ctx, c, "DELETE", orgPath(org)+"/scim-tokens/"+esc(id), nil, nil)
}
