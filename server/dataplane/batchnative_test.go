package dataplane_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/shopspring/decimal"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// Native batches (issue 34; docs/batches.md): lines routed to an openai
// or anthropic credential run on the provider's own batch API, spoken by
// the fakes (providerstest/batchapi.go), not by gw line by line.

// syncCost is the cost of one synchronous request to model with the
// fake's default reply, the price a batch line's event is half of.
func syncCost(t *testing.T, e *infEnv, model string) decimal.Decimal {
	t.Helper()
	if resp := e.post(t, `{"model":"`+model+`","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != 200 {
		t.Fatalf("synchronous request: %d", resp.StatusCode)
	}
	cost := decimal.RequireFromString(e.usage.snapshot()[0].CostUSD)
	e.usage.reset()
	return cost
}

// batchEvents checks that events are one per line of batch (by request
// id, none twice), each at the batch price class, and returns them by
// request id.
func batchEvents(t *testing.T, events []wire.UsageEventIn, batch string, lines int) map[string]wire.UsageEventIn {
	t.Helper()
	return batchEventsPriced(t, events, batch, lines, func(string) string { return wire.PriceClassBatch })
}

// batchEventsPriced is batchEvents with each line's price class given by
// its request id: "batch" for a line its provider ran, "" for one gw's
// runner sent (priced as the synchronous request it was).
func batchEventsPriced(t *testing.T, events []wire.UsageEventIn, batch string, lines int, class func(requestID string) string) map[string]wire.UsageEventIn {
	t.Helper()
	out := map[string]wire.UsageEventIn{}
	for _, ev := range events {
		if ev.BatchID == nil || *ev.BatchID != batch || ev.RequestID == nil {
			t.Fatalf("event does not name its batch: %+v", ev)
		}
		if _, twice := out[*ev.RequestID]; twice {
			t.Fatalf("line %s metered twice", *ev.RequestID)
		}
		var prov struct{ Prices wire.UsagePrices }
		raw, _ := json.Marshal(ev.Provenance)
		_ = json.Unmarshal(raw, &prov)
		if want := class(*ev.RequestID); prov.Prices.PriceClass != want {
			t.Fatalf("line %s: provenance prices %s, want price class %q", *ev.RequestID, raw, want)
		}
		out[*ev.RequestID] = ev
	}
	if len(out) != lines {
		t.Fatalf("%d events, want one per line (%d)", len(out), lines)
	}
	return out
}

// A batch of openai lines runs on OpenAI's Batch API: one input file
// uploaded with the upstream model's name, one provider batch, the
// output and error files read back into gw's own, each line one usage
// event at the batch price of the usage the provider reported; a line
// the provider failed costs nothing.
func TestNativeBatchRunsOnTheProviderBatchAPI(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		e.sync(t)
		e.openai.SetDefault(providerstest.Reply{Text: "hi", Usage: providerstest.Usage{Input: 1000, Output: 101}})
		e.openai.ReplyWhen("hello bad", providerstest.Reply{Status: http.StatusBadRequest, Message: "this one is refused"})
		sync := syncCost(t, e, gptMini)
		c := e.sdk()

		content := batchLine("a", gptMini) + "\n" + batchLine("bad", gptMini) + "\n" + batchLine("c", gptMini) + "\n"
		b := batchRef{submitFile(t, e, content)}
		runner(t, e.plane)
		done := waitBatch(t, c, b.ID, openai.BatchStatusCompleted)
		if done.RequestCounts.Completed != 2 || done.RequestCounts.Failed != 1 || done.OutputFileID == "" || done.ErrorFileID == "" {
			t.Fatalf("completed batch: %s", done.RawJSON())
		}
		// One input file uploaded, one batch; once read back, the input,
		// output and error files deleted at the provider.
		calls := e.openai.BatchCalls()
		deleted := 0
		for _, c := range calls {
			if strings.HasPrefix(c, "DELETE /v1/files/") {
				deleted++
			}
		}
		if e.openai.BatchesCreated() != 1 || !slices.Contains(calls, "POST /v1/files") || deleted != 3 {
			t.Fatalf("provider batch calls: %v", calls)
		}
		// The provider ran the lines (its batch answers them through the
		// fake's handler), with the upstream model's name.
		reqs := e.openai.Requests()
		if len(reqs) != 4 { // the synchronous request and 3 lines
			t.Fatalf("the provider answered %d requests, want 4", len(reqs))
		}
		for _, r := range reqs[1:] {
			if r.Body["model"] != "gpt-4o-mini" {
				t.Fatalf("a line reached the provider with model %v", r.Body["model"])
			}
		}

		read := func(id string) []map[string]any { return fileLines(t, c, id) }
		requestIDs := map[string]string{}
		for i, l := range read(done.OutputFileID) {
			resp := l["response"].(map[string]any)
			body := resp["body"].(map[string]any)
			if l["custom_id"] != []string{"a", "c"}[i] || resp["status_code"] != 200.0 || l["error"] != nil || body["model"] != gptMini {
				t.Fatalf("output line %d: %v", i+1, l)
			}
			requestIDs[resp["request_id"].(string)] = l["custom_id"].(string)
		}
		errs := read(done.ErrorFileID)
		if len(errs) != 1 || errs[0]["custom_id"] != "bad" || !strings.Contains(fmt.Sprint(errs[0]["error"]), "this one is refused") {
			t.Fatalf("error file: %v", errs)
		}

		nativeLineEvents(t, e, b.ID, requestIDs, sync)
	})
}

// nativeLineEvents checks the events of a 3-line batch its provider ran,
// one line refused: each event's id its line's request id (fixed at
// submission, so recorded once however often results are read); the
// lines that succeeded (requestIDs, by request id) at half the
// synchronous cost sync of 1000 input and 101 output tokens, the refused
// one an error at $0.
func nativeLineEvents(t *testing.T, e *infEnv, batch string, requestIDs map[string]string, sync decimal.Decimal) {
	t.Helper()
	half := sync.Div(decimal.NewFromInt(2))
	for id, ev := range batchEvents(t, e.usage.snapshot(), batch, 3) {
		if ev.ID.String() != id {
			t.Fatalf("event id %s is not its line's request id %s", ev.ID, id)
		}
		switch {
		case requestIDs[id] != "":
			if ev.Status != "ok" || !decimal.RequireFromString(ev.CostUSD).Equal(half) || ev.InputTokens != 1000 || ev.OutputTokens != 101 {
				t.Fatalf("line %s: %+v, want %s (half the synchronous %s)", requestIDs[id], ev, half, sync)
			}
		default:
			if ev.Status != "error" || !decimal.RequireFromString(ev.CostUSD).IsZero() {
				t.Fatalf("the failed line costs %s (%s), want 0", ev.CostUSD, ev.Status)
			}
		}
	}
}

// Anthropic's Message Batches: a message batch of anthropic requests runs
// on Anthropic's own, its results (with their cache tokens) read back, a
// request priced at the batch price of the usage Anthropic reported.
func TestNativeMessageBatch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		e.sync(t)
		usage := providerstest.Usage{Input: 1000, Output: 101, CacheRead: 300, CacheWrite: 40}
		e.anthropic.SetDefault(providerstest.Reply{Text: "hi", Usage: usage})
		sync := syncCost(t, e, haiku)
		c := e.anthropicClient()

		// custom_ids Anthropic itself would refuse: gw's own go upstream.
		b := newMessageBatch(t, c, haiku, "a.1", "b 2")
		runner(t, e.plane)
		done := waitMessageBatch(t, c, b.ID)
		if done.RequestCounts.Succeeded != 2 || e.anthropic.BatchesCreated() != 1 {
			t.Fatalf("ended batch: %s (%d provider batches)", done.RawJSON(), e.anthropic.BatchesCreated())
		}
		// Once read, the provider's copy (its results) is deleted there.
		if !slices.ContainsFunc(e.anthropic.BatchCalls(), func(s string) bool { return strings.HasPrefix(s, "DELETE /v1/messages/batches/msgbatch_fake") }) {
			t.Fatalf("the provider's message batch was not deleted: %v", e.anthropic.BatchCalls())
		}
		nativeMessageBatchResults(t, e, c, b.ID, haiku, sync)
	})
}

// A gw restarted while its provider batch runs takes polling up where
// it was, submitting nothing twice: not even when the first process
// stopped after the provider accepted the batch and before gw recorded
// its id (simulated: the group put back to submitting, its id cleared),
// since the input file, uploaded for this group alone, finds it. Every
// line is metered once.
func TestNativeBatchSurvivesRestart(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		e.sync(t)
		e.openai.SetDefault(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 10, Output: 2}})
		e.anthropic.SetDefault(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 10, Output: 2}})
		e.openai.HoldBatches(true)
		e.anthropic.HoldBatches(true)
		const n = 5
		b := struct{ ID string }{submitLines(t, e, "r", n)}
		ac := e.anthropicClient()
		mb, err := ac.Messages.Batches.New(context.Background(), anthropic.MessageBatchNewParams{Requests: []anthropic.MessageBatchNewParamsRequest{
			{CustomID: "m", Params: anthropic.MessageBatchNewParamsRequestParams{Model: anthropic.Model(haiku), MaxTokens: 20,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))}}}}})
		if err != nil {
			t.Fatal(err)
		}

		stop := runner(t, e.plane)
		waitUntil(t, "both provider batches created", func() bool { return e.openai.BatchesCreated() == 1 && e.anthropic.BatchesCreated() == 1 })
		waitUntil(t, "their ids recorded", func() bool {
			n, err := db.NewSelect().TableExpr("batch_upstreams").Where("status = ?", "submitted").Count(context.Background())
			return err == nil && n == 2
		})
		stop()
		// The first process's create answers, as if never recorded.
		if _, err := db.NewRaw(`UPDATE batch_upstreams SET status = 'submitting', upstream_batch_id = NULL`).Exec(context.Background()); err != nil {
			t.Fatal(err)
		}

		p := dataplane.NewPlane(e.signer.Public().(ed25519.PublicKey), e.opts)
		r := &publish.Refresher{Compiler: e.refresh.Compiler, Plane: p, Store: e.st}
		if err := r.RefreshAll(context.Background()); err != nil {
			t.Fatal(err)
		}
		e.openai.HoldBatches(false)
		e.anthropic.HoldBatches(false)
		runner(t, p)
		done := waitBatch(t, e.sdk(), b.ID, openai.BatchStatusCompleted)
		waitMessageBatch(t, ac, mb.ID)
		if done.RequestCounts.Completed != n || e.openai.BatchesCreated() != 1 || e.anthropic.BatchesCreated() != 1 {
			t.Fatalf("after the restart: %s; provider batches created: openai %d, anthropic %d, want 1 each",
				done.RawJSON(), e.openai.BatchesCreated(), e.anthropic.BatchesCreated())
		}
		if got := len(e.openai.Requests()); got != n {
			t.Fatalf("the provider ran %d lines, want %d", got, n)
		}
		var events []wire.UsageEventIn
		for _, ev := range e.usage.snapshot() {
			if *ev.BatchID == b.ID {
				events = append(events, ev)
			}
		}
		batchEvents(t, events, b.ID, n)
	})
}

// Cancelling a batch whose lines are at the provider cancels the provider
// batch: the lines it never ran are cancelled and cost nothing.
func TestNativeBatchCancel(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		e.sync(t)
		e.openai.HoldBatches(true)
		c := e.sdk()
		b := batchRef{submitFile(t, e, batchLine("a", gptMini)+"\n"+batchLine("b", gptMini)+"\n")}
		runner(t, e.plane)
		waitUntil(t, "the provider batch", func() bool { return e.openai.BatchesCreated() == 1 })
		cancelling, err := c.Batches.Cancel(context.Background(), b.ID)
		if err != nil || cancelling.Status != openai.BatchStatusCancelling {
			t.Fatalf("cancel: %v %s", err, cancelling.RawJSON())
		}
		e.openai.HoldBatches(false)
		done := waitBatch(t, c, b.ID, openai.BatchStatusCancelled)
		if done.RequestCounts.Completed != 0 || len(e.openai.Requests()) != 0 {
			t.Fatalf("cancelled batch: %s; provider ran %d lines", done.RawJSON(), len(e.openai.Requests()))
		}
		if !slices.ContainsFunc(e.openai.BatchCalls(), func(s string) bool { return strings.HasSuffix(s, "/cancel") }) {
			t.Fatalf("the provider batch was not cancelled: %v", e.openai.BatchCalls())
		}
		if evs := e.usage.snapshot(); len(evs) != 0 {
			t.Fatalf("a cancelled batch left %d events", len(evs))
		}
	})
}

// A native batch is its workspace's: another workspace's key finds
// neither it nor its output file, nor can it cancel it.
func TestNativeBatchTenancy(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		other, _ := e.org.Key(e.org.Workspace("other"), e.org.Member(auth.MembershipActive), nil)
		e.sync(t)
		b := batchRef{submitFile(t, e, batchLine("a", gptMini)+"\n")}
		runner(t, e.plane)
		done := waitBatch(t, e.sdk(), b.ID, openai.BatchStatusCompleted)
		for _, c := range []struct{ method, path string }{
			{http.MethodGet, "/inf/v1/batches/" + b.ID},
			{http.MethodPost, "/inf/v1/batches/" + b.ID + "/cancel"},
			{http.MethodGet, "/inf/v1/files/" + done.OutputFileID + "/content"},
		} {
			if status, body := call(t, c.method, e.srv.URL+c.path, other, ""); status != http.StatusNotFound {
				t.Fatalf("%s %s with another workspace's key: %d %s", c.method, c.path, status, body)
			}
		}
	})
}

// A credential with settings.batches "gateway" keeps its lines on gw's
// own runner: nothing reaches the provider's batch API.
func TestGatewayBatchesSetting(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		gatewayBatches(t, e)
		e.sync(t)
		b := batchRef{submitFile(t, e, batchLine("a", gptMini)+"\n")}
		runner(t, e.plane)
		waitBatch(t, e.sdk(), b.ID, openai.BatchStatusCompleted)
		if calls := e.openai.BatchCalls(); len(calls) != 0 || len(e.openai.Requests()) != 1 {
			t.Fatalf("batch API calls %v, %d requests; want none and 1", calls, len(e.openai.Requests()))
		}
	})
}

// A provider batch holds its lines' bound against the budgets from before
// it is sent until its results are read, as gw holds a line it sends: a
// second batch that does not fit beside it is refused, and fits once the
// first is settled at its (much smaller) cost.
func TestNativeBatchHoldsItsBudget(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		// A request with no room waits for none (negative BudgetWait).
		e := newInfEnv(t, db, withBatches(db), func(o *dataplane.Options) { o.BudgetWait = -1 })
		// As TestBatchBudgetRefusal: a line is bound at about 0.00017 USD.
		e.policy(t, budgetRule("0.001", "month", "shared"))
		e.sync(t)
		e.openai.SetDefault(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 10, Output: 2}})
		e.openai.HoldBatches(true)
		lines := func(n int) string {
			var s strings.Builder
			for i := range n {
				s.WriteString(batchLine(fmt.Sprint("l", i), gptMini) + "\n")
			}
			return s.String()
		}
		status, body := submit(t, e, fileID(t, e.srv.URL, e.token, lines(5)))
		if status != 200 {
			t.Fatalf("the first batch: %d %s", status, body)
		}
		var b struct{ ID string }
		_ = json.Unmarshal(body, &b)
		runner(t, e.plane)
		waitUntil(t, "the provider batch", func() bool { return e.openai.BatchesCreated() == 1 })
		// Refused as busy: the room is held by the batch in flight.
		if status, body := submit(t, e, fileID(t, e.srv.URL, e.token, lines(3))); status != http.StatusTooManyRequests || !strings.Contains(string(body), "budget_busy") {
			t.Fatalf("a batch beside the held one: %d %s, want 429 budget_busy", status, body)
		}
		e.openai.HoldBatches(false)
		waitBatch(t, e.sdk(), b.ID, openai.BatchStatusCompleted)
		for _, ev := range batchEvents(t, e.usage.snapshot(), b.ID, 5) {
			if decimal.RequireFromString(ev.CostUSD).IsZero() {
				t.Fatalf("a completed line cost nothing: %+v", ev)
			}
		}
		if status, body := submit(t, e, fileID(t, e.srv.URL, e.token, lines(3))); status != 200 {
			t.Fatalf("a batch once the first is settled: %d %s", status, body)
		}
	})
}

// Azure OpenAI's Files and Batches: the lines go to the resource's batch
// API (its api-version, the api-key), each naming its deployment, and
// come back at the batch price of the usage reported.
func TestNativeAzureBatch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		c := e.withClouds(t)
		c.azure.SetDefault(providerstest.Reply{Text: "hi", Usage: providerstest.Usage{Input: 1000, Output: 101}})
		sync := syncCost(t, e, azureMini)
		b := batchRef{submitFile(t, e, batchLine("a", azureMini)+"\n"+batchLine("b", azureMini)+"\n")}
		runner(t, e.plane)
		done := waitBatch(t, e.sdk(), b.ID, openai.BatchStatusCompleted)
		if done.RequestCounts.Completed != 2 || c.azure.BatchesCreated() != 1 {
			t.Fatalf("batch: %s; %d provider batches", done.RawJSON(), c.azure.BatchesCreated())
		}
		reqs := c.azure.Requests()
		if len(reqs) != 3 || reqs[2].Path != "/openai/deployments/gpt-4o-mini/chat/completions" {
			t.Fatalf("the resource ran %d requests (last %+v)", len(reqs), reqs[len(reqs)-1].Path)
		}
		half := sync.Div(decimal.NewFromInt(2))
		for _, ev := range batchEvents(t, e.usage.snapshot(), b.ID, 2) {
			if !decimal.RequireFromString(ev.CostUSD).Equal(half) {
				t.Fatalf("line cost %s, want %s (half the synchronous %s)", ev.CostUSD, half, sync)
			}
		}

		// An embeddings batch of a model the credential serves from a
		// deployment of another name: the lines name the deployment.
		e.usage.reset()
		line := `{"custom_id":"e","method":"POST","url":"/v1/embeddings","body":{"model":"` + azureEmbed + `","input":"hello"}}` + "\n"
		status, body := call(t, http.MethodPost, e.srv.URL+"/inf/v1/batches", e.token,
			`{"input_file_id":"`+fileID(t, e.srv.URL, e.token, line)+`","endpoint":"/v1/embeddings","completion_window":"24h"}`)
		if status != 200 {
			t.Fatalf("embeddings submission: %d %s", status, body)
		}
		_ = json.Unmarshal(body, &b)
		waitBatch(t, e.sdk(), b.ID, openai.BatchStatusCompleted)
		reqs = c.azure.Requests()
		if last := reqs[len(reqs)-1]; last.Path != "/openai/deployments/embeddings-small/embeddings" || last.Body["model"] != "embeddings-small" {
			t.Fatalf("the embeddings line reached %s with model %v", last.Path, last.Body["model"])
		}
		batchEvents(t, e.usage.snapshot(), b.ID, 1)
	})
}

// One batch, both places: its openai line runs on OpenAI's Batch API, its
// chat completions line to an Anthropic model (a dialect Anthropic's
// batch API does not take as is) on gw's runner; the batch ends once
// both have, with one output file of both and one event each.
func TestMixedBatch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		e.sync(t)
		b := batchRef{submitFile(t, e, batchLine("native", gptMini)+"\n"+batchLine("gw", haiku)+"\n")}
		runner(t, e.plane)
		done := waitBatch(t, e.sdk(), b.ID, openai.BatchStatusCompleted)
		if done.RequestCounts.Completed != 2 || e.openai.BatchesCreated() != 1 || e.anthropic.BatchesCreated() != 0 ||
			len(e.anthropic.Requests()) != 1 || len(e.openai.Requests()) != 1 {
			t.Fatalf("batch %s; provider batches: openai %d, anthropic %d", done.RawJSON(), e.openai.BatchesCreated(), e.anthropic.BatchesCreated())
		}
		raw := fileBytes(t, e.sdk(), done.OutputFileID)
		if lines := strings.Split(strings.TrimSpace(string(raw)), "\n"); len(lines) != 2 ||
			!strings.Contains(lines[0], `"custom_id":"native"`) || !strings.Contains(lines[1], `"custom_id":"gw"`) {
			t.Fatalf("output file: %s", raw)
		}
		// The provider's line at the batch prices, gw's at the synchronous
		// prices its upstream billed.
		var gwLine struct {
			Response struct {
				RequestID string `json:"request_id"`
			}
		}
		if err := json.Unmarshal([]byte(strings.Split(strings.TrimSpace(string(raw)), "\n")[1]), &gwLine); err != nil || gwLine.Response.RequestID == "" {
			t.Fatalf("gw's line in the output file: %s %v", raw, err)
		}
		batchEventsPriced(t, e.usage.snapshot(), b.ID, 2, func(id string) string {
			if id == gwLine.Response.RequestID {
				return ""
			}
			return wire.PriceClassBatch
		})
	})
}

// A key revoked while its provider batches are out spends no more and
// loses no usage: a group still pending is never sent (its lines fail,
// $0); a group the provider has (here: one that already ran) is cancelled
// there — a cancel the provider refuses because the batch ended is no
// obstacle — and every line it ran is recorded once as the revoked key's,
// at the batch price. The bundle carries the key for that alone: its
// token admits nothing.
func TestNativeBatchOfARevokedKey(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		e.sync(t)
		e.openai.HoldBatches(true)
		b := batchRef{submitFile(t, e, batchLine("a", gptMini)+"\n"+batchLine("b", gptMini)+"\n")}
		stop := runner(t, e.plane)
		waitUntil(t, "the provider batch", func() bool { return e.openai.BatchesCreated() == 1 })
		stop()

		// The provider runs it while gw is away (each read advances it).
		e.openai.HoldBatches(false)
		read := func(path string) []byte {
			req, _ := http.NewRequest(http.MethodGet, e.openai.BaseURL()+path, nil)
			req.Header.Set("Authorization", "Bearer "+e.openai.Key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			return raw
		}
		var list struct{ Data []struct{ ID string } }
		if err := json.Unmarshal(read("/batches"), &list); err != nil || len(list.Data) != 1 {
			t.Fatalf("the provider's batches: %+v %v", list, err)
		}
		upstream := list.Data[0].ID
		waitUntil(t, "the provider to run the batch", func() bool {
			return strings.Contains(string(read("/batches/"+upstream)), `"status":"completed"`)
		})
		if n := len(e.openai.Requests()); n != 2 {
			t.Fatalf("the provider ran %d lines, want 2", n)
		}

		// A second batch's group is still pending when the key goes.
		b2 := batchRef{submitFile(t, e, batchLine("c", gptMini)+"\n")}

		if ok, err := e.st.RevokeInferenceKey(context.Background(), e.keyID, store.Now()); err != nil || !ok {
			t.Fatalf("revoke: %v %v", ok, err)
		}
		e.sync(t)
		if resp := e.post(t, `{"model":"`+gptMini+`","messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("the revoked key's token admitted a request: %d", resp.StatusCode)
		}

		runner(t, e.plane)
		waitUntil(t, "both batches to end", func() bool {
			one, err1 := e.st.Batch(context.Background(), e.ws, b.ID)
			two, err2 := e.st.Batch(context.Background(), e.ws, b2.ID)
			return err1 == nil && err2 == nil && one.Status == store.BatchCompleted && two.Status == store.BatchCompleted
		})
		evs := batchEvents(t, e.usage.snapshot(), b.ID, 2)
		for _, ev := range evs {
			if ev.InferenceKeyID == nil || *ev.InferenceKeyID != e.keyID || ev.Status != "ok" || decimal.RequireFromString(ev.CostUSD).IsZero() {
				t.Fatalf("a line the provider ran, recorded as: %+v", ev)
			}
		}
		if e.openai.BatchesCreated() != 1 {
			t.Fatalf("the revoked key's pending group was sent: %d provider batches", e.openai.BatchesCreated())
		}
		if !slices.ContainsFunc(e.openai.BatchCalls(), func(s string) bool { return strings.HasSuffix(s, "/batches/"+upstream+"/cancel") }) {
			t.Fatalf("the revoked key's provider batch was not cancelled: %v", e.openai.BatchCalls())
		}
		c, err := e.st.BatchCounts(context.Background(), b2.ID)
		if err != nil || c.Failed != 1 || c.Completed != 0 {
			t.Fatalf("the pending group's line: %+v %v", c, err)
		}
	})
}

// newMessageBatch submits a message batch of one short request to model
// per custom id.
func newMessageBatch(t *testing.T, c anthropic.Client, model string, ids ...string) *anthropic.MessageBatch {
	t.Helper()
	reqs := make([]anthropic.MessageBatchNewParamsRequest, len(ids))
	for i, id := range ids {
		reqs[i] = anthropic.MessageBatchNewParamsRequest{CustomID: id, Params: anthropic.MessageBatchNewParamsRequestParams{
			Model: anthropic.Model(model), MaxTokens: 20, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello " + id))}}}
	}
	b, err := c.Messages.Batches.New(context.Background(), anthropic.MessageBatchNewParams{Requests: reqs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// nativeMessageBatchResults checks an ended message batch of the requests
// "a.1" and "b 2" a provider ran: each result the fake's "hi" from model,
// in order, and each line one event of the reported tokens (1000 input,
// 300 cache reads, 40 cache writes) at half the synchronous cost sync.
func nativeMessageBatchResults(t *testing.T, e *infEnv, c anthropic.Client, id, model string, sync decimal.Decimal) {
	t.Helper()
	stream := c.Messages.Batches.ResultsStreaming(context.Background(), id, anthropic.MessageBatchResultsParams{})
	var got []string
	for stream.Next() {
		r := stream.Current()
		if r.Result.Type != "succeeded" || r.Result.Message.Content[0].Text != "hi" || string(r.Result.Message.Model) != model {
			t.Fatalf("result: %s", r.RawJSON())
		}
		got = append(got, r.CustomID)
	}
	if err := stream.Err(); err != nil || !slices.Equal(got, []string{"a.1", "b 2"}) {
		t.Fatalf("results: %v %v", got, err)
	}
	half := sync.Div(decimal.NewFromInt(2))
	for _, ev := range batchEvents(t, e.usage.snapshot(), id, 2) {
		if ev.CacheReadTokens != 300 || ev.CacheWriteTokens != 40 || ev.InputTokens != 1000 ||
			decimal.RequireFromString(ev.CostUSD).Sub(half).Abs().GreaterThan(decimal.New(1, -9)) {
			t.Fatalf("line event: %+v, want the reported tokens at %s (half the synchronous %s)", ev, half, sync)
		}
	}
}
