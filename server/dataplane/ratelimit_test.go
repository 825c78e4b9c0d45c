package dataplane_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// fakeClock is a settable time for the plane.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) set(t time.Time) { c.ns.Store(t.UnixNano()) }
func (c *fakeClock) now() time.Time  { return time.Unix(0, c.ns.Load()) }
func withClock(now func() time.Time) infOptions {
	return func(o *dataplane.Options) { o.Now = now }
}

func int64p(n int64) *int64 { return &n }

// setLimits writes the workspace's and the key's rate limits as the
// management API would, then publishes.
func (e *infEnv) setLimits(t *testing.T, ws, key store.RateLimits) {
	t.Helper()
	ctx := context.Background()
	w, err := e.st.GetWorkspace(ctx, e.ws)
	if err != nil {
		t.Fatal(err)
	}
	w.RateLimits = ws
	if err := e.st.UpdateWorkspace(ctx, w); err != nil {
		t.Fatal(err)
	}
	k, err := e.st.GetInferenceKey(ctx, e.ws, e.keyID)
	if err != nil {
		t.Fatal(err)
	}
	k.RateLimits = key
	if err := e.st.UpdateInferenceKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	e.sync(t)
}

func hello(model string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}}
}

// wantRateHeaders checks the x-ratelimit trio of one dimension; limit ""
// means the trio must be absent.
func wantRateHeaders(t *testing.T, step string, h http.Header, dim, limit, remaining, reset string) {
	t.Helper()
	got := [3]string{h.Get("X-Ratelimit-Limit-" + dim), h.Get("X-Ratelimit-Remaining-" + dim), h.Get("X-Ratelimit-Reset-" + dim)}
	if want := [3]string{limit, remaining, reset}; got != want && !(limit == "" && got == [3]string{}) {
		t.Fatalf("%s: x-ratelimit-*-%s %q, want %q", step, dim, got, want)
	}
}

func TestRateLimitRequests(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		clk := &fakeClock{}
		clk.set(time.Date(2026, 11, 23, 10, 0, 15, 0, time.UTC))
		e := newInfEnv(t, db, withClock(clk.now))
		// The workspace was lowered below the key's own limit: the lower
		// one applies.
		e.setLimits(t, store.RateLimits{RPM: int64p(2)}, store.RateLimits{RPM: int64p(5)})
		c, ctx := e.client(), context.Background()

		// Discovery neither counts nor carries the headers.
		for range 3 {
			if _, err := c.Models.List(ctx, option.WithResponseInto(new(*http.Response))); err != nil {
				t.Fatal(err)
			}
		}
		var resp *http.Response
		if _, err := c.Models.List(ctx, option.WithResponseInto(&resp)); err != nil || resp.Header.Get("X-Ratelimit-Limit-Requests") != "" {
			t.Fatalf("discovery: %v %v", err, resp.Header)
		}

		if _, err := c.Chat.Completions.New(ctx, hello(gptMini), option.WithResponseInto(&resp)); err != nil {
			t.Fatal(err)
		}
		wantRateHeaders(t, "success", resp.Header, "Requests", "2", "1", "45s")
		wantRateHeaders(t, "success", resp.Header, "Tokens", "", "", "")

		// An error answer counts and carries the headers too.
		clk.set(clk.now().Add(1500 * time.Millisecond))
		r := e.post(t, `{"model":"nope/none","messages":[{"role":"user","content":"Hi"}]}`)
		if r.StatusCode != 404 {
			t.Fatalf("unknown model: %d", r.StatusCode)
		}
		wantRateHeaders(t, "404", r.Header, "Requests", "2", "0", "43.5s")

		_, err := c.Chat.Completions.New(ctx, hello(gptMini), option.WithResponseInto(&resp))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "rate_limit_exceeded" || apiErr.Type != "requests" {
			t.Fatalf("over the limit: %v", err)
		}
		if got := resp.Header.Get("Retry-After"); got != "44" {
			t.Fatalf("Retry-After %q, want 44 (43.5s rounded up)", got)
		}
		wantRateHeaders(t, "429", resp.Header, "Requests", "2", "0", "43.5s")
		e.postError(t, `{"model":"`+gptMini+`","messages":[{"role":"user","content":"Hi"}]}`, 429)

		// The next UTC minute starts afresh.
		clk.set(time.Date(2026, 11, 23, 10, 1, 0, 0, time.UTC))
		if _, err := c.Chat.Completions.New(ctx, hello(gptMini), option.WithResponseInto(&resp)); err != nil {
			t.Fatal(err)
		}
		wantRateHeaders(t, "next minute", resp.Header, "Requests", "2", "1", "1m0s")
		// Refused requests leave no usage event; the two answered do.
		if n := len(e.usage.wait(t, 2)); n != 2 {
			t.Fatalf("%d usage events", n)
		}
	})
}

func TestRateLimitTokens(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		clk := &fakeClock{}
		clk.set(time.Date(2026, 11, 23, 10, 0, 30, 0, time.UTC))
		e := newInfEnv(t, db, withClock(clk.now))
		// The workspace default applies to the key, which has none.
		e.setLimits(t, store.RateLimits{TPM: int64p(20)}, store.RateLimits{})
		c, ctx := e.client(), context.Background()
		var resp *http.Response
		// The fake upstream's default answer costs 12 + 5 tokens.
		if _, err := c.Chat.Completions.New(ctx, hello(gptMini), option.WithResponseInto(&resp)); err != nil {
			t.Fatal(err)
		}
		wantRateHeaders(t, "first", resp.Header, "Tokens", "20", "20", "0s")
		wantRateHeaders(t, "first", resp.Header, "Requests", "", "", "")
		e.usage.wait(t, 1)
		// 17 < 20: admitted, though it may overshoot.
		if _, err := c.Chat.Completions.New(ctx, hello(gptMini), option.WithResponseInto(&resp)); err != nil {
			t.Fatal(err)
		}
		wantRateHeaders(t, "second", resp.Header, "Tokens", "20", "3", "30s")
		e.usage.wait(t, 2)
		// 34 ≥ 20: refused until the minute ends.
		_, err := c.Chat.Completions.New(ctx, hello(gptMini), option.WithResponseInto(&resp))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "rate_limit_exceeded" || apiErr.Type != "tokens" {
			t.Fatalf("over the token limit: %v", err)
		}
		if resp.Header.Get("Retry-After") != "30" {
			t.Fatalf("Retry-After %q", resp.Header.Get("Retry-After"))
		}
		wantRateHeaders(t, "429", resp.Header, "Tokens", "20", "0", "30s")
	})
}

// The SDK's own retry honors Retry-After unchanged: a 429 a few hundred
// milliseconds before the minute ends is retried after a second and
// answered.
func TestRateLimitSDKRetries(t *testing.T) {
	db := storetest.Open(t, storetest.SQLite)
	// Real time, shifted once the setup is done so that the current
	// minute then ends in half a second.
	var offset atomic.Int64
	e := newInfEnv(t, db, withClock(func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }))
	e.setLimits(t, store.RateLimits{}, store.RateLimits{RPM: int64p(1)})
	c := openai.NewClient(option.WithBaseURL(e.srv.URL+"/inf/v1/"), option.WithAPIKey(e.token), option.WithMaxRetries(1))
	ctx := context.Background()
	offset.Store(int64(time.Until(time.Date(2026, 11, 23, 10, 0, 59, 500_000_000, time.UTC))))
	if _, err := c.Chat.Completions.New(ctx, hello(gptMini)); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	if _, err := c.Chat.Completions.New(ctx, hello(gptMini)); err != nil {
		t.Fatalf("the SDK's retry after Retry-After failed: %v", err)
	}
	if waited := time.Since(started); waited < 900*time.Millisecond {
		t.Fatalf("answered after %v: the SDK did not wait for Retry-After", waited)
	}
}
