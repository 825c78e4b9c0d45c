package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/wire"
)

// TestBrowserPlayground drives the playground page in headless Chromium:
// sign in, pick the organization, workspace and model, chat two turns
// with streamed answers from a fake upstream, and see each turn's tokens
// and exact cost; a policy refusal is shown on the page.
func TestBrowserPlayground(t *testing.T) {
	chromium := chromiumPath(t)
	const email, password = "player@example.com", "playground passphrase"
	srv := startServe(t, "GW_DATA_DIR="+t.TempDir(), "GW_BOOTSTRAP_TOKEN=setup_play")
	ctx := context.Background()
	anon, _ := client.New(client.Options{Server: srv.URL})
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_play", Email: email, Password: password, OrganizationName: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := client.New(client.Options{Server: srv.URL, Token: boot.ManagementKey.Token})
	up := providerstest.NewOpenAI(t, "sk-upstream-playground")
	// 1234 × $0.15 + 567 × $0.60 per million tokens: $0.0005253.
	up.SetDefault(providerstest.Reply{Text: "hello from upstream", ChunkSize: 3, Usage: providerstest.Usage{Input: 1234, Output: 567}})
	if _, err := owner.CreateCredential(ctx, client.WorkspaceScope(boot.Organization.Slug, "default"), wire.ProviderCredentialCreate{
		Provider: "openai", Label: "fake", Secret: up.Key, BaseURL: up.BaseURL()}); err != nil {
		t.Fatal(err)
	}
	def := `{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"request","models":["openai/gpt-4.1-mini"],"stream":true,"capabilities":[]},` +
		`"action":{"kind":"deny","message":"gpt-4.1-mini does not stream here"}}]}`
	if _, err := owner.CreatePolicy(ctx, boot.Organization.Slug, "default", wire.PolicyCreate{Name: "no stream", Definition: wire.PolicyDefinition(def)}); err != nil {
		t.Fatal(err)
	}

	browser, step := headless(t, ctx, chromium, 1000)
	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(browser, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}
	statsShown := func(n int) chromedp.Action[chromedp.Void] {
		return chromedp.WaitVisible(chromedp.Search(`(//div[contains(@class,"assistant")])[` + strconv.Itoa(n) + `]/span[@class="stats" and normalize-space(text()) != "…"]`))
	}

	// Not signed in: sign-in first, then back to the playground.
	step("sign in",
		chromedp.Navigate(srv.URL+"/playground"),
		chromedp.WaitVisible(chromedp.ID("signin")),
		chromedp.SendKeys(chromedp.ID("email"), email),
		chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.Click(chromedp.ID("submit")),
		chromedp.WaitVisible(chromedp.ID("chat")),
	)
	if loc := eval(`location.pathname`); loc != "/playground" {
		t.Fatalf("after sign-in: %s", loc)
	}
	if got := eval(`document.getElementById("org").selectedOptions[0].text + " / " + document.getElementById("workspace").selectedOptions[0].text`); got != "Acme (acme) / Default (default)" {
		t.Fatalf("scope: %s", got)
	}
	models := eval(`Array.from(document.querySelectorAll("#model option")).map(o => o.value).join(" ")`)
	if !strings.Contains(models, "openai/gpt-4o-mini") || strings.Contains(models, "embedding") {
		t.Fatalf("models: %s", models)
	}

	step("first turn",
		chromedp.SetValue(chromedp.ID("model"), "openai/gpt-4o-mini"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("model").dispatchEvent(new Event("change"))`),
		chromedp.SendKeys(chromedp.ID("prompt"), "Say hello"),
		chromedp.Click(chromedp.ID("send")),
		statsShown(1),
	)
	turn := eval(`document.querySelectorAll(".turn.assistant")[0].innerText`)
	if !contains(turn, "hello from upstream", "1234 in · 567 out tokens", "$0.0005253") {
		t.Fatalf("first turn: %q", turn)
	}
	step("second turn",
		chromedp.SendKeys(chromedp.ID("prompt"), "Again"),
		chromedp.Click(chromedp.ID("send")),
		statsShown(2),
	)
	// The conversation went whole: user, assistant, user.
	if msgs, _ := up.Last(t).Body["messages"].([]any); len(msgs) != 3 {
		t.Fatalf("second turn sent %d messages", len(msgs))
	}
	screenshot(t, browser, "playground")

	// A policy refusal is shown as the turn's answer.
	step("refused turn",
		chromedp.SetValue(chromedp.ID("model"), "openai/gpt-4.1-mini"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("model").dispatchEvent(new Event("change"))`),
		chromedp.SendKeys(chromedp.ID("prompt"), "Stream please"),
		chromedp.Click(chromedp.ID("send")),
		statsShown(3),
	)
	if turn := eval(`document.querySelectorAll(".turn.assistant")[2].innerText`); !contains(turn, "gpt-4.1-mini does not stream here", "refused (403)") {
		t.Fatalf("refused turn: %q", turn)
	}

	// The turns are in the usage report, under the signed-in owner.
	waitFor(t, "the playground's usage events", func() bool {
		r, err := owner.UsageReport(ctx, boot.Organization.Slug, client.UsageQuery{Period: "today", OwnerID: boot.User.ID.String()})
		return err == nil && r.Totals.Requests == 3 && r.Totals.CostUSD == "0.0010506"
	})
}
