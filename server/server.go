// Package server assembles gw serve: the control plane (/api/v1 and the
// sign-in pages) with, for role all, the data plane in the same process, or
// a remote data plane alone. A Server owns every part it starts, and Run
// shuts them down in order: the HTTP server drains its requests, every
// background loop is joined, buffered usage is flushed to the database or
// the spool, and only then is the database closed.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"golang.org/x/sync/errgroup"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/spend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/telemetry"
	"github.com/gw-gateway/gw/wire"
)

// Roles of gw serve.
const (
	RoleAll          = "all"
	RoleControlPlane = "control-plane"
	RoleDataPlane    = "data-plane"
)

// Config is what a Server is assembled from. The caller opens the
// database (control plane roles) and loads the keyring; the Server owns
// the database from New on and closes it last.
type Config struct {
	Role      string
	Version   string
	Logger    *slog.Logger
	PublicURL string // empty: http:// and the listener's address

	// DB and DatabaseURL: the control plane's database (roles all and
	// control-plane); DatabaseURL tells PostgreSQL replicas apart for
	// LISTEN/NOTIFY.
	DB          *bun.DB
	DatabaseURL string
	// Keyring seals and opens provider secrets (roles all and
	// control-plane); a remote data plane uses its own key instead.
	Keyring *secrets.Keyring

	DisableSignup bool
	// Bootstrap, when set, creates the first owner at start.
	Bootstrap *backend.BootstrapInput
	// BootstrapToken replaces the random one-time setup token.
	BootstrapToken string
	// PrintBootstrapKey writes the bootstrap owner's management key to
	// BootstrapKeyOut, once, when Bootstrap creates the owner.
	PrintBootstrapKey bool
	BootstrapKeyOut   io.Writer

	BundleRefreshInterval time.Duration

	// Remote data plane.
	ControlPlaneURL   string
	Token             string
	BundlePublicKey   string
	DataPlaneID       string
	StateDir          string
	PollInterval      time.Duration
	HeartbeatInterval time.Duration
	// DataPlaneKey is the data plane's private key itself
	// (GW_DATA_PLANE_KEY), DataPlaneKeyFile the file holding it
	// (--key-file, created on first start when absent). With neither, the
	// key lives in StateDir/data-plane-key, beside the bundles whose
	// secrets it opens.
	DataPlaneKey     string
	DataPlaneKeyFile string
	// BundleCacheOff keeps admitted bundles in memory only (--bundle-cache
	// off): nothing on disk holds a secret, and a restart serves nothing
	// until the control plane answers.
	BundleCacheOff bool

	ShutdownTimeout time.Duration
	// MaxStreamDuration ends any inference stream that lasts longer
	// (dataplane.DefaultMaxStreamDuration when 0).
	MaxStreamDuration time.Duration
	// MCPTimeout cuts an MCP upstream that does not answer
	// (mcpgw.DefaultTimeout when 0).
	MCPTimeout time.Duration

	// MetricsListener, when set, serves /metrics (and /healthz, /readyz)
	// apart from the public listener; Run owns it.
	MetricsListener net.Listener
	// Pprof adds net/http/pprof's handlers under /debug/pprof/ to the
	// metrics listener (gw serve --pprof): off by default, since a
	// profile costs CPU and its output names the code's internals.
	Pprof bool

	// CORSOrigins are the web origins allowed to call /inf/v1 from a
	// browser (dataplane.ParseCORSOrigins); none: CORS is off.
	CORSOrigins []string

	// BodyBytesInFlight and KeyBodyBytesInFlight bound the inference body
	// bytes held at once, in all and per key (dataplane.Options; the
	// defaults when 0).
	BodyBytesInFlight, KeyBodyBytesInFlight int64

	// Egress is this process's part of the egress policy: DenyPrivate is
	// gw serve --egress-deny-private (loopback and private ranges refused
	// too); the instance's setting completes it. URLs are checked against
	// it when saved (control plane) and dialled (data plane).
	Egress egress.Policy

	// KeyTagSetsPerMinute bounds the tag sets new to an inference key it
	// may bring in a minute (dataplane.DefaultKeyTagSetsPerMinute when 0,
	// none when negative).
	KeyTagSetsPerMinute int

	// BatchPace is how often the in-process data plane sends a batch line
	// (dataplane.DefaultBatchPace when 0; docs/batches.md).
	BatchPace time.Duration
}

// Server is an assembled gw serve.
type Server struct {
	cfg     Config
	log     *slog.Logger
	handler http.Handler

	// loops run from Run until the HTTP server has drained.
	loops []func(context.Context)
	// flush runs after the loops are joined, in order: buffered usage
	// first, then the database.
	flush []func(context.Context) error
	// plane is the data plane, when this server runs one: at the shutdown
	// deadline its in-flight requests are ended and metered.
	plane *dataplane.Plane
	// metrics are this server's collectors; ready answers /readyz.
	metrics *telemetry.Metrics
	ready   func(context.Context) error
}

// New assembles the server for cfg.Role. On error, whatever was opened is
// closed, the database included.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, metrics: telemetry.NewMetrics(cfg.Version, cfg.Role)}
	// Traces, when the OTEL_* environment asks for them; the exporter is
	// flushed last, after the usage and the database.
	stopTracing, err := telemetry.SetupTracing(ctx, cfg.Version, cfg.Role)
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry: %w", err)
	}
	if cfg.Role == RoleDataPlane {
		err = s.assembleDataPlane(ctx)
	} else {
		err = s.assembleControlPlane(ctx)
	}
	s.flush = append(s.flush, stopTracing)
	if err != nil {
		// What the steps opened closes, the database last.
		_ = s.runFlush(context.Background())
		return nil, err
	}
	return s, nil
}

// Handler is the server's HTTP handler, for tests that serve it themselves.
func (s *Server) Handler() http.Handler { return s.handler }

// bootstrap creates the first owner from the configuration, or logs the
// one-time setup URL while the instance has no owner.
func (s *Server) bootstrap(ctx context.Context, st *store.Store, apiServer *api.Server) error {
	if in := s.cfg.Bootstrap; in != nil {
		res, err := backend.Bootstrap(ctx, st, backend.System("gw serve --bootstrap-email"), *in, nil)
		switch {
		case errors.Is(err, backend.ErrAlreadyBootstrapped):
			s.log.Info("instance already bootstrapped; --bootstrap-email ignored")
			return nil
		case err != nil:
			return fmt.Errorf("bootstrap: %w", err)
		}
		s.log.Info("instance bootstrapped", "owner", res.User.Email, "organization", res.Organization.Slug, "workspace", res.Workspace.Slug)
		if s.cfg.PrintBootstrapKey && s.cfg.BootstrapKeyOut != nil {
			// The one time this key is ever shown; never through the logger.
			_, err := fmt.Fprintf(s.cfg.BootstrapKeyOut, "bootstrap management key (instance scope, all permissions; shown once): %s\n", res.Token)
			return err
		}
		s.log.Info("to get a management key: gw login --server " + s.publicURL() + " (as " + res.User.Email +
			"), or restart with --bootstrap-print-key on an empty instance, or gw admin create-key on this machine")
		return nil
	}
	token, err := apiServer.PrepareSetup(ctx, s.cfg.BootstrapToken)
	if err != nil {
		return err
	}
	if token != "" {
		s.log.Warn("this instance has no owner yet; finish setup with this token (it works until the instance has its owner)",
			"setup_url", s.publicURL()+"/setup?token="+token,
			"api", "POST "+s.publicURL()+"/api/v1/bootstrap with {token, email, password}")
	}
	return nil
}

func (s *Server) publicURL() string { return strings.TrimRight(s.cfg.PublicURL, "/") }

// dataPlaneKey loads the data plane's private key from where the operator
// keeps it: the environment, a file of their choosing, or (the default)
// the state dir. Whoever copies a state dir that holds the key can open
// the provider secrets of the bundles cached beside it; kept elsewhere, a
// copied folder opens nothing.
func (s *Server) dataPlaneKey(stateDir string) (*secrets.DataPlaneKey, error) {
	inDir := filepath.Join(stateDir, dataPlaneKeyFile)
	var key *secrets.DataPlaneKey
	var source string
	created := false
	switch {
	case s.cfg.DataPlaneKey != "":
		k, err := secrets.ParseDataPlaneKey(s.cfg.DataPlaneKey)
		if err != nil {
			return nil, fmt.Errorf("GW_DATA_PLANE_KEY: %w", err)
		}
		key, source = k, "GW_DATA_PLANE_KEY"
	case s.cfg.DataPlaneKeyFile != "":
		k, made, err := secrets.LoadDataPlaneKey(s.cfg.DataPlaneKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--key-file: %w", err)
		}
		key, source, created = k, s.cfg.DataPlaneKeyFile, made
	default:
		k, made, err := secrets.LoadDataPlaneKey(inDir)
		if err != nil {
			return nil, fmt.Errorf("data-plane key: %w", err)
		}
		key, source, created = k, inDir, made
		s.log.Warn("the data-plane key is kept in the data dir, beside the bundles whose secrets it opens: "+
			"a copy of the folder opens them; keep it elsewhere with --key-file or GW_DATA_PLANE_KEY (README, Splitting the planes)", "file", inDir)
	}
	if source != inDir {
		if _, err := os.Stat(inDir); err == nil {
			s.log.Warn("a data-plane key file is still in the data dir while the key comes from elsewhere: delete it", "file", inDir)
		}
	}
	s.log.Info("data-plane key", "fingerprint", key.Public().Fingerprint(), "source", source, "created", created)
	return key, nil
}

// dataPlaneKeyFile is where a data plane keeps its key in its state dir
// unless told otherwise.
const dataPlaneKeyFile = "data-plane-key"

// Run serves on ln until ctx ends, then shuts down in order: the HTTP
// server stops accepting and lets requests finish (within
// ShutdownTimeout), the background loops are stopped and joined, then
// buffered usage is flushed and the database closed. Run owns ln.
func (s *Server) Run(ctx context.Context, ln net.Listener) error {
	mw := &telemetry.Middleware{Log: s.log, Metrics: s.metrics, APIPrefix: "/api/v1/"}
	srv := &http.Server{
		Handler:           mw.Wrap(s.handler),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		// Long enough for a streamed model response; a stuck client is cut.
		WriteTimeout: 10 * time.Minute,
		IdleTimeout:  2 * time.Minute,
		ErrorLog:     slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	// The loops outlive ctx: they stop only once the requests have drained,
	// since a request may still need a bundle refresh or the spool.
	loopCtx, stopLoops := context.WithCancel(context.Background())
	defer stopLoops()
	var loops errgroup.Group
	for _, loop := range s.loops {
		loops.Go(func() error { loop(loopCtx); return nil })
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	if mln := s.cfg.MetricsListener; mln != nil {
		msrv := s.metricsServer()
		go func() {
			if err := msrv.Serve(mln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("metrics listener", "error", err)
			}
		}()
		// Scraped until the end: it closes once everything else is down.
		defer msrv.Close()
		s.log.Info("metrics serving", "addr", mln.Addr().String())
	}
	s.log.Info("gw serving", "addr", ln.Addr().String(), "role", s.cfg.Role, "public_url", s.publicURL(), "version", s.cfg.Version)

	var errs []error
	select {
	case err := <-serveErr:
		errs = append(errs, fmt.Errorf("serve: %w", err))
	case <-ctx.Done():
		s.log.Info("shutting down", "timeout", s.cfg.ShutdownTimeout)
		sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
		// Shutdown does not wait for hijacked connections: the Responses
		// WebSockets end beside it, by the same deadline.
		sockets := make(chan error, 1)
		go func() {
			if s.plane == nil {
				sockets <- nil
				return
			}
			sockets <- s.plane.EndSockets(sctx)
		}()
		if err := srv.Shutdown(sctx); err != nil {
			errs = append(errs, fmt.Errorf("graceful shutdown: %w", err))
			if s.plane != nil {
				// Streams still running end with an error event and are
				// metered while their callers can still read it.
				ectx, cancelEnd := context.WithTimeout(context.Background(), endInFlightTimeout)
				if err := s.plane.EndInFlight(ectx); err != nil {
					errs = append(errs, err)
				}
				cancelEnd()
			}
			// Whatever is still open is cut now; its handlers return.
			_ = srv.Close()
		}
		if err := <-sockets; err != nil {
			errs = append(errs, err)
		}
		cancel()
	}
	stopLoops()
	_ = loops.Wait()
	fctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.runFlush(fctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// endInFlightTimeout bounds how long, after the shutdown deadline, the
// data plane's requests get to end and record their usage.
const endInFlightTimeout = 5 * time.Second

// Close releases what New opened, for a server that is never Run.
func (s *Server) Close(ctx context.Context) error {
	if s.cfg.MetricsListener != nil {
		_ = s.cfg.MetricsListener.Close()
	}
	return s.runFlush(ctx)
}

func (s *Server) runFlush(ctx context.Context) error {
	var errs []error
	for _, f := range s.flush {
		if err := f(ctx); err != nil {
			s.log.Error("shutdown", "error", err)
			errs = append(errs, err)
		}
	}
	s.flush = nil
	return errors.Join(errs...)
}

// budgetSyncInterval paces the reports of spend to the control plane and
// the return of unused budget leases.
const budgetSyncInterval = 2 * time.Second

func syncBudgets(ctx context.Context, plane *dataplane.Plane, log *slog.Logger) {
	every(ctx, budgetSyncInterval, func() {
		if err := plane.SyncBudgets(ctx); err != nil && ctx.Err() == nil {
			log.Warn("budget sync", "error", err)
		}
	})
}

// budgetClient asks the control plane for budget leases over HTTP, as the
// enrolled data plane id.
type budgetClient struct {
	c  *client.Client
	id string
}

func (b budgetClient) Lease(ctx context.Context, holder string, asks []wire.BudgetLeaseAsk) ([]wire.BudgetLeaseGrant, error) {
	res, err := b.c.LeaseBudgets(ctx, wire.BudgetLeases{DataPlaneID: b.id, Holder: holder, Asks: asks})
	if client.IsStatus(err, http.StatusForbidden) || client.IsStatus(err, http.StatusNotFound) {
		return nil, fmt.Errorf("%w: %w", spend.ErrLeaseRefused, err)
	}
	if err != nil {
		return nil, err
	}
	return res.Grants, nil
}

// budgetJournalFile is the data plane's budget ledger in its state dir.
const budgetJournalFile = "budgets.journal"

// openBudgetJournal opens the budget journal in the state dir; a new one
// leases under prefix#<random>. Without a state dir there is none, and a
// restart is a new holder.
func (s *Server) openBudgetJournal(prefix string) (*dataplane.BudgetJournal, error) {
	if s.cfg.StateDir == "" {
		return nil, nil
	}
	if err := os.MkdirAll(s.cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	j, err := dataplane.OpenBudgetJournal(filepath.Join(s.cfg.StateDir, budgetJournalFile),
		func() string { return prefix + "#" + uuid.NewString()[:8] }, s.log)
	if err != nil {
		return nil, err
	}
	s.log.Info("budget leases", "holder", j.Holder())
	return j, nil
}

// requestJournalFile is the data plane's journal of requests in flight,
// in its state dir.
const requestJournalFile = "requests.journal"

// openRequestJournal opens the journal of requests in flight in the state
// dir (none without one: a crash then leaves requests in flight unbilled,
// their reservations at their bounds). awaitStored: the plane's usage
// sink buffers, and says when it has stored an event. The journal closes
// at shutdown after everything that records usage.
func (s *Server) openRequestJournal(awaitStored bool) (*dataplane.RequestJournal, error) {
	if s.cfg.StateDir == "" {
		return nil, nil
	}
	if err := os.MkdirAll(s.cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	return dataplane.OpenRequestJournal(filepath.Join(s.cfg.StateDir, requestJournalFile),
		dataplane.RequestJournalOptions{AwaitStored: awaitStored, Logger: s.log})
}

// releaseBudgets is the shutdown step that gives back what the plane
// holds and has not spent (its requests have ended by then), then closes
// its journal.
func (s *Server) releaseBudgets(plane *dataplane.Plane, journal *dataplane.BudgetJournal) func(context.Context) error {
	return func(ctx context.Context) error {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		// The archive's queue goes to its spool (issue 32).
		plane.CloseArchive(rctx)
		if err := plane.ReleaseBudgets(rctx); err != nil {
			// Not an error of the shutdown: a restart with the journal takes
			// the leases back, and the control plane keeps them counted.
			s.log.Warn("giving back budget leases at shutdown", "error", err)
		}
		if journal == nil {
			return nil
		}
		return journal.Close()
	}
}

// every calls fn every interval until ctx ends.
func every(ctx context.Context, interval time.Duration, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// dataPlaneID names this data plane for heartbeats: the host name and a
// random suffix, kept in the state dir so restarts keep the name.
func dataPlaneID(stateDir string) (string, error) {
	path := filepath.Join(stateDir, "id")
	if raw, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(raw)), nil
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "dp"
	}
	id := host + "-" + uuid.NewString()[:8]
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return "", err
	}
	return id, os.WriteFile(path, []byte(id+"\n"), 0o600)
}

// handleHealth serves the probes: /healthz answers 200 while the process
// serves at all (liveness), /readyz 200 only when it can do its work
// (readiness: the database reachable for a control plane, a bundle
// admitted for a data plane), else 503 with the reason.
func (s *Server) handleHealth(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
}

func healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
}

// readyTimeout bounds a readiness check: a probe must not hang on a
// database that does not answer.
const readyTimeout = 2 * time.Second

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	var err error
	if s.ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		err = s.ready(ctx)
		cancel()
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		body, _ := json.Marshal(map[string]string{"status": "not ready", "reason": err.Error()})
		_, _ = w.Write(append(body, '\n'))
		return
	}
	if s.plane == nil {
		_, _ = w.Write([]byte(`{"status":"ready"}` + "\n"))
		return
	}
	// What routing learned of upstream failures, for gw status: the
	// targets it holds requests back from, by state.
	body, _ := json.Marshal(map[string]any{"status": "ready", "upstream_targets": s.plane.TargetHealth()})
	_, _ = w.Write(append(body, '\n'))
}

// MetricsHandler serves this server's Prometheus metrics.
func (s *Server) MetricsHandler() http.Handler { return s.metrics.Handler() }

// metricsServer serves /metrics and the probes on the metrics listener,
// which is meant to stay inside the cluster.
func (s *Server) metricsServer() *http.Server {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metrics.Handler())
	s.handleHealth(mux)
	if s.cfg.Pprof {
		// Only on the metrics listener, which stays inside the cluster:
		// the public one never serves them, flag or not.
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: time.Minute,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
}
