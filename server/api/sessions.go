package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// sessionTTL is how long a browser stays signed in.
const sessionTTL = 14 * 24 * time.Hour

func (s *Server) authRoutes() []*Route {
	const tag = "Auth"
	return []*Route{
		{Method: "POST", Path: "/api/v1/auth/signup", Tag: tag, Access: Public, Statuses: []int{403, 503}, Summary: "Create an account and sign in (sets the svc_session cookie)",
			Body: wire.Signup{}, Result: wire.SessionResult{}, Handle: s.signup},
		{Method: "POST", Path: "/api/v1/auth/login", Tag: tag, Access: Public, Statuses: []int{401, 403, 429, 503}, Summary: "Sign in with email and password (sets the svc_session cookie)",
			Body: wire.Credentials{}, Result: wire.SessionResult{}, Handle: s.login},
		{Method: "POST", Path: "/api/v1/auth/logout", Tag: tag, Access: Authenticated, Statuses: []int{400}, Summary: "Sign out (ends the browser session)",
			Result: wire.LoggedOut{}, Handle: s.logout},
		{Method: "GET", Path: "/api/v1/auth/me", Tag: tag, Access: Authenticated, Summary: "Describe the caller, its credential and memberships",
			Result: wire.Me{}, Handle: s.me},
		{Method: "GET", Path: "/api/v1/enrollment/choices", Tag: "Enrollment", Access: Authenticated,
			Summary: "Organizations, with their workspaces, where the caller may approve a CLI authorization",
			Result:  []wire.EnrollmentChoice{}, Handle: s.enrollmentChoices},
	}
}

func (s *Server) secureCookies(r *Request) bool {
	return r.R.TLS != nil || strings.HasPrefix(s.opts.PublicURL, "https://")
}

func readCredentials(o *validate.Object) (email, password string) {
	email = normalizeEmail(requiredString(o, "email", emailRule))
	password = requiredString(o, "password", passwordRule)
	return email, password
}

func (s *Server) signup(r *Request) (any, error) {
	if s.opts.SignupDisabled {
		return nil, errorf(http.StatusForbidden, "sign-up is disabled on this instance; ask an administrator for an invitation")
	}
	var email, password, name string
	if err := r.body(func(o *validate.Object) {
		email, password = readCredentials(o)
		if p := optionalString(o, "name", personNameRule); p != nil {
			name = *p
		}
	}); err != nil {
		return nil, err
	}
	if name == "" {
		name = email
	}
	hash, err := auth.Passwords.Hash(r.ctx, password)
	if err != nil {
		return nil, err
	}
	now := store.Now()
	u := &store.User{ID: uuid.New(), Email: email, Name: name, PasswordHash: &hash, InstanceRole: auth.InstanceMember, CreatedAt: now, UpdatedAt: now}
	se, token, err := backend.SignUp(r.ctx, s.store, u, sessionStart(r), r.ID)
	if err != nil {
		return nil, err
	}
	s.setSessionCookie(r, se, token)
	return wire.SessionResult{User: toUser(u, nil), ExpiresAt: now.Add(sessionTTL)}, nil
}

func (s *Server) login(r *Request) (any, error) {
	var email, password string
	if err := r.body(func(o *validate.Object) { email, password = readCredentials(o) }); err != nil {
		return nil, err
	}
	var u *store.User
	err := s.guardAttempt(r, s.signIns, "auth.sign_in_throttled", email, func() (bool, error) {
		var err error
		u, err = s.checkPassword(r, email, password)
		return u != nil, err
	})
	if err != nil {
		return nil, err
	}
	if u == nil {
		return nil, errorf(http.StatusUnauthorized, "invalid email or password")
	}
	if err := s.passwordAllowed(r, u); err != nil {
		return nil, err
	}
	se, token, err := backend.StartSession(r.ctx, s.store, u.ID, sessionStart(r))
	if err != nil {
		return nil, err
	}
	s.setSessionCookie(r, se, token)
	orgs, err := s.store.UserOrgs(r.ctx, []uuid.UUID{u.ID})
	if err != nil {
		return nil, err
	}
	return wire.SessionResult{User: toUser(u, orgs[u.ID]), ExpiresAt: store.Now().Add(sessionTTL)}, nil
}

// passwordAllowed refuses a password sign-in (403, naming the providers)
// to a member of an organization whose require_sso is set, after the
// password was found right (so the answer tells nothing to someone who
// does not know it). An instance owner keeps a password sign-in, the
// break glass, audited.
func (s *Server) passwordAllowed(r *Request, u *store.User) error {
	providers, org, err := backend.RequiredSSO(r.ctx, s.store, u.ID)
	if err != nil || len(providers) == 0 {
		return err
	}
	if u.InstanceRole == auth.InstanceOwner {
		return backend.BreakGlassSignIn(r.ctx, s.store, r.ID, u.ID, org, providers)
	}
	if err := backend.SignInRefused(context.WithoutCancel(r.ctx), s.store, r.ID, &u.ID,
		map[string]any{"reason": "require_sso", "organization": org, "require_sso": providers}); err != nil {
		return err
	}
	starts := make([]string, len(providers))
	for i, p := range providers {
		starts[i] = fmt.Sprintf("%q (%s)", p, ssoStartPath(p))
	}
	return errorf(http.StatusForbidden, "organization %s requires single sign-on: sign in through %s", org, strings.Join(starts, " or "))
}

// checkPassword returns the user whose email and password these are, or
// nil. Unknown, deleted and disabled accounts spend the same time as a
// wrong password, so timing tells nothing.
func (s *Server) checkPassword(r *Request, email, password string) (*store.User, error) {
	u, err := s.store.GetUserByEmail(r.ctx, email)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !canSignIn(u)) {
		return nil, auth.Passwords.Burn(r.ctx, password)
	}
	if err != nil {
		return nil, err
	}
	ok, err := auth.Passwords.Check(r.ctx, *u.PasswordHash, password)
	if err != nil || !ok {
		return nil, err
	}
	return u, nil
}

// canSignIn reports whether the account may sign in with a password.
func canSignIn(u *store.User) bool {
	return u.PasswordHash != nil && u.DeletedAt == nil && u.DisabledAt == nil
}

func (s *Server) logout(r *Request) (any, error) {
	if r.P.Session == nil {
		return nil, errorf(http.StatusBadRequest, "logout ends a browser session; to retire a management key, revoke it")
	}
	if err := s.store.DeleteSession(r.ctx, r.P.Session.ID); err != nil {
		return nil, err
	}
	s.clearSessionCookie(r)
	return wire.LoggedOut{LoggedOut: true}, nil
}

func (s *Server) me(r *Request) (any, error) {
	ms, err := s.store.ListUserMemberships(r.ctx, r.P.User.ID)
	if err != nil {
		return nil, err
	}
	out := wire.Me{Credential: "session", Memberships: make([]wire.Membership, len(ms))}
	orgIDs := make([]uuid.UUID, len(ms))
	for i := range ms {
		out.Memberships[i] = toMembership(&ms[i])
		orgIDs[i] = ms[i].OrgID
	}
	out.User = toUser(r.P.User, orgIDs)
	if r.P.Key != nil {
		out.Credential = "management_key"
		k := toManagementKey(r.P.Key, time.Now())
		out.Key = &k
	}
	return out, nil
}

// enrollmentChoices lists where the caller could approve a CLI
// authorization: organizations they actively belong to (all of them for
// instance staff), each with the workspaces they can see there.
func (s *Server) enrollmentChoices(r *Request) (any, error) {
	var orgs []store.Organization
	staff := auth.InstanceRoleRights(r.P.User.InstanceRole).Has(auth.OrganizationsRead) &&
		r.P.KeyScope().Level == auth.LevelInstance && r.P.Ceiling().Has(auth.OrganizationsRead)
	var p store.PageQuery
	p.Limit = 1000
	var memberOf *uuid.UUID
	if !staff {
		memberOf = &r.P.User.ID
	}
	for {
		batch, next, err := s.store.ListOrganizations(r.ctx, memberOf, p)
		if err != nil {
			return nil, err
		}
		orgs = append(orgs, batch...)
		if next == nil {
			break
		}
		p.After = next
	}
	out := []wire.EnrollmentChoice{}
	for i := range orgs {
		org := &orgs[i]
		f := store.WorkspaceFilter{OrgID: org.ID}
		if !staff {
			m, err := s.store.GetMembership(r.ctx, org.ID, r.P.User.ID)
			if err != nil || m.Status != auth.MembershipActive {
				continue
			}
			if !auth.OrgRoleCoversWorkspaces(m.Role) {
				f.MemberID = &r.P.User.ID
			}
		}
		wss, err := s.store.ListWorkspaces(r.ctx, f)
		if err != nil {
			return nil, err
		}
		choice := wire.EnrollmentChoice{Organization: toOrganization(org), Workspaces: make([]wire.Workspace, len(wss))}
		for j := range wss {
			choice.Workspaces[j] = toWorkspace(&wss[j])
		}
		out = append(out, choice)
	}
	return out, nil
}
