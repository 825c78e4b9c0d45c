package auth

import "github.com/google/uuid"

// Scope is where a management key is valid, or where a request acts.
type Scope struct {
	Level       Level
	OrgID       uuid.UUID // zero at instance level
	WorkspaceID uuid.UUID // zero unless workspace level
}

// Covers reports whether a key of scope k may act at target t: k must be t
// itself or one of its ancestors.
func (k Scope) Covers(t Scope) bool {
	switch k.Level {
	case LevelInstance:
		return true
	case LevelOrganization:
		return t.Level != LevelInstance && t.OrgID == k.OrgID
	case LevelWorkspace:
		return t.Level == LevelWorkspace && t.OrgID == k.OrgID && t.WorkspaceID == k.WorkspaceID
	}
	return false
}

// String names the level as the wire does.
func (l Level) String() string {
	switch l {
	case LevelInstance:
		return "instance"
	case LevelOrganization:
		return "organization"
	case LevelWorkspace:
		return "workspace"
	}
	return "unknown"
}
