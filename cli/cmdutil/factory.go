// Package cmdutil is what gw's command packages share: the Factory that
// hands them their dependencies, the I/O streams, the --output flag and
// printing, confirmation, and the flag helpers. It imports no command
// package.
package cmdutil

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"

	"github.com/pkg/browser"
	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/gw-gateway/gw/cli/config"
	"github.com/gw-gateway/gw/client"
)

// Browser opens URLs for the person at the terminal; tests inject a fake.
type Browser interface {
	Open(url string) error
}

type SystemBrowser struct{}

// Open hands the URL to the desktop. Without one (no DISPLAY or
// WAYLAND_DISPLAY on Linux and the BSDs: SSH, a container) it does not try:
// xdg-open would print its lines of noise and fail anyway. The opener's
// own output is kept and shown only if it fails, in one line.
func (SystemBrowser) Open(url string) error {
	if noDesktop() {
		return errors.New("no graphical session")
	}
	var out bytes.Buffer
	browser.Stdout, browser.Stderr = &out, &out
	if err := browser.OpenURL(url); err != nil {
		if msg := strings.Join(strings.Fields(out.String()), " "); msg != "" {
			return fmt.Errorf("%w: %s", err, msg)
		}
		return err
	}
	return nil
}

// noDesktop: an X11 or Wayland system without a session to open in.
func noDesktop() bool {
	switch runtime.GOOS {
	case "darwin", "windows":
		return false
	}
	return os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" && os.Getenv("BROWSER") == ""
}

// Factory hands commands their dependencies, built lazily so --help and
// version never touch a config file, a network or a database.
type Factory struct {
	IO *IOStreams
	// ConfigPath overrides $XDG_CONFIG_HOME/gw/config.yaml.
	ConfigPath string
	Browser    Browser
	// HTTPClient overrides the API client's transport (tests).
	HTTPClient *http.Client

	globals *cobra.Command // the root, whose persistent flags are global
	cfg     *config.File
	noted   bool // the server URL's correction was said
}

// Settings are the effective connection settings of one invocation.
type Settings struct {
	Context   string
	Server    string
	Token     string
	Org       string
	Workspace string
	// noStoredKey is the server named by flag or environment for which
	// no context holds a key (the current context's key stayed home).
	noStoredKey string
}

// ErrNotLoggedIn maps to exit code 4.
var ErrNotLoggedIn = errors.New("not logged in: run gw login (or set GW_TOKEN)")

func AddGlobalFlags(root *cobra.Command) {
	fl := root.PersistentFlags()
	fl.String("context", "", "configuration context to use (default: the current one) [GW_CONTEXT]")
	fl.String("server", "", "gw server URL [GW_SERVER]")
	fl.String("org", "", "organization (UUID or slug) [GW_ORG]")
	fl.String("workspace", "", "workspace (UUID or slug) [GW_WORKSPACE]")
}

// UseGlobalFlags names the root whose persistent flags (--server, --org,
// --workspace, --context) Settings reads.
func (f *Factory) UseGlobalFlags(root *cobra.Command) { f.globals = root }

// Config loads the configuration file once.
func (f *Factory) Config() (*config.File, error) {
	if f.cfg != nil {
		return f.cfg, nil
	}
	path := f.ConfigPath
	if path == "" {
		path = config.DefaultPath()
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	f.cfg = cfg
	return cfg, nil
}

// Settings resolves the connection settings: a flag beats the environment
// (GW_SERVER, GW_TOKEN, GW_ORG, GW_WORKSPACE, GW_CONTEXT), which beats the
// context in the configuration file.
func (f *Factory) Settings() (Settings, error) {
	cfg, err := f.Config()
	if err != nil {
		return Settings{}, err
	}
	v := viper.New()
	v.SetEnvPrefix("GW")
	v.AutomaticEnv()
	if f.globals != nil {
		if err := v.BindPFlags(f.globals.PersistentFlags()); err != nil {
			return Settings{}, err
		}
	}
	name := v.GetString("context")
	if name == "" {
		name = cfg.CurrentContext
	}
	// A server named by flag or environment takes the key stored for that
	// server, never another server's: a stored key goes only to the server
	// it was issued by (like gh's per-host tokens). A key given by flag or
	// GW_TOKEN is the caller's explicit choice and goes where they say.
	// The URL is the server's base: http://host/api/v1 is the context of
	// http://host (issue 26, row 12).
	override := f.BaseServerURL(v.GetString("server"))
	var elsewhere string
	if name != "" {
		ctx, ok := cfg.Contexts[name]
		if !ok {
			return Settings{}, UsageError{fmt.Errorf("no context named %q in %s", name, cfg.Path())}
		}
		if override != "" && !SameServer(override, ctx.Server) {
			name, ctx = contextForServer(cfg, override)
			if ctx == nil {
				elsewhere = override
			}
		}
		if ctx != nil {
			v.SetDefault("server", ctx.Server)
			v.SetDefault("token", ctx.Token)
			v.SetDefault("org", ctx.Org)
			v.SetDefault("workspace", ctx.Workspace)
		}
	}
	return Settings{
		Context:     name,
		Server:      f.BaseServerURL(v.GetString("server")),
		Token:       v.GetString("token"),
		Org:         v.GetString("org"),
		Workspace:   v.GetString("workspace"),
		noStoredKey: elsewhere,
	}, nil
}

// contextForServer finds the context (by name order, so the choice is
// stable) whose server is server; nil when none is.
func contextForServer(cfg *config.File, server string) (string, *config.Context) {
	for _, n := range cfg.Names() {
		if c := cfg.Contexts[n]; SameServer(c.Server, server) {
			return n, c
		}
	}
	return "", nil
}

// SameServer compares server URLs as origins plus path, ignoring a
// trailing slash, an API path (ServerBase) and the case of the scheme and
// host.
func SameServer(a, b string) bool {
	norm := func(s string) string {
		s, _ = ServerBase(s)
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return s
		}
		return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + u.EscapedPath()
	}
	return norm(a) == norm(b)
}

// Client returns an API client for the effective server, with the
// effective token if any.
func (f *Factory) Client() (*client.Client, Settings, error) {
	s, err := f.Settings()
	if err != nil {
		return nil, s, err
	}
	if s.Server == "" {
		return nil, s, UsageError{errors.New("no server: pass --server, set GW_SERVER, or run gw login --server URL")}
	}
	s.Server = f.BaseServerURL(s.Server)
	c, err := client.New(client.Options{Server: s.Server, Token: s.Token, Version: Version(), HTTPClient: f.HTTPClient})
	return c, s, err
}

// AnonymousClient is an API client for server without a credential (to
// accept an invitation, to sign in).
func (f *Factory) AnonymousClient(server string) (*client.Client, error) {
	return client.New(client.Options{Server: server, Version: Version(), HTTPClient: f.HTTPClient})
}

// apiSuffixes are the paths people paste with a server URL: gw adds them
// itself, so a URL ending in one would ask for /api/v1/api/v1/…. (A bare
// /api is left alone: gw may be served under such a path prefix.)
var apiSuffixes = []string{"/api/v1", "/inf/v1"}

// ServerBase strips an API path from a server URL; note says what was
// corrected, empty when nothing was.
func ServerBase(raw string) (base, note string) {
	trimmed := strings.TrimRight(raw, "/")
	for _, suffix := range apiSuffixes {
		if b, ok := strings.CutSuffix(trimmed, suffix); ok && b != "" && !strings.HasSuffix(b, ":/") {
			return b, fmt.Sprintf("note: using %s as the server URL: gw adds %s itself", b, suffix)
		}
	}
	return trimmed, ""
}

// BaseServerURL is ServerBase, saying on stderr (once) what it corrected.
// Every server URL gw takes goes through it: --server, GW_SERVER, a
// context's, gw login's, and the data plane's --control-plane-url.
func (f *Factory) BaseServerURL(raw string) string {
	base, note := ServerBase(raw)
	if note != "" && !f.noted {
		f.noted = true
		fmt.Fprintln(f.IO.ErrOut, note)
	}
	return base
}

// AuthedClient is Client for commands that need a credential.
func (f *Factory) AuthedClient() (*client.Client, Settings, error) {
	c, s, err := f.Client()
	if err == nil && s.Token == "" {
		err = ErrNotLoggedIn
		if s.noStoredKey != "" {
			err = notLoggedInAt{s.noStoredKey}
		}
	}
	return c, s, err
}

// notLoggedInAt is ErrNotLoggedIn for a server the configuration holds no
// key for.
type notLoggedInAt struct{ server string }

func (e notLoggedInAt) Error() string {
	return fmt.Sprintf("not logged in to %s (stored keys are only sent to the server that issued them): run gw login --server %s (or set GW_TOKEN)",
		e.server, e.server)
}

func (e notLoggedInAt) Is(target error) bool { return target == ErrNotLoggedIn }

// RequireOrg returns the effective organization or a usage error.
func (s Settings) RequireOrg() (string, error) {
	if s.Org == "" {
		return "", UsageError{errors.New("no organization: pass --org, set GW_ORG, or log in to one")}
	}
	return s.Org, nil
}

// RequireWorkspace returns the effective organization and workspace.
func (s Settings) RequireWorkspace() (string, string, error) {
	org, err := s.RequireOrg()
	if err != nil {
		return "", "", err
	}
	if s.Workspace == "" {
		return "", "", UsageError{errors.New("no workspace: pass --workspace, set GW_WORKSPACE, or set one in the context")}
	}
	return org, s.Workspace, nil
}

// NewViper is a command's configuration reader: its flags bound, GW_
// environment variables (dashes as underscores) behind them, defaults last.
func NewViper(cmd *cobra.Command) (*viper.Viper, error) {
	v := viper.New()
	v.SetEnvPrefix("GW")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	if err := v.BindPFlags(cmd.Flags()); err != nil {
		return nil, err
	}
	return v, nil
}
