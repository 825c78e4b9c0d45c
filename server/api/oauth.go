package api

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/oauth"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/web"
)

// gw as the OAuth 2.1 authorization server of MCP and CLI clients (issue
// 31, part 3; docs/identity.md): the metadata (RFC 8414), /oauth/authorize
// (sign-in through the existing page, then consent and the workspace),
// /oauth/token (authorization code with PKCE S256, refresh tokens rotated)
// and /oauth/revoke (RFC 7009). These are OAuth's own endpoints, answered
// in OAuth's shapes (form posts, {error, error_description}), beside
// /api/v1; the administration of clients and grants is in the route table
// (oauth_routes.go).

// OAuthMetadataPath is the authorization server's metadata document.
const OAuthMetadataPath = "/.well-known/oauth-authorization-server"

// oauthState is what the OAuth endpoints make on first use.
type oauthState struct {
	once    sync.Once
	handler http.Handler
	cimd    *http.Client
}

// OAuthHandler serves OAuthMetadataPath and /oauth/.
func (s *Server) OAuthHandler() http.Handler {
	s.oauth.once.Do(func() {
		s.oauth.cimd = oauth.NewCIMDClient(s.cimdPolicy, s.opts.OAuthRoots)
		mux := http.NewServeMux()
		mux.HandleFunc("GET "+OAuthMetadataPath, s.oauthMetadata)
		mux.HandleFunc("GET /oauth/authorize", s.oauthAuthorize)
		mux.HandleFunc("POST /oauth/authorize", s.oauthConsent)
		mux.HandleFunc("POST /oauth/token", s.oauthToken)
		mux.HandleFunc("POST /oauth/revoke", s.oauthRevoke)
		s.oauth.handler = mux
	})
	return s.oauth.handler
}

// cimdPolicy is the egress policy documents are fetched under: the
// process's and the instance's, and private and loopback addresses
// refused unless the instance setting oauth_cimd_allow_private allows
// them.
func (s *Server) cimdPolicy() egress.Policy {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := s.store.GetInstanceState(ctx)
	if err != nil {
		// Fail closed: private addresses refused.
		p := s.opts.Egress
		p.DenyPrivate = true
		return p
	}
	e := st.EgressSetting()
	p := s.opts.Egress.WithInstance(egress.ParseRanges(e.Deny), egress.ParseRanges(e.Allow))
	if st.OAuthCIMDAllowPrivate == nil || !*st.OAuthCIMDAllowPrivate {
		p.DenyPrivate = true
	}
	return p
}

// oauthIssuer is the authorization server's issuer: the public URL, or
// the origin the request reached.
func (s *Server) oauthIssuer(r *http.Request) string {
	if s.opts.PublicURL != "" {
		return strings.TrimSuffix(s.opts.PublicURL, "/")
	}
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (s *Server) oauthMetadata(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=3600")
	writeJSON(w, http.StatusOK, oauth.AuthorizationServerMetadata(s.oauthIssuer(r)))
}

// authzRequest is an authorization request, as checked.
type authzRequest struct {
	ClientID, ClientName, RedirectURI, State, Challenge, Resource, Scope string
}

// query is the request as the sign-in page returns to it.
func (a *authzRequest) query() url.Values {
	q := url.Values{"response_type": {"code"}, "client_id": {a.ClientID}, "redirect_uri": {a.RedirectURI},
		"code_challenge": {a.Challenge}, "code_challenge_method": {"S256"}, "resource": {a.Resource}}
	if a.State != "" {
		q.Set("state", a.State)
	}
	if a.Scope != "" {
		q.Set("scope", a.Scope)
	}
	return q
}

// redirectError is a refusal sent back to the client's redirect URI
// (RFC 6749 §4.1.2.1), with iss (RFC 9207).
type redirectError struct{ code, description string }

// readAuthorization checks an authorization request's parameters. A
// refusal that may not go back to the client (an unknown client, a
// redirect URI it did not register) is an *oauth.Error shown on a page;
// others are a redirectError.
func (s *Server) readAuthorization(r *http.Request, q url.Values) (*authzRequest, *oauth.Error, *redirectError) {
	a := &authzRequest{ClientID: q.Get("client_id"), RedirectURI: q.Get("redirect_uri"), State: q.Get("state"), Scope: q.Get("scope")}
	if a.ClientID == "" {
		return nil, oauth.Errorf(http.StatusBadRequest, "invalid_request", "client_id is missing"), nil
	}
	var uris []string
	if oauth.IsURLClientID(a.ClientID) {
		m, err := oauth.FetchClientMetadata(r.Context(), s.oauth.cimd, a.ClientID)
		if err != nil {
			var oe *oauth.Error
			if errors.As(err, &oe) {
				return nil, oe, nil
			}
			return nil, oauth.Errorf(http.StatusBadRequest, "invalid_client", "the client metadata document could not be read"), nil
		}
		uris, a.ClientName = m.RedirectURIs, m.ClientName
		if a.ClientName == "" {
			u, _ := url.Parse(a.ClientID)
			a.ClientName = u.Host
		}
	} else {
		c, err := s.store.GetOAuthClient(r.Context(), a.ClientID)
		if errors.Is(err, store.ErrNotFound) {
			return nil, oauth.Errorf(http.StatusBadRequest, "invalid_client", "unknown client_id: neither a registered client nor an https URL of a client metadata document"), nil
		} else if err != nil {
			return nil, oauth.Errorf(http.StatusServiceUnavailable, "temporarily_unavailable", "try again"), nil
		}
		uris, a.ClientName = c.RedirectURIs, c.Name
	}
	if a.RedirectURI == "" && len(uris) == 1 {
		a.RedirectURI = uris[0]
	}
	if !slices.Contains(uris, a.RedirectURI) {
		return nil, oauth.Errorf(http.StatusBadRequest, "invalid_request", "redirect_uri does not exactly match one the client registered"), nil
	}
	switch {
	case q.Get("response_type") != "code":
		return a, nil, &redirectError{"unsupported_response_type", "response_type must be code"}
	case q.Get("code_challenge") == "":
		return a, nil, &redirectError{"invalid_request", "PKCE is required: send code_challenge and code_challenge_method=S256"}
	case q.Get("code_challenge_method") != "S256":
		return a, nil, &redirectError{"invalid_request", "code_challenge_method must be S256 (plain is refused)"}
	case !oauth.ChallengeOK(q.Get("code_challenge")):
		return a, nil, &redirectError{"invalid_request", "code_challenge is not an S256 challenge"}
	}
	a.Challenge = q.Get("code_challenge")
	for _, sc := range strings.Fields(a.Scope) {
		if sc != oauth.Scope {
			return a, nil, &redirectError{"invalid_scope", "the only scope is " + oauth.Scope}
		}
	}
	a.Resource = s.oauthIssuer(r) + oauth.ResourceMCP
	if res := q.Get("resource"); res != "" {
		norm, ok := oauth.NormalizeResource(res)
		if !ok {
			return a, nil, &redirectError{"invalid_target", "resource must be gw's MCP endpoint (…/inf/v1/mcp) or inference base (…/inf/v1)"}
		}
		a.Resource = norm
	}
	return a, nil, nil
}

// sendBack redirects to the client with params, state and iss.
func (s *Server) sendBack(w http.ResponseWriter, r *http.Request, a *authzRequest, params url.Values) {
	u, err := url.Parse(a.RedirectURI)
	if err != nil {
		http.Error(w, "invalid redirect_uri", http.StatusBadRequest)
		return
	}
	q := u.Query()
	for k, v := range params {
		q[k] = v
	}
	if a.State != "" {
		q.Set("state", a.State)
	}
	q.Set("iss", s.oauthIssuer(r))
	u.RawQuery = q.Encode()
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, u.String(), http.StatusFound)
}

// refuseAuthorization answers a refused authorization request and audits
// it: on a page when the client or redirect URI cannot be trusted, else
// back at the client.
func (s *Server) refuseAuthorization(w http.ResponseWriter, r *http.Request, a *authzRequest, clientID string, user *uuid.UUID, pageErr *oauth.Error, re *redirectError) {
	details := map[string]any{"client_id": clientID, "endpoint": "authorize"}
	if pageErr != nil {
		details["error"], details["reason"] = pageErr.Code, pageErr.Description
	} else {
		details["error"], details["reason"] = re.code, re.description
	}
	if err := backend.OAuthRefused(r.Context(), s.store, r.Header.Get("X-Request-Id"), user, details); err != nil {
		s.log.Error("audit an OAuth refusal", "error", err)
	}
	if pageErr != nil {
		web.RenderOAuthError(w, s.log, pageErr.Status, pageErr.Code, pageErr.Description)
		return
	}
	s.sendBack(w, r, a, url.Values{"error": {re.code}, "error_description": {re.description}})
}

// sessionUser is the signed-in person of the request's browser session,
// or nil; the session token is returned for the consent form's guard.
func (s *Server) sessionUser(r *http.Request) (*store.User, string) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return nil, ""
	}
	se, err := s.store.GetSessionByHash(r.Context(), auth.HashToken(c.Value))
	if err != nil || !time.Now().Before(se.ExpiresAt) {
		return nil, ""
	}
	u, err := s.store.GetUser(r.Context(), se.UserID)
	if err != nil || u.DisabledAt != nil {
		return nil, ""
	}
	return u, c.Value
}

// consentGuard is the consent form's CSRF token: derived from the session
// token, which only the signed-in browser holds (an HttpOnly cookie).
func consentGuard(session string) string {
	sum := sha256.Sum256([]byte("gw oauth consent\x00" + session))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func (s *Server) oauthAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a, pageErr, re := s.readAuthorization(r, q)
	if pageErr != nil || re != nil {
		s.refuseAuthorization(w, r, a, q.Get("client_id"), nil, pageErr, re)
		return
	}
	user, session := s.sessionUser(r)
	if user == nil {
		// Sign in (password or SSO) on the usual page, and come back.
		back := "/oauth/authorize?" + a.query().Encode()
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, "/signin?next="+url.QueryEscape(back), http.StatusSeeOther)
		return
	}
	wss, err := backend.OAuthWorkspaces(r.Context(), s.store, user)
	if err != nil {
		s.log.Error("OAuth consent: list workspaces", "error", err)
		web.RenderOAuthError(w, s.log, http.StatusServiceUnavailable, "temporarily_unavailable", "try again")
		return
	}
	if len(wss) == 0 {
		s.refuseAuthorization(w, r, a, a.ClientID, &user.ID, nil,
			&redirectError{"access_denied", "you may issue inference keys in no workspace, so there is nothing to grant"})
		return
	}
	page := web.OAuthConsent{ClientName: a.ClientName, ClientID: a.ClientID, RedirectURI: a.RedirectURI, Resource: a.Resource,
		Email: user.Email, Guard: consentGuard(session), Params: map[string]string{}}
	for k, v := range a.query() {
		page.Params[k] = v[0]
	}
	for _, x := range wss {
		page.Workspaces = append(page.Workspaces, web.OAuthWorkspace{ID: x.Workspace.ID.String(), Label: x.Org.Name + " / " + x.Workspace.Name})
	}
	web.RenderOAuthConsent(w, s.log, page)
}

// oauthConsent is the consent form's post: the request is checked again
// (its parameters came back through the page), the person's session and
// the form's guard too, then a grant and its code are made.
func (s *Server) oauthConsent(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		web.RenderOAuthError(w, s.log, http.StatusBadRequest, "invalid_request", "the form could not be read")
		return
	}
	f := r.PostForm
	a, pageErr, re := s.readAuthorization(r, f)
	if pageErr != nil || re != nil {
		s.refuseAuthorization(w, r, a, f.Get("client_id"), nil, pageErr, re)
		return
	}
	user, session := s.sessionUser(r)
	if user == nil || subtle.ConstantTimeCompare([]byte(f.Get("guard")), []byte(consentGuard(session))) != 1 {
		web.RenderOAuthError(w, s.log, http.StatusForbidden, "access_denied", "the consent must come from your signed-in browser's own page; start again")
		return
	}
	if f.Get("decision") != "approve" {
		s.refuseAuthorization(w, r, a, a.ClientID, &user.ID, nil, &redirectError{"access_denied", "the person denied the request"})
		return
	}
	wsID, err := uuid.Parse(f.Get("workspace"))
	if err != nil {
		web.RenderOAuthError(w, s.log, http.StatusBadRequest, "invalid_request", "pick a workspace")
		return
	}
	grant, code, err := backend.ConsentOAuth(r.Context(), s.store, backend.OAuthConsent{User: user, WorkspaceID: wsID, ClientID: a.ClientID,
		ClientName: a.ClientName, RedirectURI: a.RedirectURI, Challenge: a.Challenge, Resource: a.Resource, RequestID: r.Header.Get("X-Request-Id")})
	var be *backend.Error
	if errors.As(err, &be) {
		s.refuseAuthorization(w, r, a, a.ClientID, &user.ID, nil, &redirectError{"access_denied", be.Detail})
		return
	} else if err != nil {
		s.log.Error("OAuth consent", "error", err)
		web.RenderOAuthError(w, s.log, http.StatusServiceUnavailable, "temporarily_unavailable", "try again")
		return
	}
	// The grant is in the organization's bundle before the client has the
	// code, so its first token is accepted at once (in process).
	s.refreshOrg(r.Context(), grant.OrgID)
	s.sendBack(w, r, a, url.Values{"code": {code}})
}

// refreshOrg recompiles an organization's bundle after a grant changed.
func (s *Server) refreshOrg(ctx context.Context, orgID uuid.UUID) {
	if s.opts.Bundles == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if err := s.opts.Bundles.Refresh(ctx, orgID); err != nil {
		s.log.Error("bundle refresh failed", "org_id", orgID, "error", err)
	}
	if err := s.store.NotifyBundleChanged(ctx, orgID); err != nil {
		s.log.Warn("bundle change notification failed", "error", err)
	}
}

// tokenAnswer is a token endpoint's success (RFC 6749 §5.1).
type tokenAnswer struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
}

// oauthFail answers an OAuth error (RFC 6749 §5.2) and audits it.
func (s *Server) oauthFail(w http.ResponseWriter, r *http.Request, clientID, endpoint string, e *oauth.Error) {
	if err := backend.OAuthRefused(r.Context(), s.store, r.Header.Get("X-Request-Id"), nil,
		map[string]any{"client_id": clientID, "endpoint": endpoint, "error": e.Code, "reason": e.Description}); err != nil {
		s.log.Error("audit an OAuth refusal", "error", err)
	}
	w.Header().Set("Cache-Control", "no-store")
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="gw"`)
	}
	writeJSON(w, e.Status, map[string]string{"error": e.Code, "error_description": e.Description})
}

// tokenClient authenticates the client of a token or revocation request:
// client_secret_basic for a confidential registered client, else the
// client_id parameter (a public client: a document's URL or a registered
// public client).
func (s *Server) tokenClient(r *http.Request) (string, *oauth.Error) {
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
		if p := r.PostForm.Get("client_id"); p != "" && p != id {
			return id, oauth.Errorf(http.StatusBadRequest, "invalid_request", "client_id differs from the authenticated client")
		}
	} else {
		id = r.PostForm.Get("client_id")
	}
	if id == "" {
		return "", oauth.Errorf(http.StatusUnauthorized, "invalid_client", "client_id is missing")
	}
	if oauth.IsURLClientID(id) {
		if basic {
			return id, oauth.Errorf(http.StatusUnauthorized, "invalid_client", "a client identified by its metadata document is public: it sends no secret")
		}
		return id, nil
	}
	_, err := backend.OAuthClientAuth(r.Context(), s.store, id, secret, basic)
	var re *backend.OAuthRefusal
	if errors.As(err, &re) {
		return id, oauth.Errorf(http.StatusUnauthorized, re.Code, re.Description)
	} else if err != nil {
		return id, oauth.Errorf(http.StatusServiceUnavailable, "temporarily_unavailable", "try again")
	}
	return id, nil
}

func (s *Server) oauthToken(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		s.oauthFail(w, r, "", "token", oauth.Errorf(http.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded"))
		return
	}
	f := r.PostForm
	clientID, oe := s.tokenClient(r)
	if oe != nil {
		s.oauthFail(w, r, clientID, "token", oe)
		return
	}
	reqID := r.Header.Get("X-Request-Id")
	resource := ""
	if res := f.Get("resource"); res != "" {
		norm, ok := oauth.NormalizeResource(res)
		if !ok {
			s.oauthFail(w, r, clientID, "token", oauth.Errorf(http.StatusBadRequest, "invalid_target", "resource is not one of gw's"))
			return
		}
		resource = norm
	}
	var grant *store.OAuthGrant
	var refresh string
	var err error
	switch f.Get("grant_type") {
	case "authorization_code":
		verifier := f.Get("code_verifier")
		switch {
		case f.Get("code") == "":
			s.oauthFail(w, r, clientID, "token", oauth.Errorf(http.StatusBadRequest, "invalid_request", "code is missing"))
			return
		case !oauth.VerifierOK(verifier):
			s.oauthFail(w, r, clientID, "token", oauth.Errorf(http.StatusBadRequest, "invalid_request", "code_verifier is missing or malformed (PKCE: 43 to 128 unreserved characters)"))
			return
		}
		grant, refresh, err = backend.RedeemOAuthCode(r.Context(), s.store, backend.OAuthCodeRedemption{Code: f.Get("code"), ClientID: clientID,
			RedirectURI: f.Get("redirect_uri"), Resource: resource, RequestID: reqID,
			PKCE: func(challenge string) bool { return oauth.PKCEMatches(verifier, challenge) }})
	case "refresh_token":
		if f.Get("refresh_token") == "" {
			s.oauthFail(w, r, clientID, "token", oauth.Errorf(http.StatusBadRequest, "invalid_request", "refresh_token is missing"))
			return
		}
		grant, refresh, err = backend.RefreshOAuth(r.Context(), s.store, backend.OAuthRefresh{RefreshToken: f.Get("refresh_token"),
			ClientID: clientID, Resource: resource, RequestID: reqID})
	case "":
		s.oauthFail(w, r, clientID, "token", oauth.Errorf(http.StatusBadRequest, "invalid_request", "grant_type is missing"))
		return
	default:
		s.oauthFail(w, r, clientID, "token", oauth.Errorf(http.StatusBadRequest, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token"))
		return
	}
	var re *backend.OAuthRefusal
	if errors.As(err, &re) {
		if strings.Contains(re.Description, "revoked, with every token") {
			// A replay revoked a grant: its tokens stop at the next bundle,
			// which is now.
			if org := orgOfReplay(r.Context(), s.store, f); org != uuid.Nil {
				s.refreshOrg(r.Context(), org)
			}
		}
		s.oauthFail(w, r, clientID, "token", oauth.Errorf(http.StatusBadRequest, re.Code, re.Description))
		return
	} else if err != nil {
		s.log.Error("OAuth token", "request_id", reqID, "error", err)
		s.oauthFail(w, r, clientID, "token", oauth.Errorf(http.StatusServiceUnavailable, "temporarily_unavailable", "try again"))
		return
	}
	access, err := s.accessToken(grant)
	if err != nil {
		s.log.Error("OAuth token: sign", "request_id", reqID, "error", err)
		s.oauthFail(w, r, clientID, "token", oauth.Errorf(http.StatusServiceUnavailable, "temporarily_unavailable", "try again"))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, http.StatusOK, tokenAnswer{AccessToken: access, TokenType: "Bearer", ExpiresIn: int64(oauth.AccessTokenTTL / time.Second),
		RefreshToken: refresh, Scope: oauth.Scope})
}

// orgOfReplay is the organization of the grant a replayed code or
// refresh token named, to refresh its bundle.
func orgOfReplay(ctx context.Context, st *store.Store, f url.Values) uuid.UUID {
	var id uuid.UUID
	if c, err := st.GetOAuthCode(ctx, auth.HashToken(f.Get("code"))); f.Get("code") != "" && err == nil {
		id = c.GrantID
	} else if t, err := st.GetOAuthRefreshToken(ctx, auth.HashToken(f.Get("refresh_token"))); f.Get("refresh_token") != "" && err == nil {
		id = t.GrantID
	}
	if id == uuid.Nil {
		return uuid.Nil
	}
	g, err := st.GetOAuthGrant(ctx, id)
	if err != nil {
		return uuid.Nil
	}
	return g.OrgID
}

// accessToken signs an access token of grant with the bundle key.
func (s *Server) accessToken(g *store.OAuthGrant) (string, error) {
	if s.opts.OAuthSigner == nil {
		return "", errors.New("no signing key")
	}
	now := time.Now()
	return oauth.SignAccessToken(s.opts.OAuthSigner, oauth.Claims{Grant: g.ID, Org: g.OrgID, Workspace: g.WorkspaceID, Subject: g.UserID,
		Audience: g.Resource, ClientID: g.ClientID, IssuedAt: now.Unix(), Expires: now.Add(oauth.AccessTokenTTL).Unix()})
}

// oauthRevoke revokes the grant of the token the client sends (RFC 7009):
// an access token's or a refresh token's, with every token issued under
// it. An unknown token is no error.
func (s *Server) oauthRevoke(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		s.oauthFail(w, r, "", "revoke", oauth.Errorf(http.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded"))
		return
	}
	clientID, oe := s.tokenClient(r)
	if oe != nil {
		s.oauthFail(w, r, clientID, "revoke", oe)
		return
	}
	token := r.PostForm.Get("token")
	if token == "" {
		s.oauthFail(w, r, clientID, "revoke", oauth.Errorf(http.StatusBadRequest, "invalid_request", "token is missing"))
		return
	}
	reqID := r.Header.Get("X-Request-Id")
	var g *store.OAuthGrant
	var err error
	if strings.HasPrefix(token, oauth.AccessTokenPrefix) && s.opts.OAuthSigner != nil {
		c, verr := oauth.VerifyAccessToken(s.opts.OAuthSigner.Public().(ed25519.PublicKey), token, time.Now())
		if verr == nil || errors.Is(verr, oauth.ErrExpiredToken) {
			g, err = backend.RevokeOAuthGrantOfClient(r.Context(), s.store, c.Grant, clientID, reqID)
		}
	} else {
		g, err = backend.RevokeOAuthByRefreshToken(r.Context(), s.store, token, clientID, reqID)
	}
	if err != nil {
		s.log.Error("OAuth revoke", "request_id", reqID, "error", err)
		s.oauthFail(w, r, clientID, "revoke", oauth.Errorf(http.StatusServiceUnavailable, "temporarily_unavailable", "try again"))
		return
	}
	if g != nil {
		s.refreshOrg(r.Context(), g.OrgID)
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}
