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
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/web"
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
	return cmd
}

func newLogger(w *IOStreams, format string) *slog.Logger {
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w.ErrOut, nil))
	}
	return slog.New(slog.NewTextHandler(w.ErrOut, nil))
}

func serveRun(ctx context.Context, opts *ServeOptions) error {
	log := newLogger(opts.IO, opts.LogFormat)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	db, err := openDB(ctx, opts.DBOptions)
	if err != nil {
		return err
	}
	defer db.Close()
	applied, err := store.Migrate(ctx, db)
	if err != nil {
		return err
	}
	if len(applied) > 0 {
		log.Info("database migrated", "applied", applied)
	}

	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", opts.Addr, err)
	}
	publicURL := strings.TrimRight(opts.PublicURL, "/")
	if publicURL == "" {
		publicURL = "http://" + ln.Addr().String()
	}

	st := store.New(db)
	keyring, err := loadKeyring(opts.SecretOptions)
	if err != nil {
		ln.Close()
		return err
	}
	signer, err := bundle.SigningKey(ctx, st, keyring)
	if err != nil {
		ln.Close()
		return fmt.Errorf("bundle signing key: %w", err)
	}
	// The data plane runs in process: bundles are compiled and admitted
	// directly after every change, without HTTP.
	plane := dataplane.NewPlane(signer.Public().(ed25519.PublicKey), dataplane.Options{})
	refresher := &dataplane.Refresher{Compiler: &bundle.Compiler{Store: st, Signer: signer}, Plane: plane, Store: st}
	apiServer, err := api.New(ctx, st, api.Options{PublicURL: publicURL, SignupDisabled: opts.DisableSignup, Logger: log,
		Version: Version(), Keyring: keyring, Bundles: refresher})
	if err != nil {
		ln.Close()
		return err
	}
	if err := bootstrapOnStart(ctx, log, apiServer, opts, publicURL); err != nil {
		ln.Close()
		return err
	}
	// Every organization's bundle is admitted before /inf/v1 answers; one
	// that fails keeps the others serving (and is logged).
	if err := refresher.RefreshAll(ctx); err != nil {
		log.Error("initial bundle refresh", "error", err)
	}
	plane.MarkReady()

	srv := &http.Server{
		Handler:           withAccessLog(log, newMux(apiServer, plane, web.Handler(log, apiServer.SetupDone))),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		// Long enough for a streamed model response; a stuck client is cut.
		WriteTimeout: 10 * time.Minute,
		IdleTimeout:  2 * time.Minute,
		ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("gw serving", "addr", ln.Addr().String(), "public_url", publicURL, "version", Version())

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

func newMux(apiServer, dataPlane, pages http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/api/v1/", apiServer)
	mux.Handle("/inf/v1/", dataPlane)
	// Everything else is the browser pages (setup, sign-in, CLI approval).
	mux.Handle("/", pages)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	return mux
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
