package dataplane_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/batchfile"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/server/usage"
)

// Deleting a message batch as Anthropic's API does, through the Anthropic
// Go SDK: a batch still processing is refused (400 invalid_request_error)
// and stays; an ended one answers {id, type: message_batch_deleted}, after
// which get, results, cancel and a second delete are 404, its lines and
// the body of its requests are gone from the store, and its usage events
// stay. Another workspace's key cannot delete it (404) and it stays.
func TestDeleteMessageBatch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		gatewayBatches(t, e)
		e.sync(t)
		e.anthropic.SetDefault(providerstest.Reply{Text: "hi", Usage: providerstest.Usage{Input: 10, Output: 5}})
		c, ctx := e.anthropicClient(), context.Background()
		params := func(id string) anthropic.MessageBatchNewParamsRequest {
			return anthropic.MessageBatchNewParamsRequest{CustomID: id, Params: anthropic.MessageBatchNewParamsRequestParams{
				Model: anthropic.Model(haiku), MaxTokens: 20, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello " + id))}}}
		}
		b, err := c.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: []anthropic.MessageBatchNewParamsRequest{params("a"), params("b")}})
		if err != nil {
			t.Fatal(err)
		}
		// Still processing (no runner yet): refused in Anthropic's shape.
		_, err = c.Messages.Batches.Delete(ctx, b.ID, anthropic.MessageBatchDeleteParams{})
		var ae *anthropic.Error
		if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.RawJSON(), `"type":"invalid_request_error"`) ||
			!strings.Contains(ae.RawJSON(), "still processing") {
			t.Fatalf("deleting a batch in progress: %v", err)
		}
		if _, err := c.Messages.Batches.Get(ctx, b.ID, anthropic.MessageBatchGetParams{}); err != nil {
			t.Fatalf("a refused delete removed the batch: %v", err)
		}

		runner(t, e.plane)
		waitMessageBatch(t, c, b.ID)
		events := e.usage.snapshot()
		if len(events) != 2 {
			t.Fatalf("%d events, want 2", len(events))
		}
		// The events as the control plane keeps them, to see they stay.
		rows := make([]store.UsageEvent, len(events))
		for i, ev := range events {
			if rows[i], err = usage.Row(ev, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.st.InsertUsageEvents(ctx, rows); err != nil {
			t.Fatal(err)
		}
		var input string
		if err := db.NewRaw("SELECT input_file_id FROM batches WHERE id = ?", b.ID).Scan(ctx, &input); err != nil {
			t.Fatal(err)
		}

		// Another workspace's key: not found, and the batch stays.
		other := e.org.Workspace("other")
		otherToken, _ := e.org.Key(other, e.org.Member(auth.MembershipActive), nil)
		e.sync(t)
		url := e.srv.URL + "/inf/v1/messages/batches/" + b.ID
		if status, body := call(t, http.MethodDelete, url, otherToken, ""); status != 404 || !strings.Contains(string(body), `"type":"not_found_error"`) {
			t.Fatalf("delete from another workspace: %d %s", status, body)
		}

		del, err := c.Messages.Batches.Delete(ctx, b.ID, anthropic.MessageBatchDeleteParams{})
		if err != nil || del.ID != b.ID || string(del.Type) != "message_batch_deleted" {
			t.Fatalf("delete: %v %+v", err, del)
		}
		for _, u := range []struct{ method, path string }{{"GET", ""}, {"GET", "/results"}, {"POST", "/cancel"}, {"DELETE", ""}} {
			if status, body := call(t, u.method, url+u.path, e.token, ""); status != 404 || !strings.Contains(string(body), `"type":"not_found_error"`) {
				t.Errorf("%s %s after the delete: %d %s", u.method, u.path, status, body)
			}
		}
		count := func(q string, args ...any) int {
			t.Helper()
			var n int
			if err := db.NewRaw(q, args...).Scan(ctx, &n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		if n := count("SELECT COUNT(*) FROM batch_lines WHERE batch_id = ?", b.ID); n != 0 {
			t.Errorf("%d lines (and their answers) left", n)
		}
		if n := count("SELECT COUNT(*) FROM batch_files WHERE id = ? AND (deleted_at IS NULL OR LENGTH(content) > 0)", input); n != 0 {
			t.Errorf("the batch's requests (%s) are still kept", input)
		}
		if n := count("SELECT COUNT(*) FROM usage_events WHERE batch_id = ?", b.ID); n != 2 {
			t.Errorf("%d usage events of the deleted batch, want its 2", n)
		}
		page, err := c.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{})
		if err != nil || len(page.Data) != 0 {
			t.Errorf("the list after the delete: %v %s", err, page.RawJSON())
		}
	})
}

// Anthropic's list pages both ways: after_id the older page, before_id the
// newer one, each newest first, with first_id, last_id and has_more in the
// page's direction; a limit outside 1 to 1000, or both cursors, is a 400
// naming it. Another workspace's id as a cursor pages nothing of this one.
func TestMessageBatchListPages(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		e.sync(t)
		c, ctx := e.anthropicClient(), context.Background()
		var ids []string // oldest first
		for i := range 5 {
			status, body := call(t, http.MethodPost, e.srv.URL+"/inf/v1/messages/batches", e.token, msgBatchBody(msgRequest(fmt.Sprint("r", i), haiku)))
			if status != 200 {
				t.Fatalf("submission %d: %d %s", i, status, body)
			}
			page, err := c.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{Limit: anthropic.Int(1)})
			if err != nil || len(page.Data) != 1 {
				t.Fatal(err)
			}
			ids = append(ids, page.Data[0].ID)
		}
		idsOf := func(p []anthropic.MessageBatch) string {
			var out []string
			for _, b := range p {
				out = append(out, b.ID)
			}
			return strings.Join(out, ",")
		}
		want := func(i ...int) string {
			var out []string
			for _, n := range i {
				out = append(out, ids[n])
			}
			return strings.Join(out, ",")
		}
		// Newest first: 4,3 then after 3: 2,1 (more), after 1: 0 (no more).
		p, err := c.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{Limit: anthropic.Int(2)})
		if err != nil || idsOf(p.Data) != want(4, 3) || !p.HasMore || p.FirstID != ids[4] || p.LastID != ids[3] {
			t.Fatalf("first page: %v %s", err, p.RawJSON())
		}
		p, err = c.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{Limit: anthropic.Int(2), AfterID: anthropic.String(ids[3])})
		if err != nil || idsOf(p.Data) != want(2, 1) || !p.HasMore || p.FirstID != ids[2] || p.LastID != ids[1] {
			t.Fatalf("after %s: %v %s", ids[3], err, p.RawJSON())
		}
		p, err = c.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{Limit: anthropic.Int(2), AfterID: anthropic.String(ids[1])})
		if err != nil || idsOf(p.Data) != want(0) || p.HasMore {
			t.Fatalf("the last page: %v %s", err, p.RawJSON())
		}
		// Back: before 1 are 3,2 (the nearest two, newest first), more
		// newer; before 3 is 4 alone, no more.
		p, err = c.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{Limit: anthropic.Int(2), BeforeID: anthropic.String(ids[1])})
		if err != nil || idsOf(p.Data) != want(3, 2) || !p.HasMore || p.FirstID != ids[3] || p.LastID != ids[2] {
			t.Fatalf("before %s: %v %s", ids[1], err, p.RawJSON())
		}
		p, err = c.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{Limit: anthropic.Int(2), BeforeID: anthropic.String(ids[3])})
		if err != nil || idsOf(p.Data) != want(4) || p.HasMore {
			t.Fatalf("before %s: %v %s", ids[3], err, p.RawJSON())
		}
		p, err = c.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{BeforeID: anthropic.String(ids[4])})
		if err != nil || len(p.Data) != 0 || p.HasMore || p.FirstID != "" {
			t.Fatalf("before the newest: %v %s", err, p.RawJSON())
		}
		p, err = c.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{Limit: anthropic.Int(1000)})
		if err != nil || len(p.Data) != 5 || p.HasMore {
			t.Fatalf("limit 1000: %v %s", err, p.RawJSON())
		}
		base := e.srv.URL + "/inf/v1/messages/batches"
		for q, name := range map[string]string{"?limit=0": "limit", "?limit=1001": "limit", "?limit=x": "limit",
			"?after_id=" + ids[1] + "&before_id=" + ids[3]: "before_id"} {
			if status, body := call(t, http.MethodGet, base+q, e.token, ""); status != 400 || !strings.Contains(string(body), `"type":"invalid_request_error"`) ||
				!strings.Contains(string(body), name) {
				t.Errorf("GET %s: %d %s", q, status, body)
			}
		}
		// Another workspace's cursors page nothing of this one, and this
		// one's page nothing of it.
		other := e.org.Workspace("other")
		otherToken, _ := e.org.Key(other, e.org.Member(auth.MembershipActive), nil)
		e.sync(t)
		for _, q := range []string{"?before_id=" + ids[0], "?after_id=" + ids[4], ""} {
			if status, body := call(t, http.MethodGet, base+q, otherToken, ""); status != 200 || strings.Contains(string(body), "msgbatch_") {
				t.Errorf("another workspace's GET %s: %d %s", q, status, body)
			}
		}
	})
}

// Anthropic's limits for a message batch, not OpenAI's: more than 100,000
// requests, or a body over 256 MB, is refused in Anthropic's error shape
// naming the limit, before anything is stored; 50,001 requests (over
// OpenAI's 50,000) are taken.
func TestMessageBatchLimits(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		e.sync(t)
		url := e.srv.URL + "/inf/v1/messages/batches"
		// Short requests of a model with no budget: only the count matters.
		reqs := func(n int) string {
			var b strings.Builder
			b.WriteString(`{"requests":[`)
			for i := range n {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"custom_id":"r%d","params":{"model":"%s","max_tokens":1,"messages":[{"role":"user","content":"x"}]}}`, i, haiku)
			}
			b.WriteString(`]}`)
			return b.String()
		}
		status, body := call(t, http.MethodPost, url, e.token, reqs(int(batchfile.MessageBatchLimits.Lines)+1))
		if status != 400 || !strings.Contains(string(body), `"type":"invalid_request_error"`) || !strings.Contains(string(body), "at most 100000 requests") {
			t.Fatalf("100,001 requests: %d %.300s", status, body)
		}
		status, body = call(t, http.MethodPost, url, e.token, reqs(50_001))
		if status != 200 {
			t.Fatalf("50,001 requests (over OpenAI's limit, within Anthropic's): %d %.300s", status, body)
		}
		// A body over 256 MB, declared: refused before it is read.
		req, _ := http.NewRequest(http.MethodPost, url, io.LimitReader(zeros{}, batchfile.MessageBatchLimits.Bytes+1))
		req.ContentLength = batchfile.MessageBatchLimits.Bytes + 1
		status, body = doAs(t, req, e.token)
		if status != 413 || !strings.Contains(string(body), `"type":"request_too_large"`) || !strings.Contains(string(body), "256000000 bytes (256 MB)") {
			t.Fatalf("a body over 256 MB: %d %s", status, body)
		}
		var n int
		if err := db.NewRaw("SELECT COUNT(*) FROM batches").Scan(context.Background(), &n); err != nil || n != 1 {
			t.Fatalf("%d batches stored, want the one taken: %v", n, err)
		}
	})
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
