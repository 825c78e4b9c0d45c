package client

import (
	"context"
	"net/url"
	"strconv"

	"github.com/gw-gateway/gw/wire"
)

// BootstrapStatus says whether the instance has an owner.
func (c *Client) BootstrapStatus(ctx context.Context) (wire.BootstrapStatus, error) {
	return getData[wire.BootstrapStatus](ctx, c, "GET", "/api/v1/bootstrap", nil, nil)
}

// Bootstrap creates the first owner with the setup token.
func (c *Client) Bootstrap(ctx context.Context, in wire.Bootstrap) (wire.BootstrapResult, error) {
	return getData[wire.BootstrapResult](ctx, c, "POST", "/api/v1/bootstrap", nil, in)
}

// Me describes the caller.
func (c *Client) Me(ctx context.Context) (wire.Me, error) {
	return getData[wire.Me](ctx, c, "GET", "/api/v1/auth/me", nil, nil)
}

// ListOrganizations returns one page of the caller's organizations.
func (c *Client) ListOrganizations(ctx context.Context, limit int, cursor string) (wire.Page[wire.Organization], error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var p wire.Page[wire.Organization]
	err := c.do(ctx, "GET", "/api/v1/organizations", q, nil, &p)
	return p, err
}

// CreateOrganization creates an organization.
func (c *Client) CreateOrganization(ctx context.Context, in wire.OrganizationCreate) (wire.Organization, error) {
	return getData[wire.Organization](ctx, c, "POST", "/api/v1/organizations", nil, in)
}

// ListWorkspaces lists the workspaces of org the caller can read.
func (c *Client) ListWorkspaces(ctx context.Context, org string) ([]wire.Workspace, error) {
	return getData[[]wire.Workspace](ctx, c, "GET", "/api/v1/organizations/"+esc(org)+"/workspaces", nil, nil)
}

// CreateWorkspace creates a workspace in org.
func (c *Client) CreateWorkspace(ctx context.Context, org string, in wire.WorkspaceCreate) (wire.Workspace, error) {
	return getData[wire.Workspace](ctx, c, "POST", "/api/v1/organizations/"+esc(org)+"/workspaces", nil, in)
}

// DeleteWorkspace deletes a workspace.
func (c *Client) DeleteWorkspace(ctx context.Context, org, ws string) (wire.Deleted, error) {
	return getData[wire.Deleted](ctx, c, "DELETE", "/api/v1/organizations/"+esc(org)+"/workspaces/"+esc(ws), nil, nil)
}

// CreateOrgKey issues an organization-scope management key.
func (c *Client) CreateOrgKey(ctx context.Context, org string, in wire.ManagementKeyCreate) (wire.ManagementKey, error) {
	return getData[wire.ManagementKey](ctx, c, "POST", "/api/v1/organizations/"+esc(org)+"/management-keys", nil, in)
}
