package client

import (
	"context"
	"net/url"
	"strconv"

	"github.com/gw-gateway/gw/wire"
)

// Scope names where a scoped resource lives: the instance (the zero
// value), an organization, or a workspace of one. Management keys, provider
// credentials and activity exist at several scopes under the same path
// suffix, so their methods take a Scope rather than one method per level.
type Scope struct {
	// Org is an organization UUID or slug; empty means the instance.
	Org string
	// Workspace is a workspace UUID or slug; it needs Org.
	Workspace string
}

// InstanceScope is the whole instance.
func InstanceScope() Scope { return Scope{} }

// OrgScope is one organization.
func OrgScope(org string) Scope { return Scope{Org: org} }

// WorkspaceScope is one workspace of an organization.
func WorkspaceScope(org, ws string) Scope { return Scope{Org: org, Workspace: ws} }

// prefix is the URL of the scope, to which a collection name is appended.
func (s Scope) prefix() string {
	switch {
	case s.Org == "":
		return "/api/v1/instance"
	case s.Workspace == "":
		return orgPath(s.Org)
	default:
		return wsPath(s.Org, s.Workspace)
	}
}

func orgPath(org string) string { return "/api/v1/organizations/" + esc(org) }

func wsPath(org, ws string) string { return orgPath(org) + "/workspaces/" + esc(ws) }

func pageQuery(limit int, cursor string) url.Values {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	return q
}

// GetOrganization reads one organization.
func (c *Client) GetOrganization(ctx context.Context, org string) (wire.Organization, error) {
	return getData[wire.Organization](ctx, c, "GET", orgPath(org), nil, nil)
}

// UpdateOrganization changes an organization's name or slug.
func (c *Client) UpdateOrganization(ctx context.Context, org string, in wire.OrganizationUpdate) (wire.Organization, error) {
	return getData[wire.Organization](ctx, c, "PATCH", orgPath(org), nil, in)
}

// DeleteOrganization deletes an organization with everything in it.
func (c *Client) DeleteOrganization(ctx context.Context, org string) (wire.Deleted, error) {
	return getData[wire.Deleted](ctx, c, "DELETE", orgPath(org), nil, nil)
}

// GetWorkspace reads one workspace.
func (c *Client) GetWorkspace(ctx context.Context, org, ws string) (wire.Workspace, error) {
	return getData[wire.Workspace](ctx, c, "GET", wsPath(org, ws), nil, nil)
}

// GetWorkspaceSettings reads a workspace's settings (the workspace record,
// rate limits included).
func (c *Client) GetWorkspaceSettings(ctx context.Context, org, ws string) (wire.Workspace, error) {
	return getData[wire.Workspace](ctx, c, "GET", wsPath(org, ws)+"/settings", nil, nil)
}

// UpdateWorkspaceSettings changes a workspace's name, slug or rate limits.
func (c *Client) UpdateWorkspaceSettings(ctx context.Context, org, ws string, in wire.WorkspaceUpdate) (wire.Workspace, error) {
	return getData[wire.Workspace](ctx, c, "PATCH", wsPath(org, ws)+"/settings", nil, in)
}

// UpdateWorkspace changes a workspace's name, slug or rate limits.
func (c *Client) UpdateWorkspace(ctx context.Context, org, ws string, in wire.WorkspaceUpdate) (wire.Workspace, error) {
	return getData[wire.Workspace](ctx, c, "PATCH", wsPath(org, ws), nil, in)
}

// ListMembers lists an organization's members (complete set).
func (c *Client) ListMembers(ctx context.Context, org string) ([]wire.Member, error) {
	return getData[[]wire.Member](ctx, c, "GET", orgPath(org)+"/members", nil, nil)
}

// AddMember adds an existing user to an organization.
func (c *Client) AddMember(ctx context.Context, org string, in wire.MemberAdd) (wire.Member, error) {
	return getData[wire.Member](ctx, c, "POST", orgPath(org)+"/members", nil, in)
}

// UpdateMember changes a member's role or status.
func (c *Client) UpdateMember(ctx context.Context, org, userID string, in wire.MemberUpdate) (wire.Member, error) {
	return getData[wire.Member](ctx, c, "PATCH", orgPath(org)+"/members/"+esc(userID), nil, in)
}

// RemoveMember removes a member; the server revokes their keys in the
// organization.
func (c *Client) RemoveMember(ctx context.Context, org, userID string) (wire.Member, error) {
	return getData[wire.Member](ctx, c, "DELETE", orgPath(org)+"/members/"+esc(userID), nil, nil)
}

// ListWorkspaceMembers lists a workspace's members (complete set).
func (c *Client) ListWorkspaceMembers(ctx context.Context, org, ws string) ([]wire.WorkspaceMember, error) {
	return getData[[]wire.WorkspaceMember](ctx, c, "GET", wsPath(org, ws)+"/members", nil, nil)
}

// AddWorkspaceMember adds an organization member to a workspace.
func (c *Client) AddWorkspaceMember(ctx context.Context, org, ws string, in wire.WorkspaceMemberAdd) (wire.WorkspaceMember, error) {
	return getData[wire.WorkspaceMember](ctx, c, "POST", wsPath(org, ws)+"/members", nil, in)
}

// UpdateWorkspaceMember changes a workspace member's role.
func (c *Client) UpdateWorkspaceMember(ctx context.Context, org, ws, userID string, in wire.WorkspaceMemberUpdate) (wire.WorkspaceMember, error) {
	return getData[wire.WorkspaceMember](ctx, c, "PATCH", wsPath(org, ws)+"/members/"+esc(userID), nil, in)
}

// RemoveWorkspaceMember removes a member from a workspace (not from the
// organization).
func (c *Client) RemoveWorkspaceMember(ctx context.Context, org, ws, userID string) (wire.WorkspaceMember, error) {
	return getData[wire.WorkspaceMember](ctx, c, "DELETE", wsPath(org, ws)+"/members/"+esc(userID), nil, nil)
}

// ListInvitations lists an organization's invitations, without tokens.
func (c *Client) ListInvitations(ctx context.Context, org string) ([]wire.Invitation, error) {
	return getData[[]wire.Invitation](ctx, c, "GET", orgPath(org)+"/invitations", nil, nil)
}

// CreateInvitation issues an invitation; the result carries its token once.
func (c *Client) CreateInvitation(ctx context.Context, org string, in wire.InvitationCreate) (wire.Invitation, error) {
	return getData[wire.Invitation](ctx, c, "POST", orgPath(org)+"/invitations", nil, in)
}

// ReissueInvitation replaces an invitation's token and expiry; the result
// carries the new token once and the old one stops working.
func (c *Client) ReissueInvitation(ctx context.Context, org, id string) (wire.Invitation, error) {
	return getData[wire.Invitation](ctx, c, "POST", orgPath(org)+"/invitations/"+esc(id)+"/reissue", nil, nil)
}

// RevokeInvitation revokes an invitation (idempotent).
func (c *Client) RevokeInvitation(ctx context.Context, org, id string) (wire.Invitation, error) {
	return getData[wire.Invitation](ctx, c, "POST", orgPath(org)+"/invitations/"+esc(id)+"/revoke", nil, nil)
}

// AcceptInvitation redeems an invitation token: as the caller when the
// client has a credential, otherwise creating the account with
// in.Password.
func (c *Client) AcceptInvitation(ctx context.Context, in wire.InvitationAccept) (wire.InvitationAccepted, error) {
	return getData[wire.InvitationAccepted](ctx, c, "POST", "/api/v1/invitations/accept", nil, in)
}

// ListServiceAccounts lists an organization's service accounts.
func (c *Client) ListServiceAccounts(ctx context.Context, org string) ([]wire.User, error) {
	return getData[[]wire.User](ctx, c, "GET", orgPath(org)+"/service-accounts", nil, nil)
}

// GetServiceAccount reads one service account.
func (c *Client) GetServiceAccount(ctx context.Context, org, id string) (wire.User, error) {
	return getData[wire.User](ctx, c, "GET", orgPath(org)+"/service-accounts/"+esc(id), nil, nil)
}

// CreateServiceAccount creates a service account with its first management
// key, whose token the result carries once.
func (c *Client) CreateServiceAccount(ctx context.Context, org string, in wire.ServiceAccountCreate) (wire.ServiceAccountBundle, error) {
	return getData[wire.ServiceAccountBundle](ctx, c, "POST", orgPath(org)+"/service-accounts", nil, in)
}

// DeleteServiceAccount deletes a service account and revokes its keys.
func (c *Client) DeleteServiceAccount(ctx context.Context, org, id string) (wire.Deleted, error) {
	return getData[wire.Deleted](ctx, c, "DELETE", orgPath(org)+"/service-accounts/"+esc(id), nil, nil)
}

// ListUsers lists the instance's users and service accounts (instance
// scope, principals.read).
func (c *Client) ListUsers(ctx context.Context) ([]wire.User, error) {
	return getData[[]wire.User](ctx, c, "GET", "/api/v1/instance/users", nil, nil)
}

// ListActivity returns one page of audit events, newest first, at the
// instance or an organization (a workspace scope is not a collection of
// its own).
func (c *Client) ListActivity(ctx context.Context, s Scope, limit int, cursor string) (wire.Page[wire.AuditEvent], error) {
	s.Workspace = ""
	var p wire.Page[wire.AuditEvent]
	err := c.do(ctx, "GET", s.prefix()+"/activity", pageQuery(limit, cursor), nil, &p)
	return p, err
}
