package dataplane_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/shopspring/decimal"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// expiryStart is the clock the expiry tests submit their batches at.
var expiryStart = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// expiredErrorLines reads an expired batch's error file and checks each
// line is OpenAI's batch_expired error with no response; it returns
// their custom ids in order.
func expiredErrorLines(t *testing.T, c *openai.Client, fileID string) []string {
	t.Helper()
	body := fileBytes(t, c, fileID)
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		var o struct {
			ID       string           `json:"id"`
			CustomID string           `json:"custom_id"`
			Response *json.RawMessage `json:"response"`
			Error    struct{ Code, Message string }
		}
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatalf("error file line %q: %v", l, err)
		}
		if o.Response != nil || o.Error.Code != "batch_expired" ||
			o.Error.Message != "This request could not be executed before the completion window expired." || !strings.HasPrefix(o.ID, "batch_req_") {
			t.Fatalf("expired line: %s", l)
		}
		ids = append(ids, o.CustomID)
	}
	return ids
}

// A batch gw runs whose 24-hour completion window passes with its lines
// still pending ends expired (the OpenAI Go SDK reads it): the lines are
// never sent, cost nothing and leave no usage event; they count as failed
// and are in the error file as OpenAI's batch_expired. Before the window
// ends, nothing expires.
func TestBatchExpiresAfterItsCompletionWindow(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e, clk := expiryEnv(t, db)
		e.openai.SetDefault(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 10, Output: 2}})
		id := submitLines(t, e, "x", 3)
		c := e.sdk()

		// A second short of the window: still in progress. The runner is
		// not started, so its lines stay pending; the SDK shows when the
		// window ends.
		clk.set(expiryStart.Add(24*time.Hour - time.Second))
		b, err := c.Batches.Get(context.Background(), id)
		if err != nil || b.Status != openai.BatchStatusInProgress || b.ExpiresAt != expiryStart.Add(24*time.Hour).Unix() {
			t.Fatalf("before the window ends: %v %+v", err, b)
		}

		clk.set(expiryStart.Add(24*time.Hour + time.Second))
		runner(t, e.plane)
		done := waitBatch(t, c, id, openai.BatchStatusExpired)
		if done.RequestCounts.Total != 3 || done.RequestCounts.Completed != 0 || done.RequestCounts.Failed != 3 {
			t.Fatalf("request counts: %+v", done.RequestCounts)
		}
		if done.ExpiredAt != clk.now().Unix() || done.CompletedAt != 0 || done.OutputFileID != "" || done.ErrorFileID == "" {
			t.Fatalf("expired batch: %+v", done)
		}
		if ids := expiredErrorLines(t, c, done.ErrorFileID); strings.Join(ids, ",") != "x0,x1,x2" {
			t.Fatalf("error file's lines: %v", ids)
		}
		lines, err := e.st.BatchLines(context.Background(), id, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			if l.Status != "expired" || l.RequestID != nil || l.CostNanoUSD != 0 {
				t.Fatalf("line %+v", l)
			}
		}
		time.Sleep(20 * time.Millisecond) // the runner goes on; nothing more is sent
		if n := len(e.openai.Requests()); n != 0 {
			t.Fatalf("upstream saw %d requests, want none", n)
		}
		if n := len(e.usage.snapshot()); n != 0 {
			t.Fatalf("%d usage events, want none", n)
		}
	})
}

// A line in flight when the window passes ends as it would have: it
// completes, in the output file, metered once at its cost; the lines
// still pending then expire, never sent, and the batch ends expired.
func TestBatchLineRunningAtExpiryEnds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e, clk := expiryEnv(t, db)
		e.openai.SetDefault(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 10, Output: 2}})
		e.openai.ReplyWhen("hello r0", providerstest.Reply{Text: "slow", Usage: providerstest.Usage{Input: 10, Output: 2}, Delay: time.Second})
		id := submitLines(t, e, "r", 3)
		c := e.sdk()
		runner(t, e.plane)
		for deadline := time.Now().Add(time.Minute); len(e.openai.Requests()) == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the first line was never sent")
			}
		}
		// r0 is at the upstream: the window passes meanwhile.
		clk.set(expiryStart.Add(25 * time.Hour))
		done := waitBatch(t, c, id, openai.BatchStatusExpired)
		if done.RequestCounts.Total != 3 || done.RequestCounts.Completed != 1 || done.RequestCounts.Failed != 2 || done.OutputFileID == "" {
			t.Fatalf("expired batch: %+v", done)
		}
		if ids := expiredErrorLines(t, c, done.ErrorFileID); strings.Join(ids, ",") != "r1,r2" {
			t.Fatalf("error file's lines: %v", ids)
		}
		out := fileBytes(t, c, done.OutputFileID)
		if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 1 || !strings.Contains(lines[0], `"custom_id":"r0"`) ||
			!strings.Contains(lines[0], "slow") {
			t.Fatalf("output file: %s", out)
		}
		time.Sleep(20 * time.Millisecond)
		if n := len(e.openai.Requests()); n != 1 {
			t.Fatalf("upstream saw %d requests, want r0's only", n)
		}
		events := e.usage.snapshot()
		if len(events) != 1 || events[0].BatchID == nil || *events[0].BatchID != id || events[0].Status != "ok" ||
			!decimal.RequireFromString(events[0].CostUSD).IsPositive() {
			t.Fatalf("events: %+v", events)
		}
	})
}

// An Anthropic message batch gw runs ends when its window passes with
// requests pending: processing_status ended, request_counts.expired, each
// such request's result {"type": "expired"}; nothing sent, no event.
func TestMessageBatchExpires(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e, clk := expiryEnv(t, db)
		e.anthropic.SetDefault(providerstest.Reply{Text: "hi", Usage: providerstest.Usage{Input: 10, Output: 2}})
		c, ctx := e.anthropicClient(), context.Background()
		params := func(id string) anthropic.MessageBatchNewParamsRequest {
			return anthropic.MessageBatchNewParamsRequest{CustomID: id, Params: anthropic.MessageBatchNewParamsRequestParams{
				Model: anthropic.Model(haiku), MaxTokens: 20, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello " + id))}}}
		}
		b, err := c.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: []anthropic.MessageBatchNewParamsRequest{params("a"), params("b")}})
		if err != nil {
			t.Fatal(err)
		}
		clk.set(expiryStart.Add(24*time.Hour + time.Minute))
		runner(t, e.plane)
		done := waitMessageBatch(t, c, b.ID)
		rc := done.RequestCounts
		if rc.Expired != 2 || rc.Processing != 0 || rc.Succeeded != 0 || rc.Errored != 0 || rc.Canceled != 0 || done.ResultsURL == "" {
			t.Fatalf("ended batch: %s", done.RawJSON())
		}
		stream := c.Messages.Batches.ResultsStreaming(ctx, b.ID, anthropic.MessageBatchResultsParams{})
		var got []string
		for stream.Next() {
			r := stream.Current()
			if r.Result.Type != "expired" {
				t.Fatalf("result: %s", r.RawJSON())
			}
			got = append(got, r.CustomID)
		}
		if err := stream.Err(); err != nil || strings.Join(got, ",") != "a,b" {
			t.Fatalf("results: %v %v", err, got)
		}
		if n := len(e.anthropic.Requests()); n != 0 {
			t.Fatalf("upstream saw %d requests, want none", n)
		}
		if n := len(e.usage.snapshot()); n != 0 {
			t.Fatalf("%d usage events, want none", n)
		}
	})
}

// A remote data plane expires a batch's lines through the control plane's
// expire op, with its own clock, and repeats the call when its answer was
// lost (expiring again changes nothing).
func TestRemoteBatchesExpireLines(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	cp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls = append(calls, r.URL.Path+" "+string(raw))
		first := len(calls) == 1
		mu.Unlock()
		if first {
			// The answer is lost: the connection is cut.
			hj, _ := w.(http.Hijacker)
			conn, _, _ := hj.Hijack()
			conn.Close()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":{"ok":false,"n":2}}` + "\n"))
	}))
	defer cp.Close()
	c, err := client.New(client.Options{Server: cp.URL, Token: "sk-cp-test"})
	if err != nil {
		t.Fatal(err)
	}
	at := expiryStart.Add(25 * time.Hour)
	n, err := dataplane.NewRemoteBatches(c, "dp-test").ExpireLines(context.Background(), "batch_x", at)
	if err != nil || n != 2 {
		t.Fatalf("expired %d (%v), want 2", n, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 2 || calls[0] != calls[1] || !strings.HasPrefix(calls[0], "/api/v1/data-plane/batch-store/expire ") ||
		!strings.Contains(calls[0], `"batch_id":"batch_x"`) || !strings.Contains(calls[0], `"now":"2026-11-24T11:00:00Z"`) {
		t.Fatalf("calls: %q", calls)
	}
}

// expiryEnv is a plane whose batches gw's runner sends, on a clock the
// test moves, starting at expiryStart.
func expiryEnv(t *testing.T, db *bun.DB) (*infEnv, *fakeClock) {
	t.Helper()
	clk := &fakeClock{}
	clk.set(expiryStart)
	e := newInfEnv(t, db, withBatches(db), withClock(clk.now))
	gatewayBatches(t, e)
	e.sync(t)
	return e, clk
}
