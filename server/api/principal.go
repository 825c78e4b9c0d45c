package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
)

// SessionCookie is the browser session cookie's name (spec §5).
const SessionCookie = "svc_session"

// Principal is the authenticated caller: a user, and the management key or
// browser session it came through.
type Principal struct {
	User    *store.User
	Key     *store.ManagementKey // nil for a session
	Session *store.Session       // nil for a key
	// For a scoped key, the slugs of its organization and workspace, so a
	// URL naming them by slug can be compared without a lookup.
	keyOrgSlug, keyWorkspaceSlug string
}

// KeyScope is the scope of the caller's key; sessions act at instance scope
// bounded only by their roles.
func (p *Principal) KeyScope() auth.Scope {
	if p.Key == nil {
		return auth.Scope{Level: auth.LevelInstance}
	}
	return keyScope(p.Key)
}

func keyScope(k *store.ManagementKey) auth.Scope {
	switch {
	case k.WorkspaceID != nil:
		return auth.Scope{Level: auth.LevelWorkspace, OrgID: *k.OrgID, WorkspaceID: *k.WorkspaceID}
	case k.OrgID != nil:
		return auth.Scope{Level: auth.LevelOrganization, OrgID: *k.OrgID}
	default:
		return auth.Scope{Level: auth.LevelInstance}
	}
}

// Ceiling is the key's permission ceiling, or every permission for a session.
func (p *Principal) Ceiling() auth.Set {
	if p.Key == nil {
		return auth.NewSet(auth.All...)
	}
	return auth.SetOf(p.Key.Permissions)
}

// keyStatus derives a key's status from its timestamps.
func keyStatus(k *store.ManagementKey, now time.Time) string {
	switch {
	case k.RevokedAt != nil:
		return "revoked"
	case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
		return "expired"
	default:
		return "active"
	}
}

// authenticate reads the caller's credential: a bearer management key or the
// session cookie (which must come with the CSRF header).
func (s *Server) authenticate(req *Request) (*Principal, error) {
	ctx := req.ctx
	if h := req.R.Header.Get("Authorization"); h != "" {
		scheme, token, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
			return nil, errorf(http.StatusUnauthorized, "the Authorization header must be \"Bearer <management key>\"")
		}
		return s.authenticateKey(req, strings.TrimSpace(token))
	}
	c, err := req.R.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return nil, errUnauthenticated
	}
	se, err := s.store.GetSessionByHash(ctx, auth.HashToken(c.Value))
	if errors.Is(err, store.ErrNotFound) || (err == nil && !time.Now().Before(se.ExpiresAt)) {
		return nil, errorf(http.StatusUnauthorized, "session expired or signed out; sign in again")
	}
	if err != nil {
		return nil, err
	}
	// A cross-site form cannot set this header, so it proves same-origin
	// script; without it, a cookie alone could be ridden by another site.
	if !strings.EqualFold(req.R.Header.Get("X-Requested-With"), "XMLHttpRequest") {
		return nil, errorf(http.StatusForbidden, "cookie-authenticated requests must send the header X-Requested-With: XMLHttpRequest")
	}
	u, err := s.store.GetUser(ctx, se.UserID)
	if err != nil {
		return nil, err
	}
	if u.DisabledAt != nil {
		// Disabling ends sessions; this covers one started concurrently.
		return nil, errorf(http.StatusUnauthorized, "this account is disabled; ask an instance administrator")
	}
	return &Principal{User: u, Session: se}, nil
}

func (s *Server) authenticateKey(req *Request, token string) (*Principal, error) {
	ctx := req.ctx
	switch {
	case strings.HasPrefix(token, auth.InferenceKeyPrefix):
		return nil, errorf(http.StatusUnauthorized, "inference keys are not accepted by the control plane; use a management key (sk-cp-…)")
	case !strings.HasPrefix(token, auth.ManagementKeyPrefix):
		return nil, errorf(http.StatusUnauthorized, "invalid management key")
	}
	k, err := s.store.GetManagementKeyByHash(ctx, auth.HashToken(token))
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(http.StatusUnauthorized, "invalid management key")
	}
	if err != nil {
		return nil, err
	}
	switch keyStatus(k, time.Now()) {
	case "revoked":
		return nil, errorf(http.StatusUnauthorized, "management key %s has been revoked", k.Prefix)
	case "expired":
		return nil, errorf(http.StatusUnauthorized, "management key %s has expired", k.Prefix)
	}
	if err := s.checkIssuers(req, k); err != nil {
		return nil, err
	}
	u, err := s.store.GetUser(ctx, k.UserID)
	if err != nil {
		return nil, err
	}
	if u.DisabledAt != nil {
		return nil, errorf(http.StatusUnauthorized, "the account of management key %s is disabled", k.Prefix)
	}
	p := &Principal{User: u, Key: k}
	if k.OrgID != nil {
		o, err := s.store.GetOrganization(ctx, *k.OrgID)
		if err != nil {
			return nil, err
		}
		p.keyOrgSlug = o.Slug
	}
	if k.WorkspaceID != nil {
		w, err := s.store.GetWorkspace(ctx, *k.WorkspaceID)
		if err != nil {
			return nil, err
		}
		p.keyWorkspaceSlug = w.Slug
	}
	return p, nil
}

// scopeError is the 403 of a key whose scope does not reach the URL. It
// says where the key reaches and what the URL needs, so that a person can
// tell it from a missing permission ("missing permission: …") and from a
// resource that does not exist; it reveals nothing of the URL's
// organization or workspace beyond the name the caller sent.
func scopeError(p *Principal, level auth.Level, orgRef, wsRef string) *Error {
	ks := p.KeyScope()
	reach := "organization " + p.keyOrgSlug
	if ks.Level == auth.LevelWorkspace {
		reach = "workspace " + p.keyWorkspaceSlug + " of organization " + p.keyOrgSlug
	}
	var need string
	switch {
	case level == auth.LevelInstance:
		need = "this endpoint needs an instance-scope key (an instance owner or admin: gw login --instance)"
	case !refersTo(orgRef, ks.OrgID, p.keyOrgSlug):
		need = fmt.Sprintf("it does not reach organization %q", orgRef)
	case level == auth.LevelOrganization:
		need = "this endpoint needs an organization-scope key (gw login without --workspace)"
	default:
		need = fmt.Sprintf("it does not reach workspace %q", wsRef)
	}
	return errorf(http.StatusForbidden, "out of scope: this management key is scoped to %s; %s", reach, need)
}

// authorize resolves the URL's organization and workspace, computes the
// caller's rights there and checks the route's permission.
//
// Existence is never revealed to outsiders: a scoped key naming another
// organization is refused before any lookup (403 whether or not it exists),
// and a session user who belongs nowhere in the organization gets the same
// 404 as for one that does not exist.
func (s *Server) authorize(req *Request, rt *Route) error {
	level := rt.Level()
	orgRef, wsRef := req.R.PathValue("org_id"), req.R.PathValue("workspace_ref")
	if !keyReaches(req.P, rt, level, orgRef, wsRef) {
		return scopeError(req.P, level, orgRef, wsRef)
	}
	facts := auth.RoleFacts{InstanceRole: req.P.User.InstanceRole}
	if level != auth.LevelInstance {
		if err := s.resolveOrg(req, orgRef, &facts); err != nil {
			return err
		}
	}
	if level == auth.LevelWorkspace {
		if err := s.resolveWorkspace(req, wsRef, &facts); err != nil {
			return err
		}
	}
	req.Rights = auth.RoleRights(facts, level).Intersect(req.P.Ceiling())
	return checkPerms(req.Rights, rt.Perms, rt.AnyPerm)
}

// keyReaches says whether the credential's scope covers the route's
// level and the organization and workspace its path names. A
// workspace-scope key reaches an organization route only where the route
// lists narrower keys.
func keyReaches(p *Principal, rt *Route, level auth.Level, orgRef, wsRef string) bool {
	ks := p.KeyScope()
	switch ks.Level {
	case auth.LevelOrganization:
		return level != auth.LevelInstance && refersTo(orgRef, ks.OrgID, p.keyOrgSlug)
	case auth.LevelWorkspace:
		switch level {
		case auth.LevelInstance:
			return false
		case auth.LevelOrganization:
			return rt.NarrowerKeys && refersTo(orgRef, ks.OrgID, p.keyOrgSlug)
		}
		return refersTo(orgRef, ks.OrgID, p.keyOrgSlug) && refersTo(wsRef, ks.WorkspaceID, p.keyWorkspaceSlug)
	}
	return true
}

// resolveOrg finds the path's organization and the caller's role there.
// One where the caller holds no rights is not found, as one that does not
// exist.
func (s *Server) resolveOrg(req *Request, orgRef string, facts *auth.RoleFacts) error {
	notFound := errorf(http.StatusNotFound, "organization %q not found", orgRef)
	org, err := s.store.GetOrganizationByRef(req.ctx, orgRef)
	if errors.Is(err, store.ErrNotFound) {
		return notFound
	}
	if err != nil {
		return err
	}
	req.Org = org
	m, err := s.store.GetMembership(req.ctx, org.ID, req.P.User.ID)
	switch {
	case err == nil && m.Status == auth.MembershipActive:
		facts.OrgRole = m.Role
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return err
	}
	if auth.RoleRights(*facts, auth.LevelOrganization).Len() == 0 {
		return notFound
	}
	return nil
}

// resolveWorkspace finds the path's workspace and the caller's role
// there, hidden like an organization.
func (s *Server) resolveWorkspace(req *Request, wsRef string, facts *auth.RoleFacts) error {
	notFound := errorf(http.StatusNotFound, "workspace %q not found", wsRef)
	ws, err := s.store.GetWorkspaceByRef(req.ctx, req.Org.ID, wsRef)
	if errors.Is(err, store.ErrNotFound) {
		return notFound
	}
	if err != nil {
		return err
	}
	req.WS = ws
	wm, err := s.store.GetWorkspaceMember(req.ctx, ws.ID, req.P.User.ID)
	switch {
	case err == nil:
		facts.WorkspaceRole = wm.Role
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	if auth.RoleRights(*facts, auth.LevelWorkspace).Len() == 0 {
		return notFound
	}
	return nil
}

func checkPerms(rights auth.Set, perms []auth.Permission, any bool) error {
	var missing []string
	for _, perm := range perms {
		if rights.Has(perm) {
			if any {
				return nil
			}
			continue
		}
		missing = append(missing, string(perm))
	}
	if len(missing) == 0 {
		return nil
	}
	if any {
		return errorf(http.StatusForbidden, "missing permission: one of %s is required", strings.Join(missing, ", "))
	}
	return errorf(http.StatusForbidden, "missing permission: %s", strings.Join(missing, ", "))
}

// refersTo reports whether a path reference names the given id or slug.
func refersTo(ref string, id uuid.UUID, slug string) bool {
	if parsed, err := uuid.Parse(ref); err == nil && len(ref) == 36 {
		return parsed == id
	}
	return ref == slug
}

// maxIssuerDepth bounds the walk up a key's parent_id chain.
const maxIssuerDepth = 32

// checkIssuers refuses a key whose issuer, or an issuer's issuer, is
// revoked or expired. Revoking a key revokes what it issued in the same
// transaction; this check also covers a key minted by a concurrent request
// while its parent was being revoked, and keys revoked wholesale (a member
// removed, a service account deleted) whose children were not walked.
func (s *Server) checkIssuers(req *Request, k *store.ManagementKey) error {
	now := time.Now()
	parent := k.ParentID
	for depth := 0; parent != nil && depth < maxIssuerDepth; depth++ {
		pk, err := s.store.GetManagementKey(req.ctx, *parent)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if st := keyStatus(pk, now); st != "active" {
			return errorf(http.StatusUnauthorized, "management key %s has been revoked: the key that issued it (%s) is %s", k.Prefix, pk.Prefix, st)
		}
		parent = pk.ParentID
	}
	return nil
}
