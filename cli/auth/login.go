// Package auth is who the CLI is, at which server: `gw login`, `gw logout`,
// `gw whoami` and `gw context`.
package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/config"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// LoginOptions configure gw login.
type LoginOptions struct {
	IO         *cmdutil.IOStreams
	Config     func() (*config.File, error)
	Browser    cmdutil.Browser
	HTTPClient *http.Client

	// Server is the gw server to log in to; empty means the target
	// context's server.
	Server string
	// Context names the configuration context that receives the key; empty
	// means one already pointing at Server, else a name made from its host.
	Context string
	// Org and Workspace are preselected on the approval page; the person
	// approving has the last word.
	Org       string
	Workspace string
	// Instance preselects the whole instance: an instance-scope key, for
	// an instance owner or admin (catalog, platform credentials, data
	// planes).
	Instance  bool
	Label     string
	NoBrowser bool
	// SSO names the identity provider to sign in through: the browser
	// goes straight to it, then to the approval page.
	SSO string

	// Sleep waits between polls; tests replace it to run without real time.
	// It returns early with ctx's error when ctx ends.
	Sleep func(ctx context.Context, d time.Duration) error
}

// authFlowError ends a sign-in the person (or the clock) refused. It maps to
// exit code 4 like any failed authentication: Run recognises cmdutil.ErrNotLoggedIn.
type authFlowError struct{ msg string }

func (e authFlowError) Error() string        { return e.msg }
func (e authFlowError) Is(target error) bool { return target == cmdutil.ErrNotLoggedIn }

// NewCmdLogin builds `gw login`.
func NewCmdLogin(f *cmdutil.Factory, runF func(context.Context, *LoginOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Log in to a gw server through the browser and store a management key",
		Long: `Log in to a gw server, device style: gw asks the server for a one-time code,
opens the approval page in your browser (or prints its URL with --no-browser),
and waits while you sign in, check the code and pick the organization (and
optionally the workspace) the key is for. The approved management key is
stored in a configuration context: the one for this server, which becomes the
current one, or the one --context names, which becomes current only when
there is none yet (gw says which context is current afterwards; gw context
use switches).

Logging in again to the same context replaces its key: the server revokes the
old one when it delivers the new one, provided both are for the same user and
scope. A previous key for another scope or user is revoked by gw itself, with
that key, before it is forgotten (on a terminal you are asked first).

--instance asks for an instance-scope key instead, which only an instance
owner or admin can approve: the catalog, platform credentials and data planes
live at instance scope. Keep it in its own context (--context admin) beside
your organization's, and pass --context admin to the commands that need it.

Exit status 4 when the sign-in is denied, expires or was already delivered.`,
		Example: `  # first time: opens the browser, stores the key in a context named after the host
  gw login --server https://gw.example.com
  # over SSH: print the URL and code, preselect a workspace
  gw login --no-browser --org acme --workspace research
  # a second server in its own context, labelled for the approval page
  gw login --context staging --server https://gw.staging.example.com --label "laptop (staging)"
  # an instance administrator's key (catalog import, data-plane enrollment)
  gw login --instance --context admin
  # sign in through the organization's identity provider, then approve
  gw login --sso okta`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := cmdutil.NewViper(cmd)
			if err != nil {
				return err
			}
			opts := &LoginOptions{
				IO: f.IO, Config: f.Config, Browser: f.Browser, HTTPClient: f.HTTPClient,
				Server:    strings.TrimRight(v.GetString("server"), "/"),
				Context:   v.GetString("context"),
				Org:       v.GetString("org"),
				Workspace: v.GetString("workspace"),
				Instance:  v.GetBool("instance"),
				Label:     v.GetString("label"),
				NoBrowser: v.GetBool("no-browser"),
				SSO:       v.GetString("sso"),
				Sleep:     cmdutil.SleepCtx,
			}
			fl := cmd.Flags()
			if opts.Instance && (fl.Changed("org") || fl.Changed("workspace")) {
				return cmdutil.UsageError{Err: errors.New("--instance asks for a key of the whole instance; drop --org and --workspace")}
			}
			if opts.Instance {
				// GW_ORG and GW_WORKSPACE pick a context's defaults, not
				// this key's scope.
				opts.Org, opts.Workspace = "", ""
			}
			if opts.Workspace != "" && opts.Org == "" {
				// The context being logged in to names the organization
				// the workspace belongs to.
				opts.Org = contextOrg(f, opts.Context)
				if opts.Org == "" {
					return cmdutil.UsageError{Err: errors.New("--workspace needs --org: no context names the workspace's organization")}
				}
			}
			if n := len([]rune(opts.Label)); n > 80 {
				return cmdutil.UsageError{Err: fmt.Errorf("--label is %d characters; at most 80", n)}
			}
			if opts.Server != "" {
				opts.Server = f.BaseServerURL(opts.Server)
				if _, err := parseServerURL(opts.Server); err != nil {
					return cmdutil.UsageError{Err: err}
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return loginRun(cmd.Context(), opts)
		},
	}
	// These shadow the global flags of the same names: for login they say
	// where to log in and what to preselect, not which credential to use.
	fl := cmd.Flags()
	fl.String("server", "", "gw server URL (default: the context's server) [GW_SERVER]")
	fl.String("context", "", "context to store the key in, without making it the current one (default: the one for this server, else the server's host, made current) [GW_CONTEXT]")
	fl.String("org", "", "organization to preselect on the approval page (UUID or slug) [GW_ORG]")
	fl.String("workspace", "", "workspace to preselect on the approval page (UUID or slug) [GW_WORKSPACE]")
	fl.String("label", "", "name of this device on the approval page and the key's label (default: gw on <hostname>) [GW_LABEL]")
	fl.Bool("no-browser", false, "do not open a browser; print the URL and code only [GW_NO_BROWSER]")
	fl.Bool("instance", false, "ask for an instance-scope key (instance owners and admins: catalog, platform credentials, data planes)")
	fl.String("sso", "", "sign in through this identity provider (its name on the server) on the way to the approval page [GW_SSO]")
	return cmd
}

// contextOrg is the organization of the context gw login would store the
// key in (name, else the current one), so that `--workspace` alone is
// understood within it; empty when there is none.
func contextOrg(f *cmdutil.Factory, name string) string {
	cfg, err := f.Config()
	if err != nil {
		return ""
	}
	if name == "" {
		name = cfg.CurrentContext
	}
	if c := cfg.Contexts[name]; c != nil {
		return c.Org
	}
	return ""
}

func parseServerURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("invalid server URL %q: want http(s)://host[:port]", raw)
	}
	return u, nil
}

func defaultLabel() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "gw CLI"
	}
	label := "gw on " + host
	if r := []rune(label); len(r) > 80 {
		label = string(r[:80])
	}
	return label
}

// loginTarget picks the context that receives the key and the server to
// ask: an explicit context, else the one already pointing at the server
// (the current one first), else a new one named after the server's host.
func loginTarget(cfg *config.File, server, name string) (string, string, error) {
	if server == "" {
		switch {
		case name != "" && cfg.Contexts[name] != nil:
			server = cfg.Contexts[name].Server
		case name == "" && cfg.Current() != nil:
			name, server = cfg.CurrentContext, cfg.Current().Server
		}
		if server == "" {
			return "", "", cmdutil.UsageError{Err: errors.New("no server: pass --server URL (or set GW_SERVER)")}
		}
	}
	server, _ = cmdutil.ServerBase(server)
	u, err := parseServerURL(server)
	if err != nil {
		return "", "", cmdutil.UsageError{Err: err}
	}
	if name != "" {
		return name, server, nil
	}
	if cur := cfg.Current(); cur != nil && cmdutil.SameServer(cur.Server, server) {
		return cfg.CurrentContext, server, nil
	}
	for _, n := range cfg.Names() {
		if cmdutil.SameServer(cfg.Contexts[n].Server, server) {
			return n, server, nil
		}
	}
	return u.Host, server, nil
}

// pollFailureLimit is how many polls in a row may fail to reach the server
// (a restart, a flaky network) before gw login gives up.
const pollFailureLimit = 5

func loginRun(ctx context.Context, opts *LoginOptions) error {
	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	name, server, err := loginTarget(cfg, opts.Server, opts.Context)
	if err != nil {
		return err
	}
	// The context's present key goes along on the poll so the server can
	// revoke it in the same step that delivers its replacement.
	previous := cfg.Contexts[name]
	if previous != nil && (previous.Token == "" || !cmdutil.SameServer(previous.Server, server)) {
		previous = nil
	}
	c, started, err := startSignIn(ctx, opts, server)
	if err != nil {
		return err
	}
	res, err := pollApproval(ctx, opts, c, started, previous)
	if err != nil {
		return err
	}
	entry := &config.Context{Server: server, Token: *res.Token, Org: idString(res.OrgID), Workspace: idString(res.WorkspaceID)}
	// The key is delivered once: keep it even if describing it fails.
	keyClient, who := describeNewKey(ctx, opts, entry)
	// A previous key the server did not replace (another scope, another
	// user) would be forgotten while still valid: nobody could revoke it
	// short of finding it in a listing. It is retired first, with its own
	// credential, while this context still knows it.
	if previous != nil && res.ReplacedKeyID == nil {
		retirePreviousKey(ctx, opts, cfg, name, server, previous)
	}
	cfg.Contexts[name] = entry
	// --context names where the key goes, not what to use next: a second
	// context (an instance admin's beside the everyday organization key)
	// leaves the current one current. Without --context, or with no
	// current context yet, the context logged in to becomes current, as
	// logging in to a server asks (issue 26, row 12). Both are said.
	before := cfg.CurrentContext
	switched := opts.Context == "" || before == "" || cfg.Contexts[before] == nil
	if switched {
		cfg.CurrentContext = name
	}
	if err := cfg.Save(); err != nil {
		return fmt.Errorf("the key was delivered but could not be stored: %w", err)
	}
	scope := nameScope(ctx, keyClient, entry, res)
	// The names are for gw context list; saved again with them.
	if err := cfg.Save(); err != nil {
		return fmt.Errorf("the key was delivered but could not be stored: %w", err)
	}
	if who != "" {
		who = " as " + who
	}
	errOut := opts.IO.ErrOut
	fmt.Fprintf(errOut, "Logged in to %s%s for %s (context %q, key %s).\n", server, who, scope, name, entry.KeyID)
	switch {
	case !switched && before != name:
		fmt.Fprintf(errOut, "The current context is still %q; use this one with --context %s, or switch with gw context use %s.\n", before, name, name)
	case switched && before != "" && before != name:
		fmt.Fprintf(errOut, "Switched the current context from %q to %q.\n", before, name)
	}
	if res.ReplacedKeyID != nil {
		fmt.Fprintf(errOut, "Replaced previous key %s; the server revoked it.\n", res.ReplacedKeyID)
	}
	return nil
}

// idString is an optional id as a context stores it: empty for none.
func idString(id *uuid.UUID) string {
	if id == nil {
		return ""
	}
	return id.String()
}

// startSignIn asks the server for a one-time code and shows the person
// where to approve it, opening their browser unless told not to.
func startSignIn(ctx context.Context, opts *LoginOptions, server string) (*client.Client, wire.CLIStarted, error) {
	c, err := client.New(client.Options{Server: server, Version: cmdutil.Version(), HTTPClient: opts.HTTPClient})
	if err != nil {
		return nil, wire.CLIStarted{}, cmdutil.UsageError{Err: err}
	}
	label := opts.Label
	if label == "" {
		label = defaultLabel()
	}
	started, err := c.CLIStart(ctx, label)
	if err != nil {
		var unreachable *client.UnreachableError
		switch {
		case errors.As(err, &unreachable):
			return nil, started, err
		case client.IsStatus(err, http.StatusNotFound):
			return nil, started, fmt.Errorf("start sign-in at %s: it has no /api/v1/auth/cli/start: is that the base URL of a gw server (as http://host:8080, without a path)?", server)
		}
		return nil, started, fmt.Errorf("start sign-in at %s: %w", server, err)
	}
	verify := verificationURL(started.VerificationURL, opts.Org, opts.Workspace, opts.Instance)
	if opts.SSO != "" {
		verify = ssoURL(verify, opts.SSO)
	}
	errOut := opts.IO.ErrOut
	fmt.Fprintf(errOut, "One-time code: %s\n", started.UserCode)
	fmt.Fprintf(errOut, "Approve this sign-in in your browser at:\n  %s\n", verify)
	if !opts.NoBrowser && opts.Browser != nil {
		if err := opts.Browser.Open(verify); err != nil {
			fmt.Fprintf(errOut, "Could not open a browser (%v); open the URL above yourself.\n", err)
		}
	}
	fmt.Fprintf(errOut, "Waiting for approval (the code expires at %s)…\n", started.ExpiresAt.Local().Format("15:04:05"))
	return c, started, nil
}

// describeNewKey asks the server, with the new key, which key it is and
// whose; a failure is a warning, never a lost key. It returns a client
// holding the key (nil if none could be made) and the owner's email.
func describeNewKey(ctx context.Context, opts *LoginOptions, entry *config.Context) (*client.Client, string) {
	keyClient, err := client.New(client.Options{Server: entry.Server, Token: entry.Token, Version: cmdutil.Version(), HTTPClient: opts.HTTPClient})
	who := ""
	if err == nil {
		var me wire.Me
		if me, err = keyClient.Me(ctx); err == nil && me.Key != nil {
			entry.KeyID, who = me.Key.ID.String(), me.User.Email
		}
	}
	if err != nil {
		fmt.Fprintf(opts.IO.ErrOut, "warning: could not describe the new key: %v\n", err)
	}
	return keyClient, who
}

// nameScope says what the new key covers, in names where the server
// gives them, and keeps those names in the context for gw context list.
func nameScope(ctx context.Context, keyClient *client.Client, entry *config.Context, res wire.CLIPollResult) string {
	scope := "organization "
	switch {
	case res.OrgID == nil:
		scope = "the whole instance"
	case res.OrgName != nil && *res.OrgName != "":
		entry.OrgName = *res.OrgName
	case keyClient != nil:
		entry.OrgName = cmdutil.NewNameBook(keyClient).OrgName(ctx, entry.Org)
	}
	if res.OrgID != nil {
		scope += cmdutil.OrDash(entry.OrgName)
	}
	if res.WorkspaceID != nil {
		ws := res.WorkspaceID.String()
		if keyClient != nil {
			ws = cmdutil.NewNameBook(keyClient).WorkspaceName(ctx, entry.Org, ws)
			entry.WorkspaceName = ws
		}
		scope += ", workspace " + ws
	}
	return scope
}

// retirePreviousKey revokes the key a context held before a login that
// replaced it with a key the server did not swap for it (another scope
// or user), and says which key that was. Best effort: the new key is
// already delivered, so failures are reported, never fatal. On a terminal
// the person is asked first; a script gets the safe default, revocation.
func retirePreviousKey(ctx context.Context, opts *LoginOptions, cfg *config.File, name, server string, previous *config.Context) {
	errOut := opts.IO.ErrOut
	for _, other := range cfg.Names() {
		if other != name && cfg.Contexts[other].Token == previous.Token {
			fmt.Fprintf(errOut, "The previous key of context %q is also context %q's; it was kept.\n", name, other)
			return
		}
	}
	old, err := client.New(client.Options{Server: server, Token: previous.Token, Version: cmdutil.Version(), HTTPClient: opts.HTTPClient})
	if err != nil {
		return
	}
	me, err := old.Me(ctx)
	switch {
	case client.IsStatus(err, http.StatusUnauthorized):
		return // already revoked or expired: nothing left to retire
	case err != nil:
		fmt.Fprintf(errOut, "warning: could not reach %s to revoke the previous key %s of context %q; it stays valid: %v\n",
			server, cmdutil.OrDash(previous.KeyID), name, err)
		return
	case me.Key == nil:
		return
	}
	k := me.Key
	desc := fmt.Sprintf("%q (%s…, %s", k.Label, k.Prefix, cmdutil.NewNameBook(old).ScopeLine(ctx, k.Scope))
	if me.User.Email != "" {
		desc += ", " + me.User.Email
	}
	desc += ")"
	if opts.IO.CanPrompt() {
		fmt.Fprintf(errOut, "Context %q held another key, %s. Revoke it? [Y/n] ", name, desc)
		var answer string
		_, _ = fmt.Fscanln(opts.IO.In, &answer)
		if a := strings.ToLower(strings.TrimSpace(answer)); a == "n" || a == "no" {
			fmt.Fprintf(errOut, "Kept the previous key %s (id %s); it stays valid, and context %q no longer holds it.\n", desc, k.ID, name)
			return
		}
	}
	scope, err := client.ScopeOfKey(k.Scope)
	if err == nil {
		_, err = old.RevokeManagementKey(ctx, scope, k.ID.String())
	}
	switch {
	case err == nil:
		fmt.Fprintf(errOut, "Revoked the previous key of context %q: %s.\n", name, desc)
	case client.IsStatus(err, http.StatusForbidden):
		fmt.Fprintf(errOut, "Could not revoke the previous key %s (id %s): it lacks management-keys.revoke; it stays valid until it expires or an administrator revokes it.\n", desc, k.ID)
	default:
		fmt.Fprintf(errOut, "warning: could not revoke the previous key %s (id %s); it stays valid: %v\n", desc, k.ID, err)
	}
}

// verificationURL adds the organization and workspace to preselect; the
// approval page treats them as suggestions only.
func verificationURL(base, org, ws string, instance bool) string {
	if org == "" && !instance {
		return base
	}
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	q := u.Query()
	if instance {
		q.Set("scope", "instance")
	} else {
		q.Set("org", org)
	}
	if ws != "" {
		q.Set("workspace", ws)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// ssoURL is the approval page reached through an identity provider: its
// sign-in start, returning to the approval page (a path of the server).
func ssoURL(verify, provider string) string {
	u, err := url.Parse(verify)
	if err != nil || u.Host == "" {
		return verify
	}
	return u.Scheme + "://" + u.Host + "/api/v1/auth/oidc/" + url.PathEscape(provider) + "/start?return_to=" + url.QueryEscape(u.RequestURI())
}

// pollApproval polls until the sign-in is decided. It waits the server's
// interval before every poll and adopts a longer one when told slow_down.
func pollApproval(ctx context.Context, opts *LoginOptions, c *client.Client, started wire.CLIStarted, previous *config.Context) (wire.CLIPollResult, error) {
	interval := time.Duration(max(started.IntervalSeconds, 1)) * time.Second
	currentKey := ""
	if previous != nil {
		currentKey = previous.Token
	}
	failures := 0
	for {
		if err := opts.Sleep(ctx, interval); err != nil {
			return wire.CLIPollResult{}, err
		}
		res, err := c.CLIPoll(ctx, started.PollSecret, currentKey)
		if err != nil {
			if ctx.Err() != nil || !transient(err) || failures+1 >= pollFailureLimit {
				return res, fmt.Errorf("poll sign-in: %w", err)
			}
			failures++
			fmt.Fprintf(opts.IO.ErrOut, "warning: poll failed (%v); retrying\n", err)
			continue
		}
		failures = 0
		if next := time.Duration(res.IntervalSeconds) * time.Second; next > interval {
			interval = next
		}
		switch res.Status {
		case "pending":
		case "slow_down":
			fmt.Fprintf(opts.IO.ErrOut, "The server asked to poll less often; now every %s.\n", interval)
		case "approved":
			if res.Token == nil || *res.Token == "" {
				return res, errors.New("the server approved the sign-in but delivered no key")
			}
			return res, nil
		case "denied":
			return res, authFlowError{"the sign-in was denied in the browser"}
		case "expired":
			return res, authFlowError{"the code expired before it was approved; run gw login again"}
		case "consumed":
			return res, authFlowError{"this sign-in's key was already delivered to another poll; run gw login again"}
		default:
			return res, fmt.Errorf("the server answered an unknown sign-in status %q", res.Status)
		}
	}
}

// transient tells failures worth another poll (no answer, or the server
// briefly unwell) from answers that will not change.
func transient(err error) bool {
	var ae *client.APIError
	if !errors.As(err, &ae) {
		return true
	}
	return ae.Status >= 500 || ae.Status == http.StatusTooManyRequests
}

// LogoutOptions configure gw logout.
type LogoutOptions struct {
	IO         *cmdutil.IOStreams
	Config     func() (*config.File, error)
	HTTPClient *http.Client
	// Context is the context to log out of; empty means the current one.
	Context string
}

// NewCmdLogout builds `gw logout`.
func NewCmdLogout(f *cmdutil.Factory, runF func(context.Context, *LogoutOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "logout",
		Short: "Revoke the context's management key and forget it",
		Long: `Revoke the management key of a context (the current one by default) on its
server and remove it from the configuration file. The context keeps its server,
so a later gw login goes back there. A key the server no longer accepts is
simply forgotten.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := cmdutil.NewViper(cmd)
			if err != nil {
				return err
			}
			opts := &LogoutOptions{IO: f.IO, Config: f.Config, HTTPClient: f.HTTPClient, Context: v.GetString("context")}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return logoutRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().String("context", "", "context to log out of (default: the current one) [GW_CONTEXT]")
	return cmd
}

func logoutRun(ctx context.Context, opts *LogoutOptions) error {
	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	name := opts.Context
	if name == "" {
		name = cfg.CurrentContext
	}
	if name == "" {
		return cmdutil.ErrNotLoggedIn
	}
	entry := cfg.Contexts[name]
	if entry == nil {
		return cmdutil.UsageError{Err: fmt.Errorf("no context named %q in %s", name, cfg.Path())}
	}
	errOut := opts.IO.ErrOut
	if entry.Token == "" {
		fmt.Fprintf(errOut, "Context %q is already logged out.\n", name)
		return nil
	}
	c, err := client.New(client.Options{Server: entry.Server, Token: entry.Token, Version: cmdutil.Version(), HTTPClient: opts.HTTPClient})
	if err != nil {
		return err
	}
	// The key's own description says where it lives, so the revoke goes to
	// the endpoint of its scope, the one place a scoped key may act.
	outcome := "its key was already revoked or expired"
	me, err := c.Me(ctx)
	switch {
	case client.IsStatus(err, http.StatusUnauthorized):
	case err != nil:
		return fmt.Errorf("could not reach %s to revoke the key, so it is kept (retry, or drop it unrevoked with gw context delete %s): %w",
			entry.Server, name, err)
	case me.Key == nil:
		return fmt.Errorf("%s did not describe the context's credential as a management key", entry.Server)
	default:
		scope, err := client.ScopeOfKey(me.Key.Scope)
		if err == nil {
			_, err = c.RevokeManagementKey(ctx, scope, me.Key.ID.String())
		}
		switch {
		case err == nil:
			outcome = "key " + me.Key.ID.String() + " revoked"
		case client.IsStatus(err, http.StatusUnauthorized):
		case client.IsStatus(err, http.StatusForbidden):
			// A key without management-keys.revoke cannot retire itself;
			// forgetting it is still what the person asked for.
			outcome = "key " + me.Key.ID.String() + " NOT revoked: it lacks management-keys.revoke; it stays valid until it expires or an administrator revokes it"
		default:
			return fmt.Errorf("revoke key %s: %w", me.Key.ID, err)
		}
	}
	entry.Token, entry.KeyID = "", ""
	if err := cfg.Save(); err != nil {
		return err
	}
	fmt.Fprintf(errOut, "Logged out of context %q (%s): %s.\n", name, entry.Server, outcome)
	return nil
}
