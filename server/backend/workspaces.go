package backend

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
)

// WorkspaceCreate is a new workspace of an organization; a nil Slug is
// derived from the name (acme-labs, then acme-labs-2, …).
type WorkspaceCreate struct {
	OrgID uuid.UUID
	Name  string
	Slug  *string
}

// CreateWorkspace creates a workspace and audits it.
func CreateWorkspace(ctx context.Context, st *store.Store, actor Actor, in WorkspaceCreate) (*store.Workspace, error) {
	now := store.Now()
	ws := &store.Workspace{ID: uuid.New(), OrgID: in.OrgID, Name: in.Name, CreatedAt: now, UpdatedAt: now}
	err := retryDerivedSlug(in.Slug, func() error {
		return st.InTx(ctx, func(tx *store.Store) error {
			var err error
			ws.Slug, err = pickSlug(in.Slug, Slugify(in.Name, "workspace"), func(s string) (bool, error) { return tx.WorkspaceSlugTaken(ctx, in.OrgID, s) })
			if err != nil {
				return err
			}
			if err := tx.CreateWorkspace(ctx, ws); err != nil {
				return err
			}
			return Audit(ctx, tx, actor, AuditEntry{Action: "workspace.created", TargetType: "workspace", TargetID: ws.ID.String(),
				OrgID: &ws.OrgID, WorkspaceID: &ws.ID, Details: map[string]any{"name": ws.Name, "slug": ws.Slug}})
		})
	})
	if err != nil {
		return nil, slugConflict(err, ws.Slug)
	}
	return ws, nil
}

// WorkspaceUpdate changes what is set of a workspace's name, slug and rate
// limits; Limits applies its changes to the current limits.
type WorkspaceUpdate struct {
	Name, Slug *string
	Limits     func(store.RateLimits) store.RateLimits
	// RequiredTags, when set, replaces the tag keys every request must
	// carry (empty: none).
	RequiredTags *[]string
	// TagValues, when set, replaces the values a request header may give
	// each tag key (empty: no restriction).
	TagValues *map[string][]string
	// MCPDefault, when set, is the workspace's mcp_default ("deny" or
	// "allow"); MCPAuditArguments its mcp_audit_arguments.
	MCPDefault        *string
	MCPAuditArguments *bool
	// Archive, when set, replaces the payload archive (*Archive nil:
	// none); its secret is sealed already.
	Archive **store.Archive
	// ResponseCache, when set, replaces the response cache setting
	// (*ResponseCache nil: none).
	ResponseCache **store.ResponseCache
	// PromptCache, when set, replaces the prompt-cache setting
	// (*PromptCache nil: none).
	PromptCache **store.PromptCache
}

// archiveDetail is what the audit log records of an archive setting:
// never its secret.
func archiveDetail(a *store.Archive) map[string]any {
	if a == nil {
		return nil
	}
	return map[string]any{"enabled": a.Enabled, "endpoint": a.Endpoint, "region": a.Region, "bucket": a.Bucket, "prefix": a.Prefix,
		"path_style": a.PathStyle, "access_key_id": a.AccessKeyID, "retention_days": a.RetentionDays, "include": a.Include}
}

// workspaceDetail is what the audit log records of a workspace's settings.
func workspaceDetail(ws *store.Workspace) map[string]any {
	return map[string]any{"name": ws.Name, "slug": ws.Slug, "rate_limits": RateLimitsDetail(ws.RateLimits),
		"required_tags": []string(ws.RequiredTags), "tag_values": map[string][]string(ws.TagValues),
		"mcp_default": WorkspaceMCPDefault(ws), "mcp_audit_arguments": ws.MCPAuditArguments != nil && *ws.MCPAuditArguments, "archive": archiveDetail(ws.Archive),
		"response_cache": ws.ResponseCache, "prompt_cache": ws.PromptCache}
}

// UpdateWorkspace applies in to ws and audits the change, before and after.
// Lowering a workspace's limits below its keys' own is allowed: the keys
// keep their records and the lower of the two applies (publish computes
// each key's effective limits; docs/rate-limits.md).
func UpdateWorkspace(ctx context.Context, st *store.Store, actor Actor, ws store.Workspace, in WorkspaceUpdate) (*store.Workspace, error) {
	before := workspaceDetail(&ws)
	if in.Name != nil {
		ws.Name = *in.Name
	}
	if in.Slug != nil {
		ws.Slug = *in.Slug
	}
	if in.Limits != nil {
		ws.RateLimits = in.Limits(ws.RateLimits)
	}
	if in.RequiredTags != nil {
		ws.RequiredTags = nil
		if len(*in.RequiredTags) > 0 {
			ws.RequiredTags = store.Strings(*in.RequiredTags)
		}
	}
	if in.TagValues != nil {
		ws.TagValues = nil
		if len(*in.TagValues) > 0 {
			ws.TagValues = store.TagValues(*in.TagValues)
		}
	}
	if in.MCPDefault != nil {
		ws.MCPDefault = nil
		if *in.MCPDefault == "allow" {
			ws.MCPDefault = in.MCPDefault
		}
	}
	if in.MCPAuditArguments != nil {
		ws.MCPAuditArguments = nil
		if *in.MCPAuditArguments {
			ws.MCPAuditArguments = in.MCPAuditArguments
		}
	}
	if in.Archive != nil {
		ws.Archive = *in.Archive
	}
	if in.ResponseCache != nil {
		ws.ResponseCache = *in.ResponseCache
	}
	if in.PromptCache != nil {
		ws.PromptCache = *in.PromptCache
	}
	ws.UpdatedAt = store.Now()
	details := map[string]any{"before": before, "after": workspaceDetail(&ws)}
	err := st.InTx(ctx, func(tx *store.Store) error {
		if err := tx.UpdateWorkspace(ctx, &ws); err != nil {
			return slugConflict(err, ws.Slug)
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "workspace.updated", TargetType: "workspace", TargetID: ws.ID.String(),
			OrgID: &ws.OrgID, WorkspaceID: &ws.ID, Details: details})
	})
	if err != nil {
		return nil, err
	}
	return &ws, nil
}

// DeleteWorkspace deletes a workspace with its memberships, inference keys
// and provider credentials; its usage events remain (spec 3).
func DeleteWorkspace(ctx context.Context, st *store.Store, actor Actor, ws *store.Workspace) error {
	return st.InTx(ctx, func(tx *store.Store) error {
		if err := tx.DeleteWorkspace(ctx, ws.ID); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "workspace.deleted", TargetType: "workspace", TargetID: ws.ID.String(),
			OrgID: &ws.OrgID, WorkspaceID: &ws.ID, Details: map[string]any{"name": ws.Name, "slug": ws.Slug}})
	})
}

// RateLimitsDetail is limits as an audit event records them.
func RateLimitsDetail(l store.RateLimits) map[string]any {
	return map[string]any{"requests_per_minute": l.RPM, "tokens_per_minute": l.TPM}
}

// AddWorkspaceMember places an active member of the workspace's
// organization in it with a role the actor may grant.
func AddWorkspaceMember(ctx context.Context, st *store.Store, actor Actor, ws *store.Workspace, userID uuid.UUID, role string) (*store.WorkspaceMemberRow, error) {
	if err := actor.MayGrant(auth.WorkspaceRoleRights(role)); err != nil {
		return nil, err
	}
	var row *store.WorkspaceMemberRow
	err := st.InTx(ctx, func(tx *store.Store) error {
		m, err := tx.GetMembership(ctx, ws.OrgID, userID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && m.Status != auth.MembershipActive) {
			return errorf(NotFound, "user %s is not an active member of the organization", userID)
		}
		if err != nil {
			return err
		}
		u, err := tx.GetUser(ctx, userID)
		if err != nil {
			return err
		}
		now := store.Now()
		wm := store.WorkspaceMember{WorkspaceID: ws.ID, UserID: userID, Role: role, CreatedAt: now, UpdatedAt: now}
		if err := tx.AddWorkspaceMember(ctx, &wm); errors.Is(err, store.ErrConflict) {
			return errorf(Conflict, "user %s is already a member of the workspace", userID)
		} else if err != nil {
			return err
		}
		row = &store.WorkspaceMemberRow{WorkspaceMember: wm, Email: u.Email, Name: u.Name}
		return Audit(ctx, tx, actor, AuditEntry{Action: "workspace_member.added", TargetType: "user", TargetID: userID.String(),
			OrgID: &ws.OrgID, WorkspaceID: &ws.ID, Details: map[string]any{"role": role}})
	})
	return row, err
}

// UpdateWorkspaceMember changes a member's role; the actor must be able to
// grant both the role the member has and the one it gets.
func UpdateWorkspaceMember(ctx context.Context, st *store.Store, actor Actor, ws *store.Workspace, userID uuid.UUID, role string) (*store.WorkspaceMemberRow, error) {
	if err := actor.MayGrant(auth.WorkspaceRoleRights(role)); err != nil {
		return nil, err
	}
	var row *store.WorkspaceMemberRow
	err := st.InTx(ctx, func(tx *store.Store) error {
		if current, err := tx.GetWorkspaceMember(ctx, ws.ID, userID); err == nil {
			if err := actor.MayGrant(auth.WorkspaceRoleRights(current.Role)); err != nil {
				return err
			}
		}
		if err := tx.UpdateWorkspaceMember(ctx, ws.ID, userID, role, store.Now()); errors.Is(err, store.ErrNotFound) {
			return notWorkspaceMember(userID)
		} else if err != nil {
			return err
		}
		var err error
		if row, err = workspaceMember(ctx, tx, ws.ID, userID); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "workspace_member.updated", TargetType: "user", TargetID: userID.String(),
			OrgID: &ws.OrgID, WorkspaceID: &ws.ID, Details: map[string]any{"role": role}})
	})
	return row, err
}

// RemoveWorkspaceMember takes a member out of the workspace (not out of
// the organization); the actor must be able to grant the member's role.
func RemoveWorkspaceMember(ctx context.Context, st *store.Store, actor Actor, ws *store.Workspace, userID uuid.UUID) (*store.WorkspaceMemberRow, error) {
	var row *store.WorkspaceMemberRow
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if row, err = workspaceMember(ctx, tx, ws.ID, userID); errors.Is(err, store.ErrNotFound) {
			return notWorkspaceMember(userID)
		} else if err != nil {
			return err
		}
		if err := actor.MayGrant(auth.WorkspaceRoleRights(row.Role)); err != nil {
			return err
		}
		if err := tx.DeleteWorkspaceMember(ctx, ws.ID, userID); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "workspace_member.removed", TargetType: "user", TargetID: userID.String(),
			OrgID: &ws.OrgID, WorkspaceID: &ws.ID})
	})
	return row, err
}

func notWorkspaceMember(userID uuid.UUID) error {
	return errorf(NotFound, "user %s is not a member of the workspace", userID)
}

// workspaceMember reads a membership with the member's email and name.
func workspaceMember(ctx context.Context, tx *store.Store, ws, userID uuid.UUID) (*store.WorkspaceMemberRow, error) {
	wm, err := tx.GetWorkspaceMember(ctx, ws, userID)
	if err != nil {
		return nil, err
	}
	u, err := tx.GetUser(ctx, userID)
	if err != nil {
		return nil, err
	}
	return &store.WorkspaceMemberRow{WorkspaceMember: *wm, Email: u.Email, Name: u.Name}, nil
}

// pickSlug is the caller's slug, else the first of derived, derived-2, …
// that is free.
func pickSlug(given *string, derived string, taken func(string) (bool, error)) (string, error) {
	if given != nil {
		return *given, nil
	}
	for i := 1; i <= 50; i++ {
		slug := derived
		if i > 1 {
			slug = fmt.Sprintf("%s-%d", derived, i)
		}
		t, err := taken(slug)
		if err != nil || !t {
			return slug, err
		}
	}
	return "", errorf(Conflict, "could not derive a free slug from the name; give one explicitly")
}

// retryDerivedSlug reruns a create whose derived slug was taken by a
// concurrent create between the lookup and the insert (on PostgreSQL the
// failed insert aborts the transaction, so the whole transaction reruns).
// A slug the caller chose is never retried: its clash is the caller's
// conflict.
func retryDerivedSlug(given *string, create func() error) error {
	err := create()
	for attempt := 0; given == nil && errors.Is(err, store.ErrConflict) && attempt < 10; attempt++ {
		err = create()
	}
	return err
}

// slugConflict names the slug a unique violation was about.
func slugConflict(err error, slug string) error {
	if errors.Is(err, store.ErrConflict) {
		return errorf(Conflict, "slug %q is already taken", slug)
	}
	return err
}

// WorkspaceMCPDefault is the workspace's mcp_default: "allow", or the
// default "deny".
func WorkspaceMCPDefault(ws *store.Workspace) string {
	if ws.MCPDefault != nil && *ws.MCPDefault == "allow" {
		return "allow"
	}
	return "deny"
}
