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
		{Method: "POST", Path: "/api/v1/auth/password", Tag: tag, Access: BrowserSession, Statuses: []int{429, 503},
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
	n, err := backend.ChangePassword(r.ctx, s.store, r.actor(), hash, &r.P.Session.ID)
	return wire.PasswordChanged{SessionsEnded: n}, err
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
	n, err := backend.EndAllSessions(r.ctx, s.store, r.actor())
	if err != nil {
		return nil, err
	}
	s.clearSessionCookie(r)
	return wire.SessionsEnded{SessionsEnded: n}, nil
}

func (s *Server) endSession(r *Request) (any, error) {
	id, err := r.pathUUID("session_id")
	if err != nil {
		return nil, err
	}
	if err := backend.EndSession(r.ctx, s.store, r.actor(), id); err != nil {
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
	id, err := r.pathUUID("user_id")
	if err != nil {
		return nil, err
	}
	u, err := backend.DisableUser(r.ctx, s.store, r.actor(), id)
	if err != nil {
		return nil, err
	}
	return s.oneUser(r, u)
}

func (s *Server) enableUser(r *Request) (any, error) {
	id, err := r.pathUUID("user_id")
	if err != nil {
		return nil, err
	}
	u, err := backend.EnableUser(r.ctx, s.store, r.actor(), id)
	if err != nil {
		return nil, err
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
