package providers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/gw-gateway/gw/server/egress"
)

// Bedrock's batch inference (docs/batches.md): a job of one model whose
// records gw writes to the credential's S3 prefix as JSONL
// ({"recordId", "modelInput"}: Claude's InvokeModel body for a Messages
// request, the Converse body for a chat completion), created with
// CreateModelInvocationJob on Bedrock's control-plane endpoint, read with
// GetModelInvocationJob, stopped with StopModelInvocationJob, its output
// written by Bedrock to <output prefix>/<job id>/<input file name>.out
// ({"recordId", "modelInput", "modelOutput"} or "error" in place of
// modelOutput). The control calls go through send, signed with SigV4 as
// the runtime's are; the objects through the AWS SDK's S3 client on the
// adapters' HTTP client, so every connection to the bucket is dialled
// under the egress policy as the upstreams' are.

// BedrockBatchMinRecords is Bedrock's default quota of the fewest records
// a batch inference job takes (its "Minimum number of records per batch
// inference job", per model): a smaller group of lines runs on gw's
// runner instead.
const BedrockBatchMinRecords = 100

// BedrockBatchJobName is the job's name for gw's batch and group: the
// same every time, so a process that did not see a create answered finds
// the job it made by its name (and Bedrock's clientRequestToken, the same
// string, makes a repeated create the first one). Bedrock takes
// [a-zA-Z0-9] runs joined by '-', at most 63 characters; gw's ids are
// batch_ or msgbatch_ and 32 hex digits.
func BedrockBatchJobName(batchID string, group int) string {
	name := "gw-" + strings.ReplaceAll(batchID, "_", "-") + "-g" + fmt.Sprint(group)
	if len(name) > 63 {
		sum := sha256.Sum256([]byte(name))
		name = "gw-" + hex.EncodeToString(sum[:])[:40] + "-g" + fmt.Sprint(group)
	}
	return name
}

// bedrockBatchable tells the endpoints a Bedrock job can take for a
// model: Messages requests to Anthropic's models, whose InvokeModel body
// is the Messages request (a job of invocation type InvokeModel); chat
// completions to any model, translated into Converse as a synchronous
// request is (a job of invocation type Converse).
func bedrockBatchable(endpoint, upstreamModel string) bool {
	return endpoint == "/v1/messages" && isBedrockAnthropic(upstreamModel) || endpoint == "/v1/chat/completions"
}

// BedrockBatchLine tells whether a line's body can be a record of a
// Bedrock job. A chat completions line must translate into Converse as a
// synchronous request would, without tools (a Converse job refuses
// toolConfig, and gw's structured output is a forced tool); one that
// cannot runs on gw's runner, which answers it as a synchronous request.
// Messages requests (InvokeModel jobs) are taken as they are.
func BedrockBatchLine(endpoint, upstreamModel string, body []byte) bool {
	if endpoint != "/v1/chat/completions" {
		return true
	}
	_, err := bedrockConverseRecord(upstreamModel, body)
	return err == nil
}

// bedrockConverseRecord is a chat completions body as a Converse job's
// modelInput.
func bedrockConverseRecord(upstreamModel string, body []byte) ([]byte, error) {
	req, err := ParseChatRequest(body)
	if err != nil {
		return nil, err
	}
	if req.Stream {
		return nil, invalid("stream", "unsupported_value", "a batch request is not streamed")
	}
	out, err := translateConverse(&Call{Request: req, UpstreamModel: upstreamModel}, false)
	if err != nil {
		return nil, err
	}
	if out.ToolConfig != nil {
		return nil, invalid("tools", "unsupported_parameter", "a Bedrock Converse batch job takes no tools")
	}
	return json.Marshal(out)
}

// bedrockInvocationType is the job's invocation type for the endpoint.
func bedrockInvocationType(endpoint string) string {
	if endpoint == "/v1/chat/completions" {
		return "Converse"
	}
	return "InvokeModel"
}

// bedrockControlBase is the control-plane endpoint of the call's region:
// the runtime's catalog host with bedrock in place of bedrock-runtime;
// any other base URL (a proxy, a VPC endpoint) is the credential's choice
// and serves both.
func bedrockControlBase(call *Call) string {
	base := bedrockBase(call)
	if bedrockHost.MatchString(base) {
		return strings.Replace(base, "://bedrock-runtime", "://bedrock", 1)
	}
	return base
}

// bedrockCredentials are the call's access key, parsed.
func bedrockCredentials(call *Call) (aws.Credentials, error) {
	s, problem := parseAWSSecret(call.Secret)
	if problem != "" {
		return aws.Credentials{}, credentialError(call, problem)
	}
	return aws.Credentials{AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey, SessionToken: s.SessionToken, Source: "gw"}, nil
}

// Each call is bounded, so a store or endpoint that stops answering
// holds the runner (which moves every batch on) for a while, not for
// ever: the control calls are small; an object is at most gw's 200 MiB
// input or Bedrock's output of it.
const (
	bedrockControlTimeout = time.Minute
	bedrockObjectTimeout  = 10 * time.Minute
)

// bedrockControl is one call of Bedrock's control plane, through send.
func (b *BatchAPI) bedrockControl(ctx context.Context, call *Call, method, p string, query url.Values, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, bedrockControlTimeout)
	defer cancel()
	creds, err := bedrockCredentials(call)
	if err != nil {
		return nil, err
	}
	u := bedrockControlBase(call) + p
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	sign := func(r *http.Request, call *Call, body rope) error {
		sum := sha256.New()
		for _, part := range body {
			sum.Write(part)
		}
		if err := bedrockSigner.SignHTTP(r.Context(), creds, r, hex.EncodeToString(sum.Sum(nil)), "bedrock", call.Settings.Region, time.Now().UTC()); err != nil {
			return credentialError(call, "the request could not be signed")
		}
		return nil
	}
	post := upstreamPost{method: method, url: u, accept: "application/json", authorize: sign, refusal: bedrockStatusError}
	if body != nil {
		post.body = rope{body}
	}
	return answerOf(send(ctx, b.Client, call, post))
}

// bedrockS3 is the S3 client of the credential's batch bucket: its key,
// its region, the endpoint its settings name (path-style there) or AWS's.
func (b *BatchAPI) bedrockS3(call *Call) (*s3.Client, error) {
	creds, err := bedrockCredentials(call)
	if err != nil {
		return nil, err
	}
	o := s3.Options{Region: call.Settings.Region, HTTPClient: b.Client,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return creds, nil }),
		// The runner tries again at its next poll.
		RetryMaxAttempts:           1,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired}
	if e := call.Settings.BatchS3Endpoint; e != "" {
		o.BaseEndpoint, o.UsePathStyle = aws.String(e), true
	}
	return s3.New(o), nil
}

// s3Location splits s3://bucket/key.
func s3Location(uri string) (bucket, key string, ok bool) {
	rest, found := strings.CutPrefix(uri, "s3://")
	if !found {
		return "", "", false
	}
	bucket, key, _ = strings.Cut(rest, "/")
	return bucket, key, bucket != "" && key != ""
}

// s3Error is err as gw reports it: the store's error code or the
// transport's failure (never a signed URL), as Unavailable, to try again.
func s3Error(err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		kind := Unavailable
		if c := ae.ErrorCode(); c == "AccessDenied" || c == "InvalidAccessKeyId" || c == "SignatureDoesNotMatch" {
			kind = Unauthorized
		}
		return &Error{Kind: kind, Message: "the batch bucket answered " + ae.ErrorCode()}
	}
	var refused *egress.Refusal
	if errors.As(err, &refused) {
		return &Error{Kind: Unavailable, Message: "the batch bucket: " + refused.Error()}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &Error{Kind: Unavailable, Message: "the batch bucket could not be reached"}
}

// bedrockInputURI is where a job's input is written: under the prefix's
// gw-batch-input/, one object a job, named after it.
func bedrockInputURI(call *Call, name string) (string, error) {
	bucket, prefix, ok := ParseS3Prefix(call.Settings.BatchS3URI)
	if !ok {
		return "", credentialError(call, "settings.batch_s3_uri is not an S3 prefix")
	}
	return "s3://" + bucket + "/" + prefix + "gw-batch-input/" + name + ".jsonl", nil
}

// bedrockOutputURI is the prefix Bedrock writes the jobs' output under.
func bedrockOutputURI(call *Call) string {
	bucket, prefix, _ := ParseS3Prefix(call.Settings.BatchS3URI)
	return "s3://" + bucket + "/" + prefix + "gw-batch-output/"
}

// bedrockUpload writes the requests as the job's input: each body as the
// model's InvokeModel body (Anthropic's Messages request without model
// or stream, Bedrock's anthropic_version).
func (b *BatchAPI) bedrockUpload(ctx context.Context, call *Call, endpoint, name string, reqs []BatchRequest) (string, error) {
	var jsonl bytes.Buffer
	for _, r := range reqs {
		if endpoint == "/v1/chat/completions" {
			input, err := bedrockConverseRecord(call.UpstreamModel, r.Body)
			if err != nil {
				return "", err
			}
			line, err := json.Marshal(map[string]any{"recordId": r.CustomID, "modelInput": json.RawMessage(input)})
			if err != nil {
				return "", err
			}
			jsonl.Write(line)
			jsonl.WriteByte('\n')
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(r.Body, &m); err != nil || m == nil {
			return "", invalid("", "invalid_json", "a batch request's body is not a JSON object")
		}
		delete(m, "model")
		delete(m, "stream")
		m["anthropic_version"] = json.RawMessage(`"` + bedrockAnthropicVersion + `"`)
		line, err := json.Marshal(map[string]any{"recordId": r.CustomID, "modelInput": m})
		if err != nil {
			return "", err
		}
		jsonl.Write(line)
		jsonl.WriteByte('\n')
	}
	uri, err := bedrockInputURI(call, name)
	if err != nil {
		return "", err
	}
	client, err := b.bedrockS3(call)
	if err != nil {
		return "", err
	}
	bucket, key, _ := s3Location(uri)
	ctx, cancel := context.WithTimeout(ctx, bedrockObjectTimeout)
	defer cancel()
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(jsonl.Bytes()),
		ContentLength: aws.Int64(int64(jsonl.Len())), ContentType: aws.String("application/jsonl")}); err != nil {
		return "", s3Error(err)
	}
	return uri, nil
}

// bedrockCreate creates the job of the input inputURI.
func (b *BatchAPI) bedrockCreate(ctx context.Context, call *Call, endpoint, name, inputURI string) (BatchJob, error) {
	body, err := json.Marshal(map[string]any{
		"jobName": name, "clientRequestToken": name, "roleArn": call.Settings.BatchRoleARN, "modelId": call.UpstreamModel,
		"modelInvocationType": bedrockInvocationType(endpoint),
		// gw's batches have a 24-hour completion window (Bedrock's
		// default is a week).
		"timeoutDurationInHours": 24,
		"inputDataConfig":        map[string]any{"s3InputDataConfig": map[string]any{"s3Uri": inputURI, "s3InputFormat": "JSONL"}},
		"outputDataConfig":       map[string]any{"s3OutputDataConfig": map[string]any{"s3Uri": bedrockOutputURI(call)}},
	})
	if err != nil {
		return BatchJob{}, err
	}
	raw, err := b.bedrockControl(ctx, call, http.MethodPost, "/model-invocation-job", nil, body)
	var pe *Error
	if errors.As(err, &pe) && pe.Status == http.StatusConflict {
		// A job of this name exists: gw's own, made by a create whose
		// answer was lost (the names are gw's batch and group). It is
		// that job, never a failure of the lines it is running.
		if job, found, ferr := b.bedrockFind(ctx, call, name); ferr == nil && found {
			return job, nil
		}
		pe.Kind = Unavailable
	}
	if err != nil {
		return BatchJob{}, err
	}
	var out struct {
		JobArn string `json:"jobArn"`
	}
	if json.Unmarshal(raw, &out) != nil || out.JobArn == "" {
		return BatchJob{}, &Error{Kind: Unavailable, Message: "Bedrock's CreateModelInvocationJob answer has no jobArn"}
	}
	return BatchJob{ID: out.JobArn, Status: "Submitted", InputFileID: inputURI}, nil
}

// bedrockJob is a job as GetModelInvocationJob (and a list's summary)
// shows it.
type bedrockJob struct {
	JobArn          string `json:"jobArn"`
	JobName         string `json:"jobName"`
	Status          string `json:"status"`
	Message         string `json:"message"`
	SubmitTime      string `json:"submitTime"`
	InputDataConfig struct {
		S3 struct {
			URI string `json:"s3Uri"`
		} `json:"s3InputDataConfig"`
	} `json:"inputDataConfig"`
	OutputDataConfig struct {
		S3 struct {
			URI string `json:"s3Uri"`
		} `json:"s3OutputDataConfig"`
	} `json:"outputDataConfig"`
	TotalRecordCount int `json:"totalRecordCount"`
}

// job is the job as gw's batch code reads any provider's: its output
// object (and the manifest, in ErrorFileID, deleted with it) named by
// Bedrock's layout.
func (j bedrockJob) job() BatchJob {
	out := BatchJob{ID: j.JobArn, Status: j.Status, InputFileID: j.InputDataConfig.S3.URI, Total: j.TotalRecordCount}
	if j.Message != "" && (j.Status == "Failed" || j.Status == "PartiallyCompleted" || j.Status == "Expired") {
		// Why it failed, for the lines it left without a result.
		out.Status += ": " + j.Message
	}
	out.CreatedAt, _ = time.Parse(time.RFC3339, j.SubmitTime)
	switch j.Status {
	case "Completed", "PartiallyCompleted", "Failed", "Stopped", "Expired":
		out.Ended = true
	}
	out.Cancelled = j.Status == "Stopped" || j.Status == "Stopping"
	if prefix := j.OutputDataConfig.S3.URI; prefix != "" && out.InputFileID != "" {
		dir := strings.TrimSuffix(prefix, "/") + "/" + path.Base(j.JobArn) + "/"
		out.OutputFileID = dir + path.Base(out.InputFileID) + ".out"
		out.ErrorFileID = dir + "manifest.json.out"
	}
	return out
}

func (b *BatchAPI) bedrockGet(ctx context.Context, call *Call, id string) (BatchJob, error) {
	raw, err := b.bedrockControl(ctx, call, http.MethodGet, "/model-invocation-job/"+awsPathEscape(id), nil, nil)
	if err != nil {
		return BatchJob{}, err
	}
	var j bedrockJob
	if json.Unmarshal(raw, &j) != nil || j.JobArn == "" {
		return BatchJob{}, &Error{Kind: Unavailable, Message: "Bedrock's batch inference job does not read"}
	}
	return j.job(), nil
}

func (b *BatchAPI) bedrockStop(ctx context.Context, call *Call, id string) (BatchJob, error) {
	if _, err := b.bedrockControl(ctx, call, http.MethodPost, "/model-invocation-job/"+awsPathEscape(id)+"/stop", nil, nil); err != nil {
		return BatchJob{}, err
	}
	return BatchJob{ID: id, Status: "Stopping", Cancelled: true}, nil
}

// bedrockFind finds the job named name: gw names each job after its batch
// and group, so the name alone identifies it.
func (b *BatchAPI) bedrockFind(ctx context.Context, call *Call, name string) (BatchJob, bool, error) {
	raw, err := b.bedrockControl(ctx, call, http.MethodGet, "/model-invocation-jobs", url.Values{"nameContains": {name}, "maxResults": {"100"}}, nil)
	if err != nil {
		return BatchJob{}, false, err
	}
	var page struct {
		Jobs []bedrockJob `json:"invocationJobSummaries"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return BatchJob{}, false, &Error{Kind: Unavailable, Message: "Bedrock's job list does not read"}
	}
	for _, j := range page.Jobs {
		if j.JobName == name {
			return j.job(), true, nil
		}
	}
	return BatchJob{}, false, nil
}

// bedrockResults reads the job's output object: a record's modelOutput
// is the model's InvokeModel answer (a Messages answer), its error
// Bedrock's {errorCode, errorMessage}. A job that ended before writing
// any has none.
func (b *BatchAPI) bedrockResults(ctx context.Context, call *Call, endpoint string, job BatchJob) ([]BatchResult, error) {
	bucket, key, ok := s3Location(job.OutputFileID)
	if !ok {
		return nil, nil
	}
	client, err := b.bedrockS3(call)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, bedrockObjectTimeout)
	defer cancel()
	obj, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		var nk *types.NoSuchKey
		var ae smithy.APIError
		if errors.As(err, &nk) || errors.As(err, &ae) && (ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NotFound") {
			return nil, nil
		}
		return nil, s3Error(err)
	}
	defer obj.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(obj.Body, maxBedrockOutput+1))
	if err != nil {
		return nil, s3Error(err)
	}
	if len(raw) > maxBedrockOutput {
		return nil, &Error{Kind: Unavailable, Message: fmt.Sprintf("the job's output is over %d bytes, more than gw reads", maxBedrockOutput)}
	}
	return eachLine(raw, func(line []byte) (BatchResult, error) { return readBedrockRecord(call, endpoint, line) })
}

// maxBedrockOutput bounds a job's output read into memory: gw's 50,000
// lines of at most 4 MiB in, and their answers.
const maxBedrockOutput = 1 << 30

// readBedrockRecord reads a line of a job's output: a Converse job's
// modelOutput (a Converse answer) as a chat.completion, as a synchronous
// request's answer reads; an InvokeModel job's as the Messages answer it
// is.
func readBedrockRecord(call *Call, endpoint string, line []byte) (BatchResult, error) {
	var l struct {
		RecordID    string          `json:"recordId"`
		ModelOutput json.RawMessage `json:"modelOutput"`
		Error       *struct {
			Code    json.RawMessage `json:"errorCode"`
			Message string          `json:"errorMessage"`
		} `json:"error"`
	}
	if err := json.Unmarshal(line, &l); err != nil || l.RecordID == "" {
		return BatchResult{}, errNotObject
	}
	r := BatchResult{CustomID: l.RecordID}
	if l.Error != nil || len(l.ModelOutput) == 0 || isNull(l.ModelOutput) {
		r.Outcome, r.StatusCode, r.Error = BatchErrored, http.StatusBadRequest, "Bedrock reports the record failed"
		if l.Error != nil {
			var code int
			if json.Unmarshal(l.Error.Code, &code) == nil && code >= 400 && code < 600 {
				r.StatusCode = code
			}
			if l.Error.Message != "" {
				r.Error = l.Error.Message
			}
		}
		typ := "api_error"
		if r.StatusCode < 500 {
			typ = "invalid_request_error"
		}
		r.Body = mustMarshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": r.Error}})
		return r, nil
	}
	r.Outcome, r.StatusCode, r.Body = BatchSucceeded, http.StatusOK, l.ModelOutput
	if endpoint == "/v1/chat/completions" {
		c, err := converseBatchCompletion(l.ModelOutput, call)
		if err != nil {
			return BatchResult{}, err
		}
		r.Body, r.Usage = c.Body, c.Usage
		return r, nil
	}
	var m anthropicMessageResponse
	if json.Unmarshal(l.ModelOutput, &m) == nil {
		r.Usage = m.usage()
	}
	return r, nil
}

// bedrockDelete deletes an object gw wrote or Bedrock wrote for a job
// once gw has what it needs of it.
func (b *BatchAPI) bedrockDelete(ctx context.Context, call *Call, uri string) error {
	bucket, key, ok := s3Location(uri)
	if !ok {
		return nil
	}
	client, err := b.bedrockS3(call)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, bedrockControlTimeout)
	defer cancel()
	if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
		return s3Error(err)
	}
	return nil
}
