package api

import (
	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

const orgWS = "/api/v1/organizations/{org_id}/workspaces"

func (s *Server) workspaceRoutes() []*Route {
	const tag = "Workspaces"
	return []*Route{
		{Method: "POST", Path: orgWS, Tag: tag, Summary: "Create a workspace",
			Perms: []auth.Permission{auth.WorkspacesCreate}, Body: wire.WorkspaceCreate{}, Result: wire.Workspace{}, Handle: s.createWorkspace},
		{Method: "GET", Path: orgWS, Tag: tag, Summary: "List the workspaces the caller can read",
			Perms: []auth.Permission{auth.WorkspacesRead, auth.OrganizationsRead}, AnyPerm: true, NarrowerKeys: true,
			Result: []wire.Workspace{}, Handle: s.listWorkspaces},
		{Method: "GET", Path: orgWS + "/{workspace_ref}", Tag: tag, Summary: "Get a workspace",
			Perms: []auth.Permission{auth.WorkspacesRead}, Result: wire.Workspace{}, Handle: s.getWorkspace},
		{Method: "PATCH", Path: orgWS + "/{workspace_ref}", Tag: tag, Summary: "Update a workspace",
			Perms: []auth.Permission{auth.WorkspacesUpdate}, Body: wire.WorkspaceUpdate{}, Result: wire.Workspace{}, RefreshesBundles: true, Handle: s.updateWorkspace},
		{Method: "DELETE", Path: orgWS + "/{workspace_ref}", Tag: tag, Summary: "Delete a workspace with its memberships, keys and credentials",
			Perms: []auth.Permission{auth.WorkspacesDelete}, Result: wire.Deleted{}, RefreshesBundles: true, Handle: s.deleteWorkspace},

		{Method: "GET", Path: orgWS + "/{workspace_ref}/settings", Tag: "Workspace Settings", Summary: "Get workspace settings",
			Perms: []auth.Permission{auth.WorkspacesRead}, Result: wire.Workspace{}, Handle: s.getWorkspace},
		{Method: "PATCH", Path: orgWS + "/{workspace_ref}/settings", Tag: "Workspace Settings", Summary: "Update workspace settings (name, slug, rate limits, required tags, tag values)",
			Perms: []auth.Permission{auth.WorkspacesUpdate}, Body: wire.WorkspaceUpdate{}, Result: wire.Workspace{}, RefreshesBundles: true, Handle: s.updateWorkspace},

		{Method: "GET", Path: orgWS + "/{workspace_ref}/members", Tag: "Workspace Members", Summary: "List workspace members",
			Perms: []auth.Permission{auth.MembersRead}, Result: []wire.WorkspaceMember{}, Handle: s.listWorkspaceMembers},
		{Method: "GET", Path: orgWS + "/{workspace_ref}/members/candidates", Tag: "Workspace Members", Summary: "List organization members who could join the workspace",
			Perms: []auth.Permission{auth.MembersRead}, Result: []wire.Candidate{}, Handle: s.listWorkspaceCandidates},
		{Method: "POST", Path: orgWS + "/{workspace_ref}/members", Tag: "Workspace Members", Summary: "Add an organization member to the workspace",
			Perms: []auth.Permission{auth.MembersManage}, Body: wire.WorkspaceMemberAdd{}, Result: wire.WorkspaceMember{}, Handle: s.addWorkspaceMember},
		{Method: "PATCH", Path: orgWS + "/{workspace_ref}/members/{user_id}", Tag: "Workspace Members", Summary: "Change a workspace member's role",
			Perms: []auth.Permission{auth.MembersManage}, Body: wire.WorkspaceMemberUpdate{}, Result: wire.WorkspaceMember{}, Handle: s.updateWorkspaceMember},
		{Method: "DELETE", Path: orgWS + "/{workspace_ref}/members/{user_id}", Tag: "Workspace Members", Summary: "Remove a member from the workspace",
			Perms: []auth.Permission{auth.MembersManage}, Result: wire.WorkspaceMember{}, Handle: s.removeWorkspaceMember},
	}
}

func (s *Server) createWorkspace(r *Request) (any, error) {
	in := backend.WorkspaceCreate{OrgID: r.Org.ID}
	if err := r.body(func(o *validate.Object) {
		in.Name = requiredString(o, "name", nameRule)
		in.Slug = readSlug(o)
	}); err != nil {
		return nil, err
	}
	ws, err := backend.CreateWorkspace(r.ctx, s.store, r.actor(), in)
	if err != nil {
		return nil, err
	}
	return toWorkspace(ws), nil
}

// listWorkspaces lists what the caller can read (spec 4.8): everything for
// organization owners and admins (and instance staff), the caller's own
// workspaces for members and viewers, and just its workspace for a key
// scoped to one.
func (s *Server) listWorkspaces(r *Request) (any, error) {
	f := store.WorkspaceFilter{OrgID: r.Org.ID}
	ks := r.P.KeyScope()
	if ks.Level == auth.LevelWorkspace {
		f.OnlyID = &ks.WorkspaceID
	}
	if !s.seesAllWorkspaces(r) {
		f.MemberID = &r.P.User.ID
	}
	wss, err := s.store.ListWorkspaces(r.ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]wire.Workspace, len(wss))
	for i := range wss {
		out[i] = toWorkspace(&wss[i])
	}
	return out, nil
}

// seesAllWorkspaces reports whether the caller's roles reach every workspace
// of the request's organization.
func (s *Server) seesAllWorkspaces(r *Request) bool {
	if auth.InstanceRoleRights(r.P.User.InstanceRole).Has(auth.WorkspacesRead) {
		return true
	}
	m, err := s.store.GetMembership(r.ctx, r.Org.ID, r.P.User.ID)
	return err == nil && m.Status == auth.MembershipActive && auth.OrgRoleCoversWorkspaces(m.Role)
}

func (s *Server) getWorkspace(r *Request) (any, error) {
	return toWorkspace(r.WS), nil
}

func (s *Server) updateWorkspace(r *Request) (any, error) {
	policy, err := s.egressPolicy(r.ctx)
	if err != nil {
		return nil, err
	}
	var in backend.WorkspaceUpdate
	var arch **archiveIn
	if err := r.body(func(o *validate.Object) {
		in.Name = optionalString(o, "name", nameRule)
		in.Slug = readSlug(o)
		in.Limits = readRateLimits(o).onto
		in.RequiredTags = readRequiredTags(o)
		in.TagValues = readTagValues(o)
		readMCPSettings(o, &in)
		arch = readArchive(r.ctx, policy, o)
		in.ResponseCache = readResponseCache(o)
		in.PromptCache = readPromptCache(o)
	}); err != nil {
		return nil, err
	}
	var warning string
	if arch != nil {
		var a *store.Archive
		if *arch != nil {
			if a, err = s.sealArchive(r.WS, *arch); err != nil {
				return nil, err
			}
			warning = s.archiveWarning(r.ctx, policy, r.WS, a)
		}
		in.Archive = &a
	}
	ws, err := backend.UpdateWorkspace(r.ctx, s.store, r.actor(), *r.WS, in)
	if err != nil {
		return nil, err
	}
	if arch != nil {
		if ws.ArchiveCheck, err = s.recordArchiveCheck(r.ctx, ws, warning); err != nil {
			return nil, err
		}
	}
	out := toWorkspace(ws)
	if warning != "" {
		out.Warnings = []string{warning}
	}
	return out, nil
}

func (s *Server) deleteWorkspace(r *Request) (any, error) {
	now := store.Now()
	if err := backend.DeleteWorkspace(r.ctx, s.store, r.actor(), r.WS); err != nil {
		return nil, err
	}
	return wire.Deleted{ID: r.WS.ID, DeletedAt: now}, nil
}

func toWorkspaceMember(m *store.WorkspaceMemberRow) wire.WorkspaceMember {
	return wire.WorkspaceMember{WorkspaceID: m.WorkspaceID, UserID: m.UserID, Email: m.Email, Name: m.Name,
		Role: m.Role, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}
}

func (s *Server) listWorkspaceMembers(r *Request) (any, error) {
	rows, err := s.store.ListWorkspaceMembers(r.ctx, r.WS.ID)
	if err != nil {
		return nil, err
	}
	out := make([]wire.WorkspaceMember, len(rows))
	for i := range rows {
		out[i] = toWorkspaceMember(&rows[i])
	}
	return out, nil
}

func (s *Server) listWorkspaceCandidates(r *Request) (any, error) {
	rows, err := s.store.WorkspaceCandidates(r.ctx, r.Org.ID, r.WS.ID)
	if err != nil {
		return nil, err
	}
	out := make([]wire.Candidate, len(rows))
	for i, m := range rows {
		out[i] = wire.Candidate{UserID: m.UserID, Email: m.Email, Name: m.Name}
	}
	return out, nil
}

func (s *Server) addWorkspaceMember(r *Request) (any, error) {
	var userID uuid.UUID
	var role string
	if err := r.body(func(o *validate.Object) {
		if v, ok := o.Require("user_id"); ok {
			userID, _ = validate.UUID(v, o.Loc().With("user_id"), o.Errors())
		}
		role = requiredLiteral(o, "role", auth.WorkspaceRoles)
	}); err != nil {
		return nil, err
	}
	row, err := backend.AddWorkspaceMember(r.ctx, s.store, r.actor(), r.WS, userID, role)
	if err != nil {
		return nil, err
	}
	return toWorkspaceMember(row), nil
}

func (s *Server) updateWorkspaceMember(r *Request) (any, error) {
	userID, err := r.pathUUID("user_id")
	if err != nil {
		return nil, err
	}
	var role string
	if err := r.body(func(o *validate.Object) {
		role = requiredLiteral(o, "role", auth.WorkspaceRoles)
	}); err != nil {
		return nil, err
	}
	row, err := backend.UpdateWorkspaceMember(r.ctx, s.store, r.actor(), r.WS, userID, role)
	if err != nil {
		return nil, err
	}
	return toWorkspaceMember(row), nil
}

func (s *Server) removeWorkspaceMember(r *Request) (any, error) {
	userID, err := r.pathUUID("user_id")
	if err != nil {
		return nil, err
	}
	row, err := backend.RemoveWorkspaceMember(r.ctx, s.store, r.actor(), r.WS, userID)
	if err != nil {
		return nil, err
	}
	return toWorkspaceMember(row), nil
}
