package client

import (
	"context"
	"net/url"

	"github.com/gw-gateway/gw/wire"
)

// ListManagementKeys lists the management keys of a scope (complete set,
// metadata only). userID filters by owner and is honoured at instance
// scope only, where keys of every scope are listed.
func (c *Client) ListManagementKeys(ctx context.Context, s Scope, userID string) ([]wire.ManagementKey, error) {
	var q url.Values
	if userID != "" {
		q = url.Values{"user_id": {userID}}
	}
	return getData[[]wire.ManagementKey](ctx, c, "GET", s.prefix()+"/management-keys", q, nil)
}

// GetManagementKey reads one management key's metadata.
func (c *Client) GetManagementKey(ctx context.Context, s Scope, id string) (wire.ManagementKey, error) {
	return getData[wire.ManagementKey](ctx, c, "GET", s.prefix()+"/management-keys/"+esc(id), nil, nil)
}

// CreateManagementKey issues a management key at a scope; the result
// carries its token once.
func (c *Client) CreateManagementKey(ctx context.Context, s Scope, in wire.ManagementKeyCreate) (wire.ManagementKey, error) {
	return getData[wire.ManagementKey](ctx, c, "POST", s.prefix()+"/management-keys", nil, in)
}

// RevokeManagementKey revokes a management key (idempotent).
func (c *Client) RevokeManagementKey(ctx context.Context, s Scope, id string) (wire.ManagementKey, error) {
	return getData[wire.ManagementKey](ctx, c, "POST", s.prefix()+"/management-keys/"+esc(id)+"/revoke", nil, nil)
}

// ListInferenceKeys lists a workspace's inference keys (complete set,
// metadata only).
func (c *Client) ListInferenceKeys(ctx context.Context, org, ws string) ([]wire.InferenceKey, error) {
	return getData[[]wire.InferenceKey](ctx, c, "GET", wsPath(org, ws)+"/inference-keys", nil, nil)
}

// GetInferenceKey is in policies.go, which `gw policies explain` shares.

// CreateInferenceKey issues an inference key; the result carries its token
// once.
func (c *Client) CreateInferenceKey(ctx context.Context, org, ws string, in wire.InferenceKeyCreate) (wire.InferenceKey, error) {
	return getData[wire.InferenceKey](ctx, c, "POST", wsPath(org, ws)+"/inference-keys", nil, in)
}

// UpdateInferenceKey renames an inference key or changes its rate limits.
func (c *Client) UpdateInferenceKey(ctx context.Context, org, ws, id string, in wire.InferenceKeyUpdate) (wire.InferenceKey, error) {
	return getData[wire.InferenceKey](ctx, c, "PATCH", wsPath(org, ws)+"/inference-keys/"+esc(id), nil, in)
}

// RevokeInferenceKey revokes an inference key (idempotent).
func (c *Client) RevokeInferenceKey(ctx context.Context, org, ws, id string) (wire.InferenceKey, error) {
	return getData[wire.InferenceKey](ctx, c, "POST", wsPath(org, ws)+"/inference-keys/"+esc(id)+"/revoke", nil, nil)
}
