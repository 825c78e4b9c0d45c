package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"go.yaml.in/yaml/v3"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// EnvRequireBrowser makes a missing Chromium a failure instead of a skip;
// CI sets it (and installs chromium) so the browser test cannot vanish
// quietly.
const EnvRequireBrowser = "GW_TEST_REQUIRE_BROWSER"

// EnvScreenshotDir, when set, keeps the approval page's screenshot there
// (to look at); otherwise it goes to the test's temporary directory.
const EnvScreenshotDir = "GW_TEST_SCREENSHOT_DIR"

func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(EnvRequireBrowser) == "1" {
		t.Fatalf("%s=1 but no chromium on PATH (apt-get install chromium)", EnvRequireBrowser)
	}
	t.Skip("no chromium on PATH; install it (apt-get install chromium) or set " + EnvRequireBrowser + "=1 to require it")
	return ""
}

// browserLogin is a real `gw login --no-browser` process; the test plays
// the browser.
type browserLogin struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr strings.Builder
	url    chan string
	done   chan error
}

var verificationLine = regexp.MustCompile(`^\s+(http://\S+/cli/authorize\?code=\S+)$`)

func startLogin(t *testing.T, configHome, server string, args ...string) *browserLogin {
	t.Helper()
	return startLoginMatching(t, verificationLine, configHome, server, args...)
}

// startLoginMatching is startLogin waiting for the URL line that line
// matches (gw login --sso prints the identity provider's start).
func startLoginMatching(t *testing.T, verificationLine *regexp.Regexp, configHome, server string, args ...string) *browserLogin {
	t.Helper()
	b := &browserLogin{url: make(chan string, 1), done: make(chan error, 1)}
	b.cmd = exec.Command(gwBin, append([]string{"login", "--no-browser", "--server", server}, args...)...)
	b.cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+configHome, "GW_CONTEXT=", "GW_SERVER=", "GW_TOKEN=")
	stderr, err := b.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sent := false
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			b.mu.Lock()
			b.stderr.WriteString(line + "\n")
			b.mu.Unlock()
			if m := verificationLine.FindStringSubmatch(line); m != nil && !sent {
				sent = true
				b.url <- m[1]
			}
		}
		b.done <- b.cmd.Wait()
	}()
	t.Cleanup(func() {
		if b.cmd.ProcessState == nil {
			_ = b.cmd.Process.Kill()
		}
	})
	return b
}

func (b *browserLogin) errText() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stderr.String()
}

func (b *browserLogin) verificationURL(t *testing.T) string {
	t.Helper()
	select {
	case u := <-b.url:
		return u
	case err := <-b.done:
		t.Fatalf("gw login exited before printing a URL: %v\n%s", err, b.errText())
	case <-time.After(30 * time.Second):
		t.Fatalf("gw login printed no URL\n%s", b.errText())
	}
	return ""
}

// wait returns gw login's exit status.
func (b *browserLogin) wait(t *testing.T) int {
	t.Helper()
	select {
	case err := <-b.done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(60 * time.Second):
		t.Fatalf("gw login did not finish\n%s", b.errText())
	}
	return -1
}

// TestBrowserLogin drives the approval pages in headless Chromium: a real
// gw login waits while the browser is sent to sign-in, signs in (after one
// wrong password), comes back to the approval page, picks a workspace and
// approves; the login stores a working key. A second login is denied from
// the already signed-in browser and exits 4. Last, a newcomer signs up on
// the way and is told they have nowhere to approve for.
func TestBrowserLogin(t *testing.T) {
	chromium := chromiumPath(t)
	const email, password = "browser@example.com", "browser passphrase"
	srv := startServe(t, "GW_DATA_DIR="+t.TempDir(), "GW_BOOTSTRAP_TOKEN=setup_browser")
	ctx := context.Background()
	anon, err := client.New(client.Options{Server: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_browser", Email: email, Password: password, OrganizationName: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := client.New(client.Options{Server: srv.URL, Token: boot.ManagementKey.Token})
	research, err := owner.CreateWorkspace(ctx, boot.Organization.Slug, wire.WorkspaceCreate{Name: "Research"})
	if err != nil {
		t.Fatal(err)
	}

	configHome := t.TempDir()
	login := startLogin(t, configHome, srv.URL, "--label", "browser test laptop")
	verify := login.verificationURL(t)
	code := regexp.MustCompile(`code=([A-Z]{4}-[A-Z]{4})`).FindStringSubmatch(verify)[1]

	browser, step := headless(t, ctx, chromium, 900)
	text := func(id string) string {
		t.Helper()
		s, err := chromedp.Run(browser, chromedp.Text(chromedp.ID(id)))
		if err != nil {
			t.Fatalf("text of #%s: %v", id, err)
		}
		return strings.TrimSpace(s)
	}
	location := func() string {
		t.Helper()
		s, err := chromedp.Run(browser, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	evalStrings := func(expr string) []string {
		t.Helper()
		v, err := chromedp.Run(browser, chromedp.Evaluate[[]string](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}
	errorShown := chromedp.WaitVisible(chromedp.Search(`//p[@id="error" and normalize-space(text()) != ""]`))

	// Not signed in: the approval URL sends the browser to sign-in with a
	// way back.
	step("open verification URL", chromedp.Navigate(verify), chromedp.WaitVisible(chromedp.ID("signin")))
	u, _ := url.Parse(location())
	if u.Path != "/signin" || u.Query().Get("next") != "/cli/authorize?code="+code {
		t.Fatalf("not sent to sign-in with next: %s", u)
	}

	// A wrong password is refused on the page.
	step("wrong password",
		chromedp.SendKeys(chromedp.ID("email"), email),
		chromedp.SendKeys(chromedp.ID("password"), "not the password"),
		chromedp.Click(chromedp.ID("submit")),
		errorShown,
	)
	if got := text("error"); got != "Wrong email or password." {
		t.Fatalf("wrong password shows %q", got)
	}
	screenshot(t, browser, "signin-refused")

	// The right one leads back to the approval page.
	step("sign in",
		// (SetValue cannot set an empty string in this chromedp.)
		chromedp.Evaluate[chromedp.Void](`document.getElementById("password").value = ""`),
		chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.Click(chromedp.ID("submit")),
		chromedp.WaitVisible(chromedp.ID("decide")),
	)
	if loc, shown, label := location(), text("code"), text("label"); loc != srv.URL+"/cli/authorize?code="+code || shown != code || label != "browser test laptop" {
		t.Fatalf("approval page: %s code %q label %q", loc, shown, label)
	}

	// Pick the organization (the one choice) and the Research workspace.
	orgs := evalStrings(`Array.from(document.querySelectorAll("#org option")).map(o => o.value)`)
	step("choose scope",
		chromedp.SetValue(chromedp.ID("org"), boot.Organization.ID.String()),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("org").dispatchEvent(new Event("change"))`),
		chromedp.SetValue(chromedp.ID("workspace"), research.ID.String()),
	)
	workspaces := evalStrings(`Array.from(document.querySelectorAll("#workspace option")).map(o => o.textContent)`)
	// The owner is an instance owner: the whole instance is the last choice.
	if len(orgs) != 2 || orgs[0] != boot.Organization.ID.String() || orgs[1] != "scope:instance" ||
		fmt.Sprint(workspaces) != "[Whole organization (no single workspace) Default (default) Research (research)]" {
		t.Fatalf("scope picker: orgs %v workspaces %v", orgs, workspaces)
	}
	screenshot(t, browser, "authorize")

	step("approve", chromedp.Click(chromedp.ID("approve")), chromedp.WaitVisible(chromedp.ID("outcome")))
	outcome := text("outcome")
	if !contains(outcome, "Approved", "You can close this window and return to the terminal.", "workspace Research (research)") {
		t.Fatalf("outcome: %q", outcome)
	}
	screenshot(t, browser, "approved")

	if code := login.wait(t); code != 0 {
		t.Fatalf("gw login exited %d\n%s", code, login.errText())
	}
	if !contains(login.errText(), "Logged in to "+srv.URL+" as "+email+" for organization Acme, workspace Research (") {
		t.Errorf("gw login said:\n%s", login.errText())
	}

	// The configuration holds a working, workspace-scoped key.
	raw, err := os.ReadFile(filepath.Join(configHome, "gw", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Current  string `yaml:"current-context"`
		Contexts map[string]struct {
			Server, Token, Workspace string
		} `yaml:"contexts"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	stored := cfg.Contexts[cfg.Current]
	if stored.Server != srv.URL || !strings.HasPrefix(stored.Token, "sk-cp-") || stored.Workspace != research.ID.String() {
		t.Fatalf("stored context %q: %+v", cfg.Current, stored)
	}
	env := []string{"XDG_CONFIG_HOME=" + configHome, "GW_CONTEXT=", "GW_SERVER=", "GW_TOKEN="}
	out, _ := runGW(t, env, "whoami")
	if !contains(out, email, "scope\tworkspace Research in organization Acme") {
		t.Fatalf("whoami:\n%s", out)
	}

	// A second login, denied from the signed-in browser: straight to the
	// approval page, Deny, and gw login exits 4 keeping the first key.
	second := startLogin(t, configHome, srv.URL)
	verify = second.verificationURL(t)
	step("deny",
		chromedp.Navigate(verify),
		chromedp.WaitVisible(chromedp.ID("decide")),
		chromedp.Click(chromedp.ID("deny")),
		chromedp.WaitVisible(chromedp.ID("outcome")),
	)
	if outcome := text("outcome"); !contains(outcome, "Denied", "You can close this window") {
		t.Fatalf("deny outcome: %q", outcome)
	}
	if code := second.wait(t); code != 4 {
		t.Fatalf("denied gw login exited %d, want 4\n%s", code, second.errText())
	}
	if out, _ := runGW(t, env, "whoami"); !contains(out, email) {
		t.Fatalf("first key after a denied login:\n%s", out)
	}

	// Reopening a decided request says so instead of offering the buttons.
	step("reopen", chromedp.Navigate(verify), errorShown)
	if got := text("error"); got != "This sign-in was denied. Run gw login again to get a new code." {
		t.Fatalf("reopened decided request shows %q", got)
	}

	// Sign out, then open a third request: sign-in again, where a new
	// person creates an account and comes back to a page that explains
	// they have no organization to approve for.
	step("sign out", chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("signin")))
	third := startLogin(t, t.TempDir(), srv.URL)
	verify = third.verificationURL(t)
	step("sign up",
		chromedp.Navigate(verify),
		chromedp.WaitVisible(chromedp.ID("signin")),
		chromedp.Click(chromedp.Search(`//a[text()="Create one"]`)),
		chromedp.WaitVisible(chromedp.ID("signup")),
		chromedp.SendKeys(chromedp.ID("email"), "newcomer@example.com"),
		chromedp.SendKeys(chromedp.ID("password"), "newcomer passphrase"),
		chromedp.Click(chromedp.ID("submit")),
		chromedp.WaitVisible(chromedp.ID("no-choices")),
	)
	if loc, who := location(), text("who-email"); loc != verify || who != "newcomer@example.com" {
		t.Fatalf("after sign-up: %s as %q", loc, who)
	}
	if got := text("no-choices"); !strings.Contains(got, "cannot approve CLI sign-ins in any organization") {
		t.Fatalf("no-choices shows %q", got)
	}
	if disabled, err := chromedp.Run(browser, chromedp.Evaluate[bool](`document.getElementById("approve").disabled`)); err != nil || !disabled {
		t.Fatalf("approve enabled without a choice: %v", err)
	}
}

// contains reports whether s holds every one of parts.
func contains(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// screenshot saves the page as PNG for people to look at.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := os.Getenv(EnvScreenshotDir)
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "gw-"+name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// headless starts Chromium for a test and returns its context and a step
// runner: each step gets its own deadline, and a failing one reports what
// the page showed (a timeout alone explains nothing).
func headless(t *testing.T, ctx context.Context, chromium string, width int) (context.Context, func(string, ...chromedp.Action[chromedp.Void])) {
	t.Helper()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, 1000),
	)
	t.Cleanup(cancelAlloc)
	browser, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancelBrowser)
	// The first run starts the browser, and the browser lives as long as
	// that run's context; later steps each get their own deadline.
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	step := func(name string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(browser, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, actions...); err != nil {
			page, _ := chromedp.Run(browser, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
			t.Fatalf("%s: %v\npage:\n%s", name, err, page)
		}
	}
	return browser, step
}
