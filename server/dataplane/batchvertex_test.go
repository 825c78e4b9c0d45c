package dataplane_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/openai/openai-go/v3"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// Vertex AI native batches (issue 34; docs/batches.md): lines routed to a
// vertex credential with a batch_gcs_uri run as a batch prediction job of
// the fake's (providerstest/vertex_batch.go), whose input and predictions
// live in a real GCS-compatible server (fake-gcs-server on 127.0.0.1).

const vertexBucket = "gw-batches"

// vertexBatches starts a Vertex AI fake with its job API and a Cloud
// Storage, and an organization credential whose settings name the bucket
// (and the storage's endpoint); settings "" gives the credential no batch
// bucket at all.
func vertexBatches(t *testing.T, e *infEnv, withBucket bool) (*providerstest.Vertex, *fakestorage.Server) {
	t.Helper()
	v := providerstest.NewVertex(t, "gw-test-project", "us-east5")
	gcs := providerstest.NewGCS(t, vertexBucket)
	v.ServeBatches(gcs)
	settings := `{"location":"us-east5"}`
	if withBucket {
		settings = `{"location":"us-east5","batch_gcs_uri":"gs://` + vertexBucket + `/gw/jobs/","batch_gcs_endpoint":"` + gcs.URL() + `"}`
	}
	e.credentialWith(t, &e.org.ID, "vertex", v.ServiceAccount(), v.BaseURL(), settings)
	e.sync(t)
	return v, gcs
}

// objectsLeft lists what is left in the bucket.
func objectsLeft(t *testing.T, gcs *fakestorage.Server) []string {
	t.Helper()
	objs, _, err := gcs.ListObjects(vertexBucket, "", "", false)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.Name)
	}
	return names
}

// A batch of chat completions to a Gemini model on Vertex AI runs as one
// batch prediction job: its input written to the bucket (each request
// translated to generateContent, the upstream model in the job), the
// predictions — in no particular order — read back by custom_id into gw's
// output and error files, each line one usage event at the batch price of
// the usageMetadata Vertex reported; a line Vertex failed costs nothing;
// the bucket is left empty and the job deleted.
func TestVertexBatchRunsAsABatchPredictionJob(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		v, gcs := vertexBatches(t, e, true)
		v.SetDefault(providerstest.Reply{Text: "hi", Usage: providerstest.Usage{Input: 1000, Output: 101}})
		v.ReplyWhen("hello bad", providerstest.Reply{Status: http.StatusBadRequest, Message: "this one is refused"})
		sync := syncCost(t, e, vertexGemini)
		c := e.sdk()

		content := batchLine("a", vertexGemini) + "\n" + batchLine("bad", vertexGemini) + "\n" + batchLine("c", vertexGemini) + "\n"
		b := batchRef{submitFile(t, e, content)}
		runner(t, e.plane)
		done := waitBatch(t, c, b.ID, openai.BatchStatusCompleted)
		if done.RequestCounts.Completed != 2 || done.RequestCounts.Failed != 1 {
			t.Fatalf("completed batch: %s", done.RawJSON())
		}
		if v.JobsCreated() != 1 {
			t.Fatalf("%d batch prediction jobs, want 1", v.JobsCreated())
		}
		// Vertex ran the lines through generateContent of the upstream
		// model (the synchronous request and 3 lines).
		reqs := v.Requests()
		if len(reqs) != 4 {
			t.Fatalf("Vertex answered %d requests, want 4", len(reqs))
		}
		for _, r := range reqs[1:] {
			if !strings.HasSuffix(r.Path, "/publishers/google/models/gemini-2.5-flash:generateContent") || r.Body["contents"] == nil {
				t.Fatalf("a line reached Vertex as %s %v", r.Path, r.Body)
			}
		}
		// Once read back, the input and the predictions are deleted from the
		// bucket, and the job at Vertex.
		if left := objectsLeft(t, gcs); len(left) != 0 {
			t.Fatalf("objects left in the bucket: %v", left)
		}
		if !slices.ContainsFunc(v.BatchCalls(), func(s string) bool { return strings.HasPrefix(s, "DELETE /batchPredictionJobs/") }) {
			t.Fatalf("the job was not deleted: %v", v.BatchCalls())
		}

		read := func(id string) []map[string]any { return fileLines(t, c, id) }
		requestIDs := map[string]string{}
		for i, l := range read(done.OutputFileID) {
			resp := l["response"].(map[string]any)
			body := resp["body"].(map[string]any)
			choice := body["choices"].([]any)[0].(map[string]any)
			if l["custom_id"] != []string{"a", "c"}[i] || resp["status_code"] != 200.0 || body["model"] != vertexGemini ||
				body["object"] != "chat.completion" || choice["message"].(map[string]any)["content"] != "hi" {
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

// A message batch to Claude on Vertex AI runs as a batch prediction job of
// the anthropic publisher: each request as sent (Vertex's
// anthropic_version, no model), matched back by its custom_id, its cache
// tokens priced at the batch price.
func TestVertexClaudeMessageBatch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		v, _ := vertexBatches(t, e, true)
		v.SetDefault(providerstest.Reply{Text: "hi", Usage: providerstest.Usage{Input: 1000, Output: 101, CacheRead: 300, CacheWrite: 40}})
		sync := syncCost(t, e, vertexClaude)
		c := e.anthropicClient()
		b := newMessageBatch(t, c, vertexClaude, "a.1", "b 2")
		runner(t, e.plane)
		done := waitMessageBatch(t, c, b.ID)
		if done.RequestCounts.Succeeded != 2 || v.JobsCreated() != 1 {
			t.Fatalf("ended batch: %s (%d jobs)", done.RawJSON(), v.JobsCreated())
		}
		for _, r := range v.Requests()[1:] {
			if !strings.HasSuffix(r.Path, "/publishers/anthropic/models/claude-haiku-4-5@20251001:rawPredict") || r.Body["model"] != nil ||
				r.Body["anthropic_version"] != "vertex-2023-10-16" {
				t.Fatalf("a request reached Vertex as %s %v", r.Path, r.Body)
			}
		}
		nativeMessageBatchResults(t, e, c, b.ID, vertexClaude, sync)
	})
}

// A vertex credential without batch_gcs_uri keeps its lines on gw's
// runner, as before: no job, each line a synchronous request at the
// synchronous price.
func TestVertexBatchWithoutBucketRunsOnGateway(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		v, _ := vertexBatches(t, e, false)
		b := batchRef{submitFile(t, e, batchLine("a", vertexGemini)+"\n")}
		runner(t, e.plane)
		waitBatch(t, e.sdk(), b.ID, openai.BatchStatusCompleted)
		if v.JobsCreated() != 0 || len(v.Requests()) != 1 || !strings.HasSuffix(v.Requests()[0].Path, ":generateContent") {
			t.Fatalf("%d jobs, %d requests", v.JobsCreated(), len(v.Requests()))
		}
		batchEventsPriced(t, e.usage.snapshot(), b.ID, 1, func(string) string { return "" })
	})
}

// A gw restarted while its job runs takes polling up where it was; one
// stopped after Vertex accepted the job and before gw recorded its name
// (simulated: the group put back to submitting, its id cleared) finds it
// by its display name, gw's batch and group: one job, every line run and
// metered once.
func TestVertexBatchSurvivesRestart(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		v, gcs := vertexBatches(t, e, true)
		v.SetDefault(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 10, Output: 2}})
		v.HoldBatches(true)
		const n = 5
		var content strings.Builder
		for i := range n {
			content.WriteString(batchLine(fmt.Sprint("r", i), vertexGemini) + "\n")
		}
		b := batchRef{submitFile(t, e, content.String())}

		stop := runner(t, e.plane)
		waitUntil(t, "the job created and recorded", func() bool {
			n, err := db.NewSelect().TableExpr("batch_upstreams").Where("status = ?", "submitted").Count(context.Background())
			return err == nil && n == 1 && v.JobsCreated() == 1
		})
		stop()
		if _, err := db.NewRaw(`UPDATE batch_upstreams SET status = 'submitting', upstream_batch_id = NULL`).Exec(context.Background()); err != nil {
			t.Fatal(err)
		}

		p := dataplane.NewPlane(e.signer.Public().(ed25519.PublicKey), e.opts)
		r := &publish.Refresher{Compiler: e.refresh.Compiler, Plane: p, Store: e.st}
		if err := r.RefreshAll(context.Background()); err != nil {
			t.Fatal(err)
		}
		v.HoldBatches(false)
		runner(t, p)
		done := waitBatch(t, e.sdk(), b.ID, openai.BatchStatusCompleted)
		if done.RequestCounts.Completed != n || v.JobsCreated() != 1 || len(v.Requests()) != n {
			t.Fatalf("after the restart: %s; %d jobs, %d requests run", done.RawJSON(), v.JobsCreated(), len(v.Requests()))
		}
		if !slices.Contains(v.BatchCalls(), "GET /batchPredictionJobs") {
			t.Fatalf("the restarted plane did not look the job up: %v", v.BatchCalls())
		}
		var events []wire.UsageEventIn
		for _, ev := range e.usage.snapshot() {
			if *ev.BatchID == b.ID {
				events = append(events, ev)
			}
		}
		batchEvents(t, events, b.ID, n)
		if left := objectsLeft(t, gcs); len(left) != 0 {
			t.Fatalf("objects left in the bucket: %v", left)
		}
	})
}

// Cancelling a batch whose job runs cancels the job: the lines it never
// ran are cancelled and cost nothing; another workspace neither sees nor
// cancels the batch.
func TestVertexBatchCancelAndTenancy(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		other, _ := e.org.Key(e.org.Workspace("other"), e.org.Member(auth.MembershipActive), nil)
		v, gcs := vertexBatches(t, e, true)
		v.HoldBatches(true)
		c := e.sdk()
		b := batchRef{submitFile(t, e, batchLine("a", vertexGemini)+"\n"+batchLine("b", vertexGemini)+"\n")}
		runner(t, e.plane)
		waitUntil(t, "the job", func() bool { return v.JobsCreated() == 1 })
		for _, c := range []struct{ method, path string }{
			{http.MethodGet, "/inf/v1/batches/" + b.ID},
			{http.MethodPost, "/inf/v1/batches/" + b.ID + "/cancel"},
		} {
			if status, body := call(t, c.method, e.srv.URL+c.path, other, ""); status != http.StatusNotFound {
				t.Fatalf("%s %s with another workspace's key: %d %s", c.method, c.path, status, body)
			}
		}
		cancelling, err := c.Batches.Cancel(context.Background(), b.ID)
		if err != nil || cancelling.Status != openai.BatchStatusCancelling {
			t.Fatalf("cancel: %v %s", err, cancelling.RawJSON())
		}
		v.HoldBatches(false)
		done := waitBatch(t, c, b.ID, openai.BatchStatusCancelled)
		if done.RequestCounts.Completed != 0 || len(v.Requests()) != 0 {
			t.Fatalf("cancelled batch: %s; Vertex ran %d lines", done.RawJSON(), len(v.Requests()))
		}
		if !slices.ContainsFunc(v.BatchCalls(), func(s string) bool { return strings.HasSuffix(s, ":cancel") }) {
			t.Fatalf("the job was not cancelled: %v", v.BatchCalls())
		}
		if evs := e.usage.snapshot(); len(evs) != 0 {
			t.Fatalf("a cancelled batch left %d events", len(evs))
		}
		if left := objectsLeft(t, gcs); len(left) != 0 {
			t.Fatalf("objects left in the bucket: %v", left)
		}
	})
}

// A job Vertex AI refuses (a 4xx: it took nothing) fails the group's
// lines at no cost, nothing run, and the input gw wrote is deleted from
// the bucket.
func TestVertexBatchRefusedJob(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		v, gcs := vertexBatches(t, e, true)
		v.RefuseJobs("Model gemini-2.5-flash does not support batch prediction in us-east5.")
		b := batchRef{submitFile(t, e, batchLine("a", vertexGemini)+"\n"+batchLine("b", vertexGemini)+"\n")}
		runner(t, e.plane)
		done := waitBatch(t, e.sdk(), b.ID, openai.BatchStatusCompleted)
		if done.RequestCounts.Failed != 2 || done.RequestCounts.Completed != 0 || v.JobsCreated() != 0 || len(v.Requests()) != 0 {
			t.Fatalf("refused job: %s; %d jobs, %d requests", done.RawJSON(), v.JobsCreated(), len(v.Requests()))
		}
		raw := fileBytes(t, e.sdk(), done.ErrorFileID)
		if !strings.Contains(string(raw), "does not support batch prediction") {
			t.Fatalf("error file: %s", raw)
		}
		if evs := e.usage.snapshot(); len(evs) != 0 {
			t.Fatalf("a refused job left %d events", len(evs))
		}
		if left := objectsLeft(t, gcs); len(left) != 0 {
			t.Fatalf("objects left in the bucket: %v", left)
		}
	})
}

// A line Gemini's translation refuses (n above 1) is left to gw's runner,
// which refuses it alone before anything is sent; the batch's other lines
// still run in the job.
func TestVertexBatchUntranslatableLineRunsOnGateway(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		v, _ := vertexBatches(t, e, true)
		two := `{"custom_id":"two","method":"POST","url":"/v1/chat/completions","body":{"model":"` + vertexGemini +
			`","n":2,"messages":[{"role":"user","content":"hello two"}]}}`
		b := batchRef{submitFile(t, e, batchLine("a", vertexGemini)+"\n"+two+"\n"+batchLine("c", vertexGemini)+"\n")}
		runner(t, e.plane)
		done := waitBatch(t, e.sdk(), b.ID, openai.BatchStatusCompleted)
		if done.RequestCounts.Completed != 2 || done.RequestCounts.Failed != 1 || v.JobsCreated() != 1 || len(v.Requests()) != 2 {
			t.Fatalf("batch: %s; %d jobs, %d requests", done.RawJSON(), v.JobsCreated(), len(v.Requests()))
		}
		raw := fileBytes(t, e.sdk(), done.ErrorFileID)
		if !strings.Contains(string(raw), `"custom_id":"two"`) || !strings.Contains(string(raw), "'n' must be 1") {
			t.Fatalf("error file: %s", raw)
		}
	})
}
