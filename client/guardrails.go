package client

import (
	"context"

	"github.com/gw-gateway/gw/wire"
)

// Guardrails (issue 32) live at an organization (applying to every
// workspace) or at a workspace: s is OrgScope or WorkspaceScope.

// ListGuardrails lists the guardrails defined at s (the complete set).
func (c *Client) ListGuardrails(ctx context.Context, s Scope) ([]wire.Guardrail, error) {
	return getData[[]wire.Guardrail](ctx, c, "GET", s.prefix()+"/guardrails", nil, nil)
}

// GetGuardrail reads one guardrail by id.
func (c *Client) GetGuardrail(ctx context.Context, s Scope, id string) (wire.Guardrail, error) {
	return getData[wire.Guardrail](ctx, c, "GET", s.prefix()+"/guardrails/"+esc(id), nil, nil)
}

// CreateGuardrail creates a guardrail at s.
func (c *Client) CreateGuardrail(ctx context.Context, s Scope, in wire.GuardrailCreate) (wire.Guardrail, error) {
	return getData[wire.Guardrail](ctx, c, "POST", s.prefix()+"/guardrails", nil, in)
}

// UpdateGuardrail changes the members in gives.
func (c *Client) UpdateGuardrail(ctx context.Context, s Scope, id string, in wire.GuardrailUpdate) (wire.Guardrail, error) {
	return getData[wire.Guardrail](ctx, c, "PATCH", s.prefix()+"/guardrails/"+esc(id), nil, in)
}

// DeleteGuardrail deletes a guardrail.
func (c *Client) DeleteGuardrail(ctx context.Context, s Scope, id string) (wire.Deleted, error) {
	return getData[wire.Deleted](ctx, c, "DELETE", s.prefix()+"/guardrails/"+esc(id), nil, nil)
}
