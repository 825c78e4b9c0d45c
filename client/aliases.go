package client

import (
	"context"

	"github.com/gw-gateway/gw/wire"
)

// The model alias endpoints. ws "" names the organization's aliases,
// otherwise the workspace's.

func aliasesPath(org, ws string) string {
	if ws == "" {
		return orgPath(org) + "/model-aliases"
	}
	return wsPath(org, ws) + "/model-aliases"
}

// ListModelAliases returns every alias defined at the level.
func (c *Client) ListModelAliases(ctx context.Context, org, ws string) ([]wire.ModelAlias, error) {
	return getData[[]wire.ModelAlias](ctx, c, "GET", aliasesPath(org, ws), nil, nil)
}

// GetModelAlias returns one alias by name.
func (c *Client) GetModelAlias(ctx context.Context, org, ws, name string) (wire.ModelAlias, error) {
	return getData[wire.ModelAlias](ctx, c, "GET", aliasesPath(org, ws)+"/"+esc(name), nil, nil)
}

// CreateModelAlias creates an alias.
func (c *Client) CreateModelAlias(ctx context.Context, org, ws string, in wire.ModelAliasCreate) (wire.ModelAlias, error) {
	return getData[wire.ModelAlias](ctx, c, "POST", aliasesPath(org, ws), nil, in)
}

// UpdateModelAlias replaces an alias's targets.
func (c *Client) UpdateModelAlias(ctx context.Context, org, ws, name string, in wire.ModelAliasUpdate) (wire.ModelAlias, error) {
	return getData[wire.ModelAlias](ctx, c, "PATCH", aliasesPath(org, ws)+"/"+esc(name), nil, in)
}

// DeleteModelAlias deletes an alias.
func (c *Client) DeleteModelAlias(ctx context.Context, org, ws, name string) (wire.Deleted, error) {
	return getData[wire.Deleted](ctx, c, "DELETE", aliasesPath(org, ws)+"/"+esc(name), nil, nil)
}
