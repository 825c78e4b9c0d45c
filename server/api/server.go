// Package api is gw's management HTTP API (/api/v1): routing, credentials,
// scope and permission checks, the response envelope and the error bodies.
// Handlers decode and validate, call the store inside a transaction, write
// the audit event in that same transaction, and encode.
package api

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"

	"sync"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/catalogdb"
	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/mcpgw"
	"github.com/gw-gateway/gw/server/playground"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/sso"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/wire"
)

// Options configure the API.
type Options struct {
	// PublicURL is how browsers reach the server, for links and secure cookies.
	PublicURL string
	// SignupDisabled refuses self-service sign-up.
	SignupDisabled bool
	// Version is reported in the OpenAPI document's x-gw-version.
	Version string
	Logger  *slog.Logger
	// Keyring seals provider secrets.
	Keyring *secrets.Keyring
	// Bundles recompiles and admits organizations' bundles after changes;
	// nil when no data plane is attached.
	Bundles BundleRefresher
	// Playground is the data plane in process (role all), which the
	// Workspace Playground runs on; nil answers its routes 503.
	Playground playground.Runner
	// Egress is this process's part of the egress policy URLs are checked
	// against when saved (--egress-deny-private; a resolver for tests);
	// the instance's setting completes it (egress.go).
	Egress egress.Policy
	// OAuthSigner signs the OAuth access tokens of gw's authorization
	// server (the bundle signing key: data planes verify them with the key
	// they verify bundles with; oauth.go); nil issues none.
	OAuthSigner ed25519.PrivateKey
	// OAuthRoots replaces the system's trusted roots for fetching Client
	// ID Metadata Documents (tests); nil uses the system's.
	OAuthRoots *x509.CertPool
}

// BundleRefresher recompiles an organization's bundle and hands it to the
// data plane.
type BundleRefresher interface {
	Refresh(ctx context.Context, orgID uuid.UUID) error
	RefreshAll(ctx context.Context) error
}

// Server holds the API's dependencies.
type Server struct {
	store   *store.Store
	opts    Options
	log     *slog.Logger
	cursors cursorCodec
	routes  []*Route
	mux     *http.ServeMux

	// signIns throttles password sign-ins; invites, invitation tokens.
	signIns, invites *signInGuard

	openapiOnce sync.Once
	openapiBody []byte

	// The OpenID relying parties' HTTP client (egress-dialled) and their
	// cache, made on first use (identity.go).
	ssoOnce    sync.Once
	ssoClient  *http.Client
	ssoParties *sso.Parties

	// oauth is the authorization server's endpoints (oauth.go).
	oauth oauthState
	// The MCP client of gw mcp tools --key-name (mcp_keytools.go), made on
	// first use.
	mcpOnce sync.Once
	mcp     *mcpgw.Gateway
}

// New builds the API on an open, migrated store.
func New(ctx context.Context, st *store.Store, opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Keyring == nil {
		// Tests and tools that never store a provider secret need no key
		// file; a secret sealed with this throwaway key dies with the process.
		k, err := secrets.GenerateKey()
		if err != nil {
			return nil, err
		}
		opts.Keyring = secrets.NewKeyring(k)
	}
	// The embedded default catalog fills an empty catalog; operators' edits
	// are never overwritten.
	if err := catalogdb.Seed(ctx, st); err != nil {
		return nil, fmt.Errorf("seed catalog: %w", err)
	}
	state, err := st.GetInstanceState(ctx)
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(state.CursorKey)
	if err != nil {
		return nil, fmt.Errorf("instance cursor key is corrupt: %w", err)
	}
	s := &Server{store: st, opts: opts, log: opts.Logger, cursors: cursorCodec{key: key}, mux: http.NewServeMux(),
		signIns: newSignInGuard(st, "sign_in", addressFailureLimit), invites: newSignInGuard(st, "invitation", inviteFailureLimit)}
	s.routes = s.allRoutes()
	for _, rt := range s.routes {
		s.mux.Handle(rt.Method+" "+rt.Path, s.handler(rt))
	}
	s.mux.HandleFunc("GET /api/v1/openapi.json", s.serveOpenAPI)
	return s, nil
}

// refreshBundles runs after a committed change. The change stands even if
// the refresh fails (the data plane keeps its last good bundle until the
// periodic reconciliation of gw serve recompiles), so a failure is logged,
// not returned.
func (s *Server) refreshBundles(r *Request) {
	if s.opts.Bundles == nil {
		return
	}
	// The change is committed: the refresh must not die with the request
	// when the client hangs up.
	ctx := context.WithoutCancel(r.ctx)
	var err error
	changed := uuid.Nil // every organization
	if r.Org != nil {
		changed = r.Org.ID
		err = s.opts.Bundles.Refresh(ctx, changed)
	} else {
		err = s.opts.Bundles.RefreshAll(ctx)
	}
	if err != nil {
		s.log.Error("bundle refresh failed", "request_id", r.ID, "error", err)
	}
	// Other replicas on the same PostgreSQL refresh their data planes now
	// instead of at their next periodic refresh.
	if err := s.store.NotifyBundleChanged(ctx, changed); err != nil {
		s.log.Warn("bundle change notification failed", "request_id", r.ID, "error", err)
	}
}

// ServeHTTP serves /api/v1. Every answer carries a request id and
// no-store; a path no route knows is a JSON 404, and a known path with
// another method a JSON 405 naming the allowed ones.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := requestID(r)
	r.Header.Set("X-Request-Id", id)
	w.Header().Set("X-Request-Id", id)
	w.Header().Set("Cache-Control", "no-store")
	if _, pattern := s.mux.Handler(r); pattern == "" {
		if allowed := s.allowedMethods(r); len(allowed) > 0 {
			w.Header().Set("Allow", strings.Join(allowed, ", "))
			writeJSON(w, http.StatusMethodNotAllowed, wire.ErrorDetail{Detail: "Method Not Allowed"})
			return
		}
		writeJSON(w, http.StatusNotFound, wire.ErrorDetail{Detail: "Not Found"})
		return
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) allowedMethods(r *http.Request) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" {
			out = append(out, m)
		}
	}
	return out
}

// Routes lists every route the API registers (for the OpenAPI document and
// its completeness test).
func (s *Server) Routes() []*Route { return s.routes }

var safeRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]+$`)

// requestID keeps a caller-supplied X-Request-Id when it is sane, so logs
// correlate across hops, and makes one otherwise.
func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); id != "" && len(id) <= 128 && safeRequestID.MatchString(id) {
		return id
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "req_" + hex.EncodeToString(b)
}
