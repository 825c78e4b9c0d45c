package backend

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
)

// KeySpec is a management key to mint. Whether the actor may grant it
// (no escalation of permissions, scope or expiry) is the caller's check:
// the API checks the caller's rights, a recovery command has none to check.
type KeySpec struct {
	Owner       uuid.UUID
	OrgID       *uuid.UUID
	WorkspaceID *uuid.UUID
	ParentID    *uuid.UUID
	Permissions []string
	Label       string
	ExpiresAt   *time.Time
	// Via says how the key came to be, in the audit entry (e.g.
	// cli_authorization, recovery); empty for the plain API.
	Via string
	// Action is the audit action; management_key.issued when empty.
	Action string
}

// MintManagementKey is the one place a management key is made: a fresh
// token, its hash stored with the key, and the audit entry. The token is
// returned once and never stored.
func MintManagementKey(ctx context.Context, tx *store.Store, actor Actor, spec KeySpec) (*store.ManagementKey, string, error) {
	token, prefix, hash := auth.NewToken(auth.ManagementKeyPrefix)
	now := store.Now()
	k := &store.ManagementKey{
		ID: uuid.New(), UserID: spec.Owner, OrgID: spec.OrgID, WorkspaceID: spec.WorkspaceID, ParentID: spec.ParentID,
		Prefix: prefix, TokenHash: hash, Permissions: store.Strings(auth.SetOf(spec.Permissions).Sorted()),
		Label: spec.Label, ExpiresAt: spec.ExpiresAt, CreatedAt: now, UpdatedAt: now,
	}
	if err := tx.CreateManagementKey(ctx, k); err != nil {
		return nil, "", err
	}
	details := map[string]any{"label": k.Label, "prefix": k.Prefix, "permissions": []string(k.Permissions), "user_id": spec.Owner.String()}
	if spec.Via != "" {
		details["via"] = spec.Via
	}
	action := spec.Action
	if action == "" {
		action = "management_key.issued"
	}
	err := Audit(ctx, tx, actor, AuditEntry{Action: action, TargetType: "management_key", TargetID: k.ID.String(),
		OrgID: spec.OrgID, WorkspaceID: spec.WorkspaceID, Details: details})
	return k, token, err
}

// RevokeIssuedKeys revokes what the given keys issued, transitively, in
// the caller's transaction, with one audit entry per key naming the key
// whose revocation carried it (issue 10, item 6).
func RevokeIssuedKeys(ctx context.Context, tx *store.Store, actor Actor, parents []uuid.UUID, at time.Time, reason string) error {
	revoked, err := tx.RevokeIssuedKeys(ctx, parents, at)
	if err != nil {
		return err
	}
	for _, k := range revoked {
		details := map[string]any{"label": k.Label, "prefix": k.Prefix, "issued_by": k.ParentID.String(), "reason": reason}
		if err := Audit(ctx, tx, actor, AuditEntry{Action: "management_key.revoked", TargetType: "management_key",
			TargetID: k.ID.String(), OrgID: k.OrgID, WorkspaceID: k.WorkspaceID, Details: details}); err != nil {
			return err
		}
	}
	return nil
}
