package backend

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
)

// KeySpec is a management key to mint. Whether the actor may grant it
// (no escalation of permissions, scope or expiry) is the caller's check:
// IssueManagementKey makes it for an actor; a recovery command has none to
// make.
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

// KeyView is the part of the management-key registry a caller sees from
// where it acts: every key at instance scope (OrgID and WorkspaceID nil),
// an organization's keys and its workspaces', or one workspace's. OwnerID
// narrows it to one principal's own keys, for callers who do not manage
// members.
type KeyView struct {
	OrgID, WorkspaceID, OwnerID *uuid.UUID
}

// Filter is the view as a store query.
func (v KeyView) Filter() store.KeyFilter {
	f := store.KeyFilter{UserID: v.OwnerID}
	if v.WorkspaceID != nil {
		f.WorkspaceID = v.WorkspaceID
	} else {
		f.OrgID = v.OrgID
	}
	return f
}

func (v KeyView) holds(k *store.ManagementKey) bool {
	same := func(place, want *uuid.UUID) bool { return want == nil || (place != nil && *place == *want) }
	f := v.Filter()
	return same(k.WorkspaceID, f.WorkspaceID) && same(k.OrgID, f.OrgID) && same(&k.UserID, f.UserID)
}

// ManagementKeyIn is the key id if the view holds it; a key outside the
// view is not found, whether or not it exists.
func ManagementKeyIn(ctx context.Context, st *store.Store, view KeyView, id uuid.UUID) (*store.ManagementKey, error) {
	k, err := st.GetManagementKey(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !view.holds(k)) {
		return nil, errorf(NotFound, "management key %s not found", id)
	}
	return k, err
}

// KeyIssue is a management key an actor issues at a place: the instance,
// an organization, or one of its workspaces.
type KeyIssue struct {
	Owner              uuid.UUID
	OrgID, WorkspaceID *uuid.UUID
	Permissions        []string
	Label              string
	ExpiresAt          *time.Time
}

// IssueManagementKey issues a key within what the actor may hand on (see
// issueKey). The token is returned once and never stored.
func IssueManagementKey(ctx context.Context, st *store.Store, actor Actor, in KeyIssue) (*store.ManagementKey, string, error) {
	var k *store.ManagementKey
	var token string
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		k, token, err = issueKey(ctx, tx, actor, in)
		return err
	})
	return k, token, err
}

// issueKey mints a key in tx. The actor hands on only what it holds: no
// permission outside its rights where it acts, and, acting with a key, no
// later expiry than that key's, which becomes the new key's parent (so
// revoking it revokes what it issued).
func issueKey(ctx context.Context, tx *store.Store, actor Actor, in KeyIssue) (*store.ManagementKey, string, error) {
	if actor.Type != "system" {
		if missing := actor.Rights.Missing(in.Permissions); len(missing) > 0 {
			return nil, "", errorf(Forbidden, "cannot issue permissions the caller does not hold here: %s", strings.Join(missing, ", "))
		}
	}
	spec := KeySpec{Owner: in.Owner, OrgID: in.OrgID, WorkspaceID: in.WorkspaceID, Permissions: in.Permissions, Label: in.Label,
		ExpiresAt: in.ExpiresAt}
	if actor.KeyID != nil {
		parent, err := tx.GetManagementKey(ctx, *actor.KeyID)
		if err != nil {
			return nil, "", fmt.Errorf("the issuing key: %w", err)
		}
		if parent.ExpiresAt != nil && (in.ExpiresAt == nil || in.ExpiresAt.After(*parent.ExpiresAt)) {
			return nil, "", errorf(Forbidden, "a key cannot outlive the key that issues it (expires %s); set expires_at no later than that",
				parent.ExpiresAt.Format(time.RFC3339))
		}
		spec.ParentID = &parent.ID
	}
	return MintManagementKey(ctx, tx, actor, spec)
}

// RevokeManagementKey revokes a key the view holds, and what it issued,
// transitively, even when it was revoked before (a key issued under it then
// must not survive). Revoking twice audits the key once. The audit entry is
// placed where the actor acts (the view), not where the key lives.
func RevokeManagementKey(ctx context.Context, st *store.Store, actor Actor, view KeyView, id uuid.UUID) (*store.ManagementKey, error) {
	var k *store.ManagementKey
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if k, err = ManagementKeyIn(ctx, tx, view, id); err != nil {
			return err
		}
		now := store.Now()
		revoked, err := tx.RevokeManagementKey(ctx, k.ID, now)
		if err != nil {
			return err
		}
		if err := RevokeIssuedKeys(ctx, tx, actor, []uuid.UUID{k.ID}, now, "issuing key revoked"); err != nil {
			return err
		}
		if revoked {
			if err := Audit(ctx, tx, actor, AuditEntry{Action: "management_key.revoked", TargetType: "management_key", TargetID: k.ID.String(),
				OrgID: view.OrgID, WorkspaceID: view.WorkspaceID, Details: map[string]any{"label": k.Label, "prefix": k.Prefix}}); err != nil {
				return err
			}
		}
		// Read back: a concurrent revoke may have set the time first.
		k, err = tx.GetManagementKey(ctx, k.ID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return k, nil
}
