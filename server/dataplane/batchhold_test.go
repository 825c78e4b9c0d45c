package dataplane_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/shopspring/decimal"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// A gw-run batch's hold (docs/batches.md, "The batch's hold"): its bound
// is held from its submission for its whole run, each line drawing its
// share as it is sent.

// bigRequest is a synchronous chat completion to model whose bound is
// about amount less 200,000 nano-dollars (less its input's few tokens):
// it fits the budget's amount, not the amount less a batch's hold.
func bigRequest(model string, outputPrice, amount int64) string {
	return fmt.Sprintf(`{"model":"%s","max_tokens":%d,"messages":[{"role":"user","content":"all of it"}]}`, model, (amount-200_000)/outputPrice)
}

// refusedBusy checks that a request the budget's holds leave no room for
// is refused at once as busy (the plane waits for no room), not sent.
func refusedBusy(t *testing.T, url, token, body string) {
	t.Helper()
	status, answer := postTo(t, url, token, body)
	if status != http.StatusTooManyRequests || !strings.Contains(answer, "budget_busy") {
		t.Fatalf("a request beside the batch's hold: %d %s, want 429 budget_busy", status, answer)
	}
}

// holdDialect is a batch dialect: how a batch of n lines is submitted,
// waited for until it ended (its completed and failed lines), and
// cancelled, and the synchronous request that would take its room.
type holdDialect struct {
	name   string
	amount string
	lines  int
	big    string
	submit func(t *testing.T, e *infEnv, n int) string
	// wait waits for the batch to end, completed or cancelled.
	wait   func(t *testing.T, e *infEnv, id string, cancelled bool) (completed, failed int)
	cancel func(t *testing.T, e *infEnv, id string)
}

var holdDialects = []holdDialect{
	{name: "openai", amount: "0.004", lines: 10,
		// gpt-4o-mini: a line is bound at about $0.00033 at the
		// synchronous prices gw's runner pays; ten hold $0.0033.
		big: bigRequest(gptMini, 600, 4_000_000),
		submit: func(t *testing.T, e *infEnv, n int) string {
			return submitLines(t, e, "h", n)
		},
		wait: func(t *testing.T, e *infEnv, id string, cancelled bool) (int, int) {
			status := openai.BatchStatusCompleted
			if cancelled {
				status = openai.BatchStatusCancelled
			}
			b := waitBatch(t, e.sdk(), id, status)
			return int(b.RequestCounts.Completed), int(b.RequestCounts.Failed)
		},
		cancel: func(t *testing.T, e *infEnv, id string) {
			if status, body := call(t, http.MethodPost, e.srv.URL+"/inf/v1/batches/"+id+"/cancel", e.token, ""); status != 200 {
				t.Fatalf("cancel: %d %s", status, body)
			}
		}},
	{name: "anthropic", amount: "0.012", lines: 2,
		// Claude Haiku 4.5: a line is bound at about $0.0043 (its input
		// at the one-hour cache write's price); two hold $0.0086.
		big: bigRequest(haiku, 5000, 12_000_000),
		submit: func(t *testing.T, e *infEnv, n int) string {
			reqs := make([]anthropic.MessageBatchNewParamsRequest, n)
			for i := range reqs {
				reqs[i] = anthropic.MessageBatchNewParamsRequest{CustomID: fmt.Sprint("m", i), Params: anthropic.MessageBatchNewParamsRequestParams{
					Model: anthropic.Model(haiku), MaxTokens: 20, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))}}}
			}
			c := e.anthropicClient()
			b, err := c.Messages.Batches.New(context.Background(), anthropic.MessageBatchNewParams{Requests: reqs})
			if err != nil {
				t.Fatal(err)
			}
			return b.ID
		},
		wait: func(t *testing.T, e *infEnv, id string, _ bool) (int, int) {
			b := waitMessageBatch(t, e.anthropicClient(), id)
			return int(b.RequestCounts.Succeeded), int(b.RequestCounts.Errored)
		},
		cancel: func(t *testing.T, e *infEnv, id string) {
			c := e.anthropicClient()
			if _, err := c.Messages.Batches.Cancel(context.Background(), id, anthropic.MessageBatchCancelParams{}); err != nil {
				t.Fatal(err)
			}
		}},
}

// holdEnv is a plane running batches on gw's runner whose requests wait
// for no room, under a monthly budget of amount.
func holdEnv(t *testing.T, db *bun.DB, amount string) *infEnv {
	e := newInfEnv(t, db, withBatches(db), func(o *dataplane.Options) { o.BudgetWait = -1 })
	gatewayBatches(t, e)
	e.policy(t, budgetRule(amount, "month", "shared"))
	e.sync(t)
	reply := providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 10, Output: 2}, Delay: 20 * time.Millisecond}
	e.openai.SetDefault(reply)
	e.anthropic.SetDefault(reply)
	return e
}

// TestBatchHoldsItsBoundForItsRun: a batch accepted keeps its room from
// its submission to its end. A synchronous request that would take it —
// one that fits the budget, not the budget less the batch — is refused
// before the runner starts and while the lines run (earlier, the batch's
// bound was given back at once, and such a request took the room its
// lines then lacked); every line completes; once the batch ended, the
// request fits.
func TestBatchHoldsItsBoundForItsRun(t *testing.T) {
	for _, d := range holdDialects {
		t.Run(d.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *bun.DB) {
				e := holdEnv(t, db, d.amount)
				id := d.submit(t, e, d.lines)
				refusedBusy(t, e.srv.URL, e.token, d.big)
				runner(t, e.plane)
				waitUntil(t, "the first line", func() bool { return len(e.openai.Requests())+len(e.anthropic.Requests()) > 0 })
				if d.lines > 2 {
					refusedBusy(t, e.srv.URL, e.token, d.big)
				}
				if completed, failed := d.wait(t, e, id, false); completed != d.lines || failed != 0 {
					t.Fatalf("batch: %d completed, %d failed, want %d and 0", completed, failed, d.lines)
				}
				if status, body := postTo(t, e.srv.URL, e.token, d.big); status != 200 {
					t.Fatalf("the request once the batch ended: %d %s", status, body)
				}
				if n := len(e.openai.Requests()) + len(e.anthropic.Requests()); n != d.lines+1 {
					t.Fatalf("the upstreams saw %d requests, want the %d lines and the last request", n, d.lines)
				}
			})
		})
	}
}

// TestBatchCancelGivesBackItsHold: a cancelled batch's pending lines give
// their shares back at once, in both dialects: the synchronous request
// its hold refused fits right after the cancel.
func TestBatchCancelGivesBackItsHold(t *testing.T) {
	for _, d := range holdDialects {
		t.Run(d.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *bun.DB) {
				e := holdEnv(t, db, d.amount)
				id := d.submit(t, e, d.lines)
				refusedBusy(t, e.srv.URL, e.token, d.big)
				d.cancel(t, e, id)
				if status, body := postTo(t, e.srv.URL, e.token, d.big); status != 200 {
					t.Fatalf("the request right after the cancel: %d %s", status, body)
				}
				// The runner ends the batch, sending none of its lines.
				runner(t, e.plane)
				if completed, _ := d.wait(t, e, id, true); completed != 0 {
					t.Fatalf("%d lines of a cancelled batch completed", completed)
				}
				if n := len(e.openai.Requests()) + len(e.anthropic.Requests()); n != 1 {
					t.Fatalf("the upstreams saw %d requests, want the synchronous one", n)
				}
			})
		})
	}
}

// TestBatchHoldTakenUpAfterRestart: a process that stops mid-batch and
// starts again with its budget journal (the same budget holder) holds the
// pending lines' shares again — the journal did not count the hold as
// spent, so nothing is stranded — and a request that would take their
// room is refused while they run; every line is sent and billed once.
func TestBatchHoldTakenUpAfterRestart(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := holdEnv(t, db, "0.004")
		dir := t.TempDir()
		first := e.crashPlane(t, dir, e.usage)
		const n = 12
		var content strings.Builder
		for i := range n {
			content.WriteString(batchLine(fmt.Sprint("r", i), gptMini) + "\n")
		}
		status, body := call(t, http.MethodPost, first.url+"/inf/v1/batches", e.token,
			`{"input_file_id":"`+fileID(t, first.url, e.token, content.String())+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`)
		if status != 200 {
			t.Fatalf("submission: %d %s", status, body)
		}
		var b struct{ ID string }
		_ = json.Unmarshal(body, &b)
		big := bigRequest(gptMini, 600, 4_000_000)
		refusedBusy(t, first.url, e.token, big)
		stop := runner(t, first.plane)
		waitUntil(t, "three lines", func() bool { return len(e.openai.Requests()) >= 3 })
		stop()
		first.stopSync()
		sent := len(e.openai.Requests())

		// The next process, with the same journals: each line slower, so
		// the request below comes while lines are pending.
		e.openai.SetDefault(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 10, Output: 2}, Delay: 100 * time.Millisecond})
		next := e.crashPlane(t, dir, e.usage)
		runner(t, next.plane)
		// The runner holds the batch again before it sends its next line.
		waitUntil(t, "a line after the restart", func() bool { return len(e.openai.Requests()) > sent })
		refusedBusy(t, next.url, e.token, big)
		done := waitBatch(t, e.sdk(), b.ID, openai.BatchStatusCompleted)
		if done.RequestCounts.Completed != n || len(e.openai.Requests()) != n || sent >= n {
			t.Fatalf("after the restart: %+v; upstream saw %d (the first process %d), want %d", done.RequestCounts, len(e.openai.Requests()), sent, n)
		}
		// One event a line: the next process's request journal may record
		// an event again, under its id, which the store keeps once.
		lines := map[string]string{}
		for _, ev := range e.usage.snapshot() {
			if ev.BatchID == nil {
				continue
			}
			if id, ok := lines[*ev.RequestID]; (ok && id != ev.ID.String()) || ev.Status != "ok" {
				t.Fatalf("a line with two events, or not ok: %+v", ev)
			}
			lines[*ev.RequestID] = ev.ID.String()
		}
		if len(lines) != n {
			t.Fatalf("%d lines with events, want %d", len(lines), n)
		}
		if status, body := postTo(t, next.url, e.token, big); status != 200 {
			t.Fatalf("the request once the batch ended: %d %s", status, body)
		}
	})
}

// TestBatchLinesDrawFromTheHold: a budget of the batch's bound and less
// than a line's own bound more: every line finds its room only in the
// batch's hold, which it draws in the same step as its reservation.
func TestBatchLinesDrawFromTheHold(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db), func(o *dataplane.Options) { o.BudgetWait = -1 })
		gatewayBatches(t, e)
		e.sync(t)
		e.openai.SetDefault(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 10, Output: 2}})
		const n = 6
		var content strings.Builder
		for i := range n {
			content.WriteString(batchLine(fmt.Sprint("d", i), gptMini) + "\n")
		}
		file := fileID(t, e.srv.URL, e.token, content.String())
		status, body := submit(t, e, file)
		if status != 200 {
			t.Fatalf("submission without a budget: %d %s", status, body)
		}
		var b struct{ ID string }
		_ = json.Unmarshal(body, &b)
		var bound int64
		if err := db.NewRaw(`SELECT reserved_nano_usd FROM batches WHERE id = ?`, b.ID).Scan(context.Background(), &bound); err != nil {
			t.Fatal(err)
		}
		if status, body := call(t, http.MethodPost, e.srv.URL+"/inf/v1/batches/"+b.ID+"/cancel", e.token, ""); status != 200 {
			t.Fatalf("cancel: %d %s", status, body)
		}
		// A line's own bound is some 15,000 nano-dollars (its prompt, 20
		// output tokens at $0.60 a million).
		e.policy(t, budgetRule(decimal.New(bound+5_000, -9).String(), "month", "shared"))
		e.sync(t)
		if status, body = submit(t, e, file); status != 200 {
			t.Fatalf("submission: %d %s", status, body)
		}
		_ = json.Unmarshal(body, &b)
		if status, answer := postTo(t, e.srv.URL, e.token, budgetRequest); status != http.StatusTooManyRequests {
			t.Fatalf("a small request beside the hold: %d %s, want 429", status, answer)
		}
		runner(t, e.plane)
		done := waitBatch(t, e.sdk(), b.ID, openai.BatchStatusCompleted)
		if done.RequestCounts.Completed != n || done.RequestCounts.Failed != 0 {
			t.Fatalf("batch %+v", done.RequestCounts)
		}
	})
}

// TestBatchHoldReleasedWhenAnotherProcessEndsIt: the lines of a batch one
// process accepted are run and the batch finished by another (a remote
// data plane's runner, here a second plane on the same store). The
// accepting process gives back the allowance it holds beyond its hold
// (its periodic sync), so the other's lines find room; once its runner
// sees the batch no longer active, its hold goes back too.
func TestBatchHoldReleasedWhenAnotherProcessEndsIt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := holdEnv(t, db, "0.004")
		id := submitLines(t, e, "o", 10)
		big := bigRequest(gptMini, 600, 4_000_000)
		refusedBusy(t, e.srv.URL, e.token, big)
		syncLoop(t, e.plane)

		// The other process waits for room as any plane does.
		o := e.opts
		o.BudgetWait = 0
		other := dataplane.NewPlane(e.signer.Public().(ed25519.PublicKey), o)
		if err := (&publish.Refresher{Compiler: e.refresh.Compiler, Plane: other, Store: e.st}).RefreshAll(context.Background()); err != nil {
			t.Fatal(err)
		}
		syncLoop(t, other)
		runner(t, other)
		done := waitBatch(t, e.sdk(), id, openai.BatchStatusCompleted)
		if done.RequestCounts.Completed != 10 {
			t.Fatalf("batch %+v", done.RequestCounts)
		}
		// The accepting process still holds the batch's bound: its runner
		// has not looked yet.
		refusedBusy(t, e.srv.URL, e.token, big)
		runner(t, e.plane)
		waitUntil(t, "the hold given back", func() bool {
			status, _ := postTo(t, e.srv.URL, e.token, big)
			return status == http.StatusOK
		})
	})
}
