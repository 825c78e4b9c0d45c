package client

import (
	"context"

	"github.com/gw-gateway/gw/wire"
)

// GetInstanceSettings reads the instance-wide settings (the egress address
// policy among them).
func (c *Client) GetInstanceSettings(ctx context.Context) (wire.InstanceSettings, error) {
	return getData[wire.InstanceSettings](ctx, c, "GET", "/api/v1/instance/settings", nil, nil)
}

// UpdateInstanceSettings changes what the update names (instance owners
// only).
func (c *Client) UpdateInstanceSettings(ctx context.Context, in wire.InstanceSettingsUpdate) (wire.InstanceSettings, error) {
	return getData[wire.InstanceSettings](ctx, c, "PATCH", "/api/v1/instance/settings", nil, in)
}
