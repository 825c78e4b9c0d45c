package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Vertex AI batch prediction (issue 34; docs/batches.md): a group of a
// batch's lines runs as one batchPredictionJob of the credential's
// project and location. Its input is a JSONL object gw writes under the
// credential's batch_gcs_uri; Vertex AI writes its predictions under the
// same prefix, which gw reads back and deletes (gcs.go).
//
// Two families, each in the form Vertex AI's batch takes:
//   - Gemini models (gemini-…), chat completions lines: each line's
//     request translated to a generateContent request as a synchronous
//     call's is, {"request": {…}}; its custom_id rides in the request's
//     labels (gw_custom_id), which the output line carries back with the
//     request, since predictions come in no particular order. The answer
//     (a GenerateContentResponse, its usageMetadata) is read into a
//     chat.completion as a synchronous answer is.
//   - Claude models (claude-…@…), Messages lines: {"custom_id", "request"}
//     with the Messages body as sent, no model (the job names it) and
//     Vertex's anthropic_version; custom_id is passed through to the
//     output line beside the answer.
//
// A job's display name is gw's batch id and group (VertexBatchJobName):
// a create whose answer was lost is found by it for certain.

// vertexBatchVersion is the Messages version Vertex AI's Claude batch
// requests carry in the body, as its rawPredict takes.
const vertexBatchVersion = vertexAnthropicVersion

// vertexLabel is the request label a Gemini line's custom_id travels in.
const vertexLabel = "gw_custom_id"

// vertexBatchable tells the lines a Vertex AI batch prediction job takes:
// chat completions to a Gemini model (translated), Messages to a Claude
// model (as sent).
func vertexBatchable(endpoint, upstreamModel string) bool {
	switch {
	case isClaude(upstreamModel):
		return endpoint == "/v1/messages"
	case strings.HasPrefix(upstreamModel, "gemini-"):
		return endpoint == "/v1/chat/completions"
	}
	return false
}

// VertexBatchTakes tells whether a batch line's body can go into a job of
// upstreamModel as its synchronous request would go upstream: a Gemini
// chat request gw translates (one that would be refused, say with n above
// 1, is left to gw's runner, which fails it alone, nothing sent), a Claude
// Messages body that is an object.
func VertexBatchTakes(upstreamModel string, body []byte) bool {
	_, err := vertexLine(&Call{UpstreamModel: upstreamModel}, BatchRequest{CustomID: "gw-0", Body: body})
	return err == nil
}

// VertexBatchJobName is the display name of a group's job: gw's batch id
// and the group's number, the same for every process that submits the
// group. Vertex AI takes any display name up to 128 characters; the form
// Bedrock's stricter rules allow (BedrockBatchJobName) serves both.
func VertexBatchJobName(batchID string, group int) string { return BedrockBatchJobName(batchID, group) }

// vertexSession is what a batch call of a vertex credential needs: its
// token, project, and Cloud Storage.
type vertexSession struct {
	call    *Call
	project string
	auth    func(http.Header)
	gcs     *gcsClient
}

func (b *BatchAPI) vertexSession(ctx context.Context, call *Call) (*vertexSession, error) {
	ctx, cancel := context.WithTimeout(ctx, gcsControlTimeout)
	defer cancel()
	src, err := b.tokens.google(b.Client, call)
	if err != nil {
		return nil, err
	}
	token, err := bearer(ctx, src.tokens, call)
	if err != nil {
		return nil, err
	}
	return &vertexSession{call: call, project: src.project, auth: func(h http.Header) { h.Set("Authorization", "Bearer "+token) },
		gcs: newGCSClient(b.Client, call, token)}, nil
}

// jobs is the location's batchPredictionJobs collection.
func (s *vertexSession) jobs() string {
	return vertexLocationURL(s.call, s.project) + "/batchPredictionJobs"
}

// vertexDo is one call of the job API (Google's refusals).
func (b *BatchAPI) vertexDo(ctx context.Context, s *vertexSession, method, u string, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, gcsControlTimeout)
	defer cancel()
	p := upstreamPost{method: method, url: u, authorize: headerAuth(s.auth), refusal: googleStatusError}
	if body != nil {
		p.body = rope{body}
	}
	return answerOf(send(ctx, b.Client, s.call, p))
}

// vertexPrefix is where the group's objects go: under the credential's
// batch_gcs_uri, a folder of the job's name.
func vertexPrefix(call *Call, name string) (bucket, prefix string, err error) {
	bucket, prefix, ok := ParseGCSPrefix(call.Settings.BatchGCSURI)
	if !ok {
		return "", "", &Error{Kind: Unauthorized, Message: "credential " + call.CredentialID + ": settings.batch_gcs_uri is not a gs://bucket/prefix/"}
	}
	return bucket, prefix + name + "/", nil
}

// vertexUpload writes the group's requests as the job's input and returns
// its gs:// URI. A line that cannot be translated refuses the whole group
// (nothing is sent; its synchronous request would be refused the same).
func (b *BatchAPI) vertexUpload(ctx context.Context, call *Call, name string, reqs []BatchRequest) (string, error) {
	bucket, prefix, err := vertexPrefix(call, name)
	if err != nil {
		return "", err
	}
	var jsonl bytes.Buffer
	for _, r := range reqs {
		line, err := vertexLine(call, r)
		if err != nil {
			var ie *InvalidRequestError
			if errors.As(err, &ie) {
				return "", &Error{Kind: Rejected, Status: http.StatusBadRequest, Message: "request " + r.CustomID + ": " + ie.Message}
			}
			return "", err
		}
		jsonl.Write(line)
		jsonl.WriteByte('\n')
	}
	s, err := b.vertexSession(ctx, call)
	if err != nil {
		return "", err
	}
	object := prefix + "input.jsonl"
	if err := s.gcs.put(ctx, bucket, object, jsonl.Bytes()); err != nil {
		return "", err
	}
	return "gs://" + bucket + "/" + object, nil
}

// vertexLine is one request as the job's input takes it.
func vertexLine(call *Call, r BatchRequest) ([]byte, error) {
	if isClaude(call.UpstreamModel) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(r.Body, &m); err != nil || m == nil {
			return nil, invalid("", "invalid_json", "the body is not a JSON object")
		}
		delete(m, "model")
		delete(m, "stream")
		m["anthropic_version"] = jsonString(vertexBatchVersion)
		return json.Marshal(map[string]any{"custom_id": r.CustomID, "request": m})
	}
	req, err := ParseChatRequest(r.Body)
	if err != nil {
		return nil, err
	}
	c := *call
	c.Request, c.Prepared, c.Native = req, nil, nil
	out, err := translateGemini(&c, false)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"request": struct {
		*geminiRequest
		Labels map[string]string `json:"labels"`
	}{out, map[string]string{vertexLabel: r.CustomID}}})
}

// vertexJob is a BatchPredictionJob as the API shows it.
type vertexJob struct {
	Name        string `json:"name"`
	DisplayName string `json:"displayName"`
	State       string `json:"state"`
	CreateTime  string `json:"createTime"`
	InputConfig struct {
		GCSSource struct {
			URIs []string `json:"uris"`
		} `json:"gcsSource"`
	} `json:"inputConfig"`
	OutputInfo struct {
		GCSOutputDirectory string `json:"gcsOutputDirectory"`
	} `json:"outputInfo"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (j vertexJob) job() BatchJob {
	out := BatchJob{ID: j.Name, Status: j.State, OutputFileID: j.OutputInfo.GCSOutputDirectory}
	switch j.State {
	case "JOB_STATE_SUCCEEDED", "JOB_STATE_PARTIALLY_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED":
		out.Ended = true
	}
	out.Cancelled = j.State == "JOB_STATE_CANCELLING" || j.State == "JOB_STATE_CANCELLED"
	if len(j.InputConfig.GCSSource.URIs) > 0 {
		out.InputFileID = j.InputConfig.GCSSource.URIs[0]
	}
	out.CreatedAt, _ = time.Parse(time.RFC3339Nano, j.CreateTime)
	if j.Error != nil && j.Error.Message != "" && out.Ended {
		out.Status += ": " + j.Error.Message
	}
	return out
}

func readVertexJob(raw []byte) (BatchJob, error) {
	var j vertexJob
	if err := json.Unmarshal(raw, &j); err != nil || j.Name == "" {
		return BatchJob{}, &Error{Kind: Unavailable, Message: "Vertex AI's batch prediction job does not read"}
	}
	return j.job(), nil
}

// vertexCreate creates the job name of the input inputURI, its output
// under the same folder.
func (b *BatchAPI) vertexCreate(ctx context.Context, call *Call, name, inputURI string) (BatchJob, error) {
	bucket, prefix, err := vertexPrefix(call, name)
	if err != nil {
		return BatchJob{}, err
	}
	s, err := b.vertexSession(ctx, call)
	if err != nil {
		return BatchJob{}, err
	}
	publisher := "google"
	if isClaude(call.UpstreamModel) {
		publisher = "anthropic"
	}
	body, err := json.Marshal(map[string]any{
		"displayName": name,
		"model":       "publishers/" + publisher + "/models/" + call.UpstreamModel,
		"inputConfig": map[string]any{"instancesFormat": "jsonl", "gcsSource": map[string]any{"uris": []string{inputURI}}},
		"outputConfig": map[string]any{"predictionsFormat": "jsonl",
			"gcsDestination": map[string]any{"outputUriPrefix": "gs://" + bucket + "/" + prefix + "output"}},
		"labels": map[string]string{"gw": "batch"},
	})
	if err != nil {
		return BatchJob{}, err
	}
	raw, err := b.vertexDo(ctx, s, http.MethodPost, s.jobs(), body)
	if err != nil {
		return BatchJob{}, err
	}
	return readVertexJob(raw)
}

// vertexJobURL is a job's URL from its resource name
// (projects/…/locations/…/batchPredictionJobs/…).
func vertexJobURL(call *Call, name string) (string, error) {
	parts := strings.Split(name, "/")
	if len(parts) != 6 || parts[0] != "projects" || parts[2] != "locations" || parts[4] != "batchPredictionJobs" {
		return "", &Error{Kind: Unavailable, Message: "not a batch prediction job's name: " + strconv.Quote(name)}
	}
	for i := range parts {
		parts[i] = url.PathEscape(parts[i])
	}
	return vertexBase(call) + "/" + strings.Join(parts, "/"), nil
}

func (b *BatchAPI) vertexGet(ctx context.Context, call *Call, name string) (BatchJob, error) {
	u, err := vertexJobURL(call, name)
	if err != nil {
		return BatchJob{}, err
	}
	s, err := b.vertexSession(ctx, call)
	if err != nil {
		return BatchJob{}, err
	}
	raw, err := b.vertexDo(ctx, s, http.MethodGet, u, nil)
	if err != nil {
		return BatchJob{}, err
	}
	return readVertexJob(raw)
}

// vertexCancel asks for the job's cancellation (answered with an empty
// object) and reads the job as it is then.
func (b *BatchAPI) vertexCancel(ctx context.Context, call *Call, name string) (BatchJob, error) {
	u, err := vertexJobURL(call, name)
	if err != nil {
		return BatchJob{}, err
	}
	s, err := b.vertexSession(ctx, call)
	if err != nil {
		return BatchJob{}, err
	}
	if _, err := b.vertexDo(ctx, s, http.MethodPost, u+":cancel", []byte("{}")); err != nil {
		return BatchJob{}, err
	}
	return b.vertexGet(ctx, call, name)
}

// vertexFind finds the job of gw's name among the location's jobs.
func (b *BatchAPI) vertexFind(ctx context.Context, call *Call, name string) (BatchJob, bool, error) {
	s, err := b.vertexSession(ctx, call)
	if err != nil {
		return BatchJob{}, false, err
	}
	q := url.Values{"filter": {`display_name="` + name + `"`}, "pageSize": {"100"}}
	raw, err := b.vertexDo(ctx, s, http.MethodGet, s.jobs()+"?"+q.Encode(), nil)
	if err != nil {
		return BatchJob{}, false, err
	}
	var page struct {
		Jobs []vertexJob `json:"batchPredictionJobs"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return BatchJob{}, false, &Error{Kind: Unavailable, Message: "Vertex AI's batch prediction job list does not read"}
	}
	for _, j := range page.Jobs {
		// The filter is the API's; the name is checked here too.
		if j.DisplayName == name && j.Name != "" {
			return j.job(), true, nil
		}
	}
	return BatchJob{}, false, nil
}

// vertexResults reads the predictions under the job's output directory:
// every JSONL object there (Vertex AI may split them), each line matched
// to its request by its custom_id (a Gemini line's from the request's
// labels), not by its place.
func (b *BatchAPI) vertexResults(ctx context.Context, call *Call, job BatchJob) ([]BatchResult, error) {
	if job.OutputFileID == "" {
		return nil, nil // nothing ran (a job cancelled or failed before it wrote)
	}
	bucket, dir, ok := splitGS(job.OutputFileID)
	if !ok {
		return nil, &Error{Kind: Unavailable, Message: "the job's output directory is not a gs:// URI"}
	}
	s, err := b.vertexSession(ctx, call)
	if err != nil {
		return nil, err
	}
	names, err := s.gcs.list(ctx, bucket, strings.TrimSuffix(dir, "/")+"/")
	if err != nil {
		return nil, err
	}
	var out []BatchResult
	for _, n := range names {
		if !strings.HasSuffix(n, ".jsonl") {
			continue
		}
		raw, err := s.gcs.get(ctx, bucket, n)
		if err != nil {
			return nil, err
		}
		rs, err := eachLine(raw, func(line []byte) (BatchResult, error) { return readVertexPrediction(call, line) })
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

// readVertexPrediction reads a line of a job's predictions:
// {status, request, response} (and a Claude line's custom_id); an empty
// status and a response is an answer, any other status the request's
// error.
func readVertexPrediction(call *Call, line []byte) (BatchResult, error) {
	var l struct {
		CustomID string          `json:"custom_id"`
		Status   string          `json:"status"`
		Request  json.RawMessage `json:"request"`
		Response json.RawMessage `json:"response"`
	}
	if err := json.Unmarshal(line, &l); err != nil {
		return BatchResult{}, errNotObject
	}
	claude := isClaude(call.UpstreamModel)
	id := l.CustomID
	var request Members
	if !claude {
		var labels struct {
			Labels map[string]string `json:"labels"`
		}
		_ = json.Unmarshal(l.Request, &labels)
		_ = json.Unmarshal(l.Request, &request)
		id = labels.Labels[vertexLabel]
	}
	if id == "" {
		return BatchResult{}, errNotObject
	}
	r := BatchResult{CustomID: id, Outcome: BatchErrored}
	if l.Status != "" || len(l.Response) == 0 || isNull(l.Response) {
		r.Error = l.Status
		if r.Error == "" {
			r.Error = "Vertex AI reports no answer for this request"
		}
		return r, nil
	}
	if claude {
		var m anthropicMessageResponse
		if err := json.Unmarshal(l.Response, &m); err != nil {
			r.Error = "Vertex AI's answer is not a Messages response"
			return r, nil
		}
		r.Outcome, r.StatusCode, r.Body, r.Usage = BatchSucceeded, http.StatusOK, l.Response, m.usage()
		return r, nil
	}
	// The request, as Vertex writes it back, is what an answer without
	// usageMetadata has its input counted from (never nothing).
	c := &Call{UpstreamModel: call.UpstreamModel, ResponseModel: call.ResponseModel, Native: &NativeRequest{Body: l.Request, Members: request}}
	done, err := geminiCompletion(&http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(bytes.NewReader(l.Response))}, c)
	if err != nil {
		var pe *Error
		if errors.As(err, &pe) {
			r.Error = pe.Message
		}
		if r.Error == "" {
			r.Error = fmt.Sprint(err)
		}
		return r, nil
	}
	r.Outcome, r.StatusCode, r.Body, r.Usage = BatchSucceeded, http.StatusOK, done.Body, done.Usage
	return r, nil
}

// vertexDelete deletes what gw wrote or Vertex AI wrote for a job under
// the credential's prefix: the input object, or every object under the
// output directory.
func (b *BatchAPI) vertexDelete(ctx context.Context, call *Call, uri string) error {
	bucket, object, ok := splitGS(uri)
	if !ok || object == "" {
		return nil
	}
	s, err := b.vertexSession(ctx, call)
	if err != nil {
		return err
	}
	names := []string{object}
	if !strings.HasSuffix(object, ".jsonl") {
		if names, err = s.gcs.list(ctx, bucket, strings.TrimSuffix(object, "/")+"/"); err != nil {
			return err
		}
	}
	for _, n := range names {
		if err := s.gcs.remove(ctx, bucket, n); err != nil {
			return err
		}
	}
	return nil
}

// vertexDeleteJob deletes an ended job's record at Vertex AI (its
// outputs are deleted with vertexDelete).
func (b *BatchAPI) vertexDeleteJob(ctx context.Context, call *Call, name string) error {
	u, err := vertexJobURL(call, name)
	if err != nil {
		return err
	}
	s, err := b.vertexSession(ctx, call)
	if err != nil {
		return err
	}
	_, err = b.vertexDo(ctx, s, http.MethodDelete, u, nil)
	return err
}
