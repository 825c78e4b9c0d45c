package cli

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/web"
	"github.com/gw-gateway/gw/wire"
)

// ServeOptions configure gw serve.
type ServeOptions struct {
	IO *IOStreams
	DBOptions
	SecretOptions
	Addr                  string
	PublicURL             string
	LogFormat             string
	BootstrapEmail        string
	BootstrapPasswordFile string
	BootstrapToken        string
	DisableSignup         bool
	ShutdownTimeout       time.Duration

	Role              string
	ControlPlaneURL   string
	Token             string
	BundlePublicKey   string
	DataPlaneID       string
	PollInterval      time.Duration
	HeartbeatInterval time.Duration
	// BundleRefreshInterval paces the control plane's reconciliation.
	BundleRefreshInterval time.Duration
}

// NewCmdServe builds `gw serve`.
func NewCmdServe(f *Factory, runF func(context.Context, *ServeOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the control plane and data plane",
		Long: `Run gw's control plane (/api/v1) and data plane (/inf/v1) in one process.

With no flags gw uses an embedded SQLite database in the data dir and listens
on 127.0.0.1:8080. Every flag can also be set as GW_<FLAG> in the environment
(dashes become underscores), e.g. GW_DATABASE_URL.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := newViper(cmd)
			if err != nil {
				return err
			}
			db := readDBOptions(v)
			opts := &ServeOptions{
				IO:                    f.IO,
				DBOptions:             db,
				SecretOptions:         readSecretOptions(v, db),
				Addr:                  v.GetString("addr"),
				PublicURL:             v.GetString("public-url"),
				LogFormat:             v.GetString("log-format"),
				BootstrapEmail:        v.GetString("bootstrap-email"),
				BootstrapPasswordFile: v.GetString("bootstrap-password-file"),
				BootstrapToken:        v.GetString("bootstrap-token"),
				DisableSignup:         v.GetBool("disable-signup"),
				ShutdownTimeout:       v.GetDuration("shutdown-timeout"),
				Role:                  v.GetString("role"),
				ControlPlaneURL:       v.GetString("control-plane-url"),
				Token:                 v.GetString("token"),
				BundlePublicKey:       v.GetString("bundle-public-key"),
				DataPlaneID:           v.GetString("data-plane-id"),
				PollInterval:          v.GetDuration("poll-interval"),
				HeartbeatInterval:     v.GetDuration("heartbeat-interval"),
				BundleRefreshInterval: v.GetDuration("bundle-refresh-interval"),
			}
			if err := checkRole(opts); err != nil {
				return err
			}
			if opts.LogFormat != "text" && opts.LogFormat != "json" {
				return usageError{fmt.Errorf("--log-format must be text or json, not %q", opts.LogFormat)}
			}
			if (opts.BootstrapEmail == "") != (opts.BootstrapPasswordFile == "") {
				return usageError{errors.New("--bootstrap-email and --bootstrap-password-file go together")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return serveRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.String("addr", "127.0.0.1:8080", "address to listen on [GW_ADDR]")
	addDBFlags(cmd)
	addSecretFlags(cmd)
	fl.String("public-url", "", "URL browsers use to reach this server (default http://ADDR) [GW_PUBLIC_URL]")
	fl.String("log-format", "text", "log format: text or json [GW_LOG_FORMAT]")
	fl.String("bootstrap-email", "", "create the first instance owner with this email on an empty instance [GW_BOOTSTRAP_EMAIL]")
	fl.String("bootstrap-password-file", "", "file holding that owner's password [GW_BOOTSTRAP_PASSWORD_FILE]")
	fl.String("bootstrap-token", "", "use this one-time setup token instead of a random one [GW_BOOTSTRAP_TOKEN]")
	fl.Bool("disable-signup", false, "refuse self-service sign-up [GW_DISABLE_SIGNUP]")
	fl.Duration("shutdown-timeout", 30*time.Second, "how long in-flight requests may finish on shutdown [GW_SHUTDOWN_TIMEOUT]")
	fl.String("role", RoleAll, "all (control plane and data plane), control-plane, or data-plane [GW_ROLE]")
	fl.String("control-plane-url", "", "data-plane role: the control plane's URL [GW_CONTROL_PLANE_URL]")
	fl.String("token", "", "data-plane role: an instance management key with bundles.read, usage.ingest, data-planes.heartbeat [GW_TOKEN]")
	fl.String("bundle-public-key", "", "data-plane role: pin the bundle signing key (hex or base64; default: pinned on first contact) [GW_BUNDLE_PUBLIC_KEY]")
	fl.String("data-plane-id", "", "data-plane role: name in heartbeats (default: host name and a random suffix) [GW_DATA_PLANE_ID]")
	fl.Duration("poll-interval", 5*time.Second, "data-plane role: how often to poll bundles [GW_POLL_INTERVAL]")
	fl.Duration("heartbeat-interval", 10*time.Second, "data-plane role: how often to send a heartbeat [GW_HEARTBEAT_INTERVAL]")
	fl.Duration("bundle-refresh-interval", 15*time.Second, "how often the control plane recompiles bundles to catch missed changes [GW_BUNDLE_REFRESH_INTERVAL]")
	return cmd
}

func checkRole(o *ServeOptions) error {
	switch o.Role {
	case RoleAll, RoleControlPlane:
		if o.BundleRefreshInterval <= 0 {
			return usageError{errors.New("--bundle-refresh-interval must be positive")}
		}
		return nil
	case RoleDataPlane:
		if o.ControlPlaneURL == "" || o.Token == "" {
			return usageError{errors.New("--role data-plane needs --control-plane-url and --token")}
		}
		if o.PollInterval <= 0 || o.HeartbeatInterval <= 0 {
			return usageError{errors.New("--poll-interval and --heartbeat-interval must be positive")}
		}
		return nil
	}
	return usageError{fmt.Errorf("--role must be all, control-plane or data-plane, not %q", o.Role)}
}

func newLogger(w *IOStreams, format string) *slog.Logger {
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w.ErrOut, nil))
	}
	return slog.New(slog.NewTextHandler(w.ErrOut, nil))
}

// Roles of gw serve.
const (
	RoleAll          = "all"
	RoleControlPlane = "control-plane"
	RoleDataPlane    = "data-plane"
)

func serveRun(ctx context.Context, opts *ServeOptions) error {
	log := newLogger(opts.IO, opts.LogFormat)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", opts.Addr, err)
	}
	defer ln.Close()
	publicURL := strings.TrimRight(opts.PublicURL, "/")
	if publicURL == "" {
		publicURL = "http://" + ln.Addr().String()
	}
	var handler http.Handler
	var cleanup func()
	if opts.Role == RoleDataPlane {
		handler, cleanup, err = startDataPlane(ctx, log, opts)
	} else {
		handler, cleanup, err = startControlPlane(ctx, log, opts, publicURL)
	}
	// Runs after serveHTTP has drained the requests: their usage is in.
	if cleanup != nil {
		defer cleanup()
	}
	if err != nil {
		return err
	}
	return serveHTTP(ctx, log, ln, handler, opts, publicURL)
}

// startControlPlane opens the database and builds /api/v1 and the pages,
// with the data plane in the process for role all.
func startControlPlane(ctx context.Context, log *slog.Logger, opts *ServeOptions, publicURL string) (http.Handler, func(), error) {
	db, err := openDB(ctx, opts.DBOptions)
	if err != nil {
		return nil, nil, err
	}
	var sink *dataplane.StoreSink
	// Runs after the HTTP server has drained: usage still buffered is
	// written before the database closes.
	closeDB := func() {
		if sink != nil {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := sink.Close(cctx); err != nil {
				log.Error("flushing usage events", "error", err)
			}
		}
		db.Close()
	}
	applied, err := store.Migrate(ctx, db)
	if err != nil {
		return nil, closeDB, err
	}
	if len(applied) > 0 {
		log.Info("database migrated", "applied", applied)
	}
	st := store.New(db)
	keyring, err := loadKeyring(opts.SecretOptions)
	if err != nil {
		return nil, closeDB, err
	}
	signer, err := publish.SigningKey(ctx, st, keyring)
	if err != nil {
		return nil, closeDB, fmt.Errorf("bundle signing key: %w", err)
	}
	compiler := &publish.Compiler{Store: st, Signer: signer}
	var bundles api.BundleRefresher = &publish.Publisher{Compiler: compiler, Store: st}
	var plane *dataplane.Plane
	if opts.Role == RoleAll {
		// The data plane runs in process: bundles are compiled and admitted
		// directly after every change, without HTTP.
		sink = dataplane.NewStoreSink(st, dataplane.StoreSinkOptions{Logger: log})
		plane = dataplane.NewPlane(signer.Public().(ed25519.PublicKey), dataplane.Options{Keyring: keyring, Usage: sink, Logger: log})
		bundles = &publish.Refresher{Compiler: compiler, Plane: plane, Store: st}
	}
	if plane != nil && strings.HasPrefix(opts.DatabaseURL, "postgres") {
		// Replicas sharing PostgreSQL announce changes; each refreshes its
		// data plane on hearing one (the periodic refresh stays as the
		// safety net).
		go store.ListenBundleChanges(ctx, opts.DatabaseURL, log, func(org uuid.UUID) {
			var err error
			if org == uuid.Nil {
				err = bundles.RefreshAll(ctx)
			} else {
				err = bundles.Refresh(ctx, org)
			}
			if err != nil {
				log.Warn("bundle refresh on notification", "error", err)
			}
		})
	}
	apiServer, err := api.New(ctx, st, api.Options{PublicURL: publicURL, SignupDisabled: opts.DisableSignup, Logger: log,
		Version: Version(), Keyring: keyring, Bundles: bundles})
	if err != nil {
		return nil, closeDB, err
	}
	if err := bootstrapOnStart(ctx, log, apiServer, opts, publicURL); err != nil {
		return nil, closeDB, err
	}
	// Every organization's bundle is compiled (and, in process, admitted)
	// before serving; one that fails keeps the others going (and is logged).
	if err := bundles.RefreshAll(ctx); err != nil {
		log.Error("initial bundle refresh", "error", err)
	}
	// Changes normally refresh bundles at once; this loop catches what that
	// missed (a refresh that failed, or a change made on another replica
	// sharing the database). Compiling unchanged content is cheap and keeps
	// the version.
	go func() {
		t := time.NewTicker(opts.BundleRefreshInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := bundles.RefreshAll(ctx); err != nil && ctx.Err() == nil {
					log.Warn("periodic bundle refresh", "error", err)
				}
			}
		}
	}()
	mux := http.NewServeMux()
	mux.Handle("/api/v1/", apiServer)
	if plane != nil {
		plane.MarkReady()
		mux.Handle("/inf/v1/", plane)
	}
	// Everything else is the browser pages (setup, sign-in, CLI approval).
	mux.Handle("/", web.Handler(log, apiServer.SetupDone))
	mux.HandleFunc("GET /healthz", healthz)
	return mux, closeDB, nil
}

// startDataPlane runs a data plane apart from the control plane: no
// database, bundles polled over the management API with one instance key,
// the last admitted set kept in the data dir.
func startDataPlane(ctx context.Context, log *slog.Logger, opts *ServeOptions) (http.Handler, func(), error) {
	c, err := client.New(client.Options{Server: opts.ControlPlaneURL, Token: opts.Token, Version: Version()})
	if err != nil {
		return nil, nil, fmt.Errorf("--control-plane-url: %w", err)
	}
	stateDir := filepath.Join(opts.DataDir, "dataplane")
	pub, err := dataplane.SigningKey(ctx, c, stateDir, opts.BundlePublicKey, opts.PollInterval, log)
	if err != nil {
		return nil, nil, err
	}
	id := opts.DataPlaneID
	if id == "" {
		if id, err = dataPlaneID(stateDir); err != nil {
			return nil, nil, err
		}
	}
	// Provider secrets arrive sealed in the bundles: the data plane needs the
	// control plane's secret key (GW_SECRET_KEY or --secret-key-file) to use
	// them. Usage goes to a local spool first and is shipped from there.
	var keyring *secrets.Keyring
	if _, statErr := os.Stat(opts.KeyFile); opts.Key == "" && statErr != nil {
		// A generated key could open nothing the control plane sealed.
		log.Warn("no secret key (GW_SECRET_KEY or --secret-key-file): chat completions answer 503, discovery works")
	} else if keyring, err = loadKeyring(opts.SecretOptions); err != nil {
		return nil, nil, err
	}
	spool, err := dataplane.OpenSpool(filepath.Join(stateDir, "usage.spool"), func(ctx context.Context, evs []wire.UsageEventIn) error {
		_, err := c.IngestUsage(ctx, evs)
		return err
	}, log)
	if err != nil {
		return nil, nil, err
	}
	go spool.Run(ctx, opts.PollInterval)
	plane := dataplane.NewPlane(pub, dataplane.Options{Keyring: keyring, Usage: spool, Logger: log})
	remote := &dataplane.Remote{Client: c, Plane: plane, ID: id, Version: Version(), StateDir: stateDir,
		PollInterval: opts.PollInterval, HeartbeatInterval: opts.HeartbeatInterval, Log: log, SpoolDepth: spool.Depth}
	if err := remote.LoadCached(); err != nil {
		log.Warn("cached bundles", "error", err)
	}
	go remote.Run(ctx)
	log.Info("data plane", "id", id, "control_plane", opts.ControlPlaneURL)
	mux := http.NewServeMux()
	mux.Handle("/inf/v1/", plane)
	// Not ready until a bundle is admitted: a load balancer must not send
	// traffic that would only get 503s.
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if !plane.Ready() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"status":"waiting for bundles"}` + "\n"))
			return
		}
		healthz(w, r)
	})
	closeSpool := func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = spool.Close(cctx)
	}
	return mux, closeSpool, nil
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

func healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
}

// serveHTTP serves until the context ends, then shuts down gracefully.
func serveHTTP(ctx context.Context, log *slog.Logger, ln net.Listener, handler http.Handler, opts *ServeOptions, publicURL string) error {
	srv := &http.Server{
		Handler:           withAccessLog(log, handler),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		// Long enough for a streamed model response; a stuck client is cut.
		WriteTimeout: 10 * time.Minute,
		IdleTimeout:  2 * time.Minute,
		ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("gw serving", "addr", ln.Addr().String(), "role", opts.Role, "public_url", publicURL, "version", Version())

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "timeout", opts.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), opts.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("graceful shutdown: %w", err)
	}
	return nil
}

// bootstrapOnStart creates the first owner from flags, or logs the one-time
// setup URL while the instance has no owner.
func bootstrapOnStart(ctx context.Context, log *slog.Logger, s *api.Server, opts *ServeOptions, publicURL string) error {
	if opts.BootstrapEmail != "" {
		pw, err := os.ReadFile(opts.BootstrapPasswordFile)
		if err != nil {
			return fmt.Errorf("read bootstrap password file: %w", err)
		}
		res, err := s.Bootstrap(ctx, api.BootstrapInput{Email: opts.BootstrapEmail, Password: strings.TrimRight(string(pw), "\r\n")})
		switch {
		case api.IsAlreadyBootstrapped(err):
			log.Info("instance already bootstrapped; --bootstrap-email ignored")
			return nil
		case err != nil:
			return fmt.Errorf("bootstrap: %w", err)
		}
		log.Info("instance bootstrapped", "owner", res.User.Email, "organization", res.Organization.Slug, "workspace", res.Workspace.Slug)
		return nil
	}
	token, err := s.PrepareSetup(ctx, opts.BootstrapToken)
	if err != nil {
		return err
	}
	if token != "" {
		log.Warn("this instance has no owner yet; finish setup within this run",
			"setup_url", publicURL+"/setup?token="+token,
			"api", "POST "+publicURL+"/api/v1/bootstrap with {token, email, password}")
	}
	return nil
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// withAccessLog logs one line per request: never headers or bodies, which
// carry secrets.
func withAccessLog(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		log.Info("request", "method", r.Method, "path", r.URL.Path, "status", rec.status,
			"duration_ms", time.Since(start).Milliseconds(), "request_id", w.Header().Get("X-Request-Id"))
	})
}
