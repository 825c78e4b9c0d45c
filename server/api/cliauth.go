package api

import (
	"crypto/rand"
	"errors"
	"math/big"
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

// CLI sign-in timing: how long a code stays valid, how often the CLI
// polls, and how much a too-fast poller is slowed (RFC 8628's 5 s).
const (
	cliAuthTTL      = 10 * time.Minute
	cliPollInterval = 5
	cliSlowDownStep = 5
)

func (s *Server) cliAuthRoutes() []*Route {
	const tag = "Auth"
	return []*Route{
		{Method: "POST", Path: "/api/v1/auth/cli/start", Tag: tag, Access: Public, Summary: "Begin a device-style CLI sign-in",
			Body: wire.CLIStart{}, Result: wire.CLIStarted{}, Handle: s.cliStart},
		{Method: "GET", Path: "/api/v1/auth/cli/authorizations/{user_code}", Tag: tag, Access: Authenticated,
			Summary: "Describe a CLI sign-in awaiting approval (for the approval page)", Result: wire.CLIAuthorization{}, Handle: s.cliDescribe},
		{Method: "POST", Path: "/api/v1/auth/cli/approve", Tag: tag, Access: Authenticated,
			Summary: "Approve a CLI sign-in for an organization (and optionally a workspace), or with scope instance for the whole instance", Body: wire.CLIApprove{},
			Result: wire.CLIAuthorization{}, Handle: s.cliApprove},
		{Method: "POST", Path: "/api/v1/auth/cli/deny", Tag: tag, Access: Authenticated, Summary: "Refuse a CLI sign-in",
			Body: wire.CLIDeny{}, Result: wire.CLIAuthorization{}, Handle: s.cliDeny},
		{Method: "POST", Path: "/api/v1/auth/cli/poll", Tag: tag, Access: Public,
			Summary: "Poll a CLI sign-in; the first poll after approval delivers the management key, once. " +
				"Send the CLI's current key as Authorization: Bearer to have it revoked when the new one replaces it. " +
				"An unknown poll secret answers 404.",
			Body: wire.CLIPoll{}, Result: wire.CLIPollResult{}, Handle: s.cliPoll},
	}
}

// userCodeChars avoids vowels (no words) and look-alikes (0/O, 1/I).
const userCodeChars = "BCDFGHJKLMNPQRSTVWXZ"

func newUserCode() string {
	b := make([]byte, 8)
	max := big.NewInt(int64(len(userCodeChars)))
	for i := range b {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			panic("auth: reading random bytes: " + err.Error())
		}
		b[i] = userCodeChars[n.Int64()]
	}
	return string(b[:4]) + "-" + string(b[4:])
}

// normalizeUserCode accepts what a person types: any case, with or
// without the dash.
func normalizeUserCode(s string) string {
	s = strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(s), "-", ""))
	if len(s) != 8 {
		return s
	}
	return s[:4] + "-" + s[4:]
}

func cliStatus(a *store.CLIAuthorization, now time.Time) string {
	if (a.Status == store.CLIPending || a.Status == store.CLIApproved) && !now.Before(a.ExpiresAt) {
		return "expired"
	}
	return a.Status
}

func (s *Server) cliStart(r *Request) (any, error) {
	label := "gw CLI"
	if err := r.body(func(o *validate.Object) {
		if p := optionalString(o, "label", labelRule); p != nil {
			label = *p
		}
	}); err != nil {
		return nil, err
	}
	secret, _, hash := auth.NewToken("cli_")
	now := store.Now()
	a := &store.CLIAuthorization{ID: uuid.New(), PollSecretHash: hash, Label: label, Status: store.CLIPending,
		IntervalSeconds: cliPollInterval, Permissions: store.Strings{}, ExpiresAt: now.Add(cliAuthTTL), CreatedAt: now}
	for attempt := 0; ; attempt++ {
		a.UserCode = newUserCode()
		err := s.store.CreateCLIAuthorization(r.ctx, a)
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrConflict) || attempt == 5 {
			return nil, err
		}
	}
	return wire.CLIStarted{PollSecret: secret, UserCode: a.UserCode, VerificationURL: s.opts.PublicURL + "/cli/authorize?code=" + a.UserCode,
		IntervalSeconds: a.IntervalSeconds, ExpiresAt: a.ExpiresAt}, nil
}

func toCLIAuthorization(a *store.CLIAuthorization) wire.CLIAuthorization {
	return wire.CLIAuthorization{UserCode: a.UserCode, Label: a.Label, Status: cliStatus(a, time.Now()), ExpiresAt: a.ExpiresAt}
}

func (s *Server) cliByCode(tx *store.Store, r *Request, code string) (*store.CLIAuthorization, error) {
	a, err := tx.GetCLIAuthorizationByCode(r.ctx, normalizeUserCode(code))
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(http.StatusNotFound, "no CLI sign-in with code %q; check the code the CLI printed", code)
	}
	return a, err
}

func (s *Server) cliDescribe(r *Request) (any, error) {
	a, err := s.cliByCode(s.store, r, r.R.PathValue("user_code"))
	if err != nil {
		return nil, err
	}
	return toCLIAuthorization(a), nil
}

var errNotPending = errorf(http.StatusConflict, "this CLI sign-in is no longer awaiting approval; start again with gw login")

// errSessionOnly keeps CLI approval a person's act in a browser: a key
// approving would mint keys outside the issuing rules (no parent, no
// expiry bound).
var errSessionOnly = errorf(http.StatusForbidden, "CLI sign-ins are approved or denied from a browser session, not with a management key")

func (s *Server) cliApprove(r *Request) (any, error) {
	if r.P.Session == nil {
		return nil, errSessionOnly
	}
	var code, orgRef string
	var wsID *uuid.UUID
	instance := false
	if err := r.body(func(o *validate.Object) {
		code = requiredString(o, "user_code", validate.StringRule{Min: 1, Max: 16})
		if v, ok := o.Raw("scope"); ok {
			scope, _ := validate.Literal(v, o.Loc().With("scope"), []string{wire.ScopeInstance, wire.ScopeOrganization, wire.ScopeWorkspace}, o.Errors())
			instance = scope == wire.ScopeInstance
		}
		if instance {
			// An instance key belongs to no organization: naming one is
			// a contradiction, refused rather than ignored.
			for _, name := range []string{"org_id", "workspace_id"} {
				if v, ok := o.Raw(name); ok && v != nil {
					o.Errors().Add(o.Loc().With(name), "value_error", "Value error, an instance-scope sign-in names no organization or workspace", v, nil)
				}
			}
			return
		}
		orgRef = requiredString(o, "org_id", validate.StringRule{Min: 1, Max: 63, NoControl: true})
		if v, ok := o.Raw("workspace_id"); ok && v != nil {
			if id, ok := validate.UUID(v, o.Loc().With("workspace_id"), o.Errors()); ok {
				wsID = &id
			}
		}
	}); err != nil {
		return nil, err
	}
	var out wire.CLIAuthorization
	err := s.store.InTx(r.ctx, func(tx *store.Store) error {
		a, err := s.cliByCode(tx, r, code)
		if err != nil {
			return err
		}
		if cliStatus(a, time.Now()) != store.CLIPending {
			return errNotPending
		}
		var org *store.Organization
		var ws *store.Workspace
		var rights auth.Set
		if instance {
			rights, err = instanceApprovalRights(r)
		} else {
			org, ws, rights, err = s.approvalScope(tx, r, orgRef, wsID)
		}
		if err != nil {
			return err
		}
		now := store.Now()
		a.Status, a.UserID, a.DecidedAt = store.CLIApproved, &r.P.User.ID, &now
		if org != nil {
			a.OrgID = &org.ID
		}
		if ws != nil {
			a.WorkspaceID = &ws.ID
		}
		a.Permissions = store.Strings(rights.Sorted())
		ok, err := tx.DecideCLIAuthorization(r.ctx, a, now)
		if err != nil {
			return err
		}
		if !ok {
			return errNotPending
		}
		r.Org, r.WS = org, ws
		out = toCLIAuthorization(a)
		return r.audit(tx, auditEntry{Action: "cli_authorization.approved", TargetType: "cli_authorization", TargetID: a.ID.String(),
			Details: map[string]any{"label": a.Label, "user_code": a.UserCode}})
	})
	return out, err
}

// instanceApprovalRights are what an instance-scope key approved by the
// caller carries: their instance role's rights. Only instance owners and
// admins have any; everyone else is told why, since the page offers the
// choice only to them anyway.
func instanceApprovalRights(r *Request) (auth.Set, error) {
	rights := auth.RoleRights(auth.RoleFacts{InstanceRole: r.P.User.InstanceRole}, auth.LevelInstance).Intersect(r.P.Ceiling())
	if rights.Len() == 0 {
		return nil, errorf(http.StatusForbidden, "only an instance owner or admin can approve an instance-scope key; pick an organization instead")
	}
	return rights, nil
}

// approvalScope resolves the organization (and workspace) a CLI sign-in is
// approved for and the rights the delivered key will carry: the approver's
// own rights there, within their credential's ceiling.
func (s *Server) approvalScope(tx *store.Store, r *Request, orgRef string, wsID *uuid.UUID) (*store.Organization, *store.Workspace, auth.Set, error) {
	notFound := errorf(http.StatusNotFound, "organization %q not found", orgRef)
	org, err := tx.GetOrganizationByRef(r.ctx, orgRef)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, nil, notFound
	}
	if err != nil {
		return nil, nil, nil, err
	}
	if !r.P.KeyScope().Covers(auth.Scope{Level: auth.LevelOrganization, OrgID: org.ID}) {
		return nil, nil, nil, errScope
	}
	facts := auth.RoleFacts{InstanceRole: r.P.User.InstanceRole}
	if m, err := tx.GetMembership(r.ctx, org.ID, r.P.User.ID); err == nil && m.Status == auth.MembershipActive {
		facts.OrgRole = m.Role
	}
	level := auth.LevelOrganization
	var ws *store.Workspace
	if wsID != nil {
		level = auth.LevelWorkspace
		if ws, err = tx.GetWorkspaceByRef(r.ctx, org.ID, wsID.String()); errors.Is(err, store.ErrNotFound) {
			return nil, nil, nil, errorf(http.StatusNotFound, "workspace %s not found", wsID)
		} else if err != nil {
			return nil, nil, nil, err
		}
		if wm, err := tx.GetWorkspaceMember(r.ctx, ws.ID, r.P.User.ID); err == nil {
			facts.WorkspaceRole = wm.Role
		}
	}
	rights := auth.RoleRights(facts, level).Intersect(r.P.Ceiling())
	if rights.Len() == 0 {
		return nil, nil, nil, notFound
	}
	return org, ws, rights, nil
}

func (s *Server) cliDeny(r *Request) (any, error) {
	if r.P.Session == nil {
		return nil, errSessionOnly
	}
	var code string
	if err := r.body(func(o *validate.Object) {
		code = requiredString(o, "user_code", validate.StringRule{Min: 1, Max: 16})
	}); err != nil {
		return nil, err
	}
	var out wire.CLIAuthorization
	err := s.store.InTx(r.ctx, func(tx *store.Store) error {
		a, err := s.cliByCode(tx, r, code)
		if err != nil {
			return err
		}
		now := store.Now()
		a.Status, a.UserID, a.DecidedAt = store.CLIDenied, &r.P.User.ID, &now
		ok, err := tx.DecideCLIAuthorization(r.ctx, a, now)
		if err != nil {
			return err
		}
		if !ok {
			return errNotPending
		}
		out = toCLIAuthorization(a)
		return r.audit(tx, auditEntry{Action: "cli_authorization.denied", TargetType: "cli_authorization", TargetID: a.ID.String(),
			Details: map[string]any{"label": a.Label, "user_code": a.UserCode}})
	})
	return out, err
}

// errLostDelivery rolls back a delivery another poll won.
var errLostDelivery = errors.New("another poll delivered the key")

func (s *Server) cliPoll(r *Request) (any, error) {
	var secret string
	if err := r.body(func(o *validate.Object) {
		secret = requiredString(o, "poll_secret", validate.StringRule{Min: 1, Max: 256, Secret: true})
	}); err != nil {
		return nil, err
	}
	a, err := s.store.GetCLIAuthorizationBySecret(r.ctx, auth.HashToken(secret))
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(http.StatusNotFound, "unknown CLI sign-in; start again with gw login")
	}
	if err != nil {
		return nil, err
	}
	out := wire.CLIPollResult{Status: cliStatus(a, time.Now()), IntervalSeconds: a.IntervalSeconds}
	if out.Status != store.CLIPending && out.Status != store.CLIApproved {
		return out, nil
	}
	// A poll sooner than half the interval is answered slow_down and the
	// interval grows, as RFC 8628 does; half, so a CLI polling on time is
	// never penalised for jitter.
	now := store.Now()
	passed, err := s.store.PassPollGate(r.ctx, a.ID, now, time.Duration(a.IntervalSeconds)*time.Second/2)
	if err != nil {
		return nil, err
	}
	if !passed {
		out.Status, out.IntervalSeconds = "slow_down", a.IntervalSeconds+cliSlowDownStep
		return out, s.store.SlowDown(r.ctx, a.ID, out.IntervalSeconds)
	}
	if out.Status == store.CLIPending {
		return out, nil
	}
	return s.cliDeliver(r, a, out)
}

// cliDeliver mints the approved key and marks the authorization consumed
// in one transaction; of several simultaneous polls exactly one commits.
// A current key sent by the CLI is revoked in the same transaction when it
// belongs to the same user and scope (labels play no part).
func (s *Server) cliDeliver(r *Request, a *store.CLIAuthorization, out wire.CLIPollResult) (any, error) {
	current := s.presentedKey(r)
	var token string
	var org *store.Organization
	err := s.store.InTx(r.ctx, func(tx *store.Store) error {
		var err error
		if a.OrgID != nil {
			if org, err = tx.GetOrganization(r.ctx, *a.OrgID); err != nil {
				return err
			}
		}
		now := store.Now()
		// The key is the approving user's, made on their approval.
		actor := backend.User(*a.UserID, false, nil, r.ID)
		k, tokenStr, err := backend.MintManagementKey(r.ctx, tx, actor, backend.KeySpec{Owner: *a.UserID, OrgID: a.OrgID,
			WorkspaceID: a.WorkspaceID, Permissions: a.Permissions, Label: a.Label, Via: "cli_authorization"})
		if err != nil {
			return err
		}
		won, err := tx.ConsumeCLIAuthorization(r.ctx, a.ID, k.ID)
		if err != nil {
			return err
		}
		if !won {
			return errLostDelivery
		}
		r.Org = org
		r.P = &Principal{User: &store.User{ID: *a.UserID}}
		if current != nil && current.UserID == *a.UserID && backend.SameID(current.OrgID, a.OrgID) && backend.SameID(current.WorkspaceID, a.WorkspaceID) {
			if _, err := tx.RevokeManagementKey(r.ctx, current.ID, now); err != nil {
				return err
			}
			if err := backend.RevokeIssuedKeys(r.ctx, tx, actor, []uuid.UUID{current.ID}, now, "issuing key replaced by CLI sign-in"); err != nil {
				return err
			}
			out.ReplacedKeyID = &current.ID
			if err := r.audit(tx, auditEntry{Action: "management_key.revoked", TargetType: "management_key", TargetID: current.ID.String(),
				Details: map[string]any{"label": current.Label, "prefix": current.Prefix, "reason": "replaced by CLI sign-in"}}); err != nil {
				return err
			}
		}
		token = tokenStr
		return nil
	})
	if errors.Is(err, errLostDelivery) {
		out.Status = store.CLIConsumed
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	scope := wire.ScopeInstance
	switch {
	case a.WorkspaceID != nil:
		scope = wire.ScopeWorkspace
	case a.OrgID != nil:
		scope = wire.ScopeOrganization
	}
	out.Status, out.Token, out.Scope, out.WorkspaceID = store.CLIApproved, &token, &scope, a.WorkspaceID
	if org != nil {
		out.OrgID, out.OrgName = &org.ID, &org.Name
	}
	return out, nil
}

// presentedKey is the active management key in the poll's Authorization
// header, if any; anything else there is ignored (the poll needs no
// credential).
func (s *Server) presentedKey(r *Request) *store.ManagementKey {
	if r.P != nil && r.P.Key != nil {
		return r.P.Key
	}
	return nil
}
