package providers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gw-gateway/gw/server/catalog"
)

// BatchAPI speaks the providers' own batch APIs (issue 34; docs/batches.md):
// OpenAI's and Azure OpenAI's Files and Batches, Anthropic's Message
// Batches, Bedrock's batch inference jobs (bedrock_batch.go). A batch run there is billed at the provider's batch price,
// which is what gw records for its lines.
//
// Its calls are not model requests (a GET, a multipart upload), so they
// do not go through send, whose request is always a JSON POST; they reuse
// what send's callers use: the adapters' HTTP client (the egress policy),
// the kinds' authorize hooks (bearer key, Anthropic's key and version,
// Azure's api-key or Entra ID token) and their refusal readers (the
// secret never quoted back).
type BatchAPI struct {
	Client *http.Client
	// tokens are Azure's Entra ID tokens, by credential.
	tokens oauthTokens
}

// BatchAPI is the set's batch client, on the adapters' HTTP client.
func (s *Set) BatchAPI() *BatchAPI { return s.batch }

// NativeBatches reports whether a batch line of endpoint (OpenAI's batch
// endpoints, or /v1/messages for Anthropic's dialect) to upstreamModel can
// run on the batch API of a credential of kind: the provider's batch API
// takes the line's own dialect, so nothing is translated (at Bedrock:
// Messages requests to Anthropic's models, whose InvokeModel body they
// are). A bedrock credential also needs its batch settings.
func NativeBatches(kind catalog.Kind, endpoint, upstreamModel string) bool {
	switch kind {
	case catalog.KindBedrock:
		return bedrockBatchable(endpoint, upstreamModel)
	case catalog.KindOpenAI:
		return endpoint == "/v1/chat/completions" || endpoint == "/v1/responses" || endpoint == "/v1/embeddings"
	case catalog.KindAzureOpenAI:
		return endpoint == "/v1/chat/completions" || endpoint == "/v1/embeddings"
	case catalog.KindAnthropic:
		return endpoint == "/v1/messages"
	}
	return false
}

// BatchRequest is one request of a provider batch: its custom_id at the
// provider (gw's own, which names its line) and its body as the caller
// sent it, whose model the batch API names as the provider knows it
// (Upload, Create: the upstream model, an Azure deployment).
type BatchRequest struct {
	CustomID string
	Body     json.RawMessage
}

// BatchJob is a provider batch as its API reports it.
type BatchJob struct {
	ID     string
	Status string
	// Ended: the provider will run none of its requests any more
	// (completed, failed, expired, cancelled; Anthropic's ended).
	Ended bool
	// Cancelled: it ended because it was cancelled.
	Cancelled    bool
	InputFileID  string
	OutputFileID string
	ErrorFileID  string
	CreatedAt    time.Time
	// Total is the number of its requests.
	Total int
}

// BatchResult is one request's outcome in an ended provider batch.
type BatchResult struct {
	CustomID string
	// Outcome is succeeded, errored, canceled or expired (Anthropic's
	// words; OpenAI's lines are read into them).
	Outcome string
	// StatusCode is the answer's HTTP status (200 when succeeded; 0 when
	// the provider gave no answer).
	StatusCode int
	// Body is the answer: the endpoint's answer object when succeeded,
	// the provider's error body otherwise (may be empty).
	Body json.RawMessage
	// Error is what went wrong, when it did not succeed.
	Error string
	// Usage is what the provider reports the request used (succeeded
	// only).
	Usage Usage
}

// Outcomes of a provider batch's request.
const (
	BatchSucceeded = "succeeded"
	BatchErrored   = "errored"
	BatchCanceled  = "canceled"
	BatchExpired   = "expired"
)

// azureBatchVersion is the api-version of Azure's Files and Batches when
// the credential names none (the GA version that has them).
const azureBatchVersion = "2024-10-21"

// url is the API address of path (/files, /batches/{id}) for kind.
func (b *BatchAPI) url(kind catalog.Kind, call *Call, path string, query url.Values) string {
	base := trimBase(call.BaseURL)
	if kind == catalog.KindAzureOpenAI {
		if query == nil {
			query = url.Values{}
		}
		version := call.Settings.APIVersion
		if version == "" {
			version = azureBatchVersion
		}
		query.Set("api-version", version)
		base += "/openai"
	}
	if kind == catalog.KindAnthropic {
		path = "/messages" + path
	}
	u := base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	return u
}

// do is one call of a batch API: authorized as the kind's model requests
// are, a non-2xx answer read by the kind's refusal reader.
func (b *BatchAPI) do(ctx context.Context, kind catalog.Kind, call *Call, method, u, contentType string, body []byte) ([]byte, error) {
	p := upstreamPost{method: method, url: u, contentType: contentType, authorize: bearerKey, refusal: openAIRefusal}
	if body != nil {
		p.body = rope{body}
	}
	switch kind {
	case catalog.KindAnthropic:
		version := call.AnthropicVersion
		if version == "" {
			version = anthropicVersion
		}
		p.header = func(h http.Header) { h.Set("Anthropic-Version", version) }
		p.authorize, p.refusal = anthropicKey, anthropicRefusal
	case catalog.KindAzureOpenAI:
		auth, err := azureAuth(ctx, b.Client, &b.tokens, call)
		if err != nil {
			return nil, err
		}
		p.authorize = headerAuth(auth)
	}
	// The one upstream call (send), as every model request's.
	raw, err := answerOf(send(ctx, b.Client, call, p))
	if err != nil {
		return nil, err
	}
	return raw, nil
}

// upstreamBodies are the requests' bodies with the model the provider
// knows: the call's upstream model, at Azure its deployment.
func upstreamBodies(kind catalog.Kind, call *Call, reqs []BatchRequest) ([]json.RawMessage, error) {
	model := call.UpstreamModel
	if kind == catalog.KindAzureOpenAI {
		model = azureDeployment(call)
	}
	name, err := json.Marshal(model)
	if err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, len(reqs))
	for i, r := range reqs {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(r.Body, &m); err != nil || m == nil {
			return nil, invalid("", "invalid_json", "a batch request's body is not a JSON object")
		}
		m["model"] = name
		if out[i], err = json.Marshal(m); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// lineURL is a line's url at the provider: Azure's batch lines name the
// operation without OpenAI's /v1.
func lineURL(kind catalog.Kind, endpoint string) string {
	if kind == catalog.KindAzureOpenAI {
		return strings.TrimPrefix(endpoint, "/v1")
	}
	return endpoint
}

// Upload uploads the requests as an OpenAI batch input file (purpose
// batch) and returns its id; at Bedrock it writes them to the batch
// bucket, as the input of the job name, and returns its s3:// URI.
// Anthropic takes the requests with the batch itself (Create), so it has
// no upload.
func (b *BatchAPI) Upload(ctx context.Context, kind catalog.Kind, call *Call, endpoint, name string, reqs []BatchRequest) (string, error) {
	switch kind {
	case catalog.KindAnthropic:
		return "", nil
	case catalog.KindBedrock:
		return b.bedrockUpload(ctx, call, endpoint, name, reqs)
	}
	bodies, err := upstreamBodies(kind, call, reqs)
	if err != nil {
		return "", err
	}
	var jsonl bytes.Buffer
	for i, r := range reqs {
		line, err := json.Marshal(map[string]any{"custom_id": r.CustomID, "method": "POST", "url": lineURL(kind, endpoint), "body": bodies[i]})
		if err != nil {
			return "", err
		}
		jsonl.Write(line)
		jsonl.WriteByte('\n')
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("purpose", "batch")
	fw, err := mw.CreateFormFile("file", "gw-batch.jsonl")
	if err == nil {
		_, err = fw.Write(jsonl.Bytes())
	}
	if err == nil {
		err = mw.Close()
	}
	if err != nil {
		return "", err
	}
	raw, err := b.do(ctx, kind, call, http.MethodPost, b.url(kind, call, "/files", nil), mw.FormDataContentType(), body.Bytes())
	if err != nil {
		return "", err
	}
	var f struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(raw, &f) != nil || f.ID == "" {
		return "", &Error{Kind: Unavailable, Message: "the provider's file upload answer has no id"}
	}
	return f.ID, nil
}

// Create creates the provider batch: OpenAI's of the uploaded file
// fileID, Anthropic's of the requests themselves, Bedrock's job name of
// the input fileID.
func (b *BatchAPI) Create(ctx context.Context, kind catalog.Kind, call *Call, endpoint, name, fileID string, reqs []BatchRequest, metadata map[string]string) (BatchJob, error) {
	if kind == catalog.KindBedrock {
		return b.bedrockCreate(ctx, call, endpoint, name, fileID)
	}
	var body any
	if kind == catalog.KindAnthropic {
		bodies, err := upstreamBodies(kind, call, reqs)
		if err != nil {
			return BatchJob{}, err
		}
		rs := make([]map[string]any, len(reqs))
		for i, r := range reqs {
			rs[i] = map[string]any{"custom_id": r.CustomID, "params": bodies[i]}
		}
		body = map[string]any{"requests": rs}
	} else {
		body = map[string]any{"input_file_id": fileID, "endpoint": lineURL(kind, endpoint), "completion_window": "24h", "metadata": metadata}
	}
	enc, err := json.Marshal(body)
	if err != nil {
		return BatchJob{}, err
	}
	raw, err := b.do(ctx, kind, call, http.MethodPost, b.url(kind, call, "/batches", nil), "application/json", enc)
	if err != nil {
		return BatchJob{}, err
	}
	return readJob(kind, raw)
}

// Get reads the provider batch id.
func (b *BatchAPI) Get(ctx context.Context, kind catalog.Kind, call *Call, id string) (BatchJob, error) {
	if kind == catalog.KindBedrock {
		return b.bedrockGet(ctx, call, id)
	}
	raw, err := b.do(ctx, kind, call, http.MethodGet, b.url(kind, call, "/batches/"+url.PathEscape(id), nil), "", nil)
	if err != nil {
		return BatchJob{}, err
	}
	return readJob(kind, raw)
}

// Cancel asks the provider to cancel the batch id; it answers the batch
// as it is then (cancelling, or ended).
func (b *BatchAPI) Cancel(ctx context.Context, kind catalog.Kind, call *Call, id string) (BatchJob, error) {
	if kind == catalog.KindBedrock {
		return b.bedrockStop(ctx, call, id)
	}
	raw, err := b.do(ctx, kind, call, http.MethodPost, b.url(kind, call, "/batches/"+url.PathEscape(id)+"/cancel", nil), "", nil)
	if err != nil {
		return BatchJob{}, err
	}
	return readJob(kind, raw)
}

// DeleteFile deletes a file of an OpenAI or Azure batch (its input, its
// output or error file), or an object of a Bedrock job (its input, output
// or manifest, by s3:// URI), once gw has read what it needs: they hold
// the requests and answers, which gw keeps in its own store.
func (b *BatchAPI) DeleteFile(ctx context.Context, kind catalog.Kind, call *Call, id string) error {
	if kind == catalog.KindAnthropic || id == "" {
		return nil
	}
	if kind == catalog.KindBedrock {
		return b.bedrockDelete(ctx, call, id)
	}
	_, err := b.do(ctx, kind, call, http.MethodDelete, b.url(kind, call, "/files/"+url.PathEscape(id), nil), "", nil)
	return err
}

// DeleteBatch deletes an Anthropic message batch, and with it the
// results Anthropic keeps for 29 days, once gw has read them (the
// answers are gw's to keep, as an OpenAI batch's files are). Other kinds'
// batches hold nothing beyond their files: nothing to do.
func (b *BatchAPI) DeleteBatch(ctx context.Context, kind catalog.Kind, call *Call, id string) error {
	if kind != catalog.KindAnthropic || id == "" {
		return nil
	}
	_, err := b.do(ctx, kind, call, http.MethodDelete, b.url(kind, call, "/batches/"+url.PathEscape(id), nil), "", nil)
	return err
}

// Find looks among the credential's recent provider batches for the one
// a submission that gw did not see answered may have created: OpenAI's
// of the input file fileID (a file gw uploaded for this one submission,
// so a match is certain); Anthropic's, whose batches carry nothing of
// gw's, created at or after since (less findSkew) with n requests (its
// first page, newest first); Bedrock's by the job's name, gw's own.
func (b *BatchAPI) Find(ctx context.Context, kind catalog.Kind, call *Call, name, fileID string, since time.Time, n int) (BatchJob, bool, error) {
	if kind == catalog.KindBedrock {
		return b.bedrockFind(ctx, call, name)
	}
	raw, err := b.do(ctx, kind, call, http.MethodGet, b.url(kind, call, "/batches", url.Values{"limit": {"100"}}), "", nil)
	if err != nil {
		return BatchJob{}, false, err
	}
	var page struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return BatchJob{}, false, &Error{Kind: Unavailable, Message: "the provider's batch list does not read"}
	}
	for _, d := range page.Data {
		j, err := readJob(kind, d)
		if err != nil {
			continue
		}
		if kind != catalog.KindAnthropic && fileID != "" && j.InputFileID == fileID {
			return j, true, nil
		}
		if kind == catalog.KindAnthropic && !j.CreatedAt.Before(since.Add(-findSkew)) && j.Total == n {
			return j, true, nil
		}
	}
	return BatchJob{}, false, nil
}

// findSkew is how far the provider's clock may be behind gw's when Find
// compares a batch's creation time with the time gw recorded before
// creating it.
const findSkew = time.Minute

// readJob reads a batch object of the kind's API.
func readJob(kind catalog.Kind, raw []byte) (BatchJob, error) {
	if kind == catalog.KindAnthropic {
		var m struct {
			ID               string `json:"id"`
			ProcessingStatus string `json:"processing_status"`
			CreatedAt        string `json:"created_at"`
			CancelInitiated  any    `json:"cancel_initiated_at"`
			Counts           struct {
				Processing, Succeeded, Errored, Canceled, Expired int
			} `json:"request_counts"`
		}
		if err := json.Unmarshal(raw, &m); err != nil || m.ID == "" {
			return BatchJob{}, &Error{Kind: Unavailable, Message: "the provider's message batch does not read"}
		}
		c := m.Counts
		created, _ := time.Parse(time.RFC3339, m.CreatedAt)
		return BatchJob{ID: m.ID, Status: m.ProcessingStatus, Ended: m.ProcessingStatus == "ended", Cancelled: m.CancelInitiated != nil,
			CreatedAt: created, Total: c.Processing + c.Succeeded + c.Errored + c.Canceled + c.Expired}, nil
	}
	var o struct {
		ID           string `json:"id"`
		Status       string `json:"status"`
		InputFileID  string `json:"input_file_id"`
		OutputFileID string `json:"output_file_id"`
		ErrorFileID  string `json:"error_file_id"`
		CreatedAt    int64  `json:"created_at"`
		Counts       struct {
			Total int `json:"total"`
		} `json:"request_counts"`
	}
	if err := json.Unmarshal(raw, &o); err != nil || o.ID == "" {
		return BatchJob{}, &Error{Kind: Unavailable, Message: "the provider's batch does not read"}
	}
	ended := false
	switch o.Status {
	case "completed", "failed", "expired", "cancelled":
		ended = true
	}
	return BatchJob{ID: o.ID, Status: o.Status, Ended: ended, Cancelled: o.Status == "cancelled" || o.Status == "cancelling",
		InputFileID: o.InputFileID, OutputFileID: o.OutputFileID, ErrorFileID: o.ErrorFileID, CreatedAt: time.Unix(o.CreatedAt, 0), Total: o.Counts.Total}, nil
}

// Results reads an ended batch's outcomes: OpenAI's output and error
// files, Anthropic's results. endpoint says how a succeeded answer's
// usage reads. A request the provider reports nothing of is not in the
// list (the caller knows which it sent).
func (b *BatchAPI) Results(ctx context.Context, kind catalog.Kind, call *Call, endpoint string, job BatchJob) ([]BatchResult, error) {
	if kind == catalog.KindBedrock {
		return b.bedrockResults(ctx, call, endpoint, job)
	}
	if kind == catalog.KindAnthropic {
		raw, err := b.do(ctx, kind, call, http.MethodGet, b.url(kind, call, "/batches/"+url.PathEscape(job.ID)+"/results", nil), "", nil)
		if err != nil {
			return nil, err
		}
		return eachLine(raw, readAnthropicResult)
	}
	var out []BatchResult
	for _, id := range []string{job.OutputFileID, job.ErrorFileID} {
		if id == "" {
			continue
		}
		raw, err := b.do(ctx, kind, call, http.MethodGet, b.url(kind, call, "/files/"+url.PathEscape(id)+"/content", nil), "", nil)
		if err != nil {
			return nil, err
		}
		rs, err := eachLine(raw, func(line []byte) (BatchResult, error) { return readOpenAIResult(endpoint, line) })
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

// eachLine reads a JSONL body a line at a time.
func eachLine(raw []byte, read func([]byte) (BatchResult, error)) ([]BatchResult, error) {
	var out []BatchResult
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64<<10), maxAnswerBody)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		r, err := read(line)
		if err != nil {
			return nil, &Error{Kind: Unavailable, Message: fmt.Sprintf("line %d of the provider's batch results does not read", n)}
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, transportError(err)
	}
	return out, nil
}

// readOpenAIResult reads a line of an OpenAI batch's output or error file.
func readOpenAIResult(endpoint string, line []byte) (BatchResult, error) {
	var l struct {
		CustomID string `json:"custom_id"`
		Response *struct {
			StatusCode int             `json:"status_code"`
			Body       json.RawMessage `json:"body"`
		} `json:"response"`
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(line, &l); err != nil || l.CustomID == "" {
		return BatchResult{}, errNotObject
	}
	r := BatchResult{CustomID: l.CustomID, Outcome: BatchErrored}
	if l.Response != nil {
		r.StatusCode, r.Body = l.Response.StatusCode, l.Response.Body
	}
	switch {
	case l.Error != nil && l.Error.Code == "batch_expired":
		r.Outcome, r.Error = BatchExpired, l.Error.Message
	case l.Error != nil && l.Error.Code == "batch_cancelled":
		r.Outcome, r.Error = BatchCanceled, l.Error.Message
	case l.Error != nil:
		r.Error = l.Error.Message
	case r.StatusCode == http.StatusOK:
		r.Outcome = BatchSucceeded
		var a struct {
			Usage json.RawMessage `json:"usage"`
		}
		_ = json.Unmarshal(r.Body, &a)
		if len(a.Usage) > 0 && !isNull(a.Usage) {
			if endpoint == "/v1/responses" {
				r.Usage = decodeResponsesUsage(a.Usage)
			} else {
				r.Usage = decodeOpenAIUsage(a.Usage)
			}
		}
	default:
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(r.Body, &e)
		r.Error = e.Error.Message
	}
	if r.Outcome != BatchSucceeded && r.Error == "" {
		r.Error = fmt.Sprintf("the provider answered %d", r.StatusCode)
	}
	return r, nil
}

// readAnthropicResult reads a line of a message batch's results.
func readAnthropicResult(line []byte) (BatchResult, error) {
	var l struct {
		CustomID string `json:"custom_id"`
		Result   struct {
			Type    string          `json:"type"`
			Message json.RawMessage `json:"message"`
			Error   json.RawMessage `json:"error"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &l); err != nil || l.CustomID == "" {
		return BatchResult{}, errNotObject
	}
	r := BatchResult{CustomID: l.CustomID, Outcome: l.Result.Type}
	switch l.Result.Type {
	case BatchSucceeded:
		r.StatusCode, r.Body = http.StatusOK, l.Result.Message
		var m anthropicMessageResponse
		if json.Unmarshal(l.Result.Message, &m) == nil {
			r.Usage = m.usage()
		}
	case BatchErrored:
		// {"type": "error", "error": {"type", "message"}}, or the inner
		// error alone.
		var e struct {
			Type    string `json:"type"`
			Message string `json:"message"`
			Error   *struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(l.Result.Error, &e)
		r.Error, r.StatusCode = e.Message, http.StatusBadRequest
		if e.Error != nil {
			r.Error = e.Error.Message
		}
		r.Body = l.Result.Error
		if r.Error == "" {
			r.Error = "the provider reports the request errored"
		}
	case BatchCanceled, BatchExpired:
		r.Error = "the provider's batch request was " + l.Result.Type
	default:
		r.Outcome, r.Error = BatchErrored, "the provider reports the outcome "+fmt.Sprintf("%q", l.Result.Type)
	}
	return r, nil
}
