package dataplane_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/server/usage"
	"github.com/gw-gateway/gw/wire"
)

// cacheOn turns the response cache on for workspace ws and publishes it.
func (e *infEnv) cacheOn(t *testing.T, ws uuid.UUID, ttl, maxEntry int) {
	t.Helper()
	w, err := e.st.GetWorkspace(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	w.ResponseCache = &store.ResponseCache{Enabled: true, TTLSeconds: ttl, MaxEntryBytes: maxEntry}
	if err := e.st.UpdateWorkspace(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	e.sync(t)
}

// ask posts a chat completion with token and headers (name, value, …),
// answering the status, the x-gw-cache header and the body.
func (e *infEnv) ask(t *testing.T, token, body string, headers ...string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+"/inf/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("X-Gw-Cache"), string(b)
}

func cachedChat(content, extra string) string {
	return `{"model":"` + gptMini + `","messages":[{"role":"user","content":"` + content + `"}]` + extra + `}`
}

// A deterministic request is answered once by the upstream and then from
// the cache, byte for byte; its event says usage_source cache, costs 0,
// keeps the tokens and records what the call would have cost, through the
// store on both databases. Others are never cached.
func TestResponseCacheHitsAndTheirEvents(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		sink := usage.NewStoreSink(e.st, usage.StoreSinkOptions{FlushInterval: time.Hour})
		e.usage.forward = sink
		e.openai.SetDefault(providerstest.Reply{Text: "cached words", Usage: providerstest.Usage{Input: 1234, Output: 567}})
		det := cachedChat("hi", `,"temperature":0`)

		// Off in the workspace: no header, every request goes upstream.
		e.sync(t)
		if code, hdr, _ := e.ask(t, e.token, det); code != 200 || hdr != "" {
			t.Fatalf("cache off: %d %q", code, hdr)
		}
		e.cacheOn(t, e.ws, 60, 1<<20)
		calls := len(e.openai.Requests())
		code, hdr, first := e.ask(t, e.token, det)
		if code != 200 || hdr != "miss" {
			t.Fatalf("first: %d %q %s", code, hdr, first)
		}
		// The same request, its members in another order: one key.
		code, hdr, second := e.ask(t, e.token, `{"temperature":0,"messages":[{"content":"hi","role":"user"}],"model":"`+gptMini+`"}`)
		if code != 200 || hdr != "hit" || second != first {
			t.Fatalf("second: %d %q\n%s\nwant\n%s", code, hdr, second, first)
		}
		if n := len(e.openai.Requests()) - calls; n != 1 {
			t.Fatalf("the upstream was called %d times, want 1", n)
		}
		events := e.usage.wait(t, 3)
		miss, hit := events[1], events[2]
		if miss.UsageSource != wire.UsageSourceUpstream || miss.CostUSD != "0.0005253" || miss.CacheSavingUSD != nil {
			t.Fatalf("miss event %+v", miss)
		}
		if hit.UsageSource != wire.UsageSourceCache || hit.CostUSD != "0" || hit.CacheSavingUSD == nil || *hit.CacheSavingUSD != "0.0005253" ||
			hit.InputTokens != 1234 || hit.OutputTokens != 567 || len(hit.Attempts) != 0 || hit.Status != "ok" || hit.Model != gptMini {
			t.Fatalf("hit event %+v", hit)
		}

		// Not deterministic: never cached, no header. Allowed by header: cached.
		calls = len(e.openai.Requests())
		for range 2 {
			if _, hdr, _ := e.ask(t, e.token, cachedChat("hi", "")); hdr != "" {
				t.Fatalf("a request at the default temperature answered x-gw-cache %q", hdr)
			}
			if _, hdr, _ := e.ask(t, e.token, cachedChat("hi", `,"temperature":0.7`)); hdr != "" {
				t.Fatalf("a request at temperature 0.7 answered x-gw-cache %q", hdr)
			}
		}
		if n := len(e.openai.Requests()) - calls; n != 4 {
			t.Fatalf("non-deterministic requests called the upstream %d times, want 4", n)
		}
		if _, hdr, _ := e.ask(t, e.token, cachedChat("allowed", ""), "X-Gw-Cache-Allow", "true"); hdr != "miss" {
			t.Fatalf("allowed, first: %q", hdr)
		}
		if _, hdr, _ := e.ask(t, e.token, cachedChat("allowed", ""), "X-Gw-Cache-Allow", "true"); hdr != "hit" {
			t.Fatalf("allowed, second: %q", hdr)
		}
		// Cache-Control: no-cache asks the upstream again; no-store too.
		calls = len(e.openai.Requests())
		if _, hdr, _ := e.ask(t, e.token, det, "Cache-Control", "no-cache"); hdr != "miss" {
			t.Fatalf("no-cache: %q", hdr)
		}
		if _, hdr, _ := e.ask(t, e.token, det, "Cache-Control", "no-store"); hdr != "miss" {
			t.Fatalf("no-store: %q", hdr)
		}
		if n := len(e.openai.Requests()) - calls; n != 2 {
			t.Fatalf("bypassing requests called the upstream %d times, want 2", n)
		}

		if err := sink.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		rows, _, err := e.st.ListUsageEvents(context.Background(), store.UsageFilter{OrgID: e.org.ID}, pageOf(100))
		if err != nil {
			t.Fatal(err)
		}
		var stored *store.UsageEvent
		for i := range rows {
			if rows[i].ID == hit.ID {
				stored = &rows[i]
			}
		}
		if stored == nil || stored.UsageSource != wire.UsageSourceCache || stored.CostNanoUSD != 0 || stored.CacheSavingNanoUSD != 525300 {
			t.Fatalf("stored hit %+v", stored)
		}
		if out := usage.Event(stored); out.CacheSavingUSD == nil || *out.CacheSavingUSD != "0.0005253" || out.CostUSD != "0" {
			t.Fatalf("listed hit %+v", out)
		}
	})
}

// A stream is replayed as the same stream; the hit is metered like a
// non-streaming one.
func TestResponseCacheReplaysStreams(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.openai.SetDefault(providerstest.Reply{Text: "a streamed answer in pieces", ChunkSize: 5, Usage: providerstest.Usage{Input: 20, Output: 7}})
		e.cacheOn(t, e.ws, 60, 1<<20)
		body := cachedChat("stream me", `,"temperature":0,"stream":true,"stream_options":{"include_usage":true}`)
		code, hdr, first := e.ask(t, e.token, body)
		if code != 200 || hdr != "miss" || !strings.Contains(first, "data: [DONE]") {
			t.Fatalf("first: %d %q\n%s", code, hdr, first)
		}
		code, hdr, second := e.ask(t, e.token, body)
		if code != 200 || hdr != "hit" || second != first {
			t.Fatalf("second: %d %q\n%s\nwant\n%s", code, hdr, second, first)
		}
		if n := len(e.openai.Requests()); n != 1 {
			t.Fatalf("the upstream was called %d times, want 1", n)
		}
		// A non-streaming request of the same content is another key.
		if _, hdr, _ := e.ask(t, e.token, cachedChat("stream me", `,"temperature":0`)); hdr != "miss" {
			t.Fatalf("non-streaming after a stream: %q", hdr)
		}
		hit := e.usage.wait(t, 3)[1]
		if hit.UsageSource != wire.UsageSourceCache || hit.CostUSD != "0" || hit.InputTokens != 20 || hit.OutputTokens != 7 {
			t.Fatalf("hit event %+v", hit)
		}
	})
}

// Never across workspaces, never across keys whose policies decide
// differently; keys whose policies decide alike share answers.
func TestResponseCacheIsolation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		other := e.org.Workspace("other")
		otherToken, _ := e.org.Key(other, e.org.Member(auth.MembershipActive), nil)
		sibling, _ := e.org.Key(e.ws, e.owner, nil)
		limited, limitedID := e.org.Key(e.ws, e.owner, nil)
		e.org.Policy(e.ws, "limited", true, `{"target":{"kind":"selected_keys","key_ids":["`+limitedID.String()+`"]},"rules":[`+
			rule(all, `{"kind":"request_limits","max_output_tokens":1000}`)+`]}`)
		e.cacheOn(t, e.ws, 60, 1<<20)
		e.cacheOn(t, other, 60, 1<<20)
		det := cachedChat("same question", `,"temperature":0`)
		for _, step := range []struct {
			name, token, want string
		}{
			{"first key", e.token, "miss"},
			{"first key again", e.token, "hit"},
			{"another workspace", otherToken, "miss"},
			{"another workspace again", otherToken, "hit"},
			{"a key with the same policies", sibling, "hit"},
			{"a key with another policy", limited, "miss"},
			{"a key with another policy again", limited, "hit"},
		} {
			if code, hdr, body := e.ask(t, step.token, det); code != 200 || hdr != step.want {
				t.Fatalf("%s: %d %q, want %q\n%s", step.name, code, hdr, step.want, body)
			}
		}
		if n := len(e.openai.Requests()); n != 3 {
			t.Fatalf("the upstream was called %d times, want 3 (one per workspace and policy decision)", n)
		}
		events := e.usage.wait(t, 7)
		if events[2].WorkspaceID != other || events[3].WorkspaceID != other || events[3].UsageSource != wire.UsageSourceCache {
			t.Fatalf("the other workspace's events %+v", events[2:4])
		}
	})
}

// The hit ratio of a workload: 5 distinct deterministic requests asked 4
// times each are answered 15 times from the cache, the upstream called 5.
func TestResponseCacheHitRatio(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.cacheOn(t, e.ws, 60, 1<<20)
		hits := 0
		for range 4 {
			for i := range 5 {
				_, hdr, _ := e.ask(t, e.token, cachedChat("question "+string(rune('a'+i)), `,"temperature":0`))
				if hdr == "hit" {
					hits++
				}
			}
		}
		if n := len(e.openai.Requests()); hits != 15 || n != 5 {
			t.Fatalf("%d hits and %d upstream calls of 20 requests, want 15 and 5", hits, n)
		}
	})
}

// An answer over the workspace's max_entry_bytes is never kept.
func TestResponseCacheEntryLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.openai.SetDefault(providerstest.Reply{Text: strings.Repeat("long ", 400), Usage: providerstest.Usage{Input: 5, Output: 400}})
		e.cacheOn(t, e.ws, 60, 1024)
		det := cachedChat("long", `,"temperature":0`)
		for range 2 {
			if _, hdr, _ := e.ask(t, e.token, det); hdr != "miss" {
				t.Fatalf("an answer over max_entry_bytes: %q", hdr)
			}
		}
	})
}

// A hit is admitted like any request: the workspace's requests a minute
// count it (the third request of a minute is refused, hit or not), and
// it is charged to the budgets its policies name, at $0.
func TestResponseCacheHitsCountAgainstLimitsAndBudgets(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.policy(t, budgetRule("100", "day", "shared"))
		w, err := e.st.GetWorkspace(context.Background(), e.ws)
		if err != nil {
			t.Fatal(err)
		}
		rpm := int64(2)
		w.RateLimits.RPM = &rpm
		if err := e.st.UpdateWorkspace(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		e.cacheOn(t, e.ws, 60, 1<<20)
		det := cachedChat("limited", `,"temperature":0`)
		if _, hdr, _ := e.ask(t, e.token, det); hdr != "miss" {
			t.Fatalf("first: %q", hdr)
		}
		if _, hdr, _ := e.ask(t, e.token, det); hdr != "hit" {
			t.Fatalf("second: %q", hdr)
		}
		if code, hdr, body := e.ask(t, e.token, det); code != http.StatusTooManyRequests || hdr == "hit" {
			t.Fatalf("third request of the minute: %d %q %s", code, hdr, body)
		}
		hit := e.usage.wait(t, 2)[1]
		if hit.UsageSource != wire.UsageSourceCache || hit.Provenance == nil || len(hit.Provenance.Budgets) != 1 || hit.CostUSD != "0" {
			t.Fatalf("hit event %+v (provenance %+v)", hit, hit.Provenance)
		}
	})
}
