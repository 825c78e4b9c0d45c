package api

import (
	"net/http"
	"strings"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// accountRoutes end sessions and access (issue 10, item 7): a person
// changes their password or signs out everywhere; an instance admin
// disables an account. See docs/security.md.
func (s *Server) accountRoutes() []*Route {
	const tag = "Auth"
	manage := []auth.Permission{auth.PrincipalsManage}
	return []*Route{
		{Method: "POST", Path: "/api/v1/auth/password", Tag: tag, Access: BrowserSession,
			Summary: "Change the caller's password (needs the current one); every other session of theirs ends",
			Body:    wire.PasswordChange{}, Result: wire.PasswordChanged{}, Handle: s.changePassword},
		{Method: "GET", Path: "/api/v1/auth/sessions", Tag: tag, Access: Authenticated,
			Summary: "List the caller's browser sessions (complete set; never their tokens)",
			Result:  []wire.Session{}, Handle: s.listSessions},
		{Method: "DELETE", Path: "/api/v1/auth/sessions", Tag: tag, Access: BrowserSession,
			Summary: "Sign out everywhere: end every browser session of the caller, this one included",
			Result:  wire.SessionsEnded{}, Handle: s.endAllSessions},
		{Method: "DELETE", Path: "/api/v1/auth/sessions/{session_id}", Tag: tag, Access: BrowserSession,
			Summary: "End one of the caller's browser sessions",
			Result:  wire.SessionsEnded{}, Handle: s.endSession},
		{Method: "POST", Path: "/api/v1/instance/users/{user_id}/disable", Tag: "Instance Users",
			Summary: "Disable an account: its sessions end; its management keys (and what they issued) and the inference keys it owns or created are revoked; it cannot sign in",
			Perms:   manage, Result: wire.User{}, RefreshesBundles: true, Handle: s.disableUser},
		{Method: "POST", Path: "/api/v1/instance/users/{user_id}/enable", Tag: "Instance Users",
			Summary: "Enable a disabled account (it signs in again; revoked keys stay revoked)",
			Perms:   manage, Result: wire.User{}, RefreshesBundles: true, Handle: s.enableUser},
	}
}

func (s *Server) changePassword(r *Request) (any, error) {
	var current, next string
	if err := r.body(func(o *validate.Object) {
		current = requiredString(o, "current_password", validate.StringRule{Min: 1, Max: passwordRule.Max, Secret: true})
		next = requiredString(o, "new_password", passwordRule)
	}); err != nil {
		return nil, err
	}
	u := r.P.User
	if u.PasswordHash == nil {
		return nil, errorf(http.StatusConflict, "this account has no password (a service account signs in with keys only)")
	}
	// The current password is a guess like any sign-in: throttled alike.
	var ok bool
	err := s.guardAttempt(r, s.signIns, "auth.sign_in_throttled", u.Email, func() (bool, error) {
		var err error
		ok, err = auth.Passwords.Check(r.ctx, *u.PasswordHash, current)
		return ok, err
	})
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, validate.Single(validate.Loc{"body", "current_password"}, "value_error",
			"Value error, the current password is not correct", nil, nil)
	}
	hash, err := auth.Passwords.Hash(r.ctx, next)
	if err != nil {
		return nil, err
	}
	var out wire.PasswordChanged
	err = s.store.InTx(r.ctx, func(tx *store.Store) error {
		if err := tx.UpdateUserPassword(r.ctx, u.ID, hash, store.Now()); err != nil {
			return err
		}
		// Whoever else holds a session (perhaps the reason for the
		// change) is signed out; the session making the change stays.
		n, err := tx.DeleteUserSessions(r.ctx, u.ID, &r.P.Session.ID)
		if err != nil {
			return err
		}
		out.SessionsEnded = n
		return r.audit(tx, auditEntry{Action: "user.password_changed", TargetType: "user", TargetID: u.ID.String(),
			Details: map[string]any{"sessions_ended": n}})
	})
	return out, err
}

func toSession(se *store.Session, current *store.Session) wire.Session {
	return wire.Session{ID: se.ID, CreatedAt: se.CreatedAt, ExpiresAt: se.ExpiresAt, UserAgent: se.UserAgent,
		ClientAddress: se.ClientAddress, Current: current != nil && current.ID == se.ID}
}

func (s *Server) listSessions(r *Request) (any, error) {
	ss, err := s.store.ListUserSessions(r.ctx, r.P.User.ID, store.Now())
	if err != nil {
		return nil, err
	}
	out := make([]wire.Session, len(ss))
	for i := range ss {
		out[i] = toSession(&ss[i], r.P.Session)
	}
	return out, nil
}

func (s *Server) endAllSessions(r *Request) (any, error) {
	var out wire.SessionsEnded
	err := s.store.InTx(r.ctx, func(tx *store.Store) error {
		n, err := tx.DeleteUserSessions(r.ctx, r.P.User.ID, nil)
		if err != nil {
			return err
		}
		out.SessionsEnded = n
		return r.audit(tx, auditEntry{Action: "user.signed_out_everywhere", TargetType: "user", TargetID: r.P.User.ID.String(),
			Details: map[string]any{"sessions_ended": n}})
	})
	if err == nil {
		s.clearSessionCookie(r)
	}
	return out, err
}

func (s *Server) endSession(r *Request) (any, error) {
	id, err := r.pathUUID("session_id")
	if err != nil {
		return nil, err
	}
	err = s.store.InTx(r.ctx, func(tx *store.Store) error {
		// Another person's session is "not found": ids are not secrets,
		// but whose they are is not the caller's business.
		if err := tx.DeleteUserSession(r.ctx, r.P.User.ID, id); err != nil {
			return err
		}
		return r.audit(tx, auditEntry{Action: "user.session_ended", TargetType: "session", TargetID: id.String()})
	})
	if err != nil {
		return nil, err
	}
	if r.P.Session.ID == id {
		s.clearSessionCookie(r)
	}
	return wire.SessionsEnded{SessionsEnded: 1}, nil
}

func (s *Server) clearSessionCookie(r *Request) {
	http.SetCookie(r.W, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: s.secureCookies(r)})
}

func (s *Server) disableUser(r *Request) (any, error) {
	u, err := s.pathUser(r)
	if err != nil {
		return nil, err
	}
	if u.ID == r.P.User.ID {
		return nil, errorf(http.StatusConflict, "you cannot disable your own account")
	}
	// Disabling takes away every right the account has: only someone
	// who holds them all may (an admin cannot disable an owner).
	if err := mayGrant(r, auth.InstanceRoleRights(u.InstanceRole)); err != nil {
		return nil, err
	}
	if u.InstanceRole == auth.InstanceOwner && r.P.User.InstanceRole != auth.InstanceOwner {
		return nil, errorf(http.StatusForbidden, "only an instance owner can disable an owner")
	}
	err = s.store.InTx(r.ctx, func(tx *store.Store) error {
		now := store.Now()
		if u.DisabledAt == nil {
			u.DisabledAt, u.UpdatedAt = &now, now
			if err := tx.SetUserDisabled(r.ctx, u.ID, &now, now); err != nil {
				return err
			}
		}
		sessions, err := tx.DeleteUserSessions(r.ctx, u.ID, nil)
		if err != nil {
			return err
		}
		keys, err := tx.RevokeUserKeys(r.ctx, u.ID, now)
		if err != nil {
			return err
		}
		// Keys the account's keys issued (for others, such as service
		// accounts) go too: they carried its rights.
		if err := backend.RevokeIssuedKeys(r.ctx, tx, r.actor(), keys, now, "issuer's account disabled"); err != nil {
			return err
		}
		// So are the inference keys it owns, and those it issued for
		// others: it was shown their plaintext. Revoked, not suspended:
		// enabling the account does not bring back a token that may have
		// left with it (docs/security.md).
		inference, err := tx.RevokeUserInferenceKeys(r.ctx, u.ID, now)
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
			if err := r.audit(tx, auditEntry{Action: "inference_key.revoked", TargetType: "inference_key", TargetID: k.ID.String(),
				OrgID: &k.OrgID, WorkspaceID: &k.WorkspaceID,
				Details: map[string]any{"name": k.Name, "prefix": k.Prefix, "reason": reason, "user_id": u.ID.String()}}); err != nil {
				return err
			}
		}
		ids := make([]string, len(keys))
		for i, k := range keys {
			ids[i] = k.String()
		}
		return r.audit(tx, auditEntry{Action: "user.disabled", TargetType: "user", TargetID: u.ID.String(),
			Details: map[string]any{"email": u.Email, "sessions_ended": sessions, "keys_revoked": ids, "inference_keys_revoked": inferenceIDs}})
	})
	if err != nil {
		return nil, err
	}
	return s.oneUser(r, u)
}

func (s *Server) enableUser(r *Request) (any, error) {
	u, err := s.pathUser(r)
	if err != nil {
		return nil, err
	}
	if u.InstanceRole == auth.InstanceOwner && r.P.User.InstanceRole != auth.InstanceOwner {
		return nil, errorf(http.StatusForbidden, "only an instance owner can enable an owner")
	}
	if u.DisabledAt != nil {
		err = s.store.InTx(r.ctx, func(tx *store.Store) error {
			now := store.Now()
			u.DisabledAt, u.UpdatedAt = nil, now
			if err := tx.SetUserDisabled(r.ctx, u.ID, nil, now); err != nil {
				return err
			}
			return r.audit(tx, auditEntry{Action: "user.enabled", TargetType: "user", TargetID: u.ID.String(),
				Details: map[string]any{"email": u.Email}})
		})
		if err != nil {
			return nil, err
		}
	}
	return s.oneUser(r, u)
}

func (s *Server) oneUser(r *Request, u *store.User) (any, error) {
	users, err := s.usersWithOrgs(r, []store.User{*u})
	if err != nil {
		return nil, err
	}
	return users[0], nil
}

// sessionOrigin is what a new session records of where it came from:
// the client address and a bounded, printable user agent.
func sessionOrigin(r *Request) (userAgent, address string) {
	ua := strings.Map(func(c rune) rune {
		if c < 0x20 || c == 0x7f {
			return -1
		}
		return c
	}, r.R.UserAgent())
	if len(ua) > 256 {
		ua = ua[:256]
	}
	return strings.ToValidUTF8(ua, ""), clientAddress(r.R)
}
