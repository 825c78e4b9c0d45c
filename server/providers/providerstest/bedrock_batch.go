package providerstest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Bedrock's batch inference, as the fake speaks it on its control-plane
// paths (the same signed requests, service bedrock):
// CreateModelInvocationJob (POST /model-invocation-job), GetModelInvocationJob
// (GET /model-invocation-job/{jobIdentifier}), StopModelInvocationJob (POST
// …/{jobIdentifier}/stop) and ListModelInvocationJobs (GET
// /model-invocation-jobs?nameContains=). A job reads its input from S3 at
// create (a real S3-compatible server, UseS3), as Bedrock's role would,
// refusing fewer than MinRecords records or no roleArn; a job of
// modelInvocationType Converse answers its records as Converse, one of
// InvokeModel (the default) as InvokeModel; it advances a step
// each time it is read (Submitted, Validating, InProgress, then Completed)
// unless HoldBatches holds it; when it completes, each record's modelInput
// is answered by the fake's own runtime handler on the job's model (from the same script as a synchronous request, recorded in
// Requests), and the output is written to S3 at
// <output prefix>/<job id>/<input file name>.out with a manifest.json.out.
type bedrockJobs struct {
	mu       sync.Mutex
	endpoint string
	byArn    map[string]*bedrockFakeJob
	order    []string
	seq      int
	// MinRecords is the fewest records a job takes (Bedrock's quota).
	minRecords int
	// noIdempotency answers a repeated create ConflictException even
	// with the same clientRequestToken.
	noIdempotency bool
}

type bedrockFakeJob struct {
	arn, name, token, model, role string
	// invocation is the job's modelInvocationType: InvokeModel (the
	// default) or Converse.
	invocation        string
	input, output     string
	status, message   string
	submitted         time.Time
	records           []bedrockFakeRecord
	succeeded, failed int
}

type bedrockFakeRecord struct {
	RecordID   string          `json:"recordId"`
	ModelInput json.RawMessage `json:"modelInput"`
}

var bedrockJobNameRE = regexp.MustCompile(`^[a-zA-Z0-9]{1,63}(-*[a-zA-Z0-9\+\-\.]){0,63}$`)

// UseS3 sets the S3-compatible server the fake's jobs read and write
// their objects on, with the fake's own access key (the role's, at
// Bedrock).
func (b *Bedrock) UseS3(endpoint string) {
	b.jobs.mu.Lock()
	defer b.jobs.mu.Unlock()
	b.jobs.endpoint = endpoint
}

// RefuseRepeatedNames makes a create of an existing job's name a 409
// ConflictException, its clientRequestToken the same or not.
func (b *Bedrock) RefuseRepeatedNames() {
	b.jobs.mu.Lock()
	defer b.jobs.mu.Unlock()
	b.jobs.noIdempotency = true
}

// SetMinRecords sets the fewest records a job takes (100 by default,
// Bedrock's quota; some models' is higher).
func (b *Bedrock) SetMinRecords(n int) {
	b.jobs.mu.Lock()
	defer b.jobs.mu.Unlock()
	b.jobs.minRecords = n
}

// JobsCreated counts the batch inference jobs created at the fake.
func (b *Bedrock) JobsCreated() int {
	b.jobs.mu.Lock()
	defer b.jobs.mu.Unlock()
	return len(b.jobs.order)
}

// JobStatus is the status of the job named name ("" when none).
func (b *Bedrock) JobStatus(name string) string {
	b.jobs.mu.Lock()
	defer b.jobs.mu.Unlock()
	for _, j := range b.jobs.byArn {
		if j.name == name {
			return j.status
		}
	}
	return ""
}

func (b *Bedrock) s3() *s3.Client {
	creds := aws.Credentials{AccessKeyID: b.AccessKeyID, SecretAccessKey: b.SecretAccessKey}
	return s3.New(s3.Options{Region: b.Region, BaseEndpoint: aws.String(b.jobs.endpoint), UsePathStyle: true,
		Credentials:                aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return creds, nil }),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired, ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired})
}

func splitS3(uri string) (bucket, key string) {
	rest := strings.TrimPrefix(uri, "s3://")
	bucket, key, _ = strings.Cut(rest, "/")
	return bucket, key
}

func (b *Bedrock) serveJobs(w http.ResponseWriter, r *http.Request, body []byte) {
	j := &b.jobs
	b.batch.mu.Lock()
	b.batch.calls = append(b.batch.calls, r.Method+" "+r.URL.Path)
	b.batch.mu.Unlock()
	j.mu.Lock()
	if j.byArn == nil {
		j.byArn = map[string]*bedrockFakeJob{}
	}
	if j.minRecords == 0 {
		j.minRecords = 100
	}
	j.mu.Unlock()
	p := r.URL.EscapedPath()
	switch {
	case p == "/model-invocation-job" && r.Method == http.MethodPost:
		b.createJob(w, r, body)
	case p == "/model-invocation-jobs" && r.Method == http.MethodGet:
		name := r.URL.Query().Get("nameContains")
		j.mu.Lock()
		var list []any
		for _, arn := range j.order {
			if job := j.byArn[arn]; strings.Contains(job.name, name) {
				list = append(list, job.object())
			}
		}
		j.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"invocationJobSummaries": list})
	case strings.HasPrefix(p, "/model-invocation-job/"):
		rest := strings.TrimPrefix(p, "/model-invocation-job/")
		idPart, action, _ := strings.Cut(rest, "/")
		id, err := url.PathUnescape(idPart)
		if err != nil {
			awsError(w, http.StatusBadRequest, "ValidationException", "bad job identifier")
			return
		}
		j.mu.Lock()
		job := j.byArn[id]
		j.mu.Unlock()
		if job == nil {
			awsError(w, http.StatusNotFound, "ResourceNotFoundException", "The specified job was not found.")
			return
		}
		switch {
		case action == "" && r.Method == http.MethodGet:
			b.advanceJob(job)
			j.mu.Lock()
			o := job.object()
			j.mu.Unlock()
			writeJSON(w, http.StatusOK, o)
		case action == "stop" && r.Method == http.MethodPost:
			j.mu.Lock()
			switch job.status {
			case "Completed", "PartiallyCompleted", "Failed", "Stopped", "Expired":
				j.mu.Unlock()
				awsError(w, http.StatusBadRequest, "ValidationException", "The job has already ended.")
				return
			}
			job.status = "Stopping"
			j.mu.Unlock()
			writeJSON(w, http.StatusOK, map[string]any{})
		default:
			awsError(w, http.StatusNotFound, "UnknownOperationException", "")
		}
	default:
		awsError(w, http.StatusNotFound, "UnknownOperationException", "")
	}
}

func (b *Bedrock) createJob(w http.ResponseWriter, r *http.Request, body []byte) {
	var in struct {
		JobName, ClientRequestToken, RoleArn, ModelId, ModelInvocationType string
		InputDataConfig                                                    struct {
			S3InputDataConfig struct{ S3Uri string }
		}
		OutputDataConfig struct {
			S3OutputDataConfig struct{ S3Uri string }
		}
	}
	if err := json.Unmarshal(body, &in); err != nil {
		awsError(w, http.StatusBadRequest, "ValidationException", "Malformed input request")
		return
	}
	switch {
	case !bedrockJobNameRE.MatchString(in.JobName):
		awsError(w, http.StatusBadRequest, "ValidationException", "1 validation error detected: Value at 'jobName' failed to satisfy constraint")
		return
	case in.RoleArn == "":
		awsError(w, http.StatusBadRequest, "ValidationException", "1 validation error detected: Value null at 'roleArn' failed to satisfy constraint: Member must not be null")
		return
	case in.ModelInvocationType != "" && in.ModelInvocationType != "InvokeModel" && in.ModelInvocationType != "Converse":
		awsError(w, http.StatusBadRequest, "ValidationException", "modelInvocationType must be InvokeModel or Converse")
		return
	case in.ModelId == "" || !strings.HasPrefix(in.InputDataConfig.S3InputDataConfig.S3Uri, "s3://") || !strings.HasPrefix(in.OutputDataConfig.S3OutputDataConfig.S3Uri, "s3://"):
		awsError(w, http.StatusBadRequest, "ValidationException", "modelId, inputDataConfig and outputDataConfig are required")
		return
	}
	j := &b.jobs
	j.mu.Lock()
	for _, job := range j.byArn {
		if in.ClientRequestToken != "" && job.token == in.ClientRequestToken && !j.noIdempotency {
			// Idempotent: the same token is the same job.
			j.mu.Unlock()
			writeJSON(w, http.StatusOK, map[string]string{"jobArn": job.arn})
			return
		}
		if job.name == in.JobName {
			j.mu.Unlock()
			awsError(w, http.StatusConflict, "ConflictException", "A job with this name already exists.")
			return
		}
	}
	min := j.minRecords
	j.mu.Unlock()
	// The input, read as Bedrock's role reads it.
	bucket, key := splitS3(in.InputDataConfig.S3InputDataConfig.S3Uri)
	obj, err := b.s3().GetObject(r.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		awsError(w, http.StatusBadRequest, "ValidationException", "The input S3 object could not be read by the role: "+err.Error())
		return
	}
	raw, _ := io.ReadAll(obj.Body)
	obj.Body.Close()
	var records []bedrockFakeRecord
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var rec bedrockFakeRecord
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec.RecordID == "" || len(rec.ModelInput) == 0 {
			awsError(w, http.StatusBadRequest, "ValidationException", "a record is not {recordId, modelInput}")
			return
		}
		records = append(records, rec)
	}
	if len(records) < min {
		awsError(w, http.StatusBadRequest, "ValidationException", fmt.Sprintf("The job has %d records, fewer than the minimum of %d", len(records), min))
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	arn := fmt.Sprintf("arn:aws:bedrock:%s:123456789012:model-invocation-job/fakejob%04d", b.Region, j.seq)
	if in.ModelInvocationType == "" {
		in.ModelInvocationType = "InvokeModel"
	}
	j.byArn[arn] = &bedrockFakeJob{arn: arn, name: in.JobName, invocation: in.ModelInvocationType, token: in.ClientRequestToken, model: in.ModelId, role: in.RoleArn,
		input: in.InputDataConfig.S3InputDataConfig.S3Uri, output: in.OutputDataConfig.S3OutputDataConfig.S3Uri, status: "Submitted",
		submitted: time.Now().UTC(), records: records}
	j.order = append(j.order, arn)
	writeJSON(w, http.StatusOK, map[string]string{"jobArn": arn})
}

// advanceJob takes the job a step on, unless HoldBatches holds it.
func (b *Bedrock) advanceJob(job *bedrockFakeJob) {
	b.batch.mu.Lock()
	held := b.batch.held
	b.batch.mu.Unlock()
	j := &b.jobs
	j.mu.Lock()
	if held {
		j.mu.Unlock()
		return
	}
	switch job.status {
	case "Submitted":
		job.status = "Validating"
		j.mu.Unlock()
		return
	case "Validating":
		job.status = "InProgress"
		j.mu.Unlock()
		return
	case "Stopping":
		// Stopped before it ran a record: no output.
		job.status = "Stopped"
		j.mu.Unlock()
		return
	case "InProgress":
	default:
		j.mu.Unlock()
		return
	}
	records, model, action := job.records, job.model, "/invoke"
	if job.invocation == "Converse" {
		action = "/converse"
	}
	j.mu.Unlock()
	var out bytes.Buffer
	succeeded, failed := 0, 0
	for _, rec := range records {
		hr := httptest.NewRequest(http.MethodPost, "/model/"+url.PathEscape(model)+action, bytes.NewReader(rec.ModelInput))
		hr.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		b.serveModel(w, hr)
		line := map[string]any{"recordId": rec.RecordID, "modelInput": rec.ModelInput}
		if w.Code == http.StatusOK {
			line["modelOutput"] = json.RawMessage(bytes.TrimSpace(w.Body.Bytes()))
			succeeded++
		} else {
			var e struct{ Message string }
			_ = json.Unmarshal(w.Body.Bytes(), &e)
			line["error"] = map[string]any{"errorCode": w.Code, "errorMessage": e.Message}
			failed++
		}
		out.Write(mustRaw(line))
		out.WriteByte('\n')
	}
	dir := strings.TrimSuffix(job.output, "/") + "/" + path.Base(job.arn) + "/"
	bucket, key := splitS3(dir + path.Base(job.input) + ".out")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := b.s3()
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(out.Bytes())}); err != nil {
		// Bedrock fails a job whose output it cannot write.
		j.mu.Lock()
		job.status, job.message = "Failed", "The output could not be written to S3."
		j.mu.Unlock()
		return
	}
	manifest := mustRaw(map[string]int{"totalRecordCount": len(records), "processedRecordCount": len(records), "successRecordCount": succeeded, "errorRecordCount": failed})
	_, mkey := splitS3(dir + "manifest.json.out")
	_, _ = client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(mkey), Body: bytes.NewReader(manifest)})
	j.mu.Lock()
	job.status, job.succeeded, job.failed = "Completed", succeeded, failed
	j.mu.Unlock()
}

// object is the job as GetModelInvocationJob shows it.
func (job *bedrockFakeJob) object() map[string]any {
	return map[string]any{"jobArn": job.arn, "jobName": job.name, "modelId": job.model, "modelInvocationType": job.invocation, "roleArn": job.role, "status": job.status, "message": job.message,
		"clientRequestToken": job.token, "submitTime": job.submitted.Format(time.RFC3339),
		"inputDataConfig":  map[string]any{"s3InputDataConfig": map[string]any{"s3Uri": job.input, "s3InputFormat": "JSONL"}},
		"outputDataConfig": map[string]any{"s3OutputDataConfig": map[string]any{"s3Uri": job.output}},
		"totalRecordCount": len(job.records), "successRecordCount": job.succeeded, "errorRecordCount": job.failed}
}
