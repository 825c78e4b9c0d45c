package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

func (s *Server) bootstrapRoutes() []*Route {
	const tag = "OSS self-hosting bootstrap"
	return []*Route{
		{Method: "GET", Path: "/api/v1/bootstrap", Tag: tag, Access: Public, Summary: "Say whether the instance still awaits its first owner",
			Result: wire.BootstrapStatus{}, Handle: s.bootstrapStatus},
		{Method: "POST", Path: "/api/v1/bootstrap", Tag: tag, Access: Public,
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
		in.Name = stringOr(optionalString(o, "name", validate.StringRule{Max: 100}), "")
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
	if st.SetupTokenHash == nil || auth.HashToken(token) != *st.SetupTokenHash {
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
type BootstrapInput struct {
	Email, Password, Name           string
	OrganizationName, WorkspaceName string
}

// Bootstrap creates the first owner without HTTP (gw serve
// --bootstrap-email). It fails with ErrAlreadyBootstrapped when the
// instance has an owner already.
func (s *Server) Bootstrap(ctx context.Context, in BootstrapInput) (wire.BootstrapResult, error) {
	in.Email = normalizeEmail(in.Email)
	var errs validate.Errors
	validate.String(in.Email, validate.Loc{"bootstrap", "email"}, emailRule, &errs)
	validate.String(in.Password, validate.Loc{"bootstrap", "password"}, passwordRule, &errs)
	if err := errs.Err(); err != nil {
		return wire.BootstrapResult{}, err
	}
	res, err := s.runBootstrap(ctx, nil, in)
	if err != nil {
		return wire.BootstrapResult{}, err
	}
	return res.(wire.BootstrapResult), nil
}

func (s *Server) runBootstrap(ctx context.Context, r *Request, in BootstrapInput) (any, error) {
	if in.Name == "" {
		in.Name = in.Email
	}
	if in.OrganizationName == "" {
		in.OrganizationName = "Default"
	}
	if in.WorkspaceName == "" {
		in.WorkspaceName = "Default"
	}
	hash, err := auth.HashPassword(in.Password)
	if err != nil {
		return nil, err
	}
	if r == nil {
		// Out-of-band bootstrap: a request-shaped context for the audit log.
		r = &Request{ctx: ctx, ID: "bootstrap", s: s}
	}
	now := store.Now()
	u := &store.User{ID: uuid.New(), Email: in.Email, Name: in.Name, PasswordHash: &hash, InstanceRole: auth.InstanceOwner, CreatedAt: now, UpdatedAt: now}
	org := &store.Organization{ID: uuid.New(), Name: in.OrganizationName, Slug: slugify(in.OrganizationName, "default"), CreatedAt: now, UpdatedAt: now}
	ws := &store.Workspace{ID: uuid.New(), OrgID: org.ID, Name: in.WorkspaceName, Slug: slugify(in.WorkspaceName, "default"), CreatedAt: now, UpdatedAt: now}
	var out wire.BootstrapResult
	err = s.store.InTx(ctx, func(tx *store.Store) error {
		// Exactly one bootstrap wins: the conditional update is the gate.
		won, err := tx.MarkBootstrapped(ctx, now)
		if err != nil {
			return err
		}
		if !won {
			return ErrAlreadyBootstrapped
		}
		if err := tx.CreateUser(ctx, u); err != nil {
			return err
		}
		if err := tx.CreateOrganization(ctx, org); err != nil {
			return err
		}
		if err := tx.CreateMembership(ctx, &store.Membership{OrgID: org.ID, UserID: u.ID, Role: auth.OrgOwner, Status: auth.MembershipActive,
			CreatedAt: now, UpdatedAt: now}); err != nil {
			return err
		}
		if err := tx.CreateWorkspace(ctx, ws); err != nil {
			return err
		}
		r.P = &Principal{User: u}
		r.Rights = auth.NewSet(auth.All...)
		k, token, err := s.issueKey(tx, r, u.ID, keyInput{Permissions: auth.Names(), Label: "bootstrap"})
		if err != nil {
			return err
		}
		if r.W != nil {
			if err := s.startSession(tx, r, u.ID); err != nil {
				return err
			}
		}
		out = wire.BootstrapResult{User: toUser(u, []uuid.UUID{org.ID}), Organization: toOrganization(org), Workspace: toWorkspace(ws),
			ManagementKey: toManagementKey(k, time.Now())}
		out.ManagementKey.Token = token
		return r.audit(tx, auditEntry{Action: "instance.bootstrapped", TargetType: "user", TargetID: u.ID.String(),
			OrgID: &org.ID, Details: map[string]any{"email": u.Email, "organization": org.Slug, "workspace": ws.Slug}})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PrepareSetup makes the one-time setup token for an instance that has no
// owner yet and returns it (empty when the instance is bootstrapped). A
// given token (GW_BOOTSTRAP_TOKEN) is used as is, for automation; otherwise
// a fresh one replaces any earlier one, since only its hash is kept.
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
	if err := s.store.SetSetupToken(ctx, &hash); err != nil {
		return "", err
	}
	return token, nil
}

// IsAlreadyBootstrapped reports whether err is a second bootstrap.
func IsAlreadyBootstrapped(err error) bool { return errors.Is(err, ErrAlreadyBootstrapped) }
