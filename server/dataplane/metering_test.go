package dataplane_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/server/usage"
	"github.com/gw-gateway/gw/wire"
)

// meteredEnv is an infEnv whose events also go to the database, so each
// test checks what is stored on both dialects, not only what was recorded.
func meteredEnv(t *testing.T, db *bun.DB, opts ...infOptions) (*infEnv, func() []store.UsageEvent) {
	t.Helper()
	e := newInfEnv(t, db, opts...)
	sink := usage.NewStoreSink(e.st, usage.StoreSinkOptions{FlushInterval: time.Hour})
	t.Cleanup(func() { _ = sink.Close(context.Background()) })
	e.usage.forward = sink
	e.sync(t)
	stored := func() []store.UsageEvent {
		t.Helper()
		if err := sink.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		rows, _, err := e.st.ListUsageEvents(context.Background(), store.UsageFilter{OrgID: e.org.ID}, pageOf(100))
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	return e, stored
}

// readSSE reads a stream's data lines to its end.
func readSSE(t *testing.T, body io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, line)
		}
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// An upstream stream that ends without its terminal event is not passed
// off as a finished answer: the caller gets an error event and no [DONE],
// and the request is metered once, as an error.
func TestTruncatedStreamIsAnError(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e, stored := meteredEnv(t, db)
		for i, model := range []string{gptMini, haiku} {
			reply := providerstest.Reply{Text: "the start of an answer", TruncateStream: true, Usage: providerstest.Usage{Input: 7, Output: 3}}
			e.openai.Enqueue(reply)
			e.anthropic.Enqueue(reply)
			resp := e.post(t, `{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
			lines := readSSE(t, resp.Body)
			if len(lines) < 2 || slicesContains(lines, "[DONE]") || !strings.Contains(lines[len(lines)-1], `"upstream_unavailable"`) {
				t.Fatalf("%s: the caller read %q", model, lines)
			}
			ev := e.usage.last(t, 2*i+1)
			if ev.Status != "error" || deref(ev.Reason) != "stream_truncated" || ev.Model != model ||
				len(ev.Attempts) != 1 || deref(ev.Attempts[0].Failure) != "upstream_unavailable" {
				t.Fatalf("%s: event %+v", model, ev)
			}
			if model == haiku && ev.InputTokens != 7 {
				t.Fatalf("the tokens reported before the cut are lost: %+v", ev)
			}

			// Through the SDK, the stream ends in an error.
			e.openai.Enqueue(reply)
			e.anthropic.Enqueue(reply)
			stream := e.sdk().Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
				Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
			})
			for stream.Next() {
			}
			if stream.Err() == nil {
				t.Fatalf("%s: the SDK read a truncated stream as whole", model)
			}
			e.usage.wait(t, 2*(i+1))
		}
		rows := stored()
		if len(rows) != 4 {
			t.Fatalf("%d events stored, want 4", len(rows))
		}
		for _, r := range rows {
			if r.Status != "error" || deref(r.Reason) != "stream_truncated" || len(r.Attempts) != 1 || deref(r.Endpoint) != "chat.completions" {
				t.Fatalf("stored %+v", r)
			}
		}
	})
}

func slicesContains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

// A caller who leaves mid-stream leaves one event: an error, client_gone,
// with the tokens gw counted, since the upstream call ends with the caller
// (before the usage its last chunk would have carried).
func TestClientGoneMidStream(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e, stored := meteredEnv(t, db)
		release := make(chan struct{})
		e.openai.Enqueue(providerstest.Reply{Text: "a long answer indeed", Hold: release, Usage: providerstest.Usage{Input: 40, Output: 9}})
		resp := e.post(t, `{"model":"`+gptMini+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		rd := bufio.NewReader(resp.Body)
		for i := 0; i < 4; i++ { // two events: the role, then the first piece
			if _, err := rd.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
		}
		resp.Body.Close()
		// The gateway finds the caller gone on its next write; let the
		// upstream go on so there is one.
		time.Sleep(50 * time.Millisecond)
		close(release)
		ev := e.usage.last(t, 1)
		if ev.Status != "error" || deref(ev.Reason) != "client_gone" || ev.UsageSource != "estimated" || ev.InputTokens <= 0 || ev.OutputTokens < 1 ||
			len(ev.Attempts) != 1 || deref(ev.Attempts[0].Failure) != "client_gone" || deref(ev.RequestID) != ev.ID.String() {
			t.Fatalf("event %+v", ev)
		}
		if rows := stored(); len(rows) != 1 || rows[0].CostNanoUSD == 0 || deref(rows[0].Reason) != "client_gone" {
			t.Fatalf("stored %+v", rows)
		}
	})
}

// At the shutdown deadline the plane ends what is in flight: a stream ends
// with an error event, a call not yet answered with a 503, and each is
// metered once before EndInFlight returns.
func TestShutdownEndsInFlightRequests(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e, stored := meteredEnv(t, db)
		hold := make(chan struct{})
		defer close(hold)
		e.anthropic.Enqueue(providerstest.Reply{Text: "an answer that never ends", Hold: hold, Usage: providerstest.Usage{Input: 25, Output: 4}})
		e.openai.Enqueue(providerstest.Reply{Delay: time.Minute})

		resp := e.post(t, `{"model":"`+haiku+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		rd := bufio.NewReader(resp.Body)
		if _, err := rd.ReadString('\n'); err != nil { // the stream has begun
			t.Fatal(err)
		}
		plain := make(chan *http.Response, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/inf/v1/chat/completions",
				strings.NewReader(`{"model":"`+gptMini+`","messages":[{"role":"user","content":"hi"}]}`))
			req.Header.Set("Authorization", "Bearer "+e.token)
			r, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				close(plain)
				return
			}
			plain <- r
		}()
		for len(e.openai.Requests()) == 0 {
			time.Sleep(5 * time.Millisecond)
		}

		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := e.plane.EndInFlight(ctx); err != nil {
			t.Fatal(err)
		}
		// Both are metered by the time EndInFlight returns.
		events := e.usage.snapshot()
		if len(events) != 2 {
			t.Fatalf("%d events after EndInFlight, want 2: %+v", len(events), events)
		}
		for _, ev := range events {
			if ev.Status != "error" || deref(ev.Reason) != "shutdown" || len(ev.Attempts) != 1 || deref(ev.Attempts[0].Failure) != "shutdown" {
				t.Fatalf("event %+v", ev)
			}
			if ev.Model == haiku && ev.InputTokens != 25 {
				t.Fatalf("the stream's reported tokens are lost: %+v", ev)
			}
		}
		rest := readSSE(t, rd)
		if len(rest) == 0 || slicesContains(rest, "[DONE]") || !strings.Contains(rest[len(rest)-1], "gateway_shutting_down") {
			t.Fatalf("the streaming caller read %q", rest)
		}
		r := <-plain
		if r == nil {
			return
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") != "1" || !strings.Contains(string(b), "gateway_shutting_down") {
			t.Fatalf("the waiting caller got %d %s", r.StatusCode, b)
		}
		if rows := stored(); len(rows) != 2 {
			t.Fatalf("%d events stored, want 2", len(rows))
		}
		// What arrives afterwards ends the same way, and is metered too.
		e.postError(t, `{"model":"`+gptMini+`","messages":[{"role":"user","content":"hi"}]}`, http.StatusServiceUnavailable)
		if ev := e.usage.last(t, 3); deref(ev.Reason) != "shutdown" {
			t.Fatalf("event %+v", ev)
		}
	})
}

// A fallback is observable: the answer names the model that answered and
// how many attempts it took, and the event keeps the attempt chain.
func TestFallbackChainIsRecorded(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e, stored := meteredEnv(t, db)
		e.policy(t, rule(all, `{"kind":"fallback","models":["`+haiku+`"],"on":["rate_limited","timeout"],"max_attempts":3,"timeout_ms":2000}`))
		e.sync(t)
		e.openai.Enqueue(providerstest.Reply{Status: http.StatusTooManyRequests, Message: "slow down"})
		e.anthropic.Enqueue(providerstest.Reply{Text: "from claude", Usage: providerstest.Usage{Input: 10, Output: 2}})
		resp := e.post(t, `{"model":"`+gptMini+`","messages":[{"role":"user","content":"hi"}]}`)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Gw-Model") != haiku || resp.Header.Get("X-Gw-Attempts") != "2" {
			t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
		}
		ev := e.usage.last(t, 1)
		if ev.Status != "ok" || ev.Reason != nil || ev.RequestedModel != gptMini || ev.Model != haiku || len(ev.Attempts) != 2 {
			t.Fatalf("event %+v", ev)
		}
		a0, a1 := ev.Attempts[0], ev.Attempts[1]
		if a0.Model != gptMini || a0.Provider != "openai" || deref(a0.Failure) != "rate_limited" ||
			a1.Model != haiku || a1.Provider != "anthropic" || a1.Failure != nil {
			t.Fatalf("attempts %+v", ev.Attempts)
		}
		if resp.Header.Get("X-Request-Id") != deref(ev.RequestID) {
			t.Fatalf("request id %q, event %q", resp.Header.Get("X-Request-Id"), deref(ev.RequestID))
		}

		// Streaming, first time lucky: one attempt.
		stream := e.post(t, `{"model":"`+gptMini+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		if lines := readSSE(t, stream.Body); stream.Header.Get("X-Gw-Model") != gptMini || stream.Header.Get("X-Gw-Attempts") != "1" ||
			!slicesContains(lines, "[DONE]") {
			t.Fatalf("stream headers %v, lines %q", stream.Header, lines)
		}

		// Every attempt failing: the failure answer counts them too.
		e.openai.Enqueue(providerstest.Reply{Status: http.StatusTooManyRequests})
		e.anthropic.Enqueue(providerstest.Reply{Status: http.StatusTooManyRequests})
		failed := e.post(t, `{"model":"`+gptMini+`","messages":[{"role":"user","content":"hi"}]}`)
		if failed.StatusCode != http.StatusTooManyRequests || failed.Header.Get("X-Gw-Attempts") != "2" {
			t.Fatalf("failure %d %v", failed.StatusCode, failed.Header)
		}
		if ev := e.usage.last(t, 3); ev.Status != "error" || deref(ev.Reason) != "rate_limited" || len(ev.Attempts) != 2 ||
			deref(ev.Attempts[1].Failure) != "rate_limited" {
			t.Fatalf("event %+v", ev)
		}

		rows := stored()
		byModel := map[string]int{}
		for _, r := range rows {
			byModel[r.RequestedModel+">"+r.Model]++
		}
		if len(rows) != 3 || byModel[gptMini+">"+haiku] != 2 || byModel[gptMini+">"+gptMini] != 1 {
			t.Fatalf("stored %v", byModel)
		}
		// Reports tell the model asked for from the one that answered.
		now := time.Now()
		w := usage.Window{Start: now.Add(-time.Hour), End: now.Add(time.Hour), PrevStart: now.Add(-2 * time.Hour), PrevEnd: now.Add(-time.Hour), Location: time.UTC}
		b, err := usage.Breakdown(context.Background(), e.st, usage.Query{Window: w, Filter: store.UsageFilter{OrgID: e.org.ID}}, "requested_model")
		if err != nil || len(b.Rows) != 1 || b.Rows[0].Key != gptMini || b.Rows[0].Requests != 3 {
			t.Fatalf("by requested model: %+v %v", b, err)
		}
		r, err := usage.Report(context.Background(), e.st, usage.Query{Window: w, Filter: store.UsageFilter{OrgID: e.org.ID, RequestedModel: gptMini, Model: haiku}}, now)
		if err != nil || r.Totals.Requests != 2 {
			t.Fatalf("asked for mini, answered by haiku: %+v %v", r.Totals, err)
		}
	})
}

// A refused request is metered with why, as a code: never the policy's
// message, which is the operator's text.
func TestDeniedRequestEventHasReason(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e, stored := meteredEnv(t, db)
		e.policy(t, rule(`{"kind":"request","models":[],"stream":true,"capabilities":[]}`, `{"kind":"deny","message":"Streaming is switched off here."}`),
			rule(all, `{"kind":"strict_parameters"}`))
		e.sync(t)
		e.postError(t, `{"model":"`+gptMini+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`, http.StatusForbidden)
		e.postError(t, `{"model":"`+gptMini+`","frobnicate":1,"messages":[{"role":"user","content":"hi"}]}`, http.StatusBadRequest)
		events := e.usage.wait(t, 2)
		for i, want := range []string{"policy_denied", "unknown_parameter"} {
			ev := events[i]
			if ev.Status != "denied" || deref(ev.Reason) != want || len(ev.Attempts) != 0 || ev.RequestedModel != gptMini || ev.Model != gptMini {
				t.Fatalf("event %d: %+v", i, ev)
			}
		}
		rows := stored()
		if len(rows) != 2 {
			t.Fatalf("%d stored", len(rows))
		}
		for _, r := range rows {
			if r.Status != "denied" || r.Reason == nil || strings.Contains(*r.Reason, "Streaming") {
				t.Fatalf("stored %+v", r)
			}
			if ev := usage.Event(&r); ev.Attempts == nil || len(ev.Attempts) != 0 {
				t.Fatalf("listed attempts %+v", ev.Attempts)
			}
		}
	})
}

// A refusal of stream_options marks only that credential and model, until
// the next bundle: the refused model is asked without it (one upstream
// request a stream, counted by gw), another model at the same URL keeps
// its upstream counts, and a new bundle asks again.
func TestStreamOptionsRefusalIsPerModelUntilTheNextBundle(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.sync(t)
		e.openai.RefuseStreamOptions("gpt-4o-mini")
		stream := func(model string) wire.UsageEventIn {
			t.Helper()
			before := len(e.usage.snapshot())
			resp := e.post(t, `{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
			_, _ = io.Copy(io.Discard, resp.Body)
			return e.usage.last(t, before+1)
		}
		withOptions := func(from int) []bool {
			var out []bool
			for _, r := range e.openai.Requests()[from:] {
				_, has := r.Body["stream_options"]
				out = append(out, has)
			}
			return out
		}
		if ev := stream(gptMini); ev.UsageSource != "estimated" || ev.Status != "ok" || fmt.Sprint(withOptions(0)) != "[true false]" {
			t.Fatalf("first stream: %+v, stream_options sent %v", ev, withOptions(0))
		}
		if ev := stream(gptMini); ev.UsageSource != "estimated" || fmt.Sprint(withOptions(2)) != "[false]" {
			t.Fatalf("second stream: %+v, stream_options sent %v", ev, withOptions(2))
		}
		if ev := stream("openai/gpt-4.1-mini"); ev.UsageSource != "upstream" || ev.InputTokens != 12 || fmt.Sprint(withOptions(3)) != "[true]" {
			t.Fatalf("another model at the same URL: %+v, stream_options sent %v", ev, withOptions(3))
		}
		e.policy(t, rule(all, `{"kind":"strict_parameters"}`)) // a new bundle
		e.sync(t)
		if stream(gptMini); fmt.Sprint(withOptions(4)) != "[true false]" {
			t.Fatalf("after a new bundle, stream_options sent %v", withOptions(4))
		}
	})
}

// An upstream that reports no usage still spends the budget: gw's count
// settles the reservations, so a small budget runs out.
func TestNoUsageStillSpendsTheBudget(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.policy(t, budgetRule("0.002", "day", "shared"))
		e.sync(t)
		e.openai.SetDefault(providerstest.Reply{Text: strings.Repeat("words and more words ", 20), NoUsage: true})
		refused := 0
		for range 40 {
			resp := e.post(t, `{"model":"`+gptMini+`","max_tokens":200,"messages":[{"role":"user","content":"tell me a story"}]}`)
			_, _ = io.Copy(io.Discard, resp.Body)
			if resp.StatusCode == http.StatusPaymentRequired || resp.StatusCode == http.StatusTooManyRequests {
				refused++
			}
		}
		if refused == 0 || okCost(t, e) == 0 || okCost(t, e) > 2_000_000 {
			t.Fatalf("%d of 40 refused; ok events cost %d nano-USD of a 2,000,000 budget", refused, okCost(t, e))
		}
		for _, ev := range e.usage.snapshot() {
			if ev.Status == "ok" && (ev.UsageSource != "estimated" || ev.CostUSD == "0") {
				t.Fatalf("event %+v", ev)
			}
		}
	})
}

// A prompt past a model's long-context threshold is priced whole at the
// long-context tier, and 1-hour cache writes at their own price, as the
// provider bills them.
func TestLongContextAndOneHourCachePrices(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.sync(t)
		const sonnet = "anthropic/claude-sonnet-4-5-20250929"
		for _, c := range []struct {
			usage providerstest.Usage
			want  string
			long  bool
		}{
			// 250,000 × $6 + 1,000 × $22.50 per MTok (the long tier).
			{providerstest.Usage{Input: 250_000, Output: 1000}, "1.5225", true},
			// 1,000 × $3 + 100 × $15 + 500 × $3.75 + 1,500 × $6 per MTok.
			{providerstest.Usage{Input: 1000, Output: 100, CacheWrite: 2000, CacheWrite1h: 1500}, "0.015375", false},
		} {
			e.anthropic.Enqueue(providerstest.Reply{Text: "ok", Usage: c.usage})
			before := len(e.usage.snapshot())
			resp := e.post(t, `{"model":"`+sonnet+`","messages":[{"role":"user","content":"hi"}]}`)
			_, _ = io.Copy(io.Discard, resp.Body)
			ev := e.usage.last(t, before+1)
			if ev.CostUSD != c.want || ev.CacheWrite1hTokens != c.usage.CacheWrite1h || ev.Provenance == nil ||
				ev.Provenance.Prices == nil || ev.Provenance.Prices.LongContext != c.long {
				t.Fatalf("%+v: cost %s, want %s; provenance %+v", c.usage, ev.CostUSD, c.want, ev.Provenance)
			}
		}
	})
}

// A stream that never ends is ended at the plane's maximum stream
// duration, with an error event to the caller, and billed for what it
// relayed.
func TestMaxStreamDurationEndsAnEndlessStream(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, func(o *dataplane.Options) { o.MaxStreamDuration = 300 * time.Millisecond })
		e.sync(t)
		forever := make(chan struct{})
		defer close(forever)
		e.openai.Enqueue(providerstest.Reply{Text: "an answer that never ends", Hold: forever, Usage: providerstest.Usage{Input: 5, Output: 500}})
		started := time.Now()
		resp := e.post(t, `{"model":"`+gptMini+`","stream":true,"messages":[{"role":"user","content":"go on forever"}]}`)
		lines := readSSE(t, resp.Body)
		if took := time.Since(started); took > 5*time.Second {
			t.Fatalf("the stream lasted %s", took)
		}
		if len(lines) == 0 || !strings.Contains(lines[len(lines)-1], `"error"`) {
			t.Fatalf("stream ended with %v, want an error event", lines)
		}
		ev := e.usage.last(t, 1)
		if ev.Status != "error" || deref(ev.Reason) != "max_stream_duration" || ev.UsageSource != "estimated" || ev.OutputTokens < 1 || ev.CostUSD == "0" {
			t.Fatalf("event %+v", ev)
		}
	})
}

// A Responses request translated for an OpenAI-compatible upstream (it
// speaks Chat Completions only) carries the upstream's reasoning count to
// the client's answer and to the usage event.
func TestTranslatedResponsesCarryReasoningTokens(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.credential(t, &e.org.ID, nil, "groq", e.openai.Key, e.openai.BaseURL())
		e.sync(t)
		const oss = "groq/openai/gpt-oss-120b"
		for _, stream := range []bool{false, true} {
			e.openai.Enqueue(providerstest.Reply{Text: "thought it through", Usage: providerstest.Usage{Input: 50, Output: 300, Reasoning: 240}})
			req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/inf/v1/responses",
				strings.NewReader(fmt.Sprintf(`{"model":%q,"stream":%v,"input":"think"}`, oss, stream)))
			req.Header.Set("Authorization", "Bearer "+e.token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(raw), `"reasoning_tokens":240`) {
				t.Fatalf("stream %v: %d %s", stream, resp.StatusCode, raw)
			}
			if up := e.openai.Last(t); up.Path != "/v1/chat/completions" {
				t.Fatalf("the upstream was called at %s", up.Path)
			}
			ev := e.usage.last(t, len(e.usage.snapshot()))
			if ev.ReasoningTokens != 240 || ev.OutputTokens != 300 || ev.UsageSource != "upstream" {
				t.Fatalf("stream %v: event %+v", stream, ev)
			}
		}
	})
}
