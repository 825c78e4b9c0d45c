package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/oauth2"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/reseal"
	"github.com/gw-gateway/gw/server/sso"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// Identity providers and OpenID Connect sign-in (issue 31, part 1;
// docs/identity.md).

const (
	idpBase = "/api/v1/instance/identity-providers"
	// ssoLoginTTL is how long a sign-in may take at the provider.
	ssoLoginTTL = 10 * time.Minute
	// ssoStateCookie binds a sign-in's state to the browser that started
	// it, so a callback URL handed to someone else signs nobody in.
	ssoStateCookie = "gw_sso_state"
	ssoTimeout     = 10 * time.Second
)

func (s *Server) identityRoutes() []*Route {
	const tag = "Instance Identity Providers"
	read := []auth.Permission{auth.PrincipalsRead}
	manage := []auth.Permission{auth.PrincipalsManage}
	return []*Route{
		{Method: "POST", Path: idpBase, Tag: tag, Summary: "Add an OpenID provider (its discovery document and keys are fetched now; the client secret is sealed and never returned)",
			Perms: manage, Body: wire.IdentityProviderCreate{}, Result: wire.IdentityProvider{}, Handle: s.createIdentityProvider},
		{Method: "GET", Path: idpBase, Tag: tag, Summary: "List the identity providers (complete set)",
			Perms: read, Result: []wire.IdentityProvider{}, Handle: s.listIdentityProviders},
		{Method: "GET", Path: idpBase + "/{name}", Tag: tag, Summary: "Get an identity provider",
			Perms: read, Result: wire.IdentityProvider{}, Handle: s.getIdentityProvider},
		{Method: "PATCH", Path: idpBase + "/{name}", Tag: tag, Summary: "Change an identity provider (a new issuer is discovered again)",
			Perms: manage, Body: wire.IdentityProviderUpdate{}, Result: wire.IdentityProvider{}, Handle: s.updateIdentityProvider},
		{Method: "DELETE", Path: idpBase + "/{name}", Tag: tag, Summary: "Delete an identity provider no organization requires",
			Perms: manage, Result: wire.Deleted{}, Handle: s.deleteIdentityProvider},
		{Method: "GET", Path: "/api/v1/auth/identity-providers", Tag: "Auth", Access: Public, Summary: "The identity providers the sign-in page offers",
			Result: []wire.SignInProvider{}, Handle: s.signInProviders},
		{Method: "GET", Path: "/api/v1/auth/oidc/{name}/start", Tag: "Auth", Access: Public, Raw: true, Statuses: []int{http.StatusFound},
			Summary: "Sign in through an identity provider: redirects to it (authorization code with PKCE S256, state and nonce)",
			Query:   []QueryParam{{Name: "return_to", Description: "Where to go when signed in: a path of this site (another origin is refused)."}},
			Handle:  s.ssoStart},
		{Method: "GET", Path: "/api/v1/auth/oidc/{name}/callback", Tag: "Auth", Access: Public, Raw: true,
			Statuses: []int{http.StatusSeeOther, http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden},
			Summary:  "Where the identity provider returns: checks the ID token, signs in (sets svc_session) and redirects to return_to",
			Query: []QueryParam{{Name: "state", Description: "The sign-in's state."}, {Name: "code", Description: "The authorization code."},
				{Name: "error", Description: "The provider's refusal."}, {Name: "error_description", Description: "Its explanation."}},
			Handle: s.ssoCallback},
	}
}

var (
	idpNameRule   = validate.StringRule{Min: 1, Max: 63, Pattern: slugRule.Pattern}
	issuerRule    = validate.StringRule{Min: 1, Max: 2048, NoControl: true}
	clientIDRule  = validate.StringRule{Min: 1, Max: 512, NoControl: true}
	claimRule     = validate.StringRule{Min: 1, Max: 100, NoControl: true}
	scopeRule     = validate.StringRule{Min: 1, Max: 100, Pattern: regexpScope}
	domainRule    = validate.StringRule{Min: 1, Max: 253, NoControl: true}
	groupRule     = validate.StringRule{Min: 1, Max: 256, NoControl: true}
	idpSecretRule = validate.StringRule{Min: 1, Max: 8192, Secret: true}
	// regexpScope is an OAuth scope token (RFC 6749 §3.3).
	regexpScope = regexp.MustCompile(`^[\x21\x23-\x5B\x5D-\x7E]+$`)
)

func identityAAD(id uuid.UUID) string { return reseal.IdentityProviderAAD(id) }

func (s *Server) sealIdentitySecret(secret []byte, id uuid.UUID) (string, error) {
	return s.opts.Keyring.Seal(secret, identityAAD(id))
}

// ssoHTTP is the client of discovery, keys and token requests: dialled
// under this process's egress policy with the instance's setting.
func (s *Server) ssoHTTP() *http.Client {
	s.ssoOnce.Do(func() {
		s.ssoClient = sso.NewHTTPClient(func() egress.Policy {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			p, err := s.egressPolicy(ctx)
			if err != nil {
				return s.opts.Egress
			}
			return p
		}, ssoTimeout)
		s.ssoParties = sso.NewParties(s.ssoClient)
	})
	return s.ssoClient
}

// idpInput is a provider body as read: the backend input and the mappings
// as given (org and workspace refs), resolved after reading.
type idpInput struct {
	backend.IdentityProviderInput
	mappings []wire.GroupMapping
}

func (s *Server) readIdentityProvider(o *validate.Object, create bool) idpInput {
	var in idpInput
	if create {
		in.Name = requiredString(o, "name", idpNameRule)
		if v, ok := o.Raw("kind"); ok {
			validate.Literal(v, o.Loc().With("kind"), []string{"oidc"}, o.Errors())
		}
		iss := requiredString(o, "issuer", issuerRule)
		in.Issuer = &iss
		cid := requiredString(o, "client_id", clientIDRule)
		in.ClientID = &cid
	} else {
		in.Issuer = optionalString(o, "issuer", issuerRule)
		in.ClientID = optionalString(o, "client_id", clientIDRule)
	}
	if in.Issuer != nil {
		if p := sso.IssuerProblem(*in.Issuer); p != "" {
			o.Errors().Add(o.Loc().With("issuer"), "value_error", p, *in.Issuer, nil)
		}
	}
	if v, ok := o.Raw("client_secret"); ok {
		if v == nil && !create {
			in.ClearSecret = true
		} else if sec, good := validate.String(v, o.Loc().With("client_secret"), idpSecretRule, o.Errors()); good {
			in.ClientSecret = &sec
		}
	}
	if v, ok := o.Raw("scopes"); ok {
		in.Scopes = []string{}
		validate.List(v, o.Loc().With("scopes"), validate.ListRule{Min: 1, Max: 20}, o.Errors(), func(v any, loc validate.Loc) {
			if sc, ok := validate.String(v, loc, scopeRule, o.Errors()); ok {
				in.Scopes = append(in.Scopes, sc)
			}
		})
		if !contains(in.Scopes, "openid") {
			o.Errors().Add(o.Loc().With("scopes"), "value_error", "Value error, scopes must include openid", nil, nil)
		}
	} else if create {
		in.Scopes = []string{"openid", "email", "profile"}
	}
	if v, ok := o.Raw("claims"); ok {
		if co := validate.ReadObject(v, o.Loc().With("claims"), o.Errors()); co != nil {
			in.ClaimEmail = optionalString(co, "email", claimRule)
			in.ClaimName = optionalString(co, "name", claimRule)
			in.ClaimGroups = optionalString(co, "groups", claimRule)
			co.Close()
		}
	}
	if v, ok := o.Raw("allowed_email_domains"); ok {
		in.DomainsSet, in.AllowedEmailDomains = true, []string{}
		validate.List(v, o.Loc().With("allowed_email_domains"), validate.ListRule{Max: 100}, o.Errors(), func(v any, loc validate.Loc) {
			if d, ok := validate.String(v, loc, domainRule, o.Errors()); ok {
				d = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(d), "@"))
				if d == "" || strings.ContainsAny(d, "@/ ") {
					o.Errors().Add(loc, "value_error", "Value error, a domain such as example.com", d, nil)
					return
				}
				in.AllowedEmailDomains = append(in.AllowedEmailDomains, d)
			}
		})
	}
	in.JIT = optionalBool(o, "jit")
	if v, ok := o.Raw("group_mappings"); ok {
		in.MappingsSet = true
		validate.List(v, o.Loc().With("group_mappings"), validate.ListRule{Max: 500}, o.Errors(), func(v any, loc validate.Loc) {
			mo := validate.ReadObject(v, loc, o.Errors())
			if mo == nil {
				return
			}
			defer mo.Close()
			m := wire.GroupMapping{Group: requiredString(mo, "group", groupRule), Org: requiredString(mo, "org", nameRule),
				Role: requiredLiteral(mo, "role", auth.OrgRoles)}
			if wv, ok := mo.Raw("workspaces"); ok {
				validate.List(wv, loc.With("workspaces"), validate.ListRule{Max: 100}, o.Errors(), func(v any, wloc validate.Loc) {
					wo := validate.ReadObject(v, wloc, o.Errors())
					if wo == nil {
						return
					}
					defer wo.Close()
					m.Workspaces = append(m.Workspaces, wire.WorkspaceMapping{Workspace: requiredString(wo, "workspace", nameRule),
						Role: requiredLiteral(wo, "role", auth.WorkspaceRoles)})
				})
			}
			in.mappings = append(in.mappings, m)
		})
	}
	return in
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// resolveMappings turns the mappings' organization and workspace refs
// into ids: one that names nothing is a 422 at its place.
func (s *Server) resolveMappings(ctx context.Context, in *idpInput) error {
	if !in.MappingsSet {
		return nil
	}
	var errs validate.Errors
	in.GroupMappings = []store.GroupMapping{}
	for i, m := range in.mappings {
		loc := validate.Loc{"body", "group_mappings", i}
		org, err := s.store.GetOrganizationByRef(ctx, m.Org)
		if errors.Is(err, store.ErrNotFound) {
			errs.Add(loc.With("org"), "value_error", "Value error, no organization has this id or slug", m.Org, nil)
			continue
		} else if err != nil {
			return err
		}
		gm := store.GroupMapping{Group: m.Group, OrgID: org.ID, Role: m.Role}
		for j, w := range m.Workspaces {
			ws, err := s.store.GetWorkspaceByRef(ctx, org.ID, w.Workspace)
			if errors.Is(err, store.ErrNotFound) {
				errs.Add(loc.With("workspaces", j, "workspace"), "value_error", "Value error, the organization has no workspace with this id or slug", w.Workspace, nil)
				continue
			} else if err != nil {
				return err
			}
			gm.Workspaces = append(gm.Workspaces, store.WorkspaceMapping{WorkspaceID: ws.ID, Role: w.Role})
		}
		in.GroupMappings = append(in.GroupMappings, gm)
	}
	return errs.Err()
}

// discover fetches and checks the issuer's discovery document and keys,
// under the egress policy: a failure is a 422 on issuer, saying why.
func (s *Server) discover(ctx context.Context, issuer string) (*string, error) {
	policy, err := s.egressPolicy(ctx)
	if err != nil {
		return nil, err
	}
	var errs validate.Errors
	loc := validate.Loc{"body", "issuer"}
	if checkEgress(ctx, policy, &errs, loc, issuer, issuer); errs.Len() > 0 {
		return nil, errs.Err()
	}
	d, err := sso.Discover(ctx, s.ssoHTTP(), issuer)
	if err != nil {
		errs.Add(loc, "value_error", "Value error, "+err.Error(), issuer, nil)
		return nil, errs.Err()
	}
	for name, u := range map[string]string{"token_endpoint": d.TokenEndpoint, "jwks_uri": d.JWKSURI} {
		checkEgress(ctx, policy, &errs, validate.Loc{"body", "issuer", name}, u, u)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	b, _ := json.Marshal(d)
	doc := string(b)
	return &doc, nil
}

func (s *Server) createIdentityProvider(r *Request) (any, error) {
	var in idpInput
	if err := r.body(func(o *validate.Object) { in = s.readIdentityProvider(o, true) }); err != nil {
		return nil, err
	}
	if err := s.resolveMappings(r.ctx, &in); err != nil {
		return nil, err
	}
	if _, err := s.store.GetIdentityProviderByName(r.ctx, in.Name); err == nil {
		return nil, errorf(http.StatusConflict, "an identity provider named %q exists", in.Name)
	}
	doc, err := s.discover(r.ctx, *in.Issuer)
	if err != nil {
		return nil, err
	}
	in.Discovery, in.Seal = doc, s.sealIdentitySecret
	p, err := backend.CreateIdentityProvider(r.ctx, s.store, r.actor(), in.IdentityProviderInput)
	if err != nil {
		return nil, err
	}
	return s.toIdentityProvider(p), nil
}

func (s *Server) listIdentityProviders(r *Request) (any, error) {
	ps, err := s.store.ListIdentityProviders(r.ctx)
	if err != nil {
		return nil, err
	}
	out := make([]wire.IdentityProvider, len(ps))
	for i := range ps {
		out[i] = s.toIdentityProvider(&ps[i])
	}
	return out, nil
}

func (s *Server) getIdentityProvider(r *Request) (any, error) {
	p, err := backend.IdentityProviderNamed(r.ctx, s.store, r.R.PathValue("name"))
	if err != nil {
		return nil, err
	}
	return s.toIdentityProvider(p), nil
}

func (s *Server) updateIdentityProvider(r *Request) (any, error) {
	var in idpInput
	if err := r.body(func(o *validate.Object) { in = s.readIdentityProvider(o, false) }); err != nil {
		return nil, err
	}
	name := r.R.PathValue("name")
	if _, err := backend.IdentityProviderNamed(r.ctx, s.store, name); err != nil {
		return nil, err
	}
	if err := s.resolveMappings(r.ctx, &in); err != nil {
		return nil, err
	}
	if in.Issuer != nil {
		doc, err := s.discover(r.ctx, *in.Issuer)
		if err != nil {
			return nil, err
		}
		in.Discovery = doc
	}
	in.Seal = s.sealIdentitySecret
	p, err := backend.UpdateIdentityProvider(r.ctx, s.store, r.actor(), name, in.IdentityProviderInput)
	if err != nil {
		return nil, err
	}
	return s.toIdentityProvider(p), nil
}

func (s *Server) deleteIdentityProvider(r *Request) (any, error) {
	p, err := backend.DeleteIdentityProvider(r.ctx, s.store, r.actor(), r.R.PathValue("name"))
	if err != nil {
		return nil, err
	}
	return wire.Deleted{ID: p.ID, DeletedAt: store.Now()}, nil
}

func ssoStartPath(name string) string { return "/api/v1/auth/oidc/" + url.PathEscape(name) + "/start" }

func (s *Server) toIdentityProvider(p *store.IdentityProvider) wire.IdentityProvider {
	out := wire.IdentityProvider{ID: p.ID, Name: p.Name, Kind: p.Kind, Issuer: p.Issuer, ClientID: p.ClientID,
		HasClientSecret: p.ClientSecretSealed != nil, SecretHint: p.SecretHint, Scopes: []string(p.Scopes),
		Claims:              wire.IdentityClaims{Email: p.ClaimEmail, Name: p.ClaimName, Groups: p.ClaimGroups},
		AllowedEmailDomains: []string(p.AllowedEmailDomains), JIT: p.JIT, GroupMappings: []wire.GroupMapping{},
		StartURL: ssoStartPath(p.Name), CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
	if out.Scopes == nil {
		out.Scopes = []string{}
	}
	if out.AllowedEmailDomains == nil {
		out.AllowedEmailDomains = []string{}
	}
	for _, m := range backend.GroupMappings(p) {
		gm := wire.GroupMapping{Group: m.Group, Org: m.OrgID.String(), Role: m.Role, Workspaces: []wire.WorkspaceMapping{}}
		for _, w := range m.Workspaces {
			gm.Workspaces = append(gm.Workspaces, wire.WorkspaceMapping{Workspace: w.WorkspaceID.String(), Role: w.Role})
		}
		out.GroupMappings = append(out.GroupMappings, gm)
	}
	return out
}

// SignInProviders names the identity providers, for the sign-in page.
func (s *Server) SignInProviders(r *http.Request) []string {
	ps, err := s.store.ListIdentityProviders(r.Context())
	if err != nil {
		s.log.Warn("list identity providers", "error", err)
		return nil
	}
	out := make([]string, len(ps))
	for i := range ps {
		out[i] = ps[i].Name
	}
	return out
}

func (s *Server) signInProviders(r *Request) (any, error) {
	out := []wire.SignInProvider{}
	for _, n := range s.SignInProviders(r.R) {
		out = append(out, wire.SignInProvider{Name: n, StartURL: ssoStartPath(n)})
	}
	return out, nil
}

// publicBase is this site's origin as browsers reach it.
func (s *Server) publicBase(r *Request) string {
	if s.opts.PublicURL != "" {
		return strings.TrimSuffix(s.opts.PublicURL, "/")
	}
	scheme := "http"
	if r.R.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.R.Host
}

func (s *Server) relyingParty(r *Request, p *store.IdentityProvider) (*sso.RP, error) {
	var d sso.Discovery
	if err := json.Unmarshal([]byte(p.Discovery), &d); err != nil {
		return nil, err
	}
	secret := ""
	if p.ClientSecretSealed != nil {
		plain, err := s.opts.Keyring.Open(*p.ClientSecretSealed, identityAAD(p.ID))
		if err != nil {
			return nil, err
		}
		secret = string(plain)
	}
	s.ssoHTTP()
	return s.ssoParties.Get(sso.Config{Key: p.ID.String() + "@" + p.UpdatedAt.String(), ClientID: p.ClientID, ClientSecret: secret,
		Scopes: p.Scopes, Discovery: d,
		RedirectURL: s.publicBase(r) + "/api/v1/auth/oidc/" + url.PathEscape(p.Name) + "/callback"}), nil
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func hashState(state string) string {
	h := sha256.Sum256([]byte(state))
	return hex.EncodeToString(h[:])
}

func (s *Server) ssoStart(r *Request) (any, error) {
	p, err := backend.IdentityProviderNamed(r.ctx, s.store, r.R.PathValue("name"))
	if err != nil {
		return nil, err
	}
	returnTo, ok := sso.ReturnTo(r.R.URL.Query().Get("return_to"), s.publicBase(r))
	if !ok {
		return nil, validate.Single(validate.Loc{"query", "return_to"}, "value_error",
			"Value error, return_to must be a path of this site (another origin is refused)", r.R.URL.Query().Get("return_to"), nil)
	}
	rp, err := s.relyingParty(r, p)
	if err != nil {
		return nil, err
	}
	state, nonce, verifier := randomToken(), randomToken(), oauth2.GenerateVerifier()
	now := store.Now()
	if err := s.store.CreateSSOLogin(r.ctx, &store.SSOLogin{StateHash: hashState(state), ProviderID: p.ID, Nonce: nonce,
		CodeVerifier: verifier, ReturnTo: returnTo, CreatedAt: now, ExpiresAt: now.Add(ssoLoginTTL)}); err != nil {
		return nil, err
	}
	http.SetCookie(r.W, &http.Cookie{Name: ssoStateCookie, Value: state, Path: "/api/v1/auth/oidc/", MaxAge: int(ssoLoginTTL.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secureCookies(r)})
	http.Redirect(r.W, r.R, rp.AuthURL(state, nonce, verifier), http.StatusFound)
	return answered{}, nil
}

// ssoRefused audits a refused sign-in and answers it.
func (s *Server) ssoRefused(r *Request, provider string, userID *uuid.UUID, status int, reason, detail string, extra map[string]any) error {
	details := map[string]any{"identity_provider": provider, "reason": reason}
	for k, v := range extra {
		details[k] = v
	}
	if err := backend.SignInRefused(context.WithoutCancel(r.ctx), s.store, r.ID, userID, details); err != nil {
		s.log.Error("audit refused sign-in", "request_id", r.ID, "error", err)
	}
	return errorf(status, "%s", detail)
}

func (s *Server) ssoCallback(r *Request) (any, error) {
	name := r.R.PathValue("name")
	p, err := backend.IdentityProviderNamed(r.ctx, s.store, name)
	if err != nil {
		return nil, err
	}
	q := r.R.URL.Query()
	state := q.Get("state")
	// The state is single-use, whatever else is wrong: taking it first
	// means a replayed callback finds nothing.
	var login *store.SSOLogin
	if state != "" {
		login, err = s.store.TakeSSOLogin(r.ctx, hashState(state), store.Now())
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
	}
	http.SetCookie(r.W, &http.Cookie{Name: ssoStateCookie, Path: "/api/v1/auth/oidc/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: s.secureCookies(r)})
	if login == nil || login.ProviderID != p.ID || login.ExpiresAt.Before(store.Now()) {
		return nil, s.ssoRefused(r, name, nil, http.StatusBadRequest, "state_unknown",
			"this sign-in was already used, has expired or was not started here: start again from the sign-in page", nil)
	}
	if c, err := r.R.Cookie(ssoStateCookie); err != nil || c.Value != state {
		return nil, s.ssoRefused(r, name, nil, http.StatusBadRequest, "state_not_this_browser",
			"this sign-in was started in another browser: start again from the sign-in page", nil)
	}
	if e := q.Get("error"); e != "" {
		return nil, s.ssoRefused(r, name, nil, http.StatusUnauthorized, "provider_error",
			"the identity provider refused the sign-in: "+clip(e+" "+q.Get("error_description"), 200), nil)
	}
	code := q.Get("code")
	if code == "" {
		return nil, s.ssoRefused(r, name, nil, http.StatusBadRequest, "no_code", "the identity provider sent no authorization code", nil)
	}
	rp, err := s.relyingParty(r, p)
	if err != nil {
		return nil, err
	}
	claims, err := rp.Redeem(r.ctx, code, login.CodeVerifier)
	var refusal *sso.Refusal
	if errors.As(err, &refusal) {
		return nil, s.ssoRefused(r, name, nil, http.StatusUnauthorized, refusal.Reason, refusal.Detail, nil)
	} else if err != nil {
		return nil, err
	}
	id, err := sso.ReadClaims(claims, sso.Expect{Nonce: login.Nonce, Domains: p.AllowedEmailDomains,
		Claims: sso.ClaimNames{Email: p.ClaimEmail, Name: p.ClaimName, Groups: p.ClaimGroups}})
	if errors.As(err, &refusal) {
		status := http.StatusUnauthorized
		if refusal.Reason == "email_domain" || refusal.Reason == "email_unverified" {
			status = http.StatusForbidden
		}
		sub, _ := claims["sub"].(string)
		return nil, s.ssoRefused(r, name, nil, status, refusal.Reason, refusal.Detail, map[string]any{"subject": sub})
	} else if err != nil {
		return nil, err
	}
	res, err := backend.CompleteSSOSignIn(r.ctx, s.store, r.ID, backend.SSOSignIn{Provider: p, Subject: id.Subject, Email: id.Email,
		Name: id.Name, Groups: id.Groups, From: sessionStart(r)})
	var be *backend.Error
	if errors.As(err, &be) && be.Kind == backend.Forbidden {
		return nil, s.ssoRefused(r, name, nil, http.StatusForbidden, "account_refused", be.Detail,
			map[string]any{"subject": id.Subject, "email": id.Email})
	} else if err != nil {
		return nil, err
	}
	s.setSessionCookie(r, res.Session, res.Token)
	http.Redirect(r.W, r.R, login.ReturnTo, http.StatusSeeOther)
	return answered{}, nil
}

func clip(s string, n int) string {
	s = strings.Map(func(c rune) rune {
		if c < 0x20 || c == 0x7f {
			return ' '
		}
		return c
	}, s)
	if len(s) > n {
		return s[:n]
	}
	return strings.TrimSpace(s)
}
