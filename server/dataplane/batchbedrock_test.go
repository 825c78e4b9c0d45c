package dataplane_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/openai/openai-go/v3"
	"github.com/shopspring/decimal"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/archive/archivetest"
	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// Bedrock's batch inference (issue 34; docs/batches.md): the requests of
// a message batch to Claude on Bedrock run as a batch inference job whose
// input gw writes to the credential's S3 prefix and whose output Bedrock
// writes there; here the bucket is a real S3-compatible server
// (versitygw) and the job API the fake Bedrock's, which reads the input
// from it, answers each record through its runtime handler and writes
// the output back.

// bedrockBatchEnv is a Bedrock credential with batch settings, its fake
// and the bucket.
type bedrockBatchEnv struct {
	fake   *providerstest.Bedrock
	bucket *s3.Client
}

const bedrockBatchBucket = "gw-bedrock-batches"

// withBedrockBatches starts versitygw with a bucket and a fake Bedrock
// whose access key is the store's (Bedrock's role reads the input as the
// caller's key writes it), and stores an org credential for it with
// settings (JSON, its S3 endpoint filled in by the %s).
func (e *infEnv) withBedrockBatches(t *testing.T, settings string) *bedrockBatchEnv {
	t.Helper()
	store := archivetest.Start(t)
	b := providerstest.NewBedrock(t, "us-east-1")
	b.AccessKeyID, b.SecretAccessKey = archivetest.Access, archivetest.Secret
	b.UseS3(store.Endpoint())
	creds := aws.Credentials{AccessKeyID: archivetest.Access, SecretAccessKey: archivetest.Secret}
	client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(store.Endpoint()), UsePathStyle: true,
		Credentials:                aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return creds, nil }),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired, ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired})
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bedrockBatchBucket)}); err != nil {
		t.Fatal(err)
	}
	e.credentialWith(t, &e.org.ID, "bedrock", b.Secret(), b.BaseURL(), fmt.Sprintf(settings, store.Endpoint()))
	e.sync(t)
	return &bedrockBatchEnv{fake: b, bucket: client}
}

// bedrockBatchSettings are settings that run a credential's batches on
// Bedrock's batch inference.
const bedrockBatchSettings = `{"region":"us-east-1","batch_s3_uri":"s3://` + bedrockBatchBucket + `/jobs/",` +
	`"batch_role_arn":"arn:aws:iam::123456789012:role/gw-batch","batch_s3_endpoint":"%s"}`

// objects lists the bucket's keys.
func (b *bedrockBatchEnv) objects(t *testing.T) []string {
	t.Helper()
	out, err := b.bucket.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bedrockBatchBucket)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// bedrockMessageBatch creates a message batch of n requests to Claude on
// Bedrock (custom ids prefix0 …), and returns its id.
func bedrockMessageBatch(t *testing.T, e *infEnv, prefix string, n int) string {
	t.Helper()
	reqs := make([]string, n)
	for i := range reqs {
		reqs[i] = msgRequest(fmt.Sprint(prefix, i), bedrockClaude)
	}
	status, body := call(t, http.MethodPost, e.srv.URL+"/inf/v1/messages/batches", e.token, msgBatchBody(reqs...))
	if status != http.StatusOK {
		t.Fatalf("message batch: %d %s", status, body)
	}
	var b struct{ ID string }
	_ = json.Unmarshal(body, &b)
	return b.ID
}

// bedrockSyncCost is a synchronous Messages request's cost to Claude on
// Bedrock with the fake's default reply.
func bedrockSyncCost(t *testing.T, e *infEnv) decimal.Decimal {
	t.Helper()
	if status, body := call(t, http.MethodPost, e.srv.URL+"/inf/v1/messages", e.token,
		`{"model":"`+bedrockClaude+`","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`); status != 200 {
		t.Fatalf("synchronous request: %d %s", status, body)
	}
	cost := decimal.RequireFromString(e.usage.snapshot()[0].CostUSD)
	e.usage.reset()
	return cost
}

// A message batch of 101 requests to Claude on Bedrock runs as one batch
// inference job: its input written to the bucket as Bedrock's records
// (Claude's InvokeModel body), the job created with the credential's role
// and a name made of gw's batch, its output read back; each request one
// usage event at half the synchronous price of the tokens Bedrock's
// modelOutput reported; the record Bedrock failed costs nothing; the
// input, output and manifest deleted from the bucket once read.
func TestBedrockNativeMessageBatch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		br := e.withBedrockBatches(t, bedrockBatchSettings)
		br.fake.SetDefault(providerstest.Reply{Text: "hi", Usage: providerstest.Usage{Input: 1000, Output: 101}})
		br.fake.ReplyWhen("hello r7\"", providerstest.Reply{Status: http.StatusBadRequest, Message: "this record is refused"})
		sync := bedrockSyncCost(t, e)
		const n = 101
		id := bedrockMessageBatch(t, e, "r", n)
		runner(t, e.plane)
		c := e.anthropicClient()
		done := waitMessageBatch(t, c, id)
		if done.RequestCounts.Succeeded != n-1 || done.RequestCounts.Errored != 1 || br.fake.JobsCreated() != 1 {
			t.Fatalf("ended batch: %s (%d jobs)", done.RawJSON(), br.fake.JobsCreated())
		}
		if name := providers.BedrockBatchJobName(id, 1); br.fake.JobStatus(name) != "Completed" {
			t.Fatalf("no completed job named %s", name)
		}
		// Each record reached Bedrock's runtime as InvokeModel of the
		// job's model, in Claude's Bedrock body.
		reqs := br.fake.Requests()
		if len(reqs) != n+1 {
			t.Fatalf("Bedrock answered %d requests, want %d", len(reqs), n+1)
		}
		for _, r := range reqs[1:] {
			if !strings.HasSuffix(r.Path, "/invoke") || r.Body["anthropic_version"] != "bedrock-2023-05-31" || r.Body["model"] != nil {
				t.Fatalf("a record reached Bedrock as %s %v", r.Path, r.Body)
			}
		}
		stream := c.Messages.Batches.ResultsStreaming(context.Background(), id, anthropic.MessageBatchResultsParams{})
		var got []string
		for stream.Next() {
			r := stream.Current()
			switch {
			case r.CustomID == "r7":
				if r.Result.Type != "errored" || !strings.Contains(r.Result.Error.RawJSON(), "this record is refused") {
					t.Fatalf("the refused record: %s", r.RawJSON())
				}
			case r.Result.Type != "succeeded" || r.Result.Message.Content[0].Text != "hi" || string(r.Result.Message.Model) != bedrockClaude:
				t.Fatalf("result: %s", r.RawJSON())
			}
			got = append(got, r.CustomID)
		}
		if err := stream.Err(); err != nil || len(got) != n || got[0] != "r0" || got[n-1] != fmt.Sprint("r", n-1) {
			t.Fatalf("results: %d %v", len(got), err)
		}
		half := sync.Div(decimal.NewFromInt(2))
		failed := 0
		for rid, ev := range batchEvents(t, e.usage.snapshot(), id, n) {
			if ev.ID.String() != rid {
				t.Fatalf("event id %s is not its line's request id %s", ev.ID, rid)
			}
			if ev.Status == "error" {
				failed++
				if !decimal.RequireFromString(ev.CostUSD).IsZero() {
					t.Fatalf("the failed record costs %s", ev.CostUSD)
				}
				continue
			}
			if ev.Status != "ok" || ev.InputTokens != 1000 || ev.OutputTokens != 101 || !decimal.RequireFromString(ev.CostUSD).Equal(half) {
				t.Fatalf("line event: %+v, want Bedrock's tokens at %s (half the synchronous %s)", ev, half, sync)
			}
		}
		if failed != 1 {
			t.Fatalf("%d failed events, want 1", failed)
		}
		if keys := br.objects(t); len(keys) != 0 {
			t.Fatalf("objects left in the bucket: %v", keys)
		}
	})
}

// An OpenAI-shape batch of chat completions to a Bedrock model (here
// Amazon Nova) runs as a Converse job: each line's record the Converse
// body a synchronous request sends, each answer read back as the
// chat.completion a synchronous request answers, one event per line at
// half the synchronous price; a line a Converse job cannot take (tools)
// runs on gw's runner beside it, at the synchronous price.
func TestBedrockConverseBatch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		br := e.withBedrockBatches(t, bedrockBatchSettings)
		br.fake.SetDefault(providerstest.Reply{Text: "hi", Usage: providerstest.Usage{Input: 1000, Output: 101}})
		sync := syncCost(t, e, bedrockNova)
		before := len(br.fake.Requests())
		n := providers.BedrockBatchMinRecords
		var content strings.Builder
		for i := range n {
			content.WriteString(batchLine(fmt.Sprint("n", i), bedrockNova) + "\n")
		}
		content.WriteString(`{"custom_id":"tool","method":"POST","url":"/v1/chat/completions","body":{"model":"` + bedrockNova +
			`","max_tokens":20,"messages":[{"role":"user","content":"hello tool"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}}` + "\n")
		b := batchRef{submitFile(t, e, content.String())}
		runner(t, e.plane)
		c := e.sdk()
		done := waitBatch(t, c, b.ID, openai.BatchStatusCompleted)
		if done.RequestCounts.Completed != int64(n+1) || br.fake.JobsCreated() != 1 {
			t.Fatalf("batch: %s; %d jobs", done.RawJSON(), br.fake.JobsCreated())
		}
		// n records through Converse (Converse's body: content blocks),
		// and the tool line, sent by gw's runner, also through Converse.
		reqs := br.fake.Requests()[before:]
		if len(reqs) != n+1 {
			t.Fatalf("Bedrock answered %d requests, want %d", len(reqs), n+1)
		}
		for _, r := range reqs {
			msgs, _ := r.Body["messages"].([]any)
			first, _ := msgs[0].(map[string]any)
			if !strings.HasSuffix(r.Path, "/converse") || first == nil || first["content"] == nil || r.Body["model"] != nil {
				t.Fatalf("a line reached Bedrock as %s %v", r.Path, r.Body)
			}
			if _, blocks := first["content"].([]any); !blocks {
				t.Fatalf("not a Converse body: %v", r.Body)
			}
		}
		raw := fileBytes(t, c, done.OutputFileID)
		requestIDs := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			var line struct {
				CustomID string `json:"custom_id"`
				Response struct {
					StatusCode int    `json:"status_code"`
					RequestID  string `json:"request_id"`
					Body       struct {
						Object, Model string
						Choices       []struct{ Message struct{ Content string } }
					}
				}
			}
			if err := json.Unmarshal([]byte(l), &line); err != nil || line.Response.StatusCode != 200 || line.Response.Body.Object != "chat.completion" ||
				line.Response.Body.Model != bedrockNova || len(line.Response.Body.Choices) != 1 || line.Response.Body.Choices[0].Message.Content != "hi" {
				t.Fatalf("output line: %s (%v)", l, err)
			}
			requestIDs[line.Response.RequestID] = line.CustomID
		}
		half := sync.Div(decimal.NewFromInt(2))
		events := batchEventsPriced(t, e.usage.snapshot(), b.ID, n+1, func(id string) string {
			if requestIDs[id] == "tool" {
				return ""
			}
			return wire.PriceClassBatch
		})
		for id, ev := range events {
			want := half
			if requestIDs[id] == "tool" {
				want = sync
			}
			if ev.Status != "ok" || ev.InputTokens != 1000 || ev.OutputTokens != 101 || !decimal.RequireFromString(ev.CostUSD).Equal(want) {
				t.Fatalf("line %s: %+v, want %s", requestIDs[id], ev, want)
			}
		}
	})
}

// Fewer requests than Bedrock's minimum per job: the requests run on gw's
// runner, one InvokeModel each, at the synchronous price; no job, nothing
// in the bucket.
func TestBedrockBatchBelowMinimumRunsOnGateway(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		br := e.withBedrockBatches(t, bedrockBatchSettings)
		id := bedrockMessageBatch(t, e, "s", providers.BedrockBatchMinRecords-1)
		runner(t, e.plane)
		done := waitMessageBatch(t, e.anthropicClient(), id)
		if done.RequestCounts.Succeeded != providers.BedrockBatchMinRecords-1 || br.fake.JobsCreated() != 0 ||
			len(br.fake.Requests()) != providers.BedrockBatchMinRecords-1 {
			t.Fatalf("batch: %s; %d jobs, %d runtime requests", done.RawJSON(), br.fake.JobsCreated(), len(br.fake.Requests()))
		}
		batchEventsPriced(t, e.usage.snapshot(), id, providers.BedrockBatchMinRecords-1, func(string) string { return "" })
		if keys := br.objects(t); len(keys) != 0 {
			t.Fatalf("objects in the bucket: %v", keys)
		}
	})
}

// A bedrock credential without the batch settings keeps its batches on
// gw's runner, however many requests.
func TestBedrockBatchWithoutSettingsRunsOnGateway(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		br := e.withBedrockBatches(t, `{"region":"us-east-1"}%.0s`)
		id := bedrockMessageBatch(t, e, "s", providers.BedrockBatchMinRecords)
		runner(t, e.plane)
		waitMessageBatch(t, e.anthropicClient(), id)
		if br.fake.JobsCreated() != 0 || len(br.fake.Requests()) != providers.BedrockBatchMinRecords {
			t.Fatalf("without batch settings: %d jobs, %d runtime requests", br.fake.JobsCreated(), len(br.fake.Requests()))
		}
		batchEventsPriced(t, e.usage.snapshot(), id, providers.BedrockBatchMinRecords, func(string) string { return "" })
	})
}

// Cancelling a message batch whose requests are in a Bedrock job stops
// the job: the records it never ran are cancelled and cost nothing.
func TestBedrockBatchCancel(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		br := e.withBedrockBatches(t, bedrockBatchSettings)
		br.fake.HoldBatches(true)
		id := bedrockMessageBatch(t, e, "c", providers.BedrockBatchMinRecords)
		runner(t, e.plane)
		waitUntil(t, "the job", func() bool { return br.fake.JobsCreated() == 1 })
		c := e.anthropicClient()
		if _, err := c.Messages.Batches.Cancel(context.Background(), id, anthropic.MessageBatchCancelParams{}); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "the job stopped", func() bool {
			return slices.ContainsFunc(br.fake.BatchCalls(), func(s string) bool { return strings.HasSuffix(s, "/stop") })
		})
		br.fake.HoldBatches(false)
		done := waitMessageBatch(t, c, id)
		if done.RequestCounts.Canceled != providers.BedrockBatchMinRecords || len(br.fake.Requests()) != 0 {
			t.Fatalf("cancelled batch: %s; Bedrock ran %d records", done.RawJSON(), len(br.fake.Requests()))
		}
		if st := br.fake.JobStatus(providers.BedrockBatchJobName(id, 1)); st != "Stopped" {
			t.Fatalf("job %s", st)
		}
		if evs := e.usage.snapshot(); len(evs) != 0 {
			t.Fatalf("a cancelled batch left %d events", len(evs))
		}
	})
}

// A gw restarted while its Bedrock job runs takes it up where it was,
// creating nothing twice: not even when the first process stopped after
// Bedrock accepted the job and before gw recorded its ARN (the group put
// back to submitting, its id cleared), since the job's name is gw's batch
// and group. Every request is run and metered once.
func TestBedrockBatchSurvivesRestart(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		br := e.withBedrockBatches(t, bedrockBatchSettings)
		br.fake.SetDefault(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 10, Output: 2}})
		br.fake.HoldBatches(true)
		n := providers.BedrockBatchMinRecords
		id := bedrockMessageBatch(t, e, "x", n)
		stop := runner(t, e.plane)
		waitUntil(t, "the job recorded", func() bool {
			c, err := db.NewSelect().TableExpr("batch_upstreams").Where("status = ?", "submitted").Count(context.Background())
			return err == nil && c == 1 && br.fake.JobsCreated() == 1
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
		br.fake.HoldBatches(false)
		runner(t, p)
		done := waitMessageBatch(t, e.anthropicClient(), id)
		if done.RequestCounts.Succeeded != int64(n) || br.fake.JobsCreated() != 1 || len(br.fake.Requests()) != n {
			t.Fatalf("after the restart: %s; %d jobs, %d records run", done.RawJSON(), br.fake.JobsCreated(), len(br.fake.Requests()))
		}
		if !slices.Contains(br.fake.BatchCalls(), "GET /model-invocation-jobs") {
			t.Fatalf("the restarted gw did not look for the job by its name: %v", br.fake.BatchCalls())
		}
		batchEvents(t, e.usage.snapshot(), id, n)
	})
}

// A job Bedrock refuses (here: a model whose minimum is above gw's 100)
// took nothing: its requests fail at no cost, naming Bedrock's reason, and
// the input gw wrote is deleted from the bucket.
func TestBedrockBatchRefusedJob(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		br := e.withBedrockBatches(t, bedrockBatchSettings)
		br.fake.SetMinRecords(1000)
		id := bedrockMessageBatch(t, e, "f", providers.BedrockBatchMinRecords)
		runner(t, e.plane)
		c := e.anthropicClient()
		done := waitMessageBatch(t, c, id)
		if done.RequestCounts.Errored != int64(providers.BedrockBatchMinRecords) || br.fake.JobsCreated() != 0 || len(br.fake.Requests()) != 0 {
			t.Fatalf("refused job: %s; %d jobs, %d records run", done.RawJSON(), br.fake.JobsCreated(), len(br.fake.Requests()))
		}
		stream := c.Messages.Batches.ResultsStreaming(context.Background(), id, anthropic.MessageBatchResultsParams{})
		for stream.Next() {
			if r := stream.Current(); r.Result.Type != "errored" || !strings.Contains(r.RawJSON(), "fewer than the minimum of 1000") {
				t.Fatalf("result: %s", r.RawJSON())
			}
		}
		for _, ev := range e.usage.snapshot() {
			if !decimal.RequireFromString(ev.CostUSD).IsZero() {
				t.Fatalf("a refused line costs %s", ev.CostUSD)
			}
		}
		if keys := br.objects(t); len(keys) != 0 {
			t.Fatalf("objects left in the bucket: %v", keys)
		}
	})
}

// A Bedrock-run message batch is its workspace's: another workspace's key
// finds neither it nor its results, nor can it cancel it.
func TestBedrockBatchTenancy(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		other, _ := e.org.Key(e.org.Workspace("other"), e.org.Member(auth.MembershipActive), nil)
		br := e.withBedrockBatches(t, bedrockBatchSettings)
		id := bedrockMessageBatch(t, e, "t", providers.BedrockBatchMinRecords)
		runner(t, e.plane)
		waitMessageBatch(t, e.anthropicClient(), id)
		if br.fake.JobsCreated() != 1 {
			t.Fatalf("%d jobs", br.fake.JobsCreated())
		}
		for _, c := range []struct{ method, path string }{
			{http.MethodGet, "/inf/v1/messages/batches/" + id},
			{http.MethodGet, "/inf/v1/messages/batches/" + id + "/results"},
			{http.MethodPost, "/inf/v1/messages/batches/" + id + "/cancel"},
		} {
			if status, body := call(t, c.method, e.srv.URL+c.path, other, ""); status != http.StatusNotFound {
				t.Fatalf("%s %s with another workspace's key: %d %s", c.method, c.path, status, body)
			}
		}
		// Its events are the submitting workspace's and key's.
		for _, ev := range batchEvents(t, e.usage.snapshot(), id, providers.BedrockBatchMinRecords) {
			if ev.WorkspaceID != e.ws || ev.InferenceKeyID == nil || *ev.InferenceKeyID != e.keyID {
				t.Fatalf("event of workspace %s key %v, want %s %s", ev.WorkspaceID, ev.InferenceKeyID, e.ws, e.keyID)
			}
		}
	})
}
