package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gw-gateway/gw/client"
)

// TestPagesPassAxe runs axe-core (e2e/node's package) in headless Chromium
// on every page, in the states a newcomer meets them: setup before and
// after (its "Done" with the next step), sign-in, sign-up, home, the CLI
// approval and the playground. Each must report no violation (issue 22,
// rows 15: a <main> landmark, the contrast of "Sign out"). At a phone's
// width the playground's selects stay on the screen.
func TestPagesPassAxe(t *testing.T) {
	chromium := chromiumPath(t)
	axe, err := os.ReadFile(filepath.Join("node", "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		if os.Getenv("GW_TEST_REQUIRE_NODE") != "" {
			t.Fatalf("axe-core is not installed in e2e/node (npm ci), and GW_TEST_REQUIRE_NODE is set: %v", err)
		}
		t.Skipf("axe-core is not installed in e2e/node (npm ci): %v", err)
	}
	ctx := context.Background()
	srv := startServe(t, "GW_DATA_DIR="+t.TempDir(), "GW_BOOTSTRAP_TOKEN=setup_axe")
	browser, step := headless(t, ctx, chromium, 900)
	check := func(page string) {
		t.Helper()
		out, err := chromedp.Run(browser, chromedp.Evaluate[string](string(axe)+`;
			axe.run(document, {resultTypes: ["violations"]}).then(r => JSON.stringify(r.violations.map(v =>
				v.id + ": " + v.help + " at " + v.nodes.map(n => n.target.join(" ")).join(", "))))`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%s: axe: %v", page, err)
		}
		var violations []string
		if err := json.Unmarshal([]byte(out), &violations); err != nil {
			t.Fatalf("%s: axe answered %q", page, out)
		}
		if len(violations) > 0 {
			t.Errorf("%s: %d axe violations:\n  %s", page, len(violations), strings.Join(violations, "\n  "))
		}
	}

	step("setup", chromedp.Navigate(srv.URL+"/setup?token=setup_axe"), chromedp.WaitVisible(chromedp.ID("setup")))
	check("setup")
	step("set up",
		chromedp.SendKeys(chromedp.ID("email"), "axe@example.com"),
		chromedp.SendKeys(chromedp.ID("password"), "a long passphrase"),
		chromedp.SendKeys(chromedp.ID("organization_name"), "Acme"),
		chromedp.Click(chromedp.Search(`//form[@id="setup"]//button`)),
		chromedp.WaitVisible(chromedp.ID("done")))
	next, err := chromedp.Run(browser, chromedp.Text(chromedp.ID("next")))
	if err != nil || !strings.Contains(next, "export ORG=acme") || !strings.Contains(next, "./gw login --server "+srv.URL+` --org "$ORG"`) {
		t.Fatalf("setup's next step: %q %v", next, err)
	}
	check("setup, done")
	step("/", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.ID("signed-in")))
	check("/")
	// The sign-in and sign-up pages send a signed-in browser straight on, and
	// that navigation would land in the middle of axe's run: they are checked
	// signed out, as a newcomer meets them, and the sign-in form then signs
	// the browser back in for the pages that need a person.
	step("sign out", chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.Search(`//a[@href="/signin"]`)))
	for _, page := range []string{"/signin", "/signup"} {
		step(page, chromedp.Navigate(srv.URL+page), chromedp.WaitReady(chromedp.Search(`//main`)))
		check(page)
	}
	step("sign in",
		chromedp.Navigate(srv.URL+"/signin"),
		chromedp.WaitVisible(chromedp.ID("signin")),
		chromedp.SendKeys(chromedp.ID("email"), "axe@example.com"),
		chromedp.SendKeys(chromedp.ID("password"), "a long passphrase"),
		chromedp.Click(chromedp.ID("submit")),
		chromedp.WaitVisible(chromedp.ID("signed-in")))

	anon, _ := client.New(client.Options{Server: srv.URL})
	started, err := anon.CLIStart(ctx, "axe laptop")
	if err != nil {
		t.Fatal(err)
	}
	step("authorize", chromedp.Navigate(started.VerificationURL), chromedp.WaitVisible(chromedp.ID("decide")))
	check("/cli/authorize")
	step("playground", chromedp.Navigate(srv.URL+"/playground"), chromedp.WaitVisible(chromedp.ID("pick")))
	check("/playground")

	// A phone: the selects fit the screen.
	step("phone width", chromedp.EmulateViewport(375, 740), chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("pick")))
	overflow, err := chromedp.Run(browser, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("select"))
		.filter(s => s.getBoundingClientRect().right > document.documentElement.clientWidth).map(s => s.id)`))
	if err != nil || len(overflow) > 0 {
		t.Errorf("selects past a phone's width: %v %v", overflow, err)
	}
}
