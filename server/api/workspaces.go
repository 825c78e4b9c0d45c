package api

import (
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
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
		{Method: "PATCH", Path: orgWS + "/{workspace_ref}/settings", Tag: "Workspace Settings", Summary: "Update workspace settings (name, slug, rate limits)",
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
	var name string
	var slug *string
	if err := r.body(func(o *validate.Object) {
		name = requiredString(o, "name", nameRule)
		slug = readSlug(o)
	}); err != nil {
		return nil, err
	}
	now := store.Now()
	ws := &store.Workspace{ID: uuid.New(), OrgID: r.Org.ID, Name: name, CreatedAt: now, UpdatedAt: now}
	err := retryDerivedSlug(slug, func() error {
		return s.store.InTx(r.ctx, func(tx *store.Store) error {
			var err error
			ws.Slug, err = pickSlug(slug, slugify(name, "workspace"), func(s string) (bool, error) { return tx.WorkspaceSlugTaken(r.ctx, r.Org.ID, s) })
			if err != nil {
				return err
			}
			if err := tx.CreateWorkspace(r.ctx, ws); err != nil {
				return err
			}
			return r.audit(tx, auditEntry{Action: "workspace.created", TargetType: "workspace", TargetID: ws.ID.String(),
				WorkspaceID: &ws.ID, Details: map[string]any{"name": ws.Name, "slug": ws.Slug}})
		})
	})
	if err != nil {
		return nil, slugConflict(err, ws.Slug)
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
	ws := *r.WS
	var name, slug *string
	var limitsIn rateLimitsInput
	if err := r.body(func(o *validate.Object) {
		name = optionalString(o, "name", nameRule)
		slug = readSlug(o)
		limitsIn = readRateLimits(o)
	}); err != nil {
		return nil, err
	}
	before := map[string]any{"name": ws.Name, "slug": ws.Slug, "rate_limits": rateLimitsDetail(ws.RateLimits)}
	if name != nil {
		ws.Name = *name
	}
	if slug != nil {
		ws.Slug = *slug
	}
	// Lowering a workspace's limits below its keys' own is allowed: the
	// keys keep their records and the lower of the two applies
	// (publish computes each key's effective limits; docs/rate-limits.md).
	ws.RateLimits = limitsIn.onto(ws.RateLimits)
	ws.UpdatedAt = store.Now()
	details := map[string]any{"before": before,
		"after": map[string]any{"name": ws.Name, "slug": ws.Slug, "rate_limits": rateLimitsDetail(ws.RateLimits)}}
	err := s.store.InTx(r.ctx, func(tx *store.Store) error {
		if err := tx.UpdateWorkspace(r.ctx, &ws); err != nil {
			return slugConflict(err, ws.Slug)
		}
		return r.audit(tx, auditEntry{Action: "workspace.updated", TargetType: "workspace", TargetID: ws.ID.String(), Details: details})
	})
	if err != nil {
		return nil, err
	}
	return toWorkspace(&ws), nil
}

func (s *Server) deleteWorkspace(r *Request) (any, error) {
	now := store.Now()
	err := s.store.InTx(r.ctx, func(tx *store.Store) error {
		if err := tx.DeleteWorkspace(r.ctx, r.WS.ID); err != nil {
			return err
		}
		return r.audit(tx, auditEntry{Action: "workspace.deleted", TargetType: "workspace", TargetID: r.WS.ID.String(),
			Details: map[string]any{"name": r.WS.Name, "slug": r.WS.Slug}})
	})
	if err != nil {
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
	if err := mayGrant(r, auth.WorkspaceRoleRights(role)); err != nil {
		return nil, err
	}
	var row *store.WorkspaceMemberRow
	err := s.store.InTx(r.ctx, func(tx *store.Store) error {
		m, err := tx.GetMembership(r.ctx, r.Org.ID, userID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && m.Status != auth.MembershipActive) {
			return errorf(http.StatusNotFound, "user %s is not an active member of the organization", userID)
		}
		if err != nil {
			return err
		}
		u, err := tx.GetUser(r.ctx, userID)
		if err != nil {
			return err
		}
		now := store.Now()
		wm := store.WorkspaceMember{WorkspaceID: r.WS.ID, UserID: userID, Role: role, CreatedAt: now, UpdatedAt: now}
		if err := tx.AddWorkspaceMember(r.ctx, &wm); errors.Is(err, store.ErrConflict) {
			return errorf(http.StatusConflict, "user %s is already a member of the workspace", userID)
		} else if err != nil {
			return err
		}
		row = &store.WorkspaceMemberRow{WorkspaceMember: wm, Email: u.Email, Name: u.Name}
		return r.audit(tx, auditEntry{Action: "workspace_member.added", TargetType: "user", TargetID: userID.String(),
			Details: map[string]any{"role": role}})
	})
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
	if err := mayGrant(r, auth.WorkspaceRoleRights(role)); err != nil {
		return nil, err
	}
	var out wire.WorkspaceMember
	err = s.store.InTx(r.ctx, func(tx *store.Store) error {
		if current, err := tx.GetWorkspaceMember(r.ctx, r.WS.ID, userID); err == nil {
			if err := mayGrant(r, auth.WorkspaceRoleRights(current.Role)); err != nil {
				return err
			}
		}
		if err := tx.UpdateWorkspaceMember(r.ctx, r.WS.ID, userID, role, store.Now()); errors.Is(err, store.ErrNotFound) {
			return errorf(http.StatusNotFound, "user %s is not a member of the workspace", userID)
		} else if err != nil {
			return err
		}
		if out, err = s.workspaceMember(tx, r, userID); err != nil {
			return err
		}
		return r.audit(tx, auditEntry{Action: "workspace_member.updated", TargetType: "user", TargetID: userID.String(),
			Details: map[string]any{"role": role}})
	})
	return out, err
}

func (s *Server) workspaceMember(tx *store.Store, r *Request, userID uuid.UUID) (wire.WorkspaceMember, error) {
	wm, err := tx.GetWorkspaceMember(r.ctx, r.WS.ID, userID)
	if err != nil {
		return wire.WorkspaceMember{}, err
	}
	u, err := tx.GetUser(r.ctx, userID)
	if err != nil {
		return wire.WorkspaceMember{}, err
	}
	return toWorkspaceMember(&store.WorkspaceMemberRow{WorkspaceMember: *wm, Email: u.Email, Name: u.Name}), nil
}

func (s *Server) removeWorkspaceMember(r *Request) (any, error) {
	userID, err := r.pathUUID("user_id")
	if err != nil {
		return nil, err
	}
	var out wire.WorkspaceMember
	err = s.store.InTx(r.ctx, func(tx *store.Store) error {
		if out, err = s.workspaceMember(tx, r, userID); errors.Is(err, store.ErrNotFound) {
			return errorf(http.StatusNotFound, "user %s is not a member of the workspace", userID)
		} else if err != nil {
			return err
		}
		if err := mayGrant(r, auth.WorkspaceRoleRights(out.Role)); err != nil {
			return err
		}
		if err := tx.DeleteWorkspaceMember(r.ctx, r.WS.ID, userID); err != nil {
			return err
		}
		return r.audit(tx, auditEntry{Action: "workspace_member.removed", TargetType: "user", TargetID: userID.String()})
	})
	return out, err
}
