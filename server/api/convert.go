package api

import (
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/wire"
)

func toOrganization(o *store.Organization) wire.Organization {
	req := []string(o.RequireSSO)
	if req == nil {
		req = []string{}
	}
	return wire.Organization{ID: o.ID, Name: o.Name, Slug: o.Slug, RequireSSO: req, CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt}
}

func toWorkspace(w *store.Workspace) wire.Workspace {
	return wire.Workspace{ID: w.ID, OrgID: w.OrgID, Name: w.Name, Slug: w.Slug, RateLimits: toRateLimits(w.RateLimits),
		RequiredTags: requiredTagsOut(w.RequiredTags), TagValues: tagValuesOut(w.TagValues),
		MCPDefault: backend.WorkspaceMCPDefault(w), MCPAuditArguments: w.MCPAuditArguments != nil && *w.MCPAuditArguments,
		Archive: archiveOut(w.Archive), ArchiveCheck: archiveCheckOut(w),
		ResponseCache: responseCacheOut(w.ResponseCache), PromptCache: promptCacheOut(w.PromptCache),
		CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt}
}

func toUser(u *store.User, orgs []uuid.UUID) wire.User {
	if orgs == nil {
		orgs = []uuid.UUID{}
	}
	return wire.User{
		ID: u.ID, Email: u.Email, Name: u.Name, InstanceRole: u.InstanceRole,
		ServiceAccount: u.ServiceAccount, ManagingOrgID: u.ManagingOrgID, DisabledAt: u.DisabledAt,
		CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt, Orgs: orgs,
	}
}

func toMembership(m *store.Membership) wire.Membership {
	return wire.Membership{UserID: m.UserID, OrgID: m.OrgID, Role: m.Role, Status: m.Status}
}

func toManagementKey(k *store.ManagementKey, now time.Time) wire.ManagementKey {
	sc := wire.KeyScope{Level: wire.ScopeInstance, OrgID: k.OrgID, WorkspaceID: k.WorkspaceID}
	switch {
	case k.WorkspaceID != nil:
		sc.Level = wire.ScopeWorkspace
	case k.OrgID != nil:
		sc.Level = wire.ScopeOrganization
	}
	perms := []string(k.Permissions)
	if perms == nil {
		perms = []string{}
	}
	return wire.ManagementKey{
		ID: k.ID, UserID: k.UserID, OrgID: k.OrgID, WorkspaceID: k.WorkspaceID, ParentID: k.ParentID,
		Prefix: k.Prefix, Permissions: perms, Label: k.Label, ExpiresAt: k.ExpiresAt, RevokedAt: k.RevokedAt,
		CreatedAt: k.CreatedAt, UpdatedAt: k.UpdatedAt, Scope: sc, Status: keyStatus(k, now),
	}
}

func toInvitation(inv *store.Invitation, now time.Time) wire.Invitation {
	return wire.Invitation{
		ID: inv.ID, OrgID: inv.OrgID, Email: inv.Email, Role: inv.Role, Status: backend.InvitationStatus(inv, now),
		InvitedBy: inv.InvitedBy, AcceptedBy: inv.AcceptedBy, ExpiresAt: inv.ExpiresAt,
		AcceptedAt: inv.AcceptedAt, RevokedAt: inv.RevokedAt, CreatedAt: inv.CreatedAt, UpdatedAt: inv.UpdatedAt,
	}
}

func toAuditEvent(e *store.AuditEvent) wire.AuditEvent {
	level := wire.ScopeInstance
	switch {
	case e.WorkspaceID != nil:
		level = wire.ScopeWorkspace
	case e.OrgID != nil:
		level = wire.ScopeOrganization
	}
	details := map[string]any(e.Details)
	if details == nil {
		details = map[string]any{}
	}
	return wire.AuditEvent{
		ID: e.ID, Action: e.Action,
		Actor:     wire.AuditActor{Type: e.ActorType, ID: e.ActorID, KeyID: e.ActorKeyID},
		Target:    wire.AuditTarget{Type: e.TargetType, ID: e.TargetID},
		Scope:     wire.AuditScope{Level: level, OrgID: e.OrgID, WorkspaceID: e.WorkspaceID},
		RequestID: e.RequestID, Details: details, CreatedAt: e.CreatedAt,
	}
}
