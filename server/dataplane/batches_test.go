package dataplane_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/shopspring/decimal"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/batchstore"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// withBatches gives the plane the control plane's files and batches, as
// the all-in-one gw does, sending a line every millisecond.
func withBatches(db *bun.DB) infOptions {
	return func(o *dataplane.Options) {
		o.Batches, o.BatchPace = batchstore.Store{St: store.New(db)}, time.Millisecond
	}
}

// batchLine is a chat completion line of a batch file.
func batchLine(customID, model string) string {
	return `{"custom_id":"` + customID + `","method":"POST","url":"/v1/chat/completions","body":{"model":"` + model +
		`","max_tokens":20,"messages":[{"role":"user","content":"hello ` + customID + `"}]}}`
}

// upload sends a batch file as the SDKs do (multipart, purpose batch)
// with token, and returns the status and body.
func upload(t *testing.T, base, token, content string) (int, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("purpose", "batch")
	fw, err := mw.CreateFormFile("file", "in.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write([]byte(content))
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, base+"/inf/v1/files", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return doAs(t, req, token)
}

func doAs(t *testing.T, req *http.Request, token string) (int, []byte) {
	t.Helper()
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

func call(t *testing.T, method, url, token, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return doAs(t, req, token)
}

func fileID(t *testing.T, base, token, content string) string {
	t.Helper()
	status, body := upload(t, base, token, content)
	if status != http.StatusOK {
		t.Fatalf("upload: %d %s", status, body)
	}
	var f struct{ ID, Object string }
	if err := json.Unmarshal(body, &f); err != nil || f.Object != "file" {
		t.Fatalf("upload answered %s", body)
	}
	return f.ID
}

func submit(t *testing.T, e *infEnv, file string) (int, []byte) {
	t.Helper()
	return call(t, http.MethodPost, e.srv.URL+"/inf/v1/batches", e.token,
		`{"input_file_id":"`+file+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`)
}

// submitLines uploads and submits a batch of n chat completions to
// gpt-4o-mini, custom ids prefix0 … prefix(n-1), and returns its id.
func submitLines(t *testing.T, e *infEnv, prefix string, n int) string {
	t.Helper()
	var content strings.Builder
	for i := range n {
		content.WriteString(batchLine(fmt.Sprint(prefix, i), gptMini) + "\n")
	}
	return submitFile(t, e, content.String())
}

// batchRef is a submitted batch as the tests name it.
type batchRef struct{ ID string }

// submitFile uploads content as a batch input file and submits it as a
// chat completions batch, which must be accepted; it returns the batch's
// id.
func submitFile(t *testing.T, e *infEnv, content string) string {
	t.Helper()
	status, body := submit(t, e, fileID(t, e.srv.URL, e.token, content))
	if status != 200 {
		t.Fatalf("submission: %d %s", status, body)
	}
	var b batchRef
	if err := json.Unmarshal(body, &b); err != nil || b.ID == "" {
		t.Fatalf("submission answer: %s (%v)", body, err)
	}
	return b.ID
}

// waitBatch polls the batch until it is in status (the runner works in
// the background, as gw serve runs it), failing after a minute.
func waitBatch(t *testing.T, c *openai.Client, id string, status openai.BatchStatus) *openai.Batch {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b, err := c.Batches.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if b.Status == status {
			return b
		}
	}
	t.Fatalf("batch %s never became %s", id, status)
	return nil
}

// runner runs the plane's batches until the returned stop is called (or
// the test ends); stop waits for it to return.
func runner(t *testing.T, p *dataplane.Plane) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.RunBatches(ctx) }()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// A batch through the official OpenAI Go SDK: uploaded, created, run by gw
// line by line (its credential set to settings.batches "gateway"), its
// output file read; one usage event per line naming the batch, at the
// synchronous price its upstream billed (no price class: gw sent it as a
// synchronous request; the batch prices are for lines the provider runs,
// batchnative_test.go); a second batch cancelled before it runs costs
// nothing.
func TestGatewayBatchLinesAtSynchronousPrices(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		gatewayBatches(t, e)
		e.sync(t)
		e.openai.SetDefault(providerstest.Reply{Text: "hi", Usage: providerstest.Usage{Input: 1000, Output: 101}})
		c, ctx := e.sdk(), context.Background()

		// The synchronous price of the same tokens, for comparison.
		if resp := e.post(t, `{"model":"`+gptMini+`","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != 200 {
			t.Fatalf("synchronous request: %d", resp.StatusCode)
		}
		sync := decimal.RequireFromString(e.usage.snapshot()[0].CostUSD)
		e.usage.reset()

		content := batchLine("a", gptMini) + "\n" + batchLine("b", gptMini) + "\n" + batchLine("c", gptMini) + "\n"
		f, err := c.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader(content), "in.jsonl", "application/jsonl"),
			Purpose: openai.FilePurposeBatch})
		if err != nil {
			t.Fatal(err)
		}
		if f.Bytes != int64(len(content)) || f.Purpose != "batch" {
			t.Fatalf("file: %+v", f)
		}
		got, err := c.Files.Get(ctx, f.ID)
		if err != nil || got.ID != f.ID {
			t.Fatalf("files.get: %v %+v", err, got)
		}
		page, err := c.Files.List(ctx, openai.FileListParams{})
		if err != nil || len(page.Data) != 1 || page.Data[0].ID != f.ID {
			t.Fatalf("files.list: %v %+v", err, page)
		}
		b, err := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
			CompletionWindow: openai.BatchNewParamsCompletionWindow24h, Metadata: map[string]string{"job": "nightly"}})
		if err != nil {
			t.Fatal(err)
		}
		if b.Status != openai.BatchStatusInProgress || b.RequestCounts.Total != 3 || b.Metadata["job"] != "nightly" {
			t.Fatalf("batch: %+v", b)
		}
		// Cancelled before any runner takes it: its lines cost nothing.
		second, err := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
			CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
		if err != nil {
			t.Fatal(err)
		}
		cancelled, err := c.Batches.Cancel(ctx, second.ID)
		if err != nil || cancelled.Status != openai.BatchStatusCancelled {
			t.Fatalf("cancel: %v %+v", err, cancelled)
		}

		runner(t, e.plane)
		done := waitBatch(t, c, b.ID, openai.BatchStatusCompleted)
		if done.RequestCounts.Completed != 3 || done.RequestCounts.Failed != 0 || done.OutputFileID == "" || done.ErrorFileID != "" {
			t.Fatalf("completed batch: %+v", done)
		}
		out, err := c.Files.Content(ctx, done.OutputFileID)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(out.Body)
		out.Body.Close()
		lines := strings.Split(strings.TrimSpace(string(body)), "\n")
		if len(lines) != 3 {
			t.Fatalf("output file: %s", body)
		}
		requestIDs := map[string]string{}
		for i, l := range lines {
			var o struct {
				ID       string
				CustomID string `json:"custom_id"`
				Response struct {
					StatusCode int    `json:"status_code"`
					RequestID  string `json:"request_id"`
					Body       struct {
						Choices []struct{ Message struct{ Content string } }
					}
				}
				Error *json.RawMessage
			}
			if err := json.Unmarshal([]byte(l), &o); err != nil {
				t.Fatal(err)
			}
			if o.CustomID != string(rune('a'+i)) || o.Response.StatusCode != 200 || o.Error != nil || o.Response.Body.Choices[0].Message.Content != "hi" {
				t.Fatalf("output line %d: %s", i+1, l)
			}
			requestIDs[o.Response.RequestID] = o.CustomID
		}

		events := e.usage.snapshot()
		if len(events) != 3 {
			t.Fatalf("%d events, want one per line (3)", len(events))
		}
		for _, ev := range events {
			if ev.BatchID == nil || *ev.BatchID != b.ID || ev.RequestID == nil || requestIDs[*ev.RequestID] == "" {
				t.Fatalf("event does not name its batch and line: %+v", ev)
			}
			if !decimal.RequireFromString(ev.CostUSD).Equal(sync) {
				t.Fatalf("line cost %s, want the synchronous %s", ev.CostUSD, sync)
			}
			var prov struct{ Prices wire.UsagePrices }
			raw, _ := json.Marshal(ev.Provenance)
			_ = json.Unmarshal(raw, &prov)
			if prov.Prices.PriceClass != "" {
				t.Fatalf("provenance prices: %s", raw)
			}
		}
		if n := len(e.openai.Requests()); n != 4 {
			t.Fatalf("upstream saw %d requests, want 4 (1 synchronous, 3 lines; none of the cancelled batch)", n)
		}
		list, err := c.Batches.List(ctx, openai.BatchListParams{})
		if err != nil || len(list.Data) != 2 {
			t.Fatalf("batches.list: %v %+v", err, list)
		}
		if del, err := c.Files.Delete(ctx, f.ID); err != nil || !del.Deleted {
			t.Fatalf("files.delete: %v %+v", err, del)
		}
		if _, err := c.Files.Get(ctx, f.ID); err == nil {
			t.Fatal("a deleted file is still served")
		}
	})
}

// A batch is refused whole, naming the line, before anything is stored,
// reserved or sent: a model that does not exist, one a policy denies, a
// malformed line, a batch whose bound does not fit the budget; another
// workspace's file or batch is not found.
func TestBatchSubmissionRefusals(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		e.policy(t, rule(`{"kind":"request","models":["anthropic/claude-haiku-4-5-20251001"],"stream":false,"capabilities":[]}`, `{"kind":"deny","message":"no haiku in batches"}`))
		e.sync(t)
		cases := []struct {
			content, want, code string
			status              int
		}{
			{batchLine("a", gptMini) + "\n" + batchLine("b", "openai/nope") + "\n", `line 2 (custom_id \"b\"): model \"openai/nope\" does not exist`, "model_not_found", 400},
			{batchLine("a", gptMini) + "\n" + batchLine("b", gptMini) + "\n" + batchLine("c", haiku) + "\n", `line 3 (custom_id \"c\"): no haiku in batches`, "policy_denied", 403},
			{batchLine("a", gptMini) + "\n{\"custom_id\":\"b\"\n", "line 2", "invalid_json_line", 400},
		}
		for _, tc := range cases {
			id := fileID(t, e.srv.URL, e.token, tc.content)
			status, body := submit(t, e, id)
			if status != tc.status || !strings.Contains(string(body), tc.want) || !strings.Contains(string(body), `"code":"`+tc.code+`"`) {
				t.Errorf("submission: %d %s, want %d naming %s", status, body, tc.status, tc.want)
			}
		}
		good0 := fileID(t, e.srv.URL, e.token, batchLine("a", gptMini)+"\n")
		for _, bad := range []string{
			`{"input_file_id":"` + good0 + `","endpoint":"/v1/chat/completions","completion_window":"1h"}`,
			`{"input_file_id":"` + good0 + `","endpoint":"/v1/completions","completion_window":"24h"}`,
			`{"input_file_id":"` + good0 + `","endpoint":"/v1/chat/completions","completion_window":"24h","metadata":{"k":"` + strings.Repeat("v", 513) + `"}}`,
			`{"input_file_id":"file-nope","endpoint":"/v1/chat/completions","completion_window":"24h"}`,
		} {
			if status, body := call(t, http.MethodPost, e.srv.URL+"/inf/v1/batches", e.token, bad); status/100 != 4 {
				t.Errorf("%s: %d %s", bad, status, body)
			}
		}
		if n := len(e.openai.Requests()) + len(e.anthropic.Requests()); n != 0 {
			t.Fatalf("%d requests sent for refused batches", n)
		}

		// Another workspace's key: neither the file nor a batch is there.
		good := fileID(t, e.srv.URL, e.token, batchLine("a", gptMini)+"\n")
		status, body := submit(t, e, good)
		if status != 200 {
			t.Fatalf("submission: %d %s", status, body)
		}
		var b struct{ ID string }
		_ = json.Unmarshal(body, &b)
		other := e.org.Workspace("other")
		otherToken, _ := e.org.Key(other, e.org.Member(auth.MembershipActive), nil)
		e.sync(t)
		for _, u := range []string{"/inf/v1/files/" + good, "/inf/v1/files/" + good + "/content", "/inf/v1/batches/" + b.ID} {
			if status, body := call(t, http.MethodGet, e.srv.URL+u, otherToken, ""); status != 404 || !strings.Contains(string(body), "not_found") {
				t.Errorf("GET %s from another workspace: %d %s", u, status, body)
			}
		}
		if status, _ := call(t, http.MethodPost, e.srv.URL+"/inf/v1/batches/"+b.ID+"/cancel", otherToken, ""); status != 404 {
			t.Errorf("cancel from another workspace: %d", status)
		}
		if status, _ := call(t, http.MethodDelete, e.srv.URL+"/inf/v1/files/"+good, otherToken, ""); status != 404 {
			t.Errorf("delete from another workspace: %d", status)
		}
		status, body = call(t, http.MethodPost, e.srv.URL+"/inf/v1/batches", otherToken, `{"input_file_id":"`+good+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`)
		if status != 404 || !strings.Contains(string(body), good) {
			t.Errorf("batch of another workspace's file: %d %s", status, body)
		}
		if status, body := call(t, http.MethodGet, e.srv.URL+"/inf/v1/batches", otherToken, ""); status != 200 || strings.Contains(string(body), b.ID) {
			t.Errorf("another workspace's list: %d %s", status, body)
		}
	})
}

// A budget refuses a batch whose bound at the batch prices does not fit,
// and takes one that does.
func TestBatchBudgetRefusal(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		// gpt-4o-mini at half price: 75 and 300 nano-dollars an input and
		// an output token. A line of ~200 bytes (+2,000) and 20 output
		// tokens is bound at about 0.00017 USD; 0.001 fits five, not 100.
		e.policy(t, budgetRule("0.001", "month", "shared"))
		e.sync(t)
		var big, small strings.Builder
		for i := range 100 {
			big.WriteString(batchLine(fmt.Sprint("l", i), gptMini) + "\n")
		}
		for i := range 3 {
			small.WriteString(batchLine(fmt.Sprint("l", i), gptMini) + "\n")
		}
		status, body := submit(t, e, fileID(t, e.srv.URL, e.token, big.String()))
		if status != http.StatusPaymentRequired || !strings.Contains(string(body), "budget") {
			t.Fatalf("a batch over the budget: %d %s", status, body)
		}
		status, body = submit(t, e, fileID(t, e.srv.URL, e.token, small.String()))
		if status != 200 {
			t.Fatalf("a batch within the budget: %d %s", status, body)
		}
	})
}

// A restart mid-batch: the runner stops after some lines, a new plane and
// runner on the same store takes the rest; every line is sent and billed
// exactly once.
func TestBatchSurvivesRestart(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		gatewayBatches(t, e)
		e.sync(t)
		e.openai.SetDefault(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 10, Output: 2}})
		const n = 12
		b := struct{ ID string }{submitLines(t, e, "r", n)}

		stop := runner(t, e.plane)
		for len(e.openai.Requests()) < 3 {
			time.Sleep(time.Millisecond)
		}
		stop()
		first := len(e.openai.Requests())

		// Another process: a new plane on the same store, the same events
		// sink.
		o := e.opts
		p := dataplane.NewPlane(e.signer.Public().(ed25519.PublicKey), o)
		r := &publish.Refresher{Compiler: e.refresh.Compiler, Plane: p, Store: e.st}
		if err := r.RefreshAll(context.Background()); err != nil {
			t.Fatal(err)
		}
		runner(t, p)
		done := waitBatch(t, e.sdk(), b.ID, openai.BatchStatusCompleted)
		if done.RequestCounts.Completed != n || len(e.openai.Requests()) != n || first >= n {
			t.Fatalf("after the restart: %+v; upstream saw %d (first runner %d), want %d", done.RequestCounts, len(e.openai.Requests()), first, n)
		}
		seen := map[string]bool{}
		for _, ev := range e.usage.snapshot() {
			if ev.BatchID == nil || seen[*ev.RequestID] {
				t.Fatalf("event twice or without its batch: %+v", ev)
			}
			seen[*ev.RequestID] = true
		}
		if len(seen) != n {
			t.Fatalf("%d events, want %d", len(seen), n)
		}
	})
}

// A line the upstream refuses ends failed: it is in the batch's error
// file with the upstream's answer, and its event costs nothing; the other
// lines complete.
func TestBatchLineFailureGoesToTheErrorFile(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		gatewayBatches(t, e)
		e.sync(t)
		e.openai.SetDefault(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 10, Output: 2}})
		e.openai.ReplyWhen("hello bad", providerstest.Reply{Status: 400, Message: "this prompt is refused"})
		b := batchRef{submitFile(t, e, batchLine("good", gptMini)+"\n"+batchLine("bad", gptMini)+"\n")}
		runner(t, e.plane)
		done := waitBatch(t, e.sdk(), b.ID, openai.BatchStatusCompleted)
		if done.RequestCounts.Completed != 1 || done.RequestCounts.Failed != 1 || done.OutputFileID == "" || done.ErrorFileID == "" {
			t.Fatalf("batch: %+v", done)
		}
		status, errs := call(t, http.MethodGet, e.srv.URL+"/inf/v1/files/"+done.ErrorFileID+"/content", e.token, "")
		if status != 200 || !strings.Contains(string(errs), `"custom_id":"bad"`) || !strings.Contains(string(errs), "this prompt is refused") ||
			!strings.Contains(string(errs), `"status_code":400`) {
			t.Fatalf("error file: %d %s", status, errs)
		}
		failed := 0
		for _, ev := range e.usage.snapshot() {
			if ev.Status == "ok" {
				continue
			}
			failed++
			if !decimal.RequireFromString(ev.CostUSD).IsZero() || ev.BatchID == nil || *ev.BatchID != b.ID {
				t.Fatalf("the failed line's event: %+v", ev)
			}
		}
		if failed != 1 {
			t.Fatalf("%d failed events, want 1", failed)
		}
	})
}

// A data plane given no store of files and batches answers every Files
// and Batches endpoint 501 (a remote one has the control plane's over the
// sync API: batchremote_test.go).
func TestBatchesNeedTheControlPlanesStore(t *testing.T) {
	e := newInfEnv(t, storetest.Open(t, storetest.SQLite))
	e.sync(t)
	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, "/inf/v1/files", ""}, {http.MethodGet, "/inf/v1/batches/batch_x", ""},
		{http.MethodPost, "/inf/v1/batches", `{"input_file_id":"file-x","endpoint":"/v1/chat/completions","completion_window":"24h"}`},
	} {
		status, body := call(t, c.method, e.srv.URL+c.path, e.token, c.body)
		if status != http.StatusNotImplemented || !strings.Contains(string(body), "batches_unavailable") {
			t.Errorf("%s %s: %d %s", c.method, c.path, status, body)
		}
	}
}

// A line the key's rate limit refuses was never sent: it goes back to
// pending and is sent once the limit's window has moved on, never failed
// and never billed twice.
func TestBatchLineWaitsForTheRateLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		clk := &fakeClock{}
		clk.set(time.Date(2026, 11, 23, 10, 0, 15, 0, time.UTC))
		e := newInfEnv(t, db, withBatches(db), withClock(clk.now))
		gatewayBatches(t, e)
		// Three requests a minute: the submission and two lines.
		e.setLimits(t, store.RateLimits{}, store.RateLimits{RPM: int64p(3)})
		e.openai.SetDefault(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 10, Output: 2}})
		b := struct{ ID string }{submitLines(t, e, "w", 4)}
		// A second later (the same minute): what the runner touches is
		// told apart from what the submission wrote.
		clk.set(clk.now().Add(time.Second))
		runner(t, e.plane)
		// The third line was taken, refused by the limit and put back.
		deadline := time.Now().Add(time.Minute)
		for requeued := false; !requeued; time.Sleep(time.Millisecond) {
			lines, err := e.st.BatchLines(context.Background(), b.ID, 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			if lines[2].Status == store.LineFailed || time.Now().After(deadline) {
				t.Fatalf("the rate-limited line was not put back: %+v", lines[2])
			}
			requeued = lines[0].Status == store.LineCompleted && lines[1].Status == store.LineCompleted &&
				lines[2].Status == store.LinePending && lines[2].RequestID == nil && lines[2].UpdatedAt.After(lines[3].UpdatedAt)
		}
		if n := len(e.openai.Requests()); n != 2 {
			t.Fatalf("upstream saw %d requests in the first minute, want 2", n)
		}
		clk.set(clk.now().Add(time.Minute))
		done := waitBatch(t, e.sdk(), b.ID, openai.BatchStatusCompleted)
		if done.RequestCounts.Completed != 4 || done.RequestCounts.Failed != 0 || len(e.openai.Requests()) != 4 || len(e.usage.snapshot()) != 4 {
			t.Fatalf("batch %+v; upstream %d, events %d", done.RequestCounts, len(e.openai.Requests()), len(e.usage.snapshot()))
		}
	})
}

// gatewayBatches sets every credential of e to settings.batches
// "gateway": the batches of the tests of gw's own runner run there, not
// on the fakes' batch APIs (batchnative_test.go). Call before e.sync.
func gatewayBatches(t *testing.T, e *infEnv) {
	t.Helper()
	if _, err := e.db.NewRaw(`UPDATE provider_credentials SET settings = '{"batches":"gateway"}'`).Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// fileBytes reads a gw file's content through the OpenAI SDK.
func fileBytes(t *testing.T, c *openai.Client, id string) []byte {
	t.Helper()
	res, err := c.Files.Content(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// fileLines reads a gw JSONL file (a batch's output or error file) as one
// object a line.
func fileLines(t *testing.T, c *openai.Client, id string) []map[string]any {
	t.Helper()
	raw := fileBytes(t, c, id)
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: %s", err, raw)
		}
		out = append(out, m)
	}
	return out
}
