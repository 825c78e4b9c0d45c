package backend

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
)

// SignUp creates an account for a person who signed themselves up, with
// its first browser session: they are the actor of their own sign-up.
// The password arrives hashed; the session token is returned once.
func SignUp(ctx context.Context, st *store.Store, u *store.User, from SessionStart, requestID string) (*store.Session, string, error) {
	var se *store.Session
	var token string
	err := st.InTx(ctx, func(tx *store.Store) error {
		if err := tx.CreateUser(ctx, u); errors.Is(err, store.ErrConflict) {
			return errorf(Conflict, "an account with this email already exists; sign in instead")
		} else if err != nil {
			return err
		}
		var err error
		if se, token, err = StartSession(ctx, tx, u.ID, from); err != nil {
			return err
		}
		return Audit(ctx, tx, User(u.ID, false, nil, requestID), AuditEntry{Action: "user.signed_up", TargetType: "user",
			TargetID: u.ID.String(), Details: map[string]any{"email": u.Email}})
	})
	return se, token, err
}

// ChangePassword stores a new password hash for the actor's own account
// and ends every other session of theirs (perhaps the reason for the
// change); the session making the change, keep, stays. It returns how
// many sessions ended.
func ChangePassword(ctx context.Context, st *store.Store, actor Actor, hash string, keep *uuid.UUID) (int, error) {
	var n int
	err := st.InTx(ctx, func(tx *store.Store) error {
		id := *actor.UserID
		if err := tx.UpdateUserPassword(ctx, id, hash, store.Now()); err != nil {
			return err
		}
		var err error
		if n, err = tx.DeleteUserSessions(ctx, id, keep); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "user.password_changed", TargetType: "user", TargetID: id.String(),
			Details: map[string]any{"sessions_ended": n}})
	})
	return n, err
}

// EndAllSessions signs the actor out everywhere and says how many
// sessions ended.
func EndAllSessions(ctx context.Context, st *store.Store, actor Actor) (int, error) {
	var n int
	err := st.InTx(ctx, func(tx *store.Store) error {
		id := *actor.UserID
		var err error
		if n, err = tx.DeleteUserSessions(ctx, id, nil); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "user.signed_out_everywhere", TargetType: "user", TargetID: id.String(),
			Details: map[string]any{"sessions_ended": n}})
	})
	return n, err
}

// EndSession ends one of the actor's own sessions. Another person's
// session is not found: ids are not secrets, but whose they are is not
// the actor's business.
func EndSession(ctx context.Context, st *store.Store, actor Actor, sessionID uuid.UUID) error {
	return st.InTx(ctx, func(tx *store.Store) error {
		if err := tx.DeleteUserSession(ctx, *actor.UserID, sessionID); errors.Is(err, store.ErrNotFound) {
			return errorf(NotFound, "session %s not found", sessionID)
		} else if err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "user.session_ended", TargetType: "session", TargetID: sessionID.String()})
	})
}

// account is a live (not deleted) account, read in the operation's
// transaction.
func account(ctx context.Context, tx *store.Store, id uuid.UUID) (*store.User, error) {
	u, err := tx.GetUser(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && u.DeletedAt != nil) {
		return nil, errorf(NotFound, "user %s not found", id)
	}
	return u, err
}

// mayActOnOwner keeps the owner role in owners' hands: only an instance
// owner grants it, takes it away, or disables or enables its holder.
// what completes the refusal: "only an instance owner can " + what.
func (a Actor) mayActOnOwner(what string, roles ...string) error {
	if a.Type == "system" || a.InstanceRole == auth.InstanceOwner {
		return nil
	}
	for _, r := range roles {
		if r == auth.InstanceOwner {
			return errorf(Forbidden, "only an instance owner can %s", what)
		}
	}
	return nil
}

// ChangeInstanceRole gives an account another instance role. Nobody grants
// or takes away more rights than they hold, the instance keeps an owner,
// and service accounts hold no instance role.
func ChangeInstanceRole(ctx context.Context, st *store.Store, actor Actor, userID uuid.UUID, role string) (*store.User, error) {
	var u *store.User
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if u, err = account(ctx, tx, userID); err != nil {
			return err
		}
		for _, granted := range []string{role, u.InstanceRole} {
			if err := actor.MayGrant(auth.InstanceRoleRights(granted)); err != nil {
				return err
			}
		}
		if err := actor.mayActOnOwner("grant or change the owner role", role, u.InstanceRole); err != nil {
			return err
		}
		if u.ServiceAccount && role != auth.InstanceMember {
			return errorf(Conflict, "service accounts act within their organization and cannot hold an instance role")
		}
		if u.InstanceRole == auth.InstanceOwner && role != auth.InstanceOwner {
			if n, err := tx.CountInstanceOwners(ctx); err != nil {
				return err
			} else if n <= 1 {
				return errorf(Conflict, "the instance must keep at least one owner")
			}
		}
		u.InstanceRole, u.UpdatedAt = role, store.Now()
		if err := tx.UpdateUserRole(ctx, u.ID, role, u.UpdatedAt); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "user.role_changed", TargetType: "user", TargetID: u.ID.String(),
			Details: map[string]any{"instance_role": role}})
	})
	return u, err
}

// DisableUser stops an account: it can no longer sign in, its sessions
// end, and its management and inference keys are revoked with the keys
// they issued for others. Revoked, not suspended: enabling the account
// does not bring back a token that may have left with it
// (docs/security.md). Disabling takes every right the account has, so
// only someone holding them all may.
func DisableUser(ctx context.Context, st *store.Store, actor Actor, userID uuid.UUID) (*store.User, error) {
	var u *store.User
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if u, err = account(ctx, tx, userID); err != nil {
			return err
		}
		if actor.UserID != nil && *actor.UserID == u.ID {
			return errorf(Conflict, "you cannot disable your own account")
		}
		if err := actor.MayGrant(auth.InstanceRoleRights(u.InstanceRole)); err != nil {
			return err
		}
		if err := actor.mayActOnOwner("disable an owner", u.InstanceRole); err != nil {
			return err
		}
		now := store.Now()
		if u.DisabledAt == nil {
			u.DisabledAt, u.UpdatedAt = &now, now
			if err := tx.SetUserDisabled(ctx, u.ID, &now, now); err != nil {
				return err
			}
		}
		return stopAccount(ctx, tx, actor, u, now)
	})
	return u, err
}

// stopAccount ends a disabled account's sessions and revokes its keys,
// auditing each inference key (they live in organizations) and the
// account itself.
func stopAccount(ctx context.Context, tx *store.Store, actor Actor, u *store.User, now time.Time) error {
	sessions, err := tx.DeleteUserSessions(ctx, u.ID, nil)
	if err != nil {
		return err
	}
	keys, err := tx.RevokeUserKeys(ctx, u.ID, now)
	if err != nil {
		return err
	}
	if err := RevokeIssuedKeys(ctx, tx, actor, keys, now, "issuer's account disabled"); err != nil {
		return err
	}
	inference, err := tx.RevokeUserInferenceKeys(ctx, u.ID, now)
	if err != nil {
		return err
	}
	inferenceIDs := make([]string, len(inference))
	for i, k := range inference {
		inferenceIDs[i] = k.ID.String()
		reason := "owner's account disabled"
		if k.UserID != u.ID {
			reason = "issuer's account disabled"
		}
		if err := Audit(ctx, tx, actor, AuditEntry{Action: "inference_key.revoked", TargetType: "inference_key", TargetID: k.ID.String(),
			OrgID: &k.OrgID, WorkspaceID: &k.WorkspaceID,
			Details: map[string]any{"name": k.Name, "prefix": k.Prefix, "reason": reason, "user_id": u.ID.String()}}); err != nil {
			return err
		}
	}
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k.String()
	}
	return Audit(ctx, tx, actor, AuditEntry{Action: "user.disabled", TargetType: "user", TargetID: u.ID.String(),
		Details: map[string]any{"email": u.Email, "sessions_ended": sessions, "keys_revoked": ids, "inference_keys_revoked": inferenceIDs}})
}

// EnableUser lets a disabled account sign in again; the keys revoked when
// it was disabled stay revoked. Enabling an enabled account changes
// nothing and audits nothing.
func EnableUser(ctx context.Context, st *store.Store, actor Actor, userID uuid.UUID) (*store.User, error) {
	var u *store.User
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if u, err = account(ctx, tx, userID); err != nil {
			return err
		}
		if err := actor.mayActOnOwner("enable an owner", u.InstanceRole); err != nil {
			return err
		}
		if u.DisabledAt == nil {
			return nil
		}
		now := store.Now()
		u.DisabledAt, u.UpdatedAt = nil, now
		if err := tx.SetUserDisabled(ctx, u.ID, nil, now); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "user.enabled", TargetType: "user", TargetID: u.ID.String(),
			Details: map[string]any{"email": u.Email}})
	})
	return u, err
}

// SessionStart is where a browser session comes from, as the session list
// shows it, and how long it lasts.
type SessionStart struct {
	UserAgent, ClientAddress string
	TTL                      time.Duration
}

// StartSession creates a browser session for userID in the caller's
// transaction, so an account and its first session commit together. The
// token is returned once, for the cookie, and never stored.
func StartSession(ctx context.Context, tx *store.Store, userID uuid.UUID, from SessionStart) (*store.Session, string, error) {
	token, _, hash := auth.NewToken(auth.SessionPrefix)
	now := store.Now()
	se := &store.Session{ID: uuid.New(), UserID: userID, TokenHash: hash, UserAgent: from.UserAgent, ClientAddress: from.ClientAddress,
		CreatedAt: now, ExpiresAt: now.Add(from.TTL)}
	if err := tx.CreateSession(ctx, se); err != nil {
		return nil, "", err
	}
	return se, token, nil
}
