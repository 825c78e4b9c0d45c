package api

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

func (s *Server) bootstrapRoutes() []*Route {
	const tag = "OSS self-hosting bootstrap"
	return []*Route{
		{Method: "GET", Path: "/api/v1/bootstrap", Tag: tag, Access: Public, Summary: "Say whether the instance still awaits its first owner",
			Result: wire.BootstrapStatus{}, Handle: s.bootstrapStatus},
		{Method: "POST", Path: "/api/v1/bootstrap", Tag: tag, Access: Public, Statuses: []int{503},
			Summary: "Create the first instance owner, a default organization and workspace (needs the one-time setup token)",
			Body:    wire.Bootstrap{}, Result: wire.BootstrapResult{}, Handle: s.bootstrap},
	}
}

func (s *Server) bootstrapStatus(r *Request) (any, error) {
	st, err := s.store.GetInstanceState(r.ctx)
	if err != nil {
		return nil, err
	}
	return wire.BootstrapStatus{Bootstrapped: st.BootstrappedAt != nil}, nil
}

// SetupDone reports whether the instance has its first owner (for the
// setup page).
func (s *Server) SetupDone(r *http.Request) (bool, error) {
	st, err := s.store.GetInstanceState(r.Context())
	if err != nil {
		return false, err
	}
	return st.BootstrappedAt != nil, nil
}

// ErrAlreadyBootstrapped is returned by a second bootstrap.
var ErrAlreadyBootstrapped = errorf(http.StatusConflict, "the instance is already bootstrapped; sign in instead")

func (s *Server) bootstrap(r *Request) (any, error) {
	var in BootstrapInput
	var token string
	if err := r.body(func(o *validate.Object) {
		token = requiredString(o, "token", validate.StringRule{Min: 1, Max: 256, Secret: true})
		in.Email, in.Password = readCredentials(o)
		in.Name = stringOr(optionalString(o, "name", personNameRule), "")
		in.OrganizationName = stringOr(optionalString(o, "organization_name", nameRule), "")
		in.WorkspaceName = stringOr(optionalString(o, "workspace_name", nameRule), "")
	}); err != nil {
		return nil, err
	}
	st, err := s.store.GetInstanceState(r.ctx)
	if err != nil {
		return nil, err
	}
	if st.BootstrappedAt != nil {
		return nil, ErrAlreadyBootstrapped
	}
	if !slices.Contains(st.SetupTokenHashes(), auth.HashToken(token)) {
		return nil, errorf(http.StatusForbidden, "invalid setup token; use the one printed in the server log")
	}
	return s.runBootstrap(r.ctx, r, in)
}

func stringOr(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}

// BootstrapInput describes the first owner and the default tenancy.
type BootstrapInput = backend.BootstrapInput

// runBootstrap bootstraps for a request: the first owner is signed in
// with a session in the same transaction.
func (s *Server) runBootstrap(ctx context.Context, r *Request, in BootstrapInput) (any, error) {
	res, err := backend.Bootstrap(ctx, s.store, backend.Actor{Type: "system", RequestID: r.ID}, in, func(tx *store.Store, b *backend.Bootstrapped) error {
		se, token, err := backend.StartSession(ctx, tx, b.User.ID, sessionStart(r))
		if err == nil {
			s.setSessionCookie(r, se, token)
		}
		return err
	})
	if errors.Is(err, backend.ErrAlreadyBootstrapped) {
		return nil, ErrAlreadyBootstrapped
	}
	if err != nil {
		return nil, err
	}
	return BootstrapResult(res), nil
}

// BootstrapResult is a bootstrap's outcome as the API answers it, the
// management key's token included (shown this once).
func BootstrapResult(b *backend.Bootstrapped) wire.BootstrapResult {
	out := wire.BootstrapResult{User: toUser(b.User, []uuid.UUID{b.Organization.ID}), Organization: toOrganization(b.Organization),
		Workspace: toWorkspace(b.Workspace), ManagementKey: toManagementKey(b.Key, time.Now())}
	out.ManagementKey.Token = b.Token
	return out
}

// PrepareSetup makes the one-time setup token for an instance that has no
// owner yet and returns it (empty when the instance is bootstrapped). A
// given token (GW_BOOTSTRAP_TOKEN) is used as is, for automation; otherwise
// a fresh one. It is added to the tokens of the other processes that
// started on the instance meanwhile (replicas), each of which works until
// the instance has its owner (store.MaxSetupTokens).
func (s *Server) PrepareSetup(ctx context.Context, given string) (string, error) {
	st, err := s.store.GetInstanceState(ctx)
	if err != nil {
		return "", err
	}
	if st.BootstrappedAt != nil {
		return "", nil
	}
	token := given
	if token == "" {
		token, _, _ = auth.NewToken(auth.SetupTokenPrefix)
	}
	hash := auth.HashToken(token)
	if err := s.store.AddSetupToken(ctx, hash); err != nil {
		return "", err
	}
	return token, nil
}
