package e2e

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// The scripts in testdata drive the real gw binary the way a person does:
// `exec gw …` finds it on PATH. Custom commands do what a script cannot:
//
//	serve [gw serve flags]      start gw serve on a free port, bootstrapped with
//	                            $OWNER_EMAIL / $OWNER_PASSWORD (organization and
//	                            workspace "default"); sets $SERVER; logs to
//	                            $WORK/serve.log; stopped when the script ends
//	login [gw login flags]      start `gw login --no-browser --server $SERVER`
//	                            in the background; sets $LOGIN_CODE and $LOGIN_URL
//	                            from what it prints
//	approve [-deny] [-org ORG] [-workspace UUID] [-email E -password P]
//	                            play the person at the browser: sign in over
//	                            HTTP with a session cookie and approve (or deny)
//	                            $LOGIN_CODE; prints the request's device label
//	login-wait [EXIT]           wait for the background gw login and expect its
//	                            exit status (default 0); its output becomes
//	                            stdout/stderr
//	exits EXIT PROG [ARGS…]     run a program and expect that exact exit status
//	                            (testscript's `! exec` only knows "non-zero")
//
// Each script gets its own XDG_CONFIG_HOME ($WORK/.config) and HOME.

// scriptPassEnv lists the variables handed to processes the custom
// commands start (testscript does not expose its environment as a whole).
var scriptPassEnv = []string{
	"PATH", "HOME", "TMPDIR", "XDG_CONFIG_HOME",
	"GW_SERVER", "GW_TOKEN", "GW_CONTEXT", "GW_ORG", "GW_WORKSPACE",
	"GW_DATA_DIR", "GW_DATABASE_URL", "GW_OUTPUT",
}

const (
	scriptOwnerEmail    = "owner@example.com"
	scriptOwnerPassword = "owner passphrase 1"
)

// scriptStateKey finds a script's scriptState in its Values.
type scriptStateKey struct{}

// scriptState is what the custom commands of one script share.
type scriptState struct {
	mu     sync.Mutex
	serves int
	login  *bgLogin
}

// bgLogin is a gw login running in the background.
type bgLogin struct {
	cmd    *exec.Cmd
	stdout strings.Builder
	mu     sync.Mutex
	stderr strings.Builder
	done   chan error
}

func (b *bgLogin) errText() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stderr.String()
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", filepath.Dir(gwBin)+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, ".config"))
			env.Setenv("HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("OWNER_EMAIL", scriptOwnerEmail)
			env.Setenv("OWNER_PASSWORD", scriptOwnerPassword)
			env.Values[scriptStateKey{}] = &scriptState{}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"serve":      cmdServe,
			"login":      cmdLogin,
			"approve":    cmdApprove,
			"login-wait": cmdLoginWait,
			"exits":      cmdExits,
		},
	})
}

func state(ts *testscript.TestScript) *scriptState {
	return ts.Value(scriptStateKey{}).(*scriptState)
}

func scriptEnv(ts *testscript.TestScript) []string {
	var env []string
	for _, k := range scriptPassEnv {
		if v := ts.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

func noNeg(ts *testscript.TestScript, neg bool, name string) {
	if neg {
		ts.Fatalf("%s does not support '!'", name)
	}
}

func cmdServe(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "serve")
	st := state(ts)
	st.mu.Lock()
	st.serves++
	n := st.serves
	st.mu.Unlock()
	work := ts.Getenv("WORK")
	pwFile := filepath.Join(work, ".owner-password")
	ts.Check(os.WriteFile(pwFile, []byte(scriptOwnerPassword+"\n"), 0o600))
	logPath := filepath.Join(work, "serve.log")
	if n > 1 {
		logPath = filepath.Join(work, fmt.Sprintf("serve-%d.log", n))
	}
	logFile, err := os.Create(logPath)
	ts.Check(err)
	cmd := exec.Command(gwBin, append([]string{"serve", "--addr", "127.0.0.1:0",
		"--bootstrap-email", scriptOwnerEmail, "--bootstrap-password-file", pwFile}, args...)...)
	cmd.Env = scriptEnv(ts)
	if ts.Getenv("GW_DATA_DIR") == "" {
		cmd.Env = append(cmd.Env, "GW_DATA_DIR="+filepath.Join(work, fmt.Sprintf("data-%d", n)))
	}
	stderr, err := cmd.StderrPipe()
	ts.Check(err)
	ts.Check(cmd.Start())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logFile, line)
			if m := servingLine.FindStringSubmatch(line); m != nil {
				addr <- m[1]
			}
		}
		done <- cmd.Wait()
		logFile.Close()
	}()
	ts.Defer(func() {
		if cmd.ProcessState != nil {
			return
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	select {
	case a := <-addr:
		ts.Setenv("SERVER", "http://"+a)
	case err := <-done:
		ts.Fatalf("gw serve exited early: %v (see %s)", err, logPath)
	case <-time.After(30 * time.Second):
		ts.Fatalf("gw serve did not start (see %s)", logPath)
	}
}

var codeLine = regexp.MustCompile(`One-time code: ([A-Z]{4}-[A-Z]{4})`)
var urlLine = regexp.MustCompile(`^\s+(https?://\S+/cli/authorize\?\S+)$`)

func cmdLogin(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "login")
	st := state(ts)
	if st.login != nil {
		ts.Fatalf("a gw login is already running; login-wait first")
	}
	server := ts.Getenv("SERVER")
	if server == "" {
		ts.Fatalf("login: no $SERVER; run serve first")
	}
	b := &bgLogin{done: make(chan error, 1)}
	b.cmd = exec.Command(gwBin, append([]string{"login", "--no-browser", "--server", server}, args...)...)
	b.cmd.Env = scriptEnv(ts)
	b.cmd.Stdout = &b.stdout
	stderr, err := b.cmd.StderrPipe()
	ts.Check(err)
	ts.Check(b.cmd.Start())
	st.login = b
	found := make(chan [2]string, 1)
	go func() {
		var code string
		reported := false
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			b.mu.Lock()
			b.stderr.WriteString(line + "\n")
			b.mu.Unlock()
			if m := codeLine.FindStringSubmatch(line); m != nil {
				code = m[1]
			}
			if m := urlLine.FindStringSubmatch(line); m != nil && code != "" && !reported {
				reported = true
				found <- [2]string{code, m[1]}
			}
		}
		b.done <- b.cmd.Wait()
	}()
	ts.Defer(func() {
		if b.cmd.ProcessState == nil {
			_ = b.cmd.Process.Kill()
		}
	})
	select {
	case f := <-found:
		ts.Setenv("LOGIN_CODE", f[0])
		ts.Setenv("LOGIN_URL", f[1])
		fmt.Fprint(ts.Stderr(), b.errText())
	case err := <-b.done:
		b.done <- err
		ts.Fatalf("gw login exited before printing a code: %v\n%s", err, b.errText())
	case <-time.After(30 * time.Second):
		ts.Fatalf("gw login printed no code\n%s", b.errText())
	}
}

func cmdApprove(ts *testscript.TestScript, neg bool, args []string) {
	fs := flag.NewFlagSet("approve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	deny := fs.Bool("deny", false, "deny instead of approving")
	org := fs.String("org", "default", "organization (UUID or slug)")
	ws := fs.String("workspace", "", "workspace UUID")
	email := fs.String("email", scriptOwnerEmail, "who signs in")
	password := fs.String("password", scriptOwnerPassword, "their password")
	if err := fs.Parse(args); err != nil || fs.NArg() > 1 {
		ts.Fatalf("usage: approve [-deny] [-org ORG] [-workspace UUID] [-email E -password P] [CODE]")
	}
	code := ts.Getenv("LOGIN_CODE")
	if fs.NArg() == 1 {
		code = fs.Arg(0)
	}
	err := approveOverHTTP(ts.Getenv("SERVER"), code, *email, *password, *org, *ws, *deny, ts.Stdout())
	switch {
	case err != nil && !neg:
		ts.Fatalf("approve: %v", err)
	case err == nil && neg:
		ts.Fatalf("approve unexpectedly succeeded")
	case err != nil:
		fmt.Fprintln(ts.Stderr(), err)
	}
}

// approveOverHTTP does what the approval page does, with a session cookie.
func approveOverHTTP(server, code, email, password, org, ws string, deny bool, out io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(client.Options{Server: server})
	if err != nil {
		return err
	}
	if _, err := c.Login(ctx, wire.Credentials{Email: email, Password: password}); err != nil {
		return fmt.Errorf("sign in: %w", err)
	}
	req, err := c.CLIAuthorization(ctx, code)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "code %s from %q is %s\n", req.UserCode, req.Label, req.Status)
	if deny {
		_, err = c.CLIDeny(ctx, code)
		return err
	}
	in := wire.CLIApprove{UserCode: code, OrgID: org}
	if ws != "" {
		choices, err := c.EnrollmentChoices(ctx)
		if err != nil {
			return err
		}
		// Accept a workspace slug too, as the page's picker shows them.
		for _, ch := range choices {
			for _, w := range ch.Workspaces {
				if w.Slug == ws || w.ID.String() == ws {
					id := w.ID
					in.WorkspaceID = &id
				}
			}
		}
		if in.WorkspaceID == nil {
			return fmt.Errorf("no workspace %q among the enrollment choices", ws)
		}
	}
	_, err = c.CLIApprove(ctx, in)
	return err
}

func cmdLoginWait(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "login-wait (pass the expected exit status instead)")
	want := 0
	if len(args) == 1 {
		n, err := strconv.Atoi(args[0])
		ts.Check(err)
		want = n
	} else if len(args) > 1 {
		ts.Fatalf("usage: login-wait [EXIT]")
	}
	st := state(ts)
	b := st.login
	if b == nil {
		ts.Fatalf("no gw login running")
	}
	st.login = nil
	var err error
	select {
	case err = <-b.done:
	case <-time.After(2 * time.Minute):
		ts.Fatalf("gw login did not finish\n%s", b.errText())
	}
	fmt.Fprint(ts.Stdout(), b.stdout.String())
	fmt.Fprint(ts.Stderr(), b.errText())
	if got := exitStatus(ts, err); got != want {
		ts.Fatalf("gw login exited %d, want %d", got, want)
	}
}

func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "exits")
	if len(args) < 2 {
		ts.Fatalf("usage: exits EXIT PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	prog := args[1]
	if prog == "gw" {
		prog = gwBin
	}
	cmd := exec.Command(prog, args[2:]...)
	cmd.Env = scriptEnv(ts)
	cmd.Dir = ts.MkAbs(".")
	cmd.Stdout, cmd.Stderr = ts.Stdout(), ts.Stderr()
	if got := exitStatus(ts, cmd.Run()); got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

func exitStatus(ts *testscript.TestScript, err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	ts.Fatalf("%v", err)
	return -1
}
