package api

import (
	"crypto/rand"
	"errors"
	"math/big"
	"net/http"
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
		{Method: "POST", Path: "/api/v1/auth/cli/approve", Tag: tag, Access: Authenticated, Statuses: []int{404},
			Summary: "Approve a CLI sign-in for an organization (and optionally a workspace), or with scope instance for the whole instance", Body: wire.CLIApprove{},
			Result: wire.CLIAuthorization{}, Handle: s.cliApprove},
		{Method: "POST", Path: "/api/v1/auth/cli/deny", Tag: tag, Access: Authenticated, Summary: "Refuse a CLI sign-in",
			Body: wire.CLIDeny{}, Result: wire.CLIAuthorization{}, Handle: s.cliDeny},
		{Method: "POST", Path: "/api/v1/auth/cli/poll", Tag: tag, Access: Public, Statuses: []int{404},
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
	return wire.CLIAuthorization{UserCode: a.UserCode, Label: a.Label, Status: backend.CLIStatus(a, time.Now()), ExpiresAt: a.ExpiresAt}
}

func (s *Server) cliDescribe(r *Request) (any, error) {
	a, err := backend.FindCLISignIn(r.ctx, s.store, r.R.PathValue("user_code"))
	if err != nil {
		return nil, err
	}
	return toCLIAuthorization(a), nil
}

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
	who := backend.CLIApprover{Actor: r.actor(), KeyScope: r.P.KeyScope(), Ceiling: r.P.Ceiling()}
	a, _, err := backend.ApproveCLISignIn(r.ctx, s.store, who, backend.CLIApproval{UserCode: code, Instance: instance, OrgRef: orgRef, WorkspaceID: wsID})
	if err != nil {
		return nil, err
	}
	return toCLIAuthorization(a), nil
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
	a, err := backend.DenyCLISignIn(r.ctx, s.store, r.actor(), code)
	if err != nil {
		return nil, err
	}
	return toCLIAuthorization(a), nil
}

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
	out := wire.CLIPollResult{Status: backend.CLIStatus(a, time.Now()), IntervalSeconds: a.IntervalSeconds}
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

// cliDeliver hands the approved key to the first poll that collects it;
// a poll that loses the race learns the sign-in was consumed.
func (s *Server) cliDeliver(r *Request, a *store.CLIAuthorization, out wire.CLIPollResult) (any, error) {
	d, err := backend.DeliverCLISignIn(r.ctx, s.store, a, s.presentedKey(r), r.ID)
	if errors.Is(err, backend.ErrDelivered) {
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
	out.Status, out.Token, out.Scope, out.WorkspaceID, out.ReplacedKeyID = store.CLIApproved, &d.Token, &scope, a.WorkspaceID, d.Replaced
	if d.Org != nil {
		out.OrgID, out.OrgName = &d.Org.ID, &d.Org.Name
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
