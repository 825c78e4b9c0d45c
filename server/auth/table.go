package auth

import "strings"

// RoleTableMarkdown renders the role table as docs/permissions.md shows it:
// one row per permission, one column per role.
func RoleTableMarkdown() string {
	type col struct {
		name string
		set  Set
	}
	cols := []col{
		{"instance owner/admin", InstanceRoleRights(InstanceOwner)},
		{"org owner", OrgRoleRights(OrgOwner)},
		{"org admin", OrgRoleRights(OrgAdmin)},
		{"org member", OrgRoleRights(OrgMember)},
		{"org viewer", OrgRoleRights(OrgViewer)},
		{"ws admin", WorkspaceRoleRights(WorkspaceAdmin)},
		{"ws member", WorkspaceRoleRights(WorkspaceMember)},
		{"ws viewer", WorkspaceRoleRights(WorkspaceViewer)},
	}
	var b strings.Builder
	b.WriteString("| permission |")
	for _, c := range cols {
		b.WriteString(" " + c.name + " |")
	}
	b.WriteString("\n|---|")
	for range cols {
		b.WriteString(":-:|")
	}
	b.WriteString("\n")
	for _, p := range All {
		b.WriteString("| `" + string(p) + "` |")
		for _, c := range cols {
			if c.set.Has(p) {
				b.WriteString(" ✓ |")
			} else {
				b.WriteString("   |")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
