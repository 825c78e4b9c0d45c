// Package serve is `gw serve`: the server, as control plane, data plane or both.
package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/dbflags"
	"github.com/gw-gateway/gw/server"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/mcpgw"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/telemetry"
)

// Options configure gw serve.
type Options struct {
	IO *cmdutil.IOStreams
	dbflags.DBOptions
	dbflags.SecretOptions
	Addr                  string
	MetricsAddr           string
	Pprof                 bool
	PublicURL             string
	LogFormat             string
	BootstrapEmail        string
	BootstrapPasswordFile string
	BootstrapToken        string
	BootstrapPrintKey     bool
	DisableSignup         bool
	ShutdownTimeout       time.Duration
	// MaxStreamDuration ends any inference stream that lasts longer.
	MaxStreamDuration time.Duration
	// MCPTimeout cuts an MCP upstream that does not answer.
	MCPTimeout time.Duration
	// BatchPace is how often the all-in-one gw sends a batch line.
	BatchPace time.Duration

	Role              string
	ControlPlaneURL   string
	Token             string
	BundlePublicKey   string
	DataPlaneID       string
	PollInterval      time.Duration
	HeartbeatInterval time.Duration
	// DataPlaneKey (GW_DATA_PLANE_KEY) is the data plane's private key
	// itself, KeyFile (--key-file) the file holding it; BundleCache is on
	// or off.
	DataPlaneKey string
	KeyFile      string
	BundleCache  string
	// BundleRefreshInterval paces the control plane's reconciliation.
	BundleRefreshInterval time.Duration
	// CORSOrigins may call /inf/v1 from a browser; none: CORS is off.
	CORSOrigins []string
	// BodyBudgetMiB bounds the inference body bytes in flight, and
	// KeyBodyBudgetMiB one key's share (issue 17).
	BodyBudgetMiB    int
	KeyBodyBudgetMiB int
	// EgressDenyPrivate refuses loopback and private upstream addresses
	// too (issue 27).
	EgressDenyPrivate bool
}

// NewCmd builds `gw serve`.
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the control plane and data plane",
		Long: `Run gw's control plane (/api/v1) and data plane (/inf/v1) in one process.

With no flags gw uses an embedded SQLite database in the data dir and listens
on 127.0.0.1:8080. Every flag can also be set as GW_<FLAG> in the environment
(dashes become underscores), e.g. GW_DATABASE_URL.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := cmdutil.NewViper(cmd)
			if err != nil {
				return err
			}
			db := dbflags.ReadDBOptions(v)
			opts := &Options{
				IO:                    f.IO,
				DBOptions:             db,
				SecretOptions:         dbflags.ReadSecretOptions(v, db),
				Addr:                  v.GetString("addr"),
				MetricsAddr:           v.GetString("metrics-addr"),
				Pprof:                 v.GetBool("pprof"),
				PublicURL:             v.GetString("public-url"),
				LogFormat:             v.GetString("log-format"),
				BootstrapEmail:        v.GetString("bootstrap-email"),
				BootstrapPasswordFile: v.GetString("bootstrap-password-file"),
				BootstrapToken:        v.GetString("bootstrap-token"),
				BootstrapPrintKey:     v.GetBool("bootstrap-print-key"),
				DisableSignup:         v.GetBool("disable-signup"),
				ShutdownTimeout:       v.GetDuration("shutdown-timeout"),
				MaxStreamDuration:     v.GetDuration("max-stream-duration"),
				MCPTimeout:            v.GetDuration("mcp-timeout"),
				BatchPace:             v.GetDuration("batch-pace"),
				Role:                  v.GetString("role"),
				ControlPlaneURL:       f.BaseServerURL(v.GetString("control-plane-url")),
				Token:                 v.GetString("token"),
				BundlePublicKey:       v.GetString("bundle-public-key"),
				DataPlaneID:           v.GetString("data-plane-id"),
				PollInterval:          v.GetDuration("poll-interval"),
				HeartbeatInterval:     v.GetDuration("heartbeat-interval"),
				DataPlaneKey:          v.GetString("data-plane-key"),
				KeyFile:               v.GetString("key-file"),
				BundleCache:           v.GetString("bundle-cache"),
				BundleRefreshInterval: v.GetDuration("bundle-refresh-interval"),
				BodyBudgetMiB:         v.GetInt("body-budget-mib"),
				KeyBodyBudgetMiB:      v.GetInt("key-body-budget-mib"),
				EgressDenyPrivate:     v.GetBool("egress-deny-private"),
			}
			if opts.CORSOrigins, err = dataplane.ParseCORSOrigins(v.GetStringSlice("cors-origins")); err != nil {
				return cmdutil.UsageError{Err: fmt.Errorf("--cors-origins: %w", err)}
			}
			if opts.BodyBudgetMiB < 1 || opts.KeyBodyBudgetMiB < 1 {
				return cmdutil.UsageError{Err: errors.New("--body-budget-mib and --key-body-budget-mib must be at least 1")}
			}
			if err := checkRole(opts); err != nil {
				return err
			}
			if opts.MaxStreamDuration <= 0 {
				return cmdutil.UsageError{Err: fmt.Errorf("--max-stream-duration must be positive, not %s", opts.MaxStreamDuration)}
			}
			if opts.BatchPace <= 0 {
				return cmdutil.UsageError{Err: fmt.Errorf("--batch-pace must be positive, not %s", opts.BatchPace)}
			}
			if opts.MCPTimeout <= 0 {
				return cmdutil.UsageError{Err: fmt.Errorf("--mcp-timeout must be positive, not %s", opts.MCPTimeout)}
			}
			if opts.Pprof && opts.MetricsAddr == "" {
				return cmdutil.UsageError{Err: errors.New("--pprof serves on --metrics-addr: give one")}
			}
			if opts.LogFormat != "text" && opts.LogFormat != "json" {
				return cmdutil.UsageError{Err: fmt.Errorf("--log-format must be text or json, not %q", opts.LogFormat)}
			}
			if opts.BootstrapPrintKey && opts.BootstrapEmail == "" {
				return cmdutil.UsageError{Err: errors.New("--bootstrap-print-key goes with --bootstrap-email")}
			}
			if (opts.BootstrapEmail == "") != (opts.BootstrapPasswordFile == "") {
				return cmdutil.UsageError{Err: errors.New("--bootstrap-email and --bootstrap-password-file go together")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return serveRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.String("addr", "127.0.0.1:8080", "address to listen on [GW_ADDR]")
	fl.String("metrics-addr", "", "serve Prometheus /metrics (and /healthz, /readyz) on this address, apart from the public one; empty: off [GW_METRICS_ADDR]")
	fl.Bool("pprof", false, "also serve net/http/pprof under /debug/pprof/ on --metrics-addr (never on --addr), to profile a running gw [GW_PPROF]")
	dbflags.AddDBFlags(cmd)
	dbflags.AddSecretFlags(cmd)
	fl.String("public-url", "", "URL browsers use to reach this server (default http://ADDR) [GW_PUBLIC_URL]")
	fl.String("log-format", "text", "log format: text or json [GW_LOG_FORMAT]")
	fl.String("bootstrap-email", "", "create the first instance owner with this email on an empty instance [GW_BOOTSTRAP_EMAIL]")
	fl.String("bootstrap-password-file", "", "file holding that owner's password [GW_BOOTSTRAP_PASSWORD_FILE]")
	fl.String("bootstrap-token", "", "use this one-time setup token instead of a random one [GW_BOOTSTRAP_TOKEN]")
	fl.Bool("bootstrap-print-key", false, "with --bootstrap-email: print the first owner's management key once, to stderr [GW_BOOTSTRAP_PRINT_KEY]")
	fl.Bool("disable-signup", false, "refuse self-service sign-up [GW_DISABLE_SIGNUP]")
	fl.Duration("shutdown-timeout", 30*time.Second, "how long in-flight requests may finish on shutdown [GW_SHUTDOWN_TIMEOUT]")
	fl.Duration("max-stream-duration", dataplane.DefaultMaxStreamDuration, "end any inference stream that lasts longer, billed for what it relayed [GW_MAX_STREAM_DURATION]")
	fl.Duration("batch-pace", dataplane.DefaultBatchPace, "send a batch's lines one at a time, one every this long, across all batches (docs/batches.md) [GW_BATCH_PACE]")
	fl.Duration("mcp-timeout", mcpgw.DefaultTimeout, "cut an MCP upstream that does not answer a request within this time (docs/mcp.md) [GW_MCP_TIMEOUT]")
	fl.String("role", RoleAll, "all (control plane and data plane), control-plane, or data-plane [GW_ROLE]")
	fl.String("control-plane-url", "", "data-plane role: the control plane's URL [GW_CONTROL_PLANE_URL]")
	fl.String("token", "", "data-plane role: an instance management key with bundles.read, usage.ingest, data-planes.heartbeat, policy-state.sync (budget leases); the data plane is enrolled with it (gw data-planes enroll) [GW_TOKEN]")
	fl.String("bundle-public-key", "", "data-plane role: pin the bundle signing key (hex or base64; default: pinned on first contact) [GW_BUNDLE_PUBLIC_KEY]")
	fl.String("data-plane-id", "", "data-plane role: name in heartbeats and enrollment (default: host name and a random suffix, kept in the state dir) [GW_DATA_PLANE_ID]")
	fl.Duration("poll-interval", 5*time.Second, "data-plane role: how often to poll bundles [GW_POLL_INTERVAL]")
	fl.Duration("heartbeat-interval", 10*time.Second, "data-plane role: how often to send a heartbeat [GW_HEARTBEAT_INTERVAL]")
	fl.String("key-file", "", "data-plane role: file holding the data plane's private key, kept apart from the data dir (created if absent; default DATA_DIR/dataplane/data-plane-key) [GW_KEY_FILE; or the key itself in GW_DATA_PLANE_KEY, from gw data-planes keygen]")
	fl.String("bundle-cache", "on", "data-plane role: on keeps the last admitted bundles in the data dir, so a restart serves while the control plane is down; off keeps them in memory only (no secret on disk, nothing served after a restart until the control plane answers) [GW_BUNDLE_CACHE]")
	fl.StringSlice("cors-origins", nil, "web origins (scheme://host[:port], or *) allowed to call /inf/v1 from a browser; preflights are answered without a key, requests still need one; empty: CORS off [GW_CORS_ORIGINS]")
	fl.Int("body-budget-mib", dataplane.DefaultBodyBytesInFlight>>20, "inference request-body MiB held in flight at once, across requests; a body over it is refused, 503 overloaded [GW_BODY_BUDGET_MIB]")
	fl.Int("key-body-budget-mib", dataplane.DefaultKeyBodyBytesInFlight>>20, "one inference key's share of --body-budget-mib (never less than the largest body, 32 MiB) [GW_KEY_BODY_BUDGET_MIB]")
	fl.Bool("egress-deny-private", false, "refuse loopback and private addresses (127/8, 10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7, ::1) for every URL gw calls, beyond the cloud metadata, link-local and unspecified addresses it always refuses; the instance's egress allow list makes exceptions [GW_EGRESS_DENY_PRIVATE]")
	fl.Duration("bundle-refresh-interval", 15*time.Second, "how often the control plane recompiles bundles to catch missed changes [GW_BUNDLE_REFRESH_INTERVAL]")
	return cmd
}

func checkRole(o *Options) error {
	switch o.Role {
	case RoleAll, RoleControlPlane:
		if o.BundleRefreshInterval <= 0 {
			return cmdutil.UsageError{Err: errors.New("--bundle-refresh-interval must be positive")}
		}
		if o.KeyFile != "" || o.DataPlaneKey != "" || o.BundleCache != "on" {
			return cmdutil.UsageError{Err: errors.New("--key-file, GW_DATA_PLANE_KEY and --bundle-cache go with --role data-plane")}
		}
		return nil
	case RoleDataPlane:
		if o.ControlPlaneURL == "" || o.Token == "" {
			return cmdutil.UsageError{Err: errors.New("--role data-plane needs --control-plane-url and --token")}
		}
		if o.DataPlaneKey != "" && o.KeyFile != "" {
			return cmdutil.UsageError{Err: errors.New("give the data-plane key either in GW_DATA_PLANE_KEY or with --key-file, not both")}
		}
		if o.BundleCache != "on" && o.BundleCache != "off" {
			return cmdutil.UsageError{Err: fmt.Errorf("--bundle-cache must be on or off, not %q", o.BundleCache)}
		}
		if o.PollInterval <= 0 || o.HeartbeatInterval <= 0 {
			return cmdutil.UsageError{Err: errors.New("--poll-interval and --heartbeat-interval must be positive")}
		}
		return nil
	}
	return cmdutil.UsageError{Err: fmt.Errorf("--role must be all, control-plane or data-plane, not %q", o.Role)}
}

// newLogger is slog's text or JSON handler over w, as a telemetry.LogHandler:
// the access log writes its lines from preformatted bytes through it.
func newLogger(w io.Writer, format string) *slog.Logger {
	return slog.New(telemetry.NewLogHandler(w, format == "json", nil))
}

// Roles of gw serve.
const (
	RoleAll          = server.RoleAll
	RoleControlPlane = server.RoleControlPlane
	RoleDataPlane    = server.RoleDataPlane
)

// serveRun turns the options into a server.Config, listens and runs the
// server until a signal; the server package does the assembly and the
// orderly shutdown.
func serveRun(ctx context.Context, opts *Options) error {
	// Every request logs a line: a single writer takes them off the
	// requests' path (telemetry.LogWriter), and writes what is left when
	// gw stops.
	logOut := telemetry.NewLogWriter(opts.IO.ErrOut, 0)
	defer logOut.Close()
	log := newLogger(logOut, opts.LogFormat)
	applyGC(log)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", opts.Addr, err)
	}
	defer ln.Close()
	cfg, err := opts.serverConfig(ctx, log, ln)
	if err != nil {
		return err
	}
	if opts.MetricsAddr != "" {
		if cfg.MetricsListener, err = net.Listen("tcp", opts.MetricsAddr); err != nil {
			return fmt.Errorf("listen on --metrics-addr %s: %w", opts.MetricsAddr, err)
		}
	}
	srv, err := server.New(ctx, cfg)
	if err != nil {
		if cfg.MetricsListener != nil {
			_ = cfg.MetricsListener.Close()
		}
		return err
	}
	return srv.Run(ctx, ln)
}

// serverConfig is the server's configuration from the flags: for a
// control plane (or role all) its keyring and database too.
func (opts *Options) serverConfig(ctx context.Context, log *slog.Logger, ln net.Listener) (server.Config, error) {
	publicURL := strings.TrimRight(opts.PublicURL, "/")
	if publicURL == "" {
		publicURL = "http://" + ln.Addr().String()
	}
	cfg := server.Config{
		Role: opts.Role, Version: cmdutil.Version(), Logger: log, PublicURL: publicURL,
		DisableSignup: opts.DisableSignup, BootstrapToken: opts.BootstrapToken,
		PrintBootstrapKey: opts.BootstrapPrintKey, BootstrapKeyOut: opts.IO.ErrOut,
		BundleRefreshInterval: opts.BundleRefreshInterval,
		ControlPlaneURL:       opts.ControlPlaneURL, Token: opts.Token, BundlePublicKey: opts.BundlePublicKey,
		DataPlaneID: opts.DataPlaneID, StateDir: filepath.Join(opts.DataDir, "dataplane"),
		DataPlaneKey: opts.DataPlaneKey, DataPlaneKeyFile: opts.KeyFile, BundleCacheOff: opts.BundleCache == "off",
		PollInterval: opts.PollInterval, HeartbeatInterval: opts.HeartbeatInterval,
		ShutdownTimeout: opts.ShutdownTimeout, CORSOrigins: opts.CORSOrigins, MaxStreamDuration: opts.MaxStreamDuration,
		MCPTimeout:        opts.MCPTimeout,
		BatchPace:         opts.BatchPace,
		BodyBytesInFlight: int64(opts.BodyBudgetMiB) << 20, KeyBodyBytesInFlight: int64(opts.KeyBodyBudgetMiB) << 20,
		Pprof: opts.Pprof, Egress: egress.Policy{DenyPrivate: opts.EgressDenyPrivate},
	}
	if opts.BootstrapEmail != "" {
		pw, err := os.ReadFile(opts.BootstrapPasswordFile)
		if err != nil {
			return cfg, fmt.Errorf("read bootstrap password file: %w", err)
		}
		cfg.Bootstrap = &backend.BootstrapInput{Email: opts.BootstrapEmail, Password: strings.TrimRight(string(pw), "\r\n")}
	}
	if opts.Role == RoleDataPlane {
		// Provider secrets arrive sealed to the data plane's own key
		// (enrollment): the master key has no business on this host.
		if opts.Key != "" {
			log.Warn("GW_SECRET_KEY is not used by a data plane (its secrets are sealed to its own key): remove it from this host")
		}
		// Its key (by default), bundles and usage spool live there:
		// checked before they are created, as the control plane's are.
		for _, dir := range []string{opts.DataDir, cfg.StateDir} {
			if msg := store.LooseDataDir(dir); msg != "" {
				log.Warn(msg)
			}
		}
		return cfg, nil
	}
	// Checked before the key file or the database is created in it.
	if opts.DatabaseURL == "" {
		if msg := store.LooseDataDir(opts.DataDir); msg != "" {
			log.Warn(msg)
		}
	}
	var err error
	if cfg.Keyring, err = dbflags.LoadKeyring(opts.SecretOptions); err != nil {
		return cfg, err
	}
	if cfg.DB, err = dbflags.OpenDB(ctx, opts.DBOptions); err != nil {
		return cfg, err
	}
	cfg.DatabaseURL = opts.DatabaseURL
	return cfg, nil
}
