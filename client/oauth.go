package client

import (
	"context"

	"github.com/gw-gateway/gw/wire"
)

// ListOAuthClients lists the OAuth clients an administrator registered.
func (c *Client) ListOAuthClients(ctx context.Context) ([]wire.OAuthClient, error) {
	return getData[[]wire.OAuthClient](ctx, c, "GET", "/api/v1/instance/oauth-clients", nil, nil)
}

// CreateOAuthClient registers an OAuth client; a confidential one's
// secret is in the answer, once.
func (c *Client) CreateOAuthClient(ctx context.Context, in wire.OAuthClientCreate) (wire.OAuthClient, error) {
	return getData[wire.OAuthClient](ctx, c, "POST", "/api/v1/instance/oauth-clients", nil, in)
}

// DeleteOAuthClient deletes a registered OAuth client, revoking its grants.
func (c *Client) DeleteOAuthClient(ctx context.Context, clientID string) (wire.OAuthClient, error) {
	return getData[wire.OAuthClient](ctx, c, "DELETE", "/api/v1/instance/oauth-clients/"+esc(clientID), nil, nil)
}

// ListOAuthGrants lists a workspace's OAuth grants.
func (c *Client) ListOAuthGrants(ctx context.Context, org, ws string) ([]wire.OAuthGrant, error) {
	return getData[[]wire.OAuthGrant](ctx, c, "GET", wsPath(org, ws)+"/oauth-grants", nil, nil)
}

// RevokeOAuthGrant revokes a workspace's OAuth grant and every token
// issued under it.
func (c *Client) RevokeOAuthGrant(ctx context.Context, org, ws, id string) (wire.OAuthGrant, error) {
	return getData[wire.OAuthGrant](ctx, c, "POST", wsPath(org, ws)+"/oauth-grants/"+esc(id)+"/revoke", nil, nil)
}
