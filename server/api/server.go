// Package api is gw's management HTTP API (/api/v1): routing, credentials,
// scope and permission checks, the response envelope and the error bodies.
// Handlers decode and validate, call the store inside a transaction, write
// the audit event in that same transaction, and encode.
package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/gw-gateway/gw/server/store"
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
}

// Server holds the API's dependencies.
type Server struct {
	store   *store.Store
	opts    Options
	log     *slog.Logger
	cursors cursorCodec
	routes  []*Route
	mux     *http.ServeMux

	openapiOnce sync.Once
	openapiBody []byte
}

// New builds the API on an open, migrated store.
func New(ctx context.Context, st *store.Store, opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	state, err := st.GetInstanceState(ctx)
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(state.CursorKey)
	if err != nil {
		return nil, fmt.Errorf("instance cursor key is corrupt: %w", err)
	}
	s := &Server{store: st, opts: opts, log: opts.Logger, cursors: cursorCodec{key: key}, mux: http.NewServeMux()}
	s.routes = s.allRoutes()
	for _, rt := range s.routes {
		s.mux.Handle(rt.Method+" "+rt.Path, s.handler(rt))
	}
	s.mux.HandleFunc("GET /api/v1/openapi.json", s.serveOpenAPI)
	s.mux.HandleFunc("/api/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
	})
	return s, nil
}

// ServeHTTP serves /api/v1.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Routes lists every route the API registers (for the OpenAPI document and
// its completeness test).
func (s *Server) Routes() []*Route { return s.routes }

// requestID keeps a caller-supplied X-Request-Id when it is sane, so logs
// correlate across hops, and makes one otherwise.
func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); id != "" && len(id) <= 128 && !strings.ContainsAny(id, "\r\n") {
		return id
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "req_" + hex.EncodeToString(b)
}
