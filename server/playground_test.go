package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server"
	"github.com/gw-gateway/gw/server/playground"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

const playgroundBase = "/api/v1/organizations/default/workspaces/default/playground"

// playgroundCall sends a playground request as cred: a management key, or
// "cookie:<session>" for a browser session (with the CSRF header).
func playgroundCall(t *testing.T, base, method, path, cred, body string) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, base+path, rd)
	if c, ok := strings.CutPrefix(cred, "cookie:"); ok {
		req.AddCookie(&http.Cookie{Name: "svc_session", Value: c})
		req.Header.Set("X-Requested-With", "XMLHttpRequest")
	} else {
		req.Header.Set("Authorization", "Bearer "+cred)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(raw)
}

// session signs up (or, with login, signs in) and returns the session
// cookie's value.
func session(t *testing.T, base, path, email, password string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"email": email, "password": password})
	resp, err := http.Post(base+path, "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == "svc_session" {
			return c.Value
		}
	}
	raw, _ := io.ReadAll(resp.Body)
	t.Fatalf("%s %s: %d %s", path, email, resp.StatusCode, raw)
	return ""
}

// TestPlaygroundThroughDataPlane runs the Workspace Playground on gw serve
// (role all) against a fake upstream: the models a caller may try, chat
// completions streamed and not, as a management key and as a browser
// session, a selected_users policy that matches the caller's user, the
// usage events attributed to the management key and its owner (found by
// the usage report's management_key_id filter), and the workspace's rate
// limit counting playground requests.
func TestPlaygroundThroughDataPlane(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			srv := startServer(t, server.Config{Role: server.RoleAll, DB: storetest.Open(t, d), Keyring: keyring(t)})
			owner := srv.Owner
			me, err := owner.Me(ctx)
			if err != nil {
				t.Fatal(err)
			}
			up := providerstest.NewOpenAI(t, "sk-upstream-playground")
			if _, err := owner.CreateCredential(ctx, client.WorkspaceScope("default", "default"), wire.ProviderCredentialCreate{
				Provider: "openai", Label: "fake", Secret: up.Key, BaseURL: up.BaseURL()}); err != nil {
				t.Fatal(err)
			}
			// Policies for the owner alone: no tools, and no gpt-4.1-mini.
			def := `{"target":{"kind":"selected_users","user_ids":["` + me.User.ID.String() + `"]},"rules":[` +
				`{"match":{"kind":"request","models":[],"stream":null,"capabilities":["tools"]},"action":{"kind":"deny","message":"no tools for you"}},` +
				`{"match":{"kind":"request","models":["openai/gpt-4.1-mini"],"stream":null,"capabilities":[]},"action":{"kind":"deny","message":"not this model"}}]}`
			if _, err := owner.CreatePolicy(ctx, "default", "default", wire.PolicyCreate{Name: "owner only", Definition: wire.PolicyDefinition(def)}); err != nil {
				t.Fatal(err)
			}
			// A workspace member, through a browser session.
			memberCookie := session(t, srv.URL, "/api/v1/auth/signup", "member@example.com", "a long enough password")
			memberMe := wire.Me{}
			if resp, raw := playgroundCall(t, srv.URL, "GET", "/api/v1/auth/me", "cookie:"+memberCookie, ""); resp.StatusCode != 200 {
				t.Fatalf("me: %d %s", resp.StatusCode, raw)
			} else {
				var env struct{ Data wire.Me }
				_ = json.Unmarshal([]byte(raw), &env)
				memberMe = env.Data
			}
			for _, p := range []string{"/api/v1/organizations/default/members", "/api/v1/organizations/default/workspaces/default/members"} {
				if resp, raw := playgroundCall(t, srv.URL, "POST", p, srv.token, `{"user_id":"`+memberMe.User.ID.String()+`","role":"member"}`); resp.StatusCode != 200 {
					t.Fatalf("%s: %d %s", p, resp.StatusCode, raw)
				}
			}
			ownerCookie := session(t, srv.URL, "/api/v1/auth/login", "ops@example.com", "a long passphrase")

			// The models each may try: the owner's policy hides gpt-4.1-mini
			// from the owner only; embedding models are not offered.
			models := func(cred string) []string {
				resp, raw := playgroundCall(t, srv.URL, "GET", playgroundBase+"/models", cred, "")
				if resp.StatusCode != 200 {
					t.Fatalf("models: %d %s", resp.StatusCode, raw)
				}
				var env struct{ Data []wire.PlaygroundModel }
				if err := json.Unmarshal([]byte(raw), &env); err != nil {
					t.Fatal(err)
				}
				var ids []string
				for _, m := range env.Data {
					if m.Type != "chat" {
						t.Errorf("model %s of type %s offered", m.ID, m.Type)
					}
					ids = append(ids, m.ID)
				}
				return ids
			}
			ownerModels, memberModels := strings.Join(models(srv.token), " "), strings.Join(models("cookie:"+memberCookie), " ")
			if !strings.Contains(ownerModels, "openai/gpt-4o-mini") || strings.Contains(ownerModels, "openai/gpt-4.1-mini") {
				t.Errorf("owner's models: %s", ownerModels)
			}
			if !strings.Contains(memberModels, "openai/gpt-4.1-mini") || strings.Contains(memberModels, "embedding") {
				t.Errorf("member's models: %s", memberModels)
			}

			// Not streamed, as the management key: the data plane's answer,
			// not enveloped, with its exact cost.
			up.Enqueue(providerstest.Reply{Text: "hello there", Usage: providerstest.Usage{Input: 1000, Output: 100}})
			resp, raw := playgroundCall(t, srv.URL, "POST", playgroundBase+"/chat/completions", srv.token, mini)
			if resp.StatusCode != 200 || !strings.Contains(raw, `"chat.completion"`) || strings.Contains(raw, `"data"`) {
				t.Fatalf("chat: %d %s", resp.StatusCode, raw)
			}
			// gpt-4o-mini: $0.15 and $0.60 per million input and output tokens.
			if got := resp.Header.Get("X-Gw-Cost-Usd"); got != "0.00021" {
				t.Errorf("X-Gw-Cost-Usd %q, want 0.00021", got)
			}
			if resp.Header.Get("X-Request-Id") == "" {
				t.Error("no X-Request-Id")
			}
			// Streamed, as the owner's browser session: chunks, the cost as
			// an SSE comment, [DONE].
			up.Enqueue(providerstest.Reply{Text: "streamed answer", Usage: providerstest.Usage{Input: 2000, Output: 50}})
			resp, raw = playgroundCall(t, srv.URL, "POST", playgroundBase+"/chat/completions", "cookie:"+ownerCookie,
				`{"model":"openai/gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`)
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("stream: %d %s", resp.StatusCode, raw)
			}
			var text strings.Builder
			var sawCost, sawDone bool
			sc := bufio.NewScanner(strings.NewReader(raw))
			for sc.Scan() {
				line := sc.Text()
				switch {
				case line == "data: [DONE]":
					sawDone = true
				case line == ": gw-cost-usd 0.00033":
					sawCost = true
				case strings.HasPrefix(line, "data: "):
					var chunk struct {
						Choices []struct {
							Delta struct{ Content string } `json:"delta"`
						} `json:"choices"`
					}
					_ = json.Unmarshal([]byte(line[6:]), &chunk)
					for _, c := range chunk.Choices {
						text.WriteString(c.Delta.Content)
					}
				}
			}
			if text.String() != "streamed answer" || !sawCost || !sawDone {
				t.Fatalf("stream: text %q, cost %v, done %v:\n%s", text.String(), sawCost, sawDone, raw)
			}
			// The owner's policy refuses tools, in the data plane's shape;
			// the member, whom it does not target, may use them.
			withTools := `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}],` +
				`"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`
			resp, raw = playgroundCall(t, srv.URL, "POST", playgroundBase+"/chat/completions", srv.token, withTools)
			if resp.StatusCode != 403 || !strings.Contains(raw, "no tools for you") || !strings.Contains(raw, `"error"`) {
				t.Fatalf("policy refusal: %d %s", resp.StatusCode, raw)
			}
			if resp, raw := playgroundCall(t, srv.URL, "POST", playgroundBase+"/chat/completions", srv.token,
				`{"model":"openai/gpt-4.1-mini","messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != 404 {
				t.Fatalf("a model hidden from the caller: %d %s", resp.StatusCode, raw)
			}
			up.Enqueue(providerstest.Reply{Text: "tooled", Usage: providerstest.Usage{Input: 10, Output: 1}})
			if resp, raw := playgroundCall(t, srv.URL, "POST", playgroundBase+"/chat/completions", "cookie:"+memberCookie, withTools); resp.StatusCode != 200 {
				t.Fatalf("member with tools: %d %s", resp.StatusCode, raw)
			}

			// Attribution: the key's requests (the answer and the refusal)
			// under its id, with the owner; the owner's session request under
			// the owner alone.
			keyID := me.Key.ID.String()
			waitFor(t, "the playground's usage events", func() bool {
				r, err := owner.UsageReport(ctx, "default", client.UsageQuery{Period: "today", ManagementKeyID: keyID})
				return err == nil && r.Totals.Requests == 2
			})
			r, err := owner.UsageReport(ctx, "default", client.UsageQuery{Period: "today", ManagementKeyID: keyID})
			if err != nil || r.Totals.InputTokens != 1000 || r.Totals.OutputTokens != 100 || r.Totals.CostUSD != "0.00021" {
				t.Fatalf("report by management key: %+v %v", r.Totals, err)
			}
			waitFor(t, "the owner's usage events", func() bool {
				r, err := owner.UsageReport(ctx, "default", client.UsageQuery{Period: "today", OwnerID: me.User.ID.String()})
				return err == nil && r.Totals.Requests == 3 && r.Totals.InputTokens == 3000
			})
			waitFor(t, "the member's usage event", func() bool {
				r, err := owner.UsageReport(ctx, "default", client.UsageQuery{Period: "today", OwnerID: memberMe.User.ID.String()})
				return err == nil && r.Totals.Requests == 1 && r.Totals.InputTokens == 10
			})

			// The workspace's rate limit counts the playground, per user.
			one := int64(1)
			if _, err := owner.UpdateWorkspaceSettings(ctx, "default", "default", wire.WorkspaceUpdate{
				RateLimits: &wire.RateLimits{RequestsPerMinute: &one}}); err != nil {
				t.Fatal(err)
			}
			up.SetDefault(providerstest.Reply{Text: "x", Usage: providerstest.Usage{Input: 1, Output: 1}})
			limited := 0
			for range 3 {
				resp, _ := playgroundCall(t, srv.URL, "POST", playgroundBase+"/chat/completions", srv.token, mini)
				if resp.StatusCode == 429 {
					limited++
					if resp.Header.Get("Retry-After") == "" {
						t.Error("429 without Retry-After")
					}
				}
			}
			if limited == 0 {
				t.Fatal("the workspace's limit of one request a minute refused no playground request")
			}
		})
	}
}

// waitFor polls ok until it holds, for what the usage sink writes in the
// background.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPlaygroundUnderPerKeyBudgetAndRateLimit (issue 26 row 2): the
// Playground works in a workspace with a per_key budget, as inference
// does. Before, the control plane knew no counter for the id a playground
// request counts under and every one was refused 429 budget_exceeded
// ("the control plane does not know the budget … retry shortly"), minutes
// later too. The user's playground has its own per_key counter, seeded
// with their earlier playground spend, listed as theirs; the workspace's
// rate limit holds the playground to it (and says rate_limit_exceeded
// only once it is reached).
func TestPlaygroundUnderPerKeyBudgetAndRateLimit(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			srv := startServer(t, server.Config{Role: server.RoleAll, DB: storetest.Open(t, d), Keyring: keyring(t)})
			owner := srv.Owner
			me, err := owner.Me(ctx)
			if err != nil {
				t.Fatal(err)
			}
			up := providerstest.NewOpenAI(t, "sk-upstream-playground")
			if _, err := owner.CreateCredential(ctx, client.WorkspaceScope("default", "default"), wire.ProviderCredentialCreate{
				Provider: "openai", Label: "fake", Secret: up.Key, BaseURL: up.BaseURL()}); err != nil {
				t.Fatal(err)
			}
			up.SetDefault(providerstest.Reply{Text: "hello", Usage: providerstest.Usage{Input: 1000, Output: 100}})
			chat := func() (*http.Response, string) {
				return playgroundCall(t, srv.URL, "POST", playgroundBase+"/chat/completions", srv.token, mini)
			}
			// Spent before the budget exists: the counter is seeded with it.
			if resp, raw := chat(); resp.StatusCode != 200 {
				t.Fatalf("before the budget: %d %s", resp.StatusCode, raw)
			}
			waitFor(t, "the first playground event", func() bool {
				r, err := owner.UsageReport(ctx, "default", client.UsageQuery{Period: "today"})
				return err == nil && r.Totals.Requests == 1
			})
			budget := func(amount string) string {
				return `{"match":{"kind":"all_requests"},"action":{"kind":"budget","amount_usd":"` + amount + `","period":"day","aggregation":"per_key"}}`
			}
			if _, err := owner.CreatePolicy(ctx, "default", "default", wire.PolicyCreate{Name: "per key",
				Definition: wire.PolicyDefinition(`{"target":{"kind":"workspace"},"rules":[` + budget("2") + `]}`)}); err != nil {
				t.Fatal(err)
			}
			// A per_key budget of nothing for someone else: it does not
			// hold the owner's playground.
			other := uuid.New()
			if _, err := owner.CreatePolicy(ctx, "default", "default", wire.PolicyCreate{Name: "someone else",
				Definition: wire.PolicyDefinition(`{"target":{"kind":"selected_users","user_ids":["` + other.String() + `"]},"rules":[` + budget("0") + `]}`)}); err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				if resp, raw := chat(); resp.StatusCode != 200 || resp.Header.Get("X-Gw-Cost-Usd") != "0.00021" {
					t.Fatalf("playground request %d under a per_key budget: %d %s", i, resp.StatusCode, raw)
				}
			}
			ws, err := owner.GetWorkspace(ctx, "default", "default")
			if err != nil {
				t.Fatal(err)
			}
			wantKey := playground.KeyID(ws.ID, me.User.ID)
			// Seeded with the request before the budget, and holding the
			// two after: 0.00021 spent before, the rest spent or reserved.
			// The counter is the database's, which the usage loader fills
			// within its documented delay (a second): read until it has.
			var mine *wire.BudgetState
			var states []wire.BudgetState
			held := func() bool {
				if states, err = owner.ListBudgets(ctx, "default", "default"); err != nil {
					t.Fatal(err)
				}
				mine = nil
				for i, s := range states {
					if s.PolicyName == "per key" && s.PlaygroundUserID != nil {
						mine = &states[i]
					}
				}
				if mine == nil {
					return false
				}
				spent, _ := decimal.NewFromString(mine.SpentUSD)
				reserved, _ := decimal.NewFromString(mine.ReservedUSD)
				return !spent.LessThan(decimal.RequireFromString("0.00021")) && !spent.Add(reserved).LessThan(decimal.RequireFromString("0.00063"))
			}
			deadline := time.Now().Add(10 * time.Second)
			for !held() && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if mine == nil || *mine.PlaygroundUserID != me.User.ID || mine.InferenceKeyID == nil || *mine.InferenceKeyID != wantKey {
				t.Fatalf("no row for the owner's playground: %+v", states)
			}
			if !held() {
				t.Fatalf("playground counter: spent %s reserved %s", mine.SpentUSD, mine.ReservedUSD)
			}

			// The workspace's rate limit holds the playground: three a
			// minute, then 429 rate_limit_exceeded.
			three := int64(3)
			if _, err := owner.UpdateWorkspaceSettings(ctx, "default", "default", wire.WorkspaceUpdate{
				RateLimits: &wire.RateLimits{RequestsPerMinute: &three}}); err != nil {
				t.Fatal(err)
			}
			minute := time.Now().Unix() / 60
			var statuses []int
			var last string
			for range 4 {
				resp, raw := chat()
				statuses = append(statuses, resp.StatusCode)
				last = raw
			}
			if time.Now().Unix()/60 != minute {
				t.Skipf("the UTC minute turned during the rate-limit check: %v", statuses)
			}
			if fmt.Sprint(statuses) != "[200 200 200 429]" || !strings.Contains(last, `"code":"rate_limit_exceeded"`) {
				t.Fatalf("under a limit of 3 a minute: %v, last %s", statuses, last)
			}
		})
	}
}
