package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
	"github.com/gw-gateway/gw/cli/config"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

const (
	ownerEmail    = "owner@example.com"
	ownerPassword = "correct horse battery"
)

func TestLoginFlags(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, o *LoginOptions)
	}{
		{name: "defaults", check: func(t *testing.T, o *LoginOptions) {
			if o.Server != "" || o.Context != "" || o.Org != "" || o.NoBrowser || o.Label != "" || o.Sleep == nil || o.Config == nil {
				t.Errorf("defaults: %+v", o)
			}
		}},
		{name: "flags", args: []string{"--server", "https://gw.example.com/", "--org", "acme", "--workspace", "research",
			"--no-browser", "--label", "ci runner", "--context", "prod"},
			check: func(t *testing.T, o *LoginOptions) {
				if o.Server != "https://gw.example.com" || o.Org != "acme" || o.Workspace != "research" || !o.NoBrowser ||
					o.Label != "ci runner" || o.Context != "prod" {
					t.Errorf("flags: %+v", o)
				}
			}},
		{name: "env", env: map[string]string{"GW_SERVER": "http://127.0.0.1:9", "GW_NO_BROWSER": "true", "GW_CONTEXT": "local"},
			check: func(t *testing.T, o *LoginOptions) {
				if o.Server != "http://127.0.0.1:9" || !o.NoBrowser || o.Context != "local" {
					t.Errorf("env: %+v", o)
				}
			}},
		{name: "flag beats env", args: []string{"--server", "http://a:1"}, env: map[string]string{"GW_SERVER": "http://b:2"},
			check: func(t *testing.T, o *LoginOptions) {
				if o.Server != "http://a:1" {
					t.Errorf("server %q", o.Server)
				}
			}},
		{name: "workspace without org", args: []string{"--workspace", "w"}, wantErr: "--workspace needs --org"},
		{name: "bad server", args: []string{"--server", "ftp://x"}, wantErr: "invalid server URL"},
		{name: "long label", args: []string{"--label", strings.Repeat("x", 81)}, wantErr: "at most 80"},
		{name: "positional", args: []string{"extra"}, wantErr: "unknown command"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			f, _, _ := cmdtest.Factory()
			var got *LoginOptions
			cmd := NewCmdLogin(f, func(_ context.Context, o *LoginOptions) error { got = o; return nil })
			cmd.SetArgs(c.args)
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			err := cmd.Execute()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, got)
		})
	}
}

func TestLogoutWhoamiContextFlags(t *testing.T) {
	t.Run("logout", func(t *testing.T) {
		f, _, _ := cmdtest.Factory()
		var got *LogoutOptions
		cmd := NewCmdLogout(f, func(_ context.Context, o *LogoutOptions) error { got = o; return nil })
		cmd.SetArgs([]string{"--context", "prod"})
		if err := cmd.Execute(); err != nil || got.Context != "prod" || got.Config == nil {
			t.Fatalf("%+v %v", got, err)
		}
		cmd = NewCmdLogout(f, func(context.Context, *LogoutOptions) error { return nil })
		cmd.SetArgs([]string{"extra"})
		cmd.SetErr(&bytes.Buffer{})
		if err := cmd.Execute(); err == nil {
			t.Fatal("logout accepted an argument")
		}
	})
	t.Run("whoami", func(t *testing.T) {
		for _, c := range []struct {
			args    []string
			output  string
			wantErr string
		}{
			{nil, "table", ""},
			{[]string{"--output", "json"}, "json", ""},
			{[]string{"-o", "yaml"}, "yaml", ""},
			{[]string{"-o", "xml"}, "", "--output must be"},
			{[]string{"me"}, "", "unknown command"},
		} {
			f, _, _ := cmdtest.Factory()
			var got *WhoamiOptions
			cmd := NewCmdWhoami(f, func(_ context.Context, o *WhoamiOptions) error { got = o; return nil })
			cmd.SetArgs(c.args)
			cmd.SetErr(&bytes.Buffer{})
			err := cmd.Execute()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Errorf("%v: err = %v", c.args, err)
				}
				continue
			}
			if err != nil || got.Output.Format != c.output {
				t.Errorf("%v: %+v %v", c.args, got, err)
			}
		}
	})
	t.Run("context", func(t *testing.T) {
		type capture struct {
			cmd     func(*cmdutil.Factory, func(context.Context, *ContextOptions) error) *cobra.Command
			args    []string
			name    string
			output  string
			wantErr string
		}
		for _, c := range []capture{
			{cmd: NewCmdContextList, output: "table"},
			{cmd: NewCmdContextList, args: []string{"-o", "json"}, output: "json"},
			{cmd: NewCmdContextList, args: []string{"-o", "csv"}, wantErr: "--output must be"},
			{cmd: NewCmdContextList, args: []string{"x"}, wantErr: "unknown command"},
			{cmd: NewCmdContextUse, args: []string{"prod"}, name: "prod"},
			{cmd: NewCmdContextUse, wantErr: "accepts 1 arg"},
			{cmd: NewCmdContextDelete, args: []string{"old"}, name: "old"},
			{cmd: NewCmdContextDelete, args: []string{"a", "b"}, wantErr: "accepts 1 arg"},
		} {
			f, _, _ := cmdtest.Factory()
			var got *ContextOptions
			cmd := c.cmd(f, func(_ context.Context, o *ContextOptions) error { got = o; return nil })
			cmd.SetArgs(c.args)
			cmd.SetErr(&bytes.Buffer{})
			err := cmd.Execute()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Errorf("%s %v: err = %v", cmd.Name(), c.args, err)
				}
				continue
			}
			if err != nil || got.Name != c.name || (c.output != "" && got.Output.Format != c.output) {
				t.Errorf("%s %v: %+v %v", cmd.Name(), c.args, got, err)
			}
		}
	})
}

// loginEnv is the real API on a fresh SQLite database behind an httptest
// server, bootstrapped with an owner, organization "default" and workspace
// "default".
type loginEnv struct {
	t    *testing.T
	URL  string
	db   *bun.DB
	boot wire.BootstrapResult
}

func newLoginEnv(t *testing.T) *loginEnv {
	t.Helper()
	ctx := context.Background()
	db := storetest.Open(t, storetest.SQLite)
	ts := httptest.NewUnstartedServer(nil)
	e := &loginEnv{t: t, URL: "http://" + ts.Listener.Addr().String(), db: db}
	st := store.New(db)
	s, err := api.New(ctx, st, api.Options{PublicURL: e.URL, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	booted, err := backend.Bootstrap(ctx, st, backend.System("test"), backend.BootstrapInput{Email: ownerEmail, Password: ownerPassword}, nil)
	if err == nil {
		e.boot = api.BootstrapResult(booted)
	}
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = s
	ts.Start()
	t.Cleanup(ts.Close)
	return e
}

// sleeper stands in for the poll wait. Instead of waiting it moves the
// server's record of the last poll back by the interval (as if that much
// time had passed), so the real poll gate sees a well-behaved CLI. early,
// when set, makes one wait look too short to the server.
type sleeper struct {
	e     *loginEnv
	mu    sync.Mutex
	waits []time.Duration
	early int // the wait (1-based) that only "passes" one second
}

func (s *sleeper) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	n := len(s.waits)
	s.mu.Unlock()
	passed := d
	if n == s.early {
		passed = time.Second
	}
	if _, err := s.e.db.NewUpdate().Model((*store.CLIAuthorization)(nil)).Set("last_poll_at = ?", store.Now().Add(-passed)).
		Where("last_poll_at IS NOT NULL").Exec(ctx); err != nil {
		return err
	}
	// A little real time, so the approving goroutine gets on.
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(5 * time.Millisecond):
		return nil
	}
}

func (s *sleeper) Waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// approver plays the person at the browser: Open records the verification
// URL and, in a goroutine, signs in over HTTP with a session cookie, looks
// at the request and approves (or denies) it while gw login polls.
type approver struct {
	t         *testing.T
	server    string
	org       string
	workspace *uuid.UUID
	deny      bool

	urls   []string
	label  string
	result chan error
}

func newApprover(t *testing.T, server string) *approver {
	return &approver{t: t, server: server, org: "default", result: make(chan error, 1)}
}

func (a *approver) Open(u string) error {
	a.urls = append(a.urls, u)
	go func() { a.result <- a.decide(u) }()
	return nil
}

func (a *approver) decide(raw string) error {
	ctx := context.Background()
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	code := u.Query().Get("code")
	c, err := client.New(client.Options{Server: a.server})
	if err != nil {
		return err
	}
	if _, err := c.Login(ctx, wire.Credentials{Email: ownerEmail, Password: ownerPassword}); err != nil {
		return fmt.Errorf("sign in: %w", err)
	}
	req, err := c.CLIAuthorization(ctx, code)
	if err != nil {
		return fmt.Errorf("describe: %w", err)
	}
	if req.Status != "pending" {
		return fmt.Errorf("status %q before approval", req.Status)
	}
	a.label = req.Label
	if a.deny {
		_, err = c.CLIDeny(ctx, code)
		return err
	}
	approve := wire.CLIApprove{UserCode: code, OrgID: a.org, WorkspaceID: a.workspace}
	if u.Query().Get("scope") == "instance" {
		// What the page sends when the whole instance is chosen.
		approve = wire.CLIApprove{UserCode: code, Scope: wire.ScopeInstance}
	}
	_, err = c.CLIApprove(ctx, approve)
	return err
}

// wait returns the approver's outcome.
func (a *approver) wait() {
	a.t.Helper()
	select {
	case err := <-a.result:
		if err != nil {
			a.t.Fatalf("approver: %v", err)
		}
	case <-time.After(30 * time.Second):
		a.t.Fatal("approver never finished")
	}
}

type loginRunResult struct {
	err    error
	errOut string
	cfg    *config.File
}

// login runs loginRun with the fake browser and sleeper against the env,
// with the configuration file at cfgPath.
func (e *loginEnv) login(cfgPath string, br cmdutil.Browser, sl *sleeper, mutate func(*LoginOptions)) loginRunResult {
	e.t.Helper()
	f, _, errOut := cmdtest.Factory()
	f.ConfigPath = cfgPath
	opts := &LoginOptions{IO: f.IO, Config: f.Config, Browser: br, Server: e.URL, Sleep: sl.Sleep, Label: "test laptop"}
	if mutate != nil {
		mutate(opts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := loginRun(ctx, opts)
	cfg, lerr := config.Load(cfgPath)
	if lerr != nil {
		e.t.Fatal(lerr)
	}
	return loginRunResult{err: err, errOut: errOut.String(), cfg: cfg}
}

func (e *loginEnv) host() string {
	u, _ := url.Parse(e.URL)
	return u.Host
}

// keyClient is a client holding token.
func (e *loginEnv) keyClient(token string) *client.Client {
	c, err := client.New(client.Options{Server: e.URL, Token: token})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func TestLoginRunApproveAndRelogin(t *testing.T) {
	e := newLoginEnv(t)
	ctx := context.Background()
	cfgPath := filepath.Join(t.TempDir(), "gw", "config.yaml")

	br := newApprover(t, e.URL)
	sl := &sleeper{e: e}
	res := e.login(cfgPath, br, sl, nil)
	br.wait()
	if res.err != nil {
		t.Fatalf("login: %v\n%s", res.err, res.errOut)
	}
	if len(br.urls) != 1 || !strings.HasPrefix(br.urls[0], e.URL+"/cli/authorize?code=") {
		t.Fatalf("browser opened %v", br.urls)
	}
	code := strings.TrimPrefix(br.urls[0], e.URL+"/cli/authorize?code=")
	if !strings.Contains(res.errOut, "One-time code: "+code) || !strings.Contains(res.errOut, br.urls[0]) {
		t.Errorf("code and URL not printed:\n%s", res.errOut)
	}
	if br.label != "test laptop" {
		t.Errorf("approval page saw label %q", br.label)
	}
	name := e.host()
	first := res.cfg.Contexts[name]
	if res.cfg.CurrentContext != name || first == nil || !strings.HasPrefix(first.Token, "sk-cp-") || first.Server != e.URL ||
		first.Org != e.boot.Organization.ID.String() || first.Workspace != "" || first.KeyID == "" {
		t.Fatalf("stored context: current=%q %+v", res.cfg.CurrentContext, first)
	}
	if fi, err := os.Stat(cfgPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config file mode: %v %v", fi, err)
	}
	for _, w := range sl.Waits() {
		if w != 5*time.Second {
			t.Errorf("waited %s between polls, want the server's 5s", w)
		}
	}
	me, err := e.keyClient(first.Token).Me(ctx)
	if err != nil || me.User.Email != ownerEmail || me.Key == nil || me.Key.ID.String() != first.KeyID ||
		me.Key.Scope.Level != wire.ScopeOrganization || me.Key.Label != "test laptop" {
		t.Fatalf("new key: %+v %v", me, err)
	}
	if !strings.Contains(res.errOut, "Logged in to "+e.URL+" as "+ownerEmail+" for organization Default") {
		t.Errorf("no success line:\n%s", res.errOut)
	}

	// whoami reads the stored context.
	f, out, errOut := cmdtest.Factory()
	f.ConfigPath = cfgPath
	if code := run(ctx, f, []string{"whoami"}); code != 0 {
		t.Fatalf("whoami: %d %s", code, errOut)
	}
	// People read names: the organization's id appears only in json.
	for _, want := range []string{ownerEmail, first.KeyID, "scope\torganization Default\n", "membership\tDefault owner (active)",
		"management-keys.revoke", "never", "context\t" + name} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("whoami lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out.String(), e.boot.Organization.ID.String()) {
		t.Errorf("whoami shows the organization's id:\n%s", out)
	}
	f, out, _ = cmdtest.Factory()
	f.ConfigPath = cfgPath
	if code := run(ctx, f, []string{"whoami", "-o", "json"}); code != 0 {
		t.Fatal("whoami json")
	}
	var got wire.Me
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.Key == nil || got.Key.ID.String() != first.KeyID ||
		got.Key.Scope.OrgID == nil || *got.Key.Scope.OrgID != e.boot.Organization.ID {
		t.Fatalf("whoami json: %v\n%s", err, out)
	}

	// A second login to the same context (no --server: the current
	// context's) replaces the key; the old one stops working.
	br = newApprover(t, e.URL)
	res = e.login(cfgPath, br, &sleeper{e: e}, func(o *LoginOptions) { o.Server = "" })
	br.wait()
	if res.err != nil {
		t.Fatalf("re-login: %v\n%s", res.err, res.errOut)
	}
	second := res.cfg.Contexts[name]
	if len(res.cfg.Contexts) != 1 || second.Token == first.Token || second.KeyID == first.KeyID {
		t.Fatalf("re-login stored %+v (contexts %v)", second, res.cfg.Names())
	}
	if !strings.Contains(res.errOut, "Replaced previous key "+first.KeyID) {
		t.Errorf("no replacement note:\n%s", res.errOut)
	}
	if _, err := e.keyClient(first.Token).Me(ctx); !client.IsStatus(err, 401) {
		t.Fatalf("old key after re-login: %v", err)
	}
	if _, err := e.keyClient(second.Token).Me(ctx); err != nil {
		t.Fatalf("new key: %v", err)
	}
	f, _, errOut = cmdtest.Factory()
	f.ConfigPath = cfgPath
	t.Setenv("GW_TOKEN", first.Token)
	if code := run(ctx, f, []string{"whoami"}); code != cmdutil.ExitAuth {
		t.Fatalf("whoami with the replaced key: exit %d (%s)", code, errOut)
	}
}

func TestLoginRunWorkspaceScopeAndLogout(t *testing.T) {
	e := newLoginEnv(t)
	ctx := context.Background()
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	br := newApprover(t, e.URL)
	br.workspace = &e.boot.Workspace.ID
	res := e.login(cfgPath, br, &sleeper{e: e}, func(o *LoginOptions) {
		o.Context, o.Org, o.Workspace = "ws", "default", "default"
	})
	br.wait()
	if res.err != nil {
		t.Fatalf("login: %v\n%s", res.err, res.errOut)
	}
	if br.urls[0] != e.URL+"/cli/authorize?code="+strings.SplitN(strings.TrimPrefix(br.urls[0], e.URL+"/cli/authorize?code="), "&", 2)[0]+"&org=default&workspace=default" {
		t.Errorf("verification URL without the preselection: %s", br.urls[0])
	}
	ctxWS := res.cfg.Contexts["ws"]
	if res.cfg.CurrentContext != "ws" || ctxWS == nil || ctxWS.Workspace != e.boot.Workspace.ID.String() {
		t.Fatalf("stored %+v", ctxWS)
	}
	me, err := e.keyClient(ctxWS.Token).Me(ctx)
	if err != nil || me.Key.Scope.Level != wire.ScopeWorkspace {
		t.Fatalf("workspace key: %+v %v", me, err)
	}

	// Logout revokes through the workspace's own endpoint.
	f, _, errOut := cmdtest.Factory()
	f.ConfigPath = cfgPath
	if code := run(ctx, f, []string{"logout"}); code != 0 {
		t.Fatalf("logout: %d %s", code, errOut)
	}
	if !strings.Contains(errOut.String(), "key "+ctxWS.KeyID+" revoked") {
		t.Errorf("logout said:\n%s", errOut)
	}
	if _, err := e.keyClient(ctxWS.Token).Me(ctx); !client.IsStatus(err, 401) {
		t.Fatalf("key after logout: %v", err)
	}
	cfg, _ := config.Load(cfgPath)
	if c := cfg.Contexts["ws"]; c == nil || c.Token != "" || c.KeyID != "" || c.Server != e.URL {
		t.Fatalf("context after logout: %+v", c)
	}
	// Twice is fine; whoami now says "not logged in" with exit 4.
	f, _, errOut = cmdtest.Factory()
	f.ConfigPath = cfgPath
	if code := run(ctx, f, []string{"logout"}); code != 0 || !strings.Contains(errOut.String(), "already logged out") {
		t.Fatalf("second logout: %d %s", code, errOut)
	}
	f, _, _ = cmdtest.Factory()
	f.ConfigPath = cfgPath
	if code := run(ctx, f, []string{"whoami"}); code != cmdutil.ExitAuth {
		t.Fatalf("whoami after logout: %d", code)
	}
}

func TestLogoutOfRevokedKey(t *testing.T) {
	e := newLoginEnv(t)
	ctx := context.Background()
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	br := newApprover(t, e.URL)
	res := e.login(cfgPath, br, &sleeper{e: e}, nil)
	br.wait()
	if res.err != nil {
		t.Fatal(res.err)
	}
	entry := res.cfg.Current()
	owner := e.keyClient(e.boot.ManagementKey.Token)
	if _, err := owner.RevokeManagementKey(ctx, client.OrgScope("default"), entry.KeyID); err != nil {
		t.Fatal(err)
	}
	f, _, errOut := cmdtest.Factory()
	f.ConfigPath = cfgPath
	if code := run(ctx, f, []string{"logout"}); code != 0 || !strings.Contains(errOut.String(), "already revoked or expired") {
		t.Fatalf("logout of a revoked key: %d %s", code, errOut)
	}
	cfg, _ := config.Load(cfgPath)
	if cfg.Current().Token != "" {
		t.Fatal("token kept")
	}
	// No context at all: not logged in, exit 4.
	f, _, _ = cmdtest.Factory()
	f.ConfigPath = filepath.Join(t.TempDir(), "empty.yaml")
	if code := run(ctx, f, []string{"logout"}); code != cmdutil.ExitAuth {
		t.Fatalf("logout without contexts: %d", code)
	}
}

// A re-login to another scope, which the server does not treat as a
// replacement, has gw revoke the previous key with that key itself before
// the context forgets it, and say which key it was; one whose old key is
// already dead says nothing about it. The success line names the scope.
func TestReloginToAnotherScopeRevokesThePreviousKey(t *testing.T) {
	e := newLoginEnv(t)
	ctx := context.Background()
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	br := newApprover(t, e.URL)
	res := e.login(cfgPath, br, &sleeper{e: e}, nil)
	br.wait()
	if res.err != nil {
		t.Fatal(res.err)
	}
	orgKey := res.cfg.Current()
	orgMe, err := e.keyClient(orgKey.Token).Me(ctx)
	if err != nil {
		t.Fatal(err)
	}

	br = newApprover(t, e.URL)
	br.workspace = &e.boot.Workspace.ID
	res = e.login(cfgPath, br, &sleeper{e: e}, nil)
	br.wait()
	if res.err != nil {
		t.Fatal(res.err)
	}
	want := fmt.Sprintf("Revoked the previous key of context %q: %q (%s…, organization %s, %s).",
		res.cfg.CurrentContext, orgMe.Key.Label, orgMe.Key.Prefix, e.boot.Organization.Name, ownerEmail)
	if !strings.Contains(res.errOut, want) || strings.Contains(res.errOut, "Replaced") {
		t.Fatalf("scope change: want %q in\n%s", want, res.errOut)
	}
	if !strings.Contains(res.errOut, "for organization "+e.boot.Organization.Name+", workspace "+e.boot.Workspace.Name+" (") {
		t.Fatalf("the success line does not name the workspace:\n%s", res.errOut)
	}
	if _, err := e.keyClient(orgKey.Token).Me(ctx); !client.IsStatus(err, http.StatusUnauthorized) {
		t.Fatalf("the organization key should be revoked: %v", err)
	}
	wsKey := res.cfg.Current()
	if _, err := e.keyClient(wsKey.Token).Me(ctx); err != nil {
		t.Fatalf("the new key: %v", err)
	}

	owner := e.keyClient(e.boot.ManagementKey.Token)
	if _, err := owner.RevokeManagementKey(ctx, client.WorkspaceScope(e.boot.Organization.ID.String(), e.boot.Workspace.ID.String()), wsKey.KeyID); err != nil {
		t.Fatal(err)
	}
	br = newApprover(t, e.URL)
	res = e.login(cfgPath, br, &sleeper{e: e}, nil)
	br.wait()
	if res.err != nil {
		t.Fatal(res.err)
	}
	if strings.Contains(res.errOut, "previous key") || strings.Contains(res.errOut, "Replaced") {
		t.Fatalf("dead previous key:\n%s", res.errOut)
	}
}

func TestLoginRunDenied(t *testing.T) {
	e := newLoginEnv(t)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	br := newApprover(t, e.URL)
	br.deny = true
	res := e.login(cfgPath, br, &sleeper{e: e}, nil)
	br.wait()
	if res.err == nil || !strings.Contains(res.err.Error(), "denied") || !errors.Is(res.err, cmdutil.ErrNotLoggedIn) {
		t.Fatalf("denied login: %v", res.err)
	}
	if len(res.cfg.Contexts) != 0 {
		t.Fatalf("a denied login stored %v", res.cfg.Names())
	}
}

func TestLoginRunSlowDown(t *testing.T) {
	e := newLoginEnv(t)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	// The approver waits for the second poll, so the early one is pending.
	br := &gatedApprover{approver: newApprover(t, e.URL), e: e}
	sl := &sleeper{e: e, early: 2}
	res := e.login(cfgPath, br, sl, nil)
	br.wait()
	if res.err != nil {
		t.Fatalf("login: %v\n%s", res.err, res.errOut)
	}
	waits := sl.Waits()
	if len(waits) < 3 || waits[0] != 5*time.Second || waits[1] != 5*time.Second || waits[2] != 10*time.Second {
		t.Fatalf("waits %v: want 5s, 5s, then the slowed 10s", waits)
	}
	if !strings.Contains(res.errOut, "poll less often; now every 10s") {
		t.Errorf("no slow-down note:\n%s", res.errOut)
	}
}

// gatedApprover approves only once the server has told the CLI to slow
// down, so that the slowed interval is seen while still pending.
type gatedApprover struct {
	*approver
	e *loginEnv
}

func (g *gatedApprover) Open(u string) error {
	g.urls = append(g.urls, u)
	go func() {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			var n int
			err := g.e.db.NewSelect().Model((*store.CLIAuthorization)(nil)).ColumnExpr("interval_seconds").Scan(context.Background(), &n)
			if err == nil && n > 5 {
				g.result <- g.decide(u)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		g.result <- errors.New("the server never slowed the CLI down")
	}()
	return nil
}

// TestLoginExitCodes runs gw login through Run against a fake server that
// answers each poll with a final refusal: denied, expired and consumed all
// exit 4. The fake's one-second interval keeps the real wait short.
func TestLoginExitCodes(t *testing.T) {
	for _, status := range []string{"denied", "expired", "consumed"} {
		t.Run(status, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				switch r.URL.Path {
				case "/api/v1/auth/cli/start":
					fmt.Fprintf(w, `{"data":{"poll_secret":"cli_x","user_code":"BCDF-GHJK","verification_url":"http://%s/cli/authorize?code=BCDF-GHJK","interval_seconds":1,"expires_at":"2030-01-01T00:00:00Z"}}`, r.Host)
				case "/api/v1/auth/cli/poll":
					fmt.Fprintf(w, `{"data":{"status":%q,"interval_seconds":1,"scope":null,"token":null,"org_id":null,"org_name":null,"workspace_id":null,"replaced_key_id":null}}`, status)
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			f, _, errOut := cmdtest.Factory()
			f.ConfigPath = filepath.Join(t.TempDir(), "config.yaml")
			var opened []string
			f.Browser = recordingBrowser{&opened}
			if code := run(context.Background(), f, []string{"login", "--server", srv.URL, "--no-browser"}); code != cmdutil.ExitAuth {
				t.Fatalf("exit %d, want 4\n%s", code, errOut)
			}
			if len(opened) != 0 {
				t.Errorf("--no-browser opened %v", opened)
			}
			if !strings.Contains(errOut.String(), "error: ") || !strings.Contains(errOut.String(), "BCDF-GHJK") {
				t.Errorf("stderr:\n%s", errOut)
			}
		})
	}
}

type recordingBrowser struct{ urls *[]string }

func (b recordingBrowser) Open(u string) error { *b.urls = append(*b.urls, u); return nil }

func TestLoginTarget(t *testing.T) {
	cfg := &config.File{CurrentContext: "prod", Contexts: map[string]*config.Context{
		"prod":    {Server: "https://gw.example.com"},
		"staging": {Server: "https://gw.staging.example.com/"},
		// Stored with the API path (before issue 26): the bare URL's.
		"legacy": {Server: "https://legacy.example.com/api/v1"},
	}}
	cases := []struct {
		server, name      string
		wantName, wantSrv string
		wantErr           string
	}{
		{"", "", "prod", "https://gw.example.com", ""},
		{"", "staging", "staging", "https://gw.staging.example.com", ""},
		{"https://gw.staging.example.com", "", "staging", "https://gw.staging.example.com", ""},
		{"http://127.0.0.1:8080/", "", "127.0.0.1:8080", "http://127.0.0.1:8080", ""},
		{"http://127.0.0.1:8080", "local", "local", "http://127.0.0.1:8080", ""},
		{"https://legacy.example.com", "", "legacy", "https://legacy.example.com", ""},
		{"", "legacy", "legacy", "https://legacy.example.com", ""},
		{"", "nope", "", "", "no server"},
		{"gw.example.com", "", "", "", "invalid server URL"},
	}
	for _, c := range cases {
		name, srv, err := loginTarget(cfg, c.server, c.name)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q %q: err %v", c.server, c.name, err)
			}
			continue
		}
		if err != nil || name != c.wantName || srv != c.wantSrv {
			t.Errorf("%q %q: %q %q %v", c.server, c.name, name, srv, err)
		}
	}
	empty := &config.File{Contexts: map[string]*config.Context{}}
	if _, _, err := loginTarget(empty, "", ""); err == nil || !strings.Contains(err.Error(), "pass --server") {
		t.Errorf("no server at all: %v", err)
	}
}

func TestContextCommands(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "config.yaml")
	cfg, _ := config.Load(path)
	cfg.Contexts["prod"] = &config.Context{Server: "https://gw.example.com", Token: "sk-cp-secret", KeyID: "k1", Org: "acme"}
	cfg.Contexts["local"] = &config.Context{Server: "http://127.0.0.1:8080"}
	cfg.CurrentContext = "prod"
	if err := cfg.Save(); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		f, out, errOut := cmdtest.Factory()
		f.ConfigPath = path
		f.IO.ForceTerminal = true
		code := run(ctx, f, args)
		return code, out.String(), errOut.String()
	}
	code, out, _ := run("context", "list")
	if code != 0 || !strings.Contains(out, "CURRENT") || !regexpMatch(`\*\s+prod\s+https://gw.example.com\s+acme\s+-\s+yes`, out) ||
		!regexpMatch(`\n\s+local\s+http://127.0.0.1:8080\s+-\s+-\s+no`, out) {
		t.Fatalf("list: %d\n%s", code, out)
	}
	code, out, _ = run("context", "list", "-o", "json")
	var views []contextView
	if code != 0 || json.Unmarshal([]byte(out), &views) != nil || len(views) != 2 || !views[1].Current || views[1].KeyID != "k1" {
		t.Fatalf("list json: %d\n%s", code, out)
	}
	if strings.Contains(out, "sk-cp-secret") {
		t.Fatal("list shows a token")
	}
	if code, _, errOut := run("context", "use", "local"); code != 0 || !strings.Contains(errOut, `Switched to context "local"`) {
		t.Fatalf("use: %d %s", code, errOut)
	}
	if code, _, _ := run("context", "use", "nope"); code != cmdutil.ExitUsage {
		t.Fatalf("use of a missing context: %d", code)
	}
	if code, _, errOut := run("context", "delete", "prod"); code != 0 || !strings.Contains(errOut, "was not revoked") {
		t.Fatalf("delete: %d %s", code, errOut)
	}
	if code, _, _ := run("context", "rm", "prod"); code != cmdutil.ExitUsage {
		t.Fatalf("delete twice: %d", code)
	}
	cfg, _ = config.Load(path)
	if cfg.CurrentContext != "local" || len(cfg.Contexts) != 1 {
		t.Fatalf("after: %+v", cfg)
	}
}

func regexpMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }

// gw login --instance gets an instance-scope key through the same flow;
// instance commands then work with it (issue 22, row 2).
func TestLoginInstance(t *testing.T) {
	e := newLoginEnv(t)
	ctx := context.Background()
	cfgPath := filepath.Join(t.TempDir(), "gw", "config.yaml")
	br := newApprover(t, e.URL)
	res := e.login(cfgPath, br, &sleeper{e: e}, func(o *LoginOptions) { o.Instance, o.Context = true, "admin" })
	br.wait()
	if res.err != nil {
		t.Fatalf("login: %v\n%s", res.err, res.errOut)
	}
	if len(br.urls) != 1 || !strings.Contains(br.urls[0], "scope=instance") {
		t.Fatalf("browser opened %v", br.urls)
	}
	stored := res.cfg.Contexts["admin"]
	if stored == nil || stored.Org != "" || stored.Workspace != "" {
		t.Fatalf("stored context: %+v", stored)
	}
	me, err := e.keyClient(stored.Token).Me(ctx)
	if err != nil || me.Key == nil || me.Key.Scope.Level != wire.ScopeInstance {
		t.Fatalf("new key: %+v %v", me.Key, err)
	}
	if !strings.Contains(res.errOut, "for the whole instance") {
		t.Errorf("no success line:\n%s", res.errOut)
	}
	// The first context became current: there was none.
	if res.cfg.CurrentContext != "admin" || strings.Contains(res.errOut, "current context") {
		t.Fatalf("first login: current %q\n%s", res.cfg.CurrentContext, res.errOut)
	}
	// A second context, for the organization: gw context list names both
	// scopes, no ids (issue 22, row 15). --context does not make it
	// current, and says so (issue 26, row 12).
	br2 := newApprover(t, e.URL)
	res = e.login(cfgPath, br2, &sleeper{e: e}, func(o *LoginOptions) { o.Context = "work" })
	if res.err != nil {
		t.Fatalf("organization login: %v\n%s", res.err, res.errOut)
	}
	br2.wait()
	if res.cfg.CurrentContext != "admin" || res.cfg.Contexts["work"] == nil ||
		!strings.Contains(res.errOut, `The current context is still "admin"; use this one with --context work, or switch with gw context use work.`) {
		t.Fatalf("login --context work: current %q\n%s", res.cfg.CurrentContext, res.errOut)
	}
	_, list, _ := runWith(t, &cmdutil.Factory{ConfigPath: cfgPath}, "context", "list", "-o", "table")
	if !strings.Contains(list, "(instance)") || !strings.Contains(list, "Default") || strings.Contains(list, e.boot.Organization.ID.String()) {
		t.Errorf("gw context list:\n%s", list)
	}
	// Without --context the server's context (the current one here) is
	// logged in to and stays current.
	br3 := newApprover(t, e.URL)
	res = e.login(cfgPath, br3, &sleeper{e: e}, func(o *LoginOptions) { o.Instance = true })
	br3.wait()
	if res.err != nil || res.cfg.CurrentContext != "admin" || strings.Contains(res.errOut, "current context") {
		t.Fatalf("login without --context: %v, current %q\n%s", res.err, res.cfg.CurrentContext, res.errOut)
	}
	for _, k := range []string{"GW_SERVER", "GW_TOKEN", "GW_ORG", "GW_WORKSPACE", "GW_CONTEXT"} {
		t.Setenv(k, "")
	}
	if dps, err := e.keyClient(res.cfg.Contexts["admin"].Token).ListDataPlanes(ctx); err != nil || len(dps) != 0 {
		t.Fatalf("data planes with the instance key: %v %v", dps, err)
	}

	// --instance with --org is a contradiction.
	code, _, errOut := runWith(t, &cmdutil.Factory{ConfigPath: cfgPath}, "login", "--instance", "--org", "default", "--server", e.URL)
	if code != cmdutil.ExitUsage || !strings.Contains(errOut, "drop --org") {
		t.Fatalf("--instance --org: exit %d %q", code, errOut)
	}
}

// --workspace alone is understood within the context's organization
// (issue 22, row 15).
func TestLoginWorkspaceTakesTheContextsOrg(t *testing.T) {
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgPath, []byte("current-context: work\ncontexts:\n  work:\n    server: http://127.0.0.1:1\n    org: acme\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"GW_SERVER", "GW_TOKEN", "GW_ORG", "GW_WORKSPACE", "GW_CONTEXT"} {
		t.Setenv(k, "")
	}
	var got *LoginOptions
	f := &cmdutil.Factory{ConfigPath: cfgPath, IO: &cmdutil.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}}
	cmd := NewCmdLogin(f, func(_ context.Context, o *LoginOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--workspace", "search"})
	if err := cmd.Execute(); err != nil || got == nil || got.Org != "acme" || got.Workspace != "search" {
		t.Fatalf("login --workspace: %v %+v", err, got)
	}
}

// Logging in to a server without --context makes its context current,
// and says so when another was (issue 26, row 12).
func TestLoginSaysItSwitched(t *testing.T) {
	e := newLoginEnv(t)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	cfg, _ := config.Load(cfgPath)
	cfg.Contexts["elsewhere"] = &config.Context{Server: "http://127.0.0.1:1"}
	cfg.CurrentContext = "elsewhere"
	if err := cfg.Save(); err != nil {
		t.Fatal(err)
	}
	br := newApprover(t, e.URL)
	res := e.login(cfgPath, br, &sleeper{e: e}, nil)
	br.wait()
	if res.err != nil || res.cfg.CurrentContext != e.host() ||
		!strings.Contains(res.errOut, `Switched the current context from "elsewhere" to "`+e.host()+`".`) {
		t.Fatalf("login: %v, current %q\n%s", res.err, res.cfg.CurrentContext, res.errOut)
	}
}

// run runs args on a root holding this package's commands.
func run(ctx context.Context, f *cmdutil.Factory, args []string) int {
	return cmdtest.Run(ctx, f, args, NewCmdLogin(f, nil), NewCmdLogout(f, nil), NewCmdWhoami(f, nil), NewCmdContext(f))
}

// runWith runs args on this package's commands with f's configuration.
func runWith(t *testing.T, f *cmdutil.Factory, args ...string) (int, string, string) {
	t.Helper()
	out, errOut := &strings.Builder{}, &strings.Builder{}
	f.IO = &cmdutil.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut}
	code := run(context.Background(), f, args)
	return code, out.String(), errOut.String()
}

// TestSSOURL: gw login --sso goes to the provider's start, returning to
// the approval page as a path of the server.
func TestSSOURL(t *testing.T) {
	got := ssoURL("https://gw.example.com/cli/authorize?code=BCDF-GHJK&org=acme", "okta")
	want := "https://gw.example.com/api/v1/auth/oidc/okta/start?return_to=%2Fcli%2Fauthorize%3Fcode%3DBCDF-GHJK%26org%3Dacme"
	if got != want {
		t.Fatalf("ssoURL = %s, want %s", got, want)
	}
}
