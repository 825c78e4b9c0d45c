package auth

// Roles map to fixed permission sets. This table is the single source of
// truth; docs/permissions.md mirrors it and a test keeps the two equal.
//
// How rights combine: an instance owner or admin holds every permission at
// every scope. An organization owner or admin holds their set at the
// organization and in all its workspaces. Organization members and viewers
// hold their (small) set at the organization only; inside a workspace they
// hold what their workspace role grants, and see nothing of workspaces they
// do not belong to. A management key narrows all of this to its ceiling.

// Instance roles.
const (
	InstanceOwner  = "owner"
	InstanceAdmin  = "admin"
	InstanceMember = "member"
)

// Organization roles.
const (
	OrgOwner  = "owner"
	OrgAdmin  = "admin"
	OrgMember = "member"
	OrgViewer = "viewer"
)

// Workspace roles.
const (
	WorkspaceAdmin  = "admin"
	WorkspaceMember = "member"
	WorkspaceViewer = "viewer"
)

// Membership statuses.
const (
	MembershipActive    = "active"
	MembershipInvited   = "invited"
	MembershipSuspended = "suspended"
)

// InstanceRoles, OrgRoles and WorkspaceRoles list the valid role names.
var (
	InstanceRoles  = []string{InstanceOwner, InstanceAdmin, InstanceMember}
	OrgRoles       = []string{OrgOwner, OrgAdmin, OrgMember, OrgViewer}
	WorkspaceRoles = []string{WorkspaceAdmin, WorkspaceMember, WorkspaceViewer}
)

var (
	workspaceViewerSet = NewSet(
		WorkspacesRead, MembersRead, CatalogRead, ProviderCredentialsRead,
		InferenceKeysRead, PoliciesRead, UsageRead,
	)
	workspaceMemberSet = workspaceViewerSet.Union(NewSet(
		InferenceKeysManage, PlaygroundExecute,
		ManagementKeysRead, ManagementKeysIssue, ManagementKeysRevoke,
	))
	workspaceAdminSet = workspaceMemberSet.Union(NewSet(
		WorkspacesUpdate, MembersManage, ProviderCredentialsManage, PoliciesManage, AuditRead,
	))

	orgViewerSet = NewSet(OrganizationsRead, MembersRead, WorkspacesRead, CatalogRead)
	orgMemberSet = orgViewerSet.Union(NewSet(ManagementKeysRead, ManagementKeysIssue, ManagementKeysRevoke))
	// Creating organizations and managing the shared catalog are instance
	// matters; everything else an owner may do in their organization.
	orgOwnerSet = NewSet(All...).Intersect(complement(OrganizationsCreate, CatalogManage))
	orgAdminSet = orgOwnerSet.Intersect(complement(OrganizationsDelete))

	allSet = NewSet(All...)
)

func complement(ps ...Permission) Set {
	out := NewSet(All...)
	for _, p := range ps {
		delete(out, p)
	}
	return out
}

// InstanceRoleRights is what an instance role grants everywhere.
func InstanceRoleRights(role string) Set {
	switch role {
	case InstanceOwner, InstanceAdmin:
		return allSet
	default:
		return Set{}
	}
}

// OrgRoleRights is what an organization role grants at the organization.
func OrgRoleRights(role string) Set {
	switch role {
	case OrgOwner:
		return orgOwnerSet
	case OrgAdmin:
		return orgAdminSet
	case OrgMember:
		return orgMemberSet
	case OrgViewer:
		return orgViewerSet
	default:
		return Set{}
	}
}

// OrgRoleCoversWorkspaces reports whether an organization role's rights
// reach into every workspace of the organization.
func OrgRoleCoversWorkspaces(role string) bool {
	return role == OrgOwner || role == OrgAdmin
}

// WorkspaceRoleRights is what a workspace role grants in its workspace.
func WorkspaceRoleRights(role string) Set {
	switch role {
	case WorkspaceAdmin:
		return workspaceAdminSet
	case WorkspaceMember:
		return workspaceMemberSet
	case WorkspaceViewer:
		return workspaceViewerSet
	default:
		return Set{}
	}
}

// RoleFacts are a principal's roles as seen from one target scope.
type RoleFacts struct {
	InstanceRole  string
	OrgRole       string // "" when not an active member of the organization
	WorkspaceRole string // "" when not a member of the workspace (or no workspace)
}

// Level is where a request acts: the instance, an organization, or a
// workspace inside one.
type Level int

// The scope levels, widest first.
const (
	LevelInstance Level = iota
	LevelOrganization
	LevelWorkspace
)

// RoleRights combines a principal's roles into the rights they hold at a
// target of the given level.
func RoleRights(f RoleFacts, level Level) Set {
	rights := InstanceRoleRights(f.InstanceRole)
	if level == LevelInstance {
		return rights
	}
	if f.OrgRole != "" {
		if level == LevelOrganization || OrgRoleCoversWorkspaces(f.OrgRole) {
			rights = rights.Union(OrgRoleRights(f.OrgRole))
		}
	}
	if level == LevelWorkspace && f.WorkspaceRole != "" {
		rights = rights.Union(WorkspaceRoleRights(f.WorkspaceRole))
	}
	return rights
}
