package dataplane_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

const bedrockHaiku = "bedrock/global.anthropic.claude-haiku-4-5-20251001-v1:0"

// promptLong is a system prompt long enough for the injection threshold
// the cases set (1,024 tokens): distinct rules, as a repeated sentence
// counts as far fewer tokens than its length.
var promptLong = func() string {
	var b strings.Builder
	for i := range 400 {
		fmt.Fprintf(&b, "Rule %d: cite source %d before claim %d. ", i, i*7, i*13)
	}
	return b.String()
}()

// promptCacheCases are TestPromptCacheMetering's cases and the prompt-cache
// rows of docs/metering.md's conformance table (promptCacheRows): a mark
// translated or injected, what the upstream received (sent: a member the
// body holds, as JSON text), and the event priced at each class.
var promptCacheCases = []struct {
	name, endpoint, model string
	inject                bool
	body                  string
	// sent must be in the upstream's body, absent must not.
	sent, absent string
	usage        providerstest.Usage
	cost         string
}{
	// 1,000 × $1 + 100 × $5 + 4,000 × $1.25 per MTok.
	{"Chat breakpoints → Anthropic `cache_control`; 4,000 cache writes at the five-minute write price", "chat", haiku, false,
		`{"model":"` + haiku + `","max_tokens":50,"messages":[{"role":"system","content":[{"type":"text","text":"Rules.","prompt_cache_breakpoint":{"mode":"explicit"}}]},{"role":"user","content":"hi"}]}`,
		`"system":[{"cache_control":{"type":"ephemeral"},"text":"Rules.","type":"text"}]`, `prompt_cache_breakpoint`,
		providerstest.Usage{Input: 1000, Output: 100, CacheWrite: 4000}, "0.0065"},
	// 1,000 × $1 + 100 × $5 + 4,000 × $0.10.
	{"the same prefix read back: 4,000 cache reads at the read price", "chat", haiku, false,
		`{"model":"` + haiku + `","max_tokens":50,"messages":[{"role":"system","content":[{"type":"text","text":"Rules.","prompt_cache_breakpoint":{"mode":"explicit"}}]},{"role":"user","content":"again"}]}`,
		`"cache_control":{"type":"ephemeral"}`, "",
		providerstest.Usage{Input: 1000, Output: 100, CacheRead: 4000}, "0.0019"},
	// 1,000 × $1 + 100 × $5 + 4,000 × $2: an hour's writes.
	{"Messages `cache_control` with `ttl` 1h, forwarded as sent: one-hour writes at their price", "messages", haiku, false,
		`{"model":"` + haiku + `","max_tokens":50,"system":[{"type":"text","text":"Rules.","cache_control":{"type":"ephemeral","ttl":"1h"}}],"messages":[{"role":"user","content":"hi"}]}`,
		`"cache_control":{"ttl":"1h","type":"ephemeral"}`, "",
		providerstest.Usage{Input: 1000, Output: 100, CacheWrite: 4000, CacheWrite1h: 4000}, "0.0095"},
	{"injected (workspace `prompt_cache`), Messages forwarded: `cache_control` on the system prompt", "messages", haiku, true,
		`{"model":"` + haiku + `","max_tokens":50,"system":"` + promptLong + `","messages":[{"role":"user","content":"hi"}]}`,
		`"cache_control":{"type":"ephemeral"}`, "",
		providerstest.Usage{Input: 1000, Output: 100, CacheWrite: 4000}, "0.0065"},
	{"injected, Chat → Bedrock Converse: a `cachePoint` after the system prompt", "chat", bedrockHaiku, true,
		`{"model":"` + bedrockHaiku + `","max_tokens":50,"messages":[{"role":"system","content":"` + promptLong + `"},{"role":"user","content":"hi"}]}`,
		`{"cachePoint":{"type":"default"}}`, "",
		providerstest.Usage{Input: 1000, Output: 100, CacheWrite: 4000}, "0.0065"},
	// 1,000 × $0.15 + 100 × $0.60: gpt-4o-mini takes no breakpoint.
	{"Messages `cache_control` → gpt-4o-mini (before GPT-5.6): no breakpoint sent, input at the input price", "messages", gptMini, false,
		`{"model":"` + gptMini + `","max_tokens":50,"system":[{"type":"text","text":"Rules.","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}]}`,
		`{"text":"Rules.","type":"text"}`, `prompt_cache_breakpoint`,
		providerstest.Usage{Input: 1000, Output: 100}, "0.00021"},
}

// promptCacheRows renders promptCacheCases as rows of docs/metering.md's
// conformance table.
func promptCacheRows() string {
	var b strings.Builder
	for _, c := range promptCacheCases {
		endpoint := map[string]string{"chat": "chat.completions", "messages": "messages"}[c.endpoint]
		kind, model, _ := strings.Cut(c.model, "/")
		fmt.Fprintf(&b, "| %s | no | %s × %s: %s | ok | `upstream` | %d input, %d output, %d cache reads, %d cache writes (%d for an hour): $%s |\n",
			c.name, endpoint, kind, model, c.usage.Input, c.usage.Output, c.usage.CacheRead, c.usage.CacheWrite, c.usage.CacheWrite1h, c.cost)
	}
	return b.String()
}

// TestPromptCacheMetering sends translated and injected prompt-cache marks
// through the data plane to fake upstreams (issue 35, part 4): the body
// each upstream received holds the vendor's mark, and the event prices the
// cache writes and reads it reported at their classes, stored alike on
// both databases.
func TestPromptCacheMetering(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e, stored := meteredEnv(t, db)
		clouds := e.withClouds(t)
		for _, c := range promptCacheCases {
			w, err := e.st.GetWorkspace(context.Background(), e.ws)
			if err != nil {
				t.Fatal(err)
			}
			w.PromptCache = &store.PromptCache{Inject: c.inject, MinPrefixTokens: 1024}
			if err := e.st.UpdateWorkspace(context.Background(), w); err != nil {
				t.Fatal(err)
			}
			e.sync(t)
			var up interface {
				Enqueue(...providerstest.Reply)
				Last(testing.TB) providerstest.Request
			}
			switch {
			case strings.HasPrefix(c.model, "anthropic/"):
				up = e.anthropic
			case strings.HasPrefix(c.model, "bedrock/"):
				up = clouds.bedrock
			default:
				up = e.openai
			}
			up.Enqueue(providerstest.Reply{Text: "cached", Usage: c.usage})
			path := map[string]string{"chat": "/inf/v1/chat/completions", "messages": "/inf/v1/messages"}[c.endpoint]
			req, _ := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(c.body))
			req.Header.Set("Authorization", "Bearer "+e.token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d %s", c.name, resp.StatusCode, raw)
			}
			sent := up.Last(t).Raw
			var compact strings.Builder
			var v any
			if err := json.Unmarshal(sent, &v); err != nil {
				t.Fatal(err)
			}
			enc := json.NewEncoder(&compact)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(v)
			// The body re-encoded with its members sorted (sent is written so).
			if !strings.Contains(compact.String(), c.sent) || (c.absent != "" && strings.Contains(compact.String(), c.absent)) {
				t.Fatalf("%s: the upstream received %s; want %s in it and not %q", c.name, compact.String(), c.sent, c.absent)
			}
			ev := e.usage.last(t, len(e.usage.snapshot()))
			if ev.Status != "ok" || ev.UsageSource != "upstream" || ev.CostUSD != c.cost || ev.CacheWriteTokens != c.usage.CacheWrite ||
				ev.CacheReadTokens != c.usage.CacheRead || ev.CacheWrite1hTokens != c.usage.CacheWrite1h {
				t.Fatalf("%s: event %+v, want cost %s", c.name, ev, c.cost)
			}
			found := false
			for _, row := range stored() {
				if row.ID == ev.ID {
					found = row.CacheWriteTokens == c.usage.CacheWrite && row.CacheReadTokens == c.usage.CacheRead
				}
			}
			if !found {
				t.Fatalf("%s: event %s not stored as sent", c.name, ev.ID)
			}
		}
	})
}

// The injection is the workspace's own: another workspace of the
// organization, which did not ask for it, sends the same request
// unmarked.
func TestPromptCacheInjectionIsPerWorkspace(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		other := e.org.Workspace("other")
		otherToken, _ := e.org.Key(other, e.org.Member(auth.MembershipActive), nil)
		w, err := e.st.GetWorkspace(context.Background(), e.ws)
		if err != nil {
			t.Fatal(err)
		}
		w.PromptCache = &store.PromptCache{Inject: true, MinPrefixTokens: 1024}
		if err := e.st.UpdateWorkspace(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		e.sync(t)
		body := `{"model":"` + haiku + `","max_tokens":50,"messages":[{"role":"system","content":"` + promptLong + `"},{"role":"user","content":"hi"}]}`
		for _, c := range []struct {
			name, token string
			marked      bool
		}{{"the workspace that asked", e.token, true}, {"another workspace", otherToken, false}} {
			e.anthropic.Enqueue(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 10, Output: 1}})
			if code, _, raw := e.ask(t, c.token, body); code != http.StatusOK {
				t.Fatalf("%s: %d %s", c.name, code, raw)
			}
			if got := strings.Contains(string(e.anthropic.Last(t).Raw), `"cache_control"`); got != c.marked {
				t.Errorf("%s: marked %v, want %v", c.name, got, c.marked)
			}
		}
	})
}
