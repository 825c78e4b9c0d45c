// Package auth holds gw's identity rules: the closed permission set, the role
// table, token and password hashing, and how a key's scope covers a URL. It
// is pure; the API layer supplies the facts (roles, key, target scope).
package auth

import "sort"

// Permission is one of the closed set of spec 2.4.
type Permission string

// The 31 permission names, in the spec's order.
const (
	OrganizationsRead         Permission = "organizations.read"
	OrganizationsCreate       Permission = "organizations.create"
	OrganizationsUpdate       Permission = "organizations.update"
	OrganizationsDelete       Permission = "organizations.delete"
	PrincipalsRead            Permission = "principals.read"
	PrincipalsManage          Permission = "principals.manage"
	MembersRead               Permission = "members.read"
	MembersManage             Permission = "members.manage"
	WorkspacesRead            Permission = "workspaces.read"
	WorkspacesCreate          Permission = "workspaces.create"
	WorkspacesUpdate          Permission = "workspaces.update"
	WorkspacesDelete          Permission = "workspaces.delete"
	CatalogRead               Permission = "catalog.read"
	CatalogManage             Permission = "catalog.manage"
	ProviderCredentialsRead   Permission = "provider-credentials.read"
	ProviderCredentialsManage Permission = "provider-credentials.manage"
	InferenceKeysRead         Permission = "inference-keys.read"
	InferenceKeysManage       Permission = "inference-keys.manage"
	PoliciesRead              Permission = "policies.read"
	PoliciesManage            Permission = "policies.manage"
	PlaygroundExecute         Permission = "playground.execute"
	PolicyStateSync           Permission = "policy-state.sync"
	BundlesRead               Permission = "bundles.read"
	UsageRead                 Permission = "usage.read"
	UsageIngest               Permission = "usage.ingest"
	DataPlanesRead            Permission = "data-planes.read"
	DataPlanesHeartbeat       Permission = "data-planes.heartbeat"
	AuditRead                 Permission = "audit.read"
	ManagementKeysRead        Permission = "management-keys.read"
	ManagementKeysIssue       Permission = "management-keys.issue"
	ManagementKeysRevoke      Permission = "management-keys.revoke"
)

// All is the closed set, in the spec's order.
var All = []Permission{
	OrganizationsRead, OrganizationsCreate, OrganizationsUpdate, OrganizationsDelete,
	PrincipalsRead, PrincipalsManage, MembersRead, MembersManage,
	WorkspacesRead, WorkspacesCreate, WorkspacesUpdate, WorkspacesDelete,
	CatalogRead, CatalogManage, ProviderCredentialsRead, ProviderCredentialsManage,
	InferenceKeysRead, InferenceKeysManage, PoliciesRead, PoliciesManage,
	PlaygroundExecute, PolicyStateSync, BundlesRead, UsageRead, UsageIngest,
	DataPlanesRead, DataPlanesHeartbeat, AuditRead,
	ManagementKeysRead, ManagementKeysIssue, ManagementKeysRevoke,
}

var known = func() map[Permission]bool {
	m := make(map[Permission]bool, len(All))
	for _, p := range All {
		m[p] = true
	}
	return m
}()

// Known reports whether name is one of the 31 permissions.
func Known(name string) bool { return known[Permission(name)] }

// Names returns the permission names as strings, in the spec's order.
func Names() []string {
	out := make([]string, len(All))
	for i, p := range All {
		out[i] = string(p)
	}
	return out
}

// Set is a set of permissions.
type Set map[Permission]bool

// NewSet builds a set from permissions.
func NewSet(ps ...Permission) Set {
	s := make(Set, len(ps))
	for _, p := range ps {
		s[p] = true
	}
	return s
}

// SetOf builds a set from names, ignoring unknown ones (stored data was
// validated on the way in).
func SetOf(names []string) Set {
	s := make(Set, len(names))
	for _, n := range names {
		if known[Permission(n)] {
			s[Permission(n)] = true
		}
	}
	return s
}

// Has reports membership.
func (s Set) Has(p Permission) bool { return s[p] }

// Union returns s ∪ o.
func (s Set) Union(o Set) Set {
	out := make(Set, len(s)+len(o))
	for p := range s {
		out[p] = true
	}
	for p := range o {
		out[p] = true
	}
	return out
}

// Intersect returns s ∩ o.
func (s Set) Intersect(o Set) Set {
	out := make(Set)
	for p := range s {
		if o[p] {
			out[p] = true
		}
	}
	return out
}

// Missing returns the names in want that s lacks, sorted.
func (s Set) Missing(want []string) []string {
	var out []string
	for _, n := range want {
		if !s[Permission(n)] {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Sorted returns the names in the spec's order.
func (s Set) Sorted() []string {
	out := make([]string, 0, len(s))
	for _, p := range All {
		if s[p] {
			out = append(out, string(p))
		}
	}
	return out
}

// Len is the number of permissions in the set.
func (s Set) Len() int { return len(s) }
