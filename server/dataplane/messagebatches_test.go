package dataplane_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/shopspring/decimal"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// msgRequest is one request of an Anthropic message batch.
func msgRequest(customID, model string) string {
	return `{"custom_id":"` + customID + `","params":{"model":"` + model + `","max_tokens":20,"messages":[{"role":"user","content":"hello ` + customID + `"}]}}`
}

func msgBatchBody(reqs ...string) string { return `{"requests":[` + strings.Join(reqs, ",") + `]}` }

// waitMessageBatch polls until the batch has ended, failing after a minute.
func waitMessageBatch(t *testing.T, c anthropic.Client, id string) *anthropic.MessageBatch {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b, err := c.Messages.Batches.Get(context.Background(), id, anthropic.MessageBatchGetParams{})
		if err != nil {
			t.Fatal(err)
		}
		if b.ProcessingStatus == anthropic.MessageBatchProcessingStatusEnded {
			return b
		}
	}
	t.Fatalf("message batch %s never ended", id)
	return nil
}

// An Anthropic message batch through the official Anthropic Go SDK:
// created, run by gw's one runner line by line through /inf/v1/messages,
// polled, its results read; one usage event per request naming the batch,
// at the synchronous price its upstream billed (gw sent it as a
// synchronous request; a provider-run line's batch prices are in
// batchnative_test.go); a second batch cancelled before it runs costs
// nothing and its results say canceled. OpenAI's batch endpoints do not
// show it.
func TestGatewayMessageBatchAtSynchronousPrices(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		gatewayBatches(t, e)
		e.sync(t)
		e.anthropic.SetDefault(providerstest.Reply{Text: "hi", Usage: providerstest.Usage{Input: 1000, Output: 101}})
		c, ctx := e.anthropicClient(), context.Background()

		if resp := e.post(t, `{"model":"`+haiku+`","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != 200 {
			t.Fatalf("synchronous request: %d", resp.StatusCode)
		}
		sync := decimal.RequireFromString(e.usage.snapshot()[0].CostUSD)
		e.usage.reset()

		params := func(id string) anthropic.MessageBatchNewParamsRequest {
			return anthropic.MessageBatchNewParamsRequest{CustomID: id, Params: anthropic.MessageBatchNewParamsRequestParams{
				Model: anthropic.Model(haiku), MaxTokens: 20, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello " + id))}}}
		}
		b, err := c.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: []anthropic.MessageBatchNewParamsRequest{params("a"), params("b")}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(b.ID, "msgbatch_") || b.ProcessingStatus != anthropic.MessageBatchProcessingStatusInProgress ||
			b.RequestCounts.Processing != 2 || b.ResultsURL != "" {
			t.Fatalf("batch: %s", b.RawJSON())
		}
		second, err := c.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: []anthropic.MessageBatchNewParamsRequest{params("x")}})
		if err != nil {
			t.Fatal(err)
		}
		cancelled, err := c.Messages.Batches.Cancel(ctx, second.ID, anthropic.MessageBatchCancelParams{})
		if err != nil || cancelled.ProcessingStatus != anthropic.MessageBatchProcessingStatusEnded || cancelled.RequestCounts.Canceled != 1 {
			t.Fatalf("cancel: %v %+v", err, cancelled)
		}

		runner(t, e.plane)
		done := waitMessageBatch(t, c, b.ID)
		if done.RequestCounts.Succeeded != 2 || done.RequestCounts.Processing != 0 || done.EndedAt.IsZero() ||
			done.ResultsURL != e.srv.URL+"/inf/v1/messages/batches/"+b.ID+"/results" {
			t.Fatalf("ended batch: %s", done.RawJSON())
		}
		stream := c.Messages.Batches.ResultsStreaming(ctx, b.ID, anthropic.MessageBatchResultsParams{})
		var got []string
		for stream.Next() {
			r := stream.Current()
			if r.Result.Type != "succeeded" || r.Result.Message.Content[0].Text != "hi" {
				t.Fatalf("result: %s", r.RawJSON())
			}
			got = append(got, r.CustomID)
		}
		if err := stream.Err(); err != nil || strings.Join(got, ",") != "a,b" {
			t.Fatalf("results: %v %v", err, got)
		}
		stream = c.Messages.Batches.ResultsStreaming(ctx, second.ID, anthropic.MessageBatchResultsParams{})
		if !stream.Next() || stream.Current().Result.Type != "canceled" || stream.Current().CustomID != "x" {
			t.Fatalf("cancelled batch's results: %v", stream.Err())
		}

		events := e.usage.snapshot()
		if len(events) != 2 {
			t.Fatalf("%d events, want one per request (2)", len(events))
		}
		for _, ev := range events {
			// Of the form usage ingest takes (a msgbatch_ id included).
			if ev.BatchID == nil || *ev.BatchID != b.ID || !regexp.MustCompile(wire.BatchIDPattern).MatchString(*ev.BatchID) {
				t.Fatalf("event does not name its batch as ingest takes it: %+v", ev)
			}
			if !decimal.RequireFromString(ev.CostUSD).Equal(sync) {
				t.Fatalf("request cost %s, want the synchronous %s", ev.CostUSD, sync)
			}
			var prov struct{ Prices wire.UsagePrices }
			raw, _ := json.Marshal(ev.Provenance)
			_ = json.Unmarshal(raw, &prov)
			if prov.Prices.PriceClass != "" {
				t.Fatalf("provenance prices: %s", raw)
			}
		}
		if n := len(e.anthropic.Requests()); n != 3 {
			t.Fatalf("upstream saw %d requests, want 3 (1 synchronous, 2 lines; none of the cancelled batch)", n)
		}
		page, err := c.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{})
		if err != nil || len(page.Data) != 2 || page.Data[0].ID != second.ID || page.Data[1].ID != b.ID {
			t.Fatalf("list: %v %+v", err, page)
		}
		page, err = c.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{Limit: anthropic.Int(1)})
		if err != nil || len(page.Data) != 1 || !page.HasMore {
			t.Fatalf("list of one: %v %s", err, page.RawJSON())
		}
		// OpenAI's batches and files do not show an Anthropic batch or its
		// input.
		for _, u := range []string{"/inf/v1/batches", "/inf/v1/files"} {
			if status, body := call(t, http.MethodGet, e.srv.URL+u, e.token, ""); status != 200 || strings.Contains(string(body), "msgbatch_") ||
				strings.Contains(string(body), "message_batch") {
				t.Errorf("GET %s: %d %s", u, status, body)
			}
		}
		if status, _ := call(t, http.MethodGet, e.srv.URL+"/inf/v1/batches/"+b.ID, e.token, ""); status != 404 {
			t.Errorf("an Anthropic batch through OpenAI's endpoint: %d", status)
		}
	})
}

// A message batch is refused whole, in Anthropic's error shape, naming the
// request's index and custom_id, before anything is stored or sent: an
// unknown model, a policy's deny, a malformed request; one over the
// budget is 402 billing_error; another workspace's batch is 404.
func TestMessageBatchRefusals(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		e.policy(t, rule(`{"kind":"request","models":["`+gptMini+`"],"stream":false,"capabilities":[]}`, `{"kind":"deny","message":"no mini in batches"}`))
		// Claude Haiku 4.5 at half price: a request of ~200 bytes (+2,000
		// tokens) and 20 output tokens is bound at about 0.0012 USD; 0.01
		// fits one, not 100.
		e.policy(t, budgetRule("0.01", "month", "shared"))
		e.sync(t)
		url := e.srv.URL + "/inf/v1/messages/batches"
		cases := []struct {
			body, want, typ string
			status          int
		}{
			{msgBatchBody(msgRequest("a", haiku), msgRequest("b", "anthropic/nope")), `requests[1] (custom_id \"b\"): model \"anthropic/nope\" does not exist`, "invalid_request_error", 400},
			{msgBatchBody(msgRequest("a", haiku), msgRequest("c", gptMini)), `requests[1] (custom_id \"c\"): no mini in batches`, "permission_error", 403},
			{msgBatchBody(msgRequest("a", haiku), `{"custom_id":"b","params":{"max_tokens":5}}`), `requests[1] (custom_id \"b\"): params.model is required`, "invalid_request_error", 400},
			{msgBatchBody(msgRequest("a", haiku), msgRequest("a", haiku)), `requests[1] (custom_id \"a\")`, "invalid_request_error", 400},
			{`{"requests":[]}`, "at least one", "invalid_request_error", 400},
			{`{"requests":`, "", "invalid_request_error", 400},
		}
		for _, tc := range cases {
			status, body := call(t, http.MethodPost, url, e.token, tc.body)
			if status != tc.status || !strings.Contains(string(body), tc.want) || !strings.Contains(string(body), `{"type":"error","error":{"type":"`+tc.typ+`"`) {
				t.Errorf("%s: %d %s, want %d %s naming %s", tc.body, status, body, tc.status, tc.typ, tc.want)
			}
		}
		var big []string
		for i := range 100 {
			big = append(big, msgRequest(fmt.Sprint("l", i), haiku))
		}
		if status, body := call(t, http.MethodPost, url, e.token, msgBatchBody(big...)); status != http.StatusPaymentRequired ||
			!strings.Contains(string(body), `"type":"billing_error"`) {
			t.Errorf("a batch over the budget: %d %s", status, body)
		}
		if n := len(e.anthropic.Requests()) + len(e.openai.Requests()); n != 0 {
			t.Fatalf("%d requests sent for refused batches", n)
		}

		// Bearer as well as x-api-key (call sends Bearer).
		status, body := call(t, http.MethodPost, url, e.token, msgBatchBody(msgRequest("a", haiku)))
		if status != 200 {
			t.Fatalf("submission: %d %s", status, body)
		}
		var b struct{ ID string }
		_ = json.Unmarshal(body, &b)
		other := e.org.Workspace("other")
		otherToken, _ := e.org.Key(other, e.org.Member(auth.MembershipActive), nil)
		e.sync(t)
		for _, u := range []string{"/" + b.ID, "/" + b.ID + "/results"} {
			if status, body := call(t, http.MethodGet, url+u, otherToken, ""); status != 404 || !strings.Contains(string(body), `"type":"not_found_error"`) {
				t.Errorf("GET %s from another workspace: %d %s", u, status, body)
			}
		}
		if status, body := call(t, http.MethodPost, url+"/"+b.ID+"/cancel", otherToken, ""); status != 404 || !strings.Contains(string(body), `"type":"not_found_error"`) {
			t.Errorf("cancel from another workspace: %d %s", status, body)
		}
		if status, body := call(t, http.MethodGet, url, otherToken, ""); status != 200 || strings.Contains(string(body), b.ID) {
			t.Errorf("another workspace's list: %d %s", status, body)
		}
		// Still processing (no runner): its results are not there yet.
		if status, body := call(t, http.MethodGet, url+"/"+b.ID+"/results", e.token, ""); status != 400 || !strings.Contains(string(body), "still processing") {
			t.Errorf("results of a batch in progress: %d %s", status, body)
		}
		if status, body := call(t, http.MethodGet, e.srv.URL+"/inf/v1/messages/batches/"+b.ID, "sk-gw-nope", ""); status != 401 || !strings.Contains(string(body), `"type":"authentication_error"`) {
			t.Errorf("a bad key: %d %s", status, body)
		}
	})
}
