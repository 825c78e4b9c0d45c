package client

import (
	"context"

	"github.com/gw-gateway/gw/wire"
)

// The workspace policy endpoints, and GetInferenceKey, which `gw policies
// explain` needs for a key's owner. The catalog and the credential lists it
// also reads are GetCatalog and ListCredentials (gateway.go).

func policyPath(org, ws, id string) string {
	return wsPath(org, ws) + "/policies/" + esc(id)
}

// ListPolicies returns every policy of the workspace (a complete set, not
// paginated).
func (c *Client) ListPolicies(ctx context.Context, org, ws string) ([]wire.Policy, error) {
	return getData[[]wire.Policy](ctx, c, "GET", wsPath(org, ws)+"/policies", nil, nil)
}

// GetPolicy returns one policy by id.
func (c *Client) GetPolicy(ctx context.Context, org, ws, id string) (wire.Policy, error) {
	return getData[wire.Policy](ctx, c, "GET", policyPath(org, ws, id), nil, nil)
}

// CreatePolicy creates a policy in the workspace.
func (c *Client) CreatePolicy(ctx context.Context, org, ws string, in wire.PolicyCreate) (wire.Policy, error) {
	return getData[wire.Policy](ctx, c, "POST", wsPath(org, ws)+"/policies", nil, in)
}

// UpdatePolicy changes the members of in that are set.
func (c *Client) UpdatePolicy(ctx context.Context, org, ws, id string, in wire.PolicyUpdate) (wire.Policy, error) {
	return getData[wire.Policy](ctx, c, "PATCH", policyPath(org, ws, id), nil, in)
}

// DeletePolicy deletes a policy.
func (c *Client) DeletePolicy(ctx context.Context, org, ws, id string) (wire.Deleted, error) {
	return getData[wire.Deleted](ctx, c, "DELETE", policyPath(org, ws, id), nil, nil)
}

// EnablePolicy enables a policy; enabling an enabled one changes nothing.
func (c *Client) EnablePolicy(ctx context.Context, org, ws, id string) (wire.Policy, error) {
	return getData[wire.Policy](ctx, c, "POST", policyPath(org, ws, id)+"/enable", nil, nil)
}

// DisablePolicy disables a policy; disabling a disabled one changes nothing.
func (c *Client) DisablePolicy(ctx context.Context, org, ws, id string) (wire.Policy, error) {
	return getData[wire.Policy](ctx, c, "POST", policyPath(org, ws, id)+"/disable", nil, nil)
}

// GetInferenceKey returns an inference key's metadata, its owner included.
func (c *Client) GetInferenceKey(ctx context.Context, org, ws, id string) (wire.InferenceKey, error) {
	return getData[wire.InferenceKey](ctx, c, "GET", wsPath(org, ws)+"/inference-keys/"+esc(id), nil, nil)
}

// CreateTagBudget makes a budget for the workspace's keys carrying a tag.
func (c *Client) CreateTagBudget(ctx context.Context, org, ws string, in wire.TagBudgetCreate) (wire.TagBudget, error) {
	return getData[wire.TagBudget](ctx, c, "POST", wsPath(org, ws)+"/tag-budgets", nil, in)
}

// ListTagBudgets lists the workspace's tag budgets.
func (c *Client) ListTagBudgets(ctx context.Context, org, ws string) ([]wire.TagBudget, error) {
	return getData[[]wire.TagBudget](ctx, c, "GET", wsPath(org, ws)+"/tag-budgets", nil, nil)
}
