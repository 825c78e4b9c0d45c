package dataplane_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// failures lists the attempt chain's failures of a usage event, "ok" for
// the attempt that answered.
func failures(e *infEnv, t *testing.T) []string {
	t.Helper()
	ev := e.usage.snapshot()
	if len(ev) == 0 {
		t.Fatal("no usage event")
	}
	var out []string
	for _, a := range ev[len(ev)-1].Attempts {
		f := "ok"
		if a.Failure != nil {
			f = *a.Failure
		}
		out = append(out, a.Model+":"+f)
	}
	return out
}

// A target that answered 429 with Retry-After is skipped until the pause
// is over: the request goes straight to its fallback, and the chain shows
// the skip as cooling_down.
func TestRoutingLearnsRateLimits(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		var c fakeClock
		c.set(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
		e := newInfEnv(t, db, withClock(c.now), learning)
		e.policy(t, rule(all, `{"kind":"fallback","models":["`+haiku+`"],"on":["rate_limited","upstream_unavailable"],"max_attempts":2,"timeout_ms":30000}`))
		e.sync(t)
		body := `{"model":"` + gptMini + `","messages":[{"role":"user","content":"hi"}]}`
		e.openai.Enqueue(providerstest.Reply{Status: 429, Message: "slow down", RetryAfter: "60"})
		e.anthropic.SetDefault(providerstest.Reply{Text: "fallback", Usage: providerstest.Usage{Input: 1, Output: 1}})
		for i := range 3 {
			e.usage.reset()
			if resp := e.post(t, body); resp.StatusCode != 200 {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("request %d: %d %s", i, resp.StatusCode, b)
			}
			want := gptMini + ":rate_limited," + haiku + ":ok"
			if i > 0 {
				want = gptMini + ":cooling_down," + haiku + ":ok"
			}
			if got := strings.Join(failures(e, t), ","); got != want {
				t.Fatalf("request %d: chain %s, want %s", i, got, want)
			}
		}
		if n := len(e.openai.Requests()); n != 1 {
			t.Fatalf("the rate-limited upstream was called %d times, want 1", n)
		}
		// After the pause the target is called again.
		c.set(c.now().Add(61 * time.Second))
		e.openai.Enqueue(providerstest.Reply{Text: "back", Usage: providerstest.Usage{Input: 1, Output: 1}})
		e.usage.reset()
		if resp := e.post(t, body); resp.StatusCode != 200 || strings.Join(failures(e, t), ",") != gptMini+":ok" {
			t.Fatalf("after the pause: %d %v", resp.StatusCode, failures(e, t))
		}

	})
}

// Five 5xx in a row open the circuit: requests are refused with 503
// without calling the upstream, until a single probe is let through.
func TestRoutingCircuitBreaker(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		var c fakeClock
		c.set(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
		e := newInfEnv(t, db, withClock(c.now), learning)
		e.sync(t)
		// Without a Retry-After, the pause is a backoff; without a
		// fallback, the caller gets the 429 with the time left.
		other := `{"model":"` + haiku + `","messages":[{"role":"user","content":"hi"}]}`
		e.anthropic.Enqueue(providerstest.Reply{Status: 429, Message: "slow down"})
		e.usage.reset()
		e.postError(t, other, http.StatusTooManyRequests)
		if got := strings.Join(failures(e, t), ","); got != haiku+":rate_limited" {
			t.Fatalf("backoff: %s", got)
		}
		e.usage.reset()
		resp := e.post(t, other)
		if got := strings.Join(failures(e, t), ","); resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" || got != haiku+":cooling_down" {
			t.Fatalf("within the backoff: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), got)
		}
		c.set(c.now().Add(2 * time.Second))
		e.anthropic.Enqueue(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 1, Output: 1}})
		if resp := e.post(t, other); resp.StatusCode != 200 {
			t.Fatalf("after the backoff: %d", resp.StatusCode)
		}
		body := `{"model":"` + gptMini + `","messages":[{"role":"user","content":"hi"}]}`
		for range 5 {
			e.openai.Enqueue(providerstest.Reply{Status: 500, Message: "boom"})
			e.postError(t, body, http.StatusBadGateway)
		}
		e.usage.reset()
		if got := e.postError(t, body, http.StatusServiceUnavailable); code(got) != "upstream_unavailable" {
			t.Fatalf("open circuit: %+v", got)
		}
		if got := strings.Join(failures(e, t), ","); got != gptMini+":cooling_down" || len(e.openai.Requests()) != 5 {
			t.Fatalf("open circuit: chain %s, %d upstream calls", got, len(e.openai.Requests()))
		}
		// Half open: one probe reaches the upstream; its answer closes
		// the circuit.
		c.set(c.now().Add(31 * time.Second))
		e.openai.Enqueue(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 1, Output: 1}})
		if resp := e.post(t, body); resp.StatusCode != 200 {
			t.Fatalf("probe: %d", resp.StatusCode)
		}
		e.openai.Enqueue(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 1, Output: 1}})
		if resp := e.post(t, body); resp.StatusCode != 200 {
			t.Fatalf("closed again: %d", resp.StatusCode)
		}
	})
}

// An Anthropic 529 is upstream_unavailable; a Messages caller gets
// Anthropic's 529 overloaded_error, a Chat Completions caller a 503.
func TestUpstreamOverloaded(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.sync(t)
		e.anthropic.Enqueue(providerstest.Reply{Status: 529, Message: "Overloaded"})
		resp := e.postTo(t, "/inf/v1/messages", `{"model":"`+haiku+`","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 529 || !strings.Contains(string(b), `"type":"overloaded_error"`) {
			t.Fatalf("messages: %d %s", resp.StatusCode, b)
		}
		if got := strings.Join(failures(e, t), ","); got != haiku+":upstream_unavailable" {
			t.Fatalf("chain %s", got)
		}
		e.anthropic.Enqueue(providerstest.Reply{Status: 529, Message: "Overloaded"})
		if got := e.postError(t, `{"model":"`+haiku+`","messages":[{"role":"user","content":"hi"}]}`, http.StatusServiceUnavailable); code(got) != "upstream_overloaded" {
			t.Fatalf("chat: %+v", got)
		}
	})
}
