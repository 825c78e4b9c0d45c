package cli

import (
	"errors"
	"fmt"
	"net/http"
	"os"
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

type systemBrowser struct{}

// Open hands the URL to the desktop. The opener's own output goes to
// stderr: stdout carries only the command's data.
func (systemBrowser) Open(url string) error {
	browser.Stdout = os.Stderr
	return browser.OpenURL(url)
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
	running *cobra.Command // the command being run, once its flags are parsed
	cfg     *config.File
}

// Settings are the effective connection settings of one invocation.
type Settings struct {
	Context   string
	Server    string
	Token     string
	Org       string
	Workspace string
}

// errNotLoggedIn maps to exit code 4.
var errNotLoggedIn = errors.New("not logged in: run gw login (or set GW_TOKEN)")

func addGlobalFlags(root *cobra.Command) {
	fl := root.PersistentFlags()
	fl.String("context", "", "configuration context to use (default: the current one) [GW_CONTEXT]")
	fl.String("server", "", "gw server URL [GW_SERVER]")
	fl.String("org", "", "organization (UUID or slug) [GW_ORG]")
	fl.String("workspace", "", "workspace (UUID or slug) [GW_WORKSPACE]")
}

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
	if name != "" {
		ctx, ok := cfg.Contexts[name]
		if !ok {
			return Settings{}, usageError{fmt.Errorf("no context named %q in %s", name, cfg.Path())}
		}
		v.SetDefault("server", ctx.Server)
		v.SetDefault("token", ctx.Token)
		v.SetDefault("org", ctx.Org)
		v.SetDefault("workspace", ctx.Workspace)
	}
	return Settings{
		Context:   name,
		Server:    strings.TrimRight(v.GetString("server"), "/"),
		Token:     v.GetString("token"),
		Org:       v.GetString("org"),
		Workspace: v.GetString("workspace"),
	}, nil
}

// Client returns an API client for the effective server, with the
// effective token if any.
func (f *Factory) Client() (*client.Client, Settings, error) {
	s, err := f.Settings()
	if err != nil {
		return nil, s, err
	}
	if s.Server == "" {
		return nil, s, usageError{errors.New("no server: pass --server, set GW_SERVER, or run gw login --server URL")}
	}
	c, err := client.New(client.Options{Server: s.Server, Token: s.Token, Version: Version(), HTTPClient: f.HTTPClient})
	return c, s, err
}

// AuthedClient is Client for commands that need a credential.
func (f *Factory) AuthedClient() (*client.Client, Settings, error) {
	c, s, err := f.Client()
	if err == nil && s.Token == "" {
		err = errNotLoggedIn
	}
	return c, s, err
}

// RequireOrg returns the effective organization or a usage error.
func (s Settings) RequireOrg() (string, error) {
	if s.Org == "" {
		return "", usageError{errors.New("no organization: pass --org, set GW_ORG, or log in to one")}
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
		return "", "", usageError{errors.New("no workspace: pass --workspace, set GW_WORKSPACE, or set one in the context")}
	}
	return org, s.Workspace, nil
}

// newViper is a command's configuration reader: its flags bound, GW_
// environment variables (dashes as underscores) behind them, defaults last.
func newViper(cmd *cobra.Command) (*viper.Viper, error) {
	v := viper.New()
	v.SetEnvPrefix("GW")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	if err := v.BindPFlags(cmd.Flags()); err != nil {
		return nil, err
	}
	return v, nil
}
