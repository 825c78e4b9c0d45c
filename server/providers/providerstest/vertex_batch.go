package providerstest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

// Vertex AI's batch prediction, as the Vertex fake speaks it once
// ServeBatches gives it a Cloud Storage (issue 34): POST, GET (one, or a
// list filtered by display_name), POST …:cancel and DELETE of
// /v1/projects/{project}/locations/{location}/batchPredictionJobs, with
// the fake's bearer tokens. A job reads its JSONL input from the Cloud
// Storage (a real GCS-compatible server, fake-gcs-server, over HTTP);
// each read moves it a step on (pending, running, then succeeded) unless
// HoldBatches holds it; when it succeeds each of its requests is answered
// by the fake's own generateContent or rawPredict handler, from the same
// script as a synchronous request (and recorded in Requests), and the
// predictions are written to a predictions.jsonl under the job's output
// prefix — in reverse order, since Vertex AI keeps none.

// NewGCS starts a Cloud Storage (fake-gcs-server) on 127.0.0.1 over plain
// HTTP, with bucket.
func NewGCS(t testing.TB, bucket string) *fakestorage.Server {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", Port: 0,
		Writer: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})
	return srv
}

type vertexJobs struct {
	mu  sync.Mutex
	gcs *fakestorage.Server
	// refusal, when set, refuses every create (400 INVALID_ARGUMENT).
	refusal string
	seq     int
	jobs    map[string]*vertexFakeJob
	order   []string
}

type vertexFakeJob struct {
	name, displayName, model, input, outputPrefix string
	state, outputDir                              string
	created                                       time.Time
	cancelled                                     bool
}

// ServeBatches makes the fake's batch prediction job API read and write
// gcs.
func (v *Vertex) ServeBatches(gcs *fakestorage.Server) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.jobs = &vertexJobs{gcs: gcs, jobs: map[string]*vertexFakeJob{}}
}

// RefuseJobs refuses every job created from now on with message (as
// Vertex AI refuses a model that has no batch prediction, say).
func (v *Vertex) RefuseJobs(message string) {
	j := v.batchJobs()
	j.mu.Lock()
	defer j.mu.Unlock()
	j.refusal = message
}

// JobsCreated counts the batch prediction jobs created at the fake.
func (v *Vertex) JobsCreated() int {
	j := v.batchJobs()
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.order)
}

func (v *Vertex) batchJobs() *vertexJobs {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.jobs
}

// serveJobs answers a batchPredictionJobs call; false when r is none.
func (v *Vertex) serveJobs(w http.ResponseWriter, r *http.Request) bool {
	jobs := v.batchJobs()
	collection := "/v1/projects/" + v.Project + "/locations/" + v.Location + "/batchPredictionJobs"
	p := r.URL.Path
	if jobs == nil || (p != collection && !strings.HasPrefix(p, collection+"/")) {
		return false
	}
	if !v.issued(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")) {
		googleError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "ACCESS_TOKEN_TYPE_UNSUPPORTED",
			"Request had invalid authentication credentials. Expected OAuth 2 access token.")
		return true
	}
	v.fake.batch.mu.Lock()
	v.fake.batch.calls = append(v.fake.batch.calls, r.Method+" "+strings.TrimPrefix(p, "/v1/projects/"+v.Project+"/locations/"+v.Location))
	v.fake.batch.mu.Unlock()
	rest := strings.TrimPrefix(strings.TrimPrefix(p, collection), "/")
	id, method, _ := strings.Cut(rest, ":")
	switch {
	case rest == "" && r.Method == http.MethodPost:
		v.createJob(w, r, jobs)
		return true
	case rest == "" && r.Method == http.MethodGet:
		// filter=display_name="NAME", the one form gw sends.
		want, filtered := strings.CutPrefix(r.URL.Query().Get("filter"), `display_name="`)
		want = strings.TrimSuffix(want, `"`)
		jobs.mu.Lock()
		list := []any{}
		for i := len(jobs.order) - 1; i >= 0; i-- {
			if j := jobs.jobs[jobs.order[i]]; !filtered || j.displayName == want {
				list = append(list, j.object())
			}
		}
		jobs.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"batchPredictionJobs": list})
		return true
	}
	jobs.mu.Lock()
	j, ok := jobs.jobs["projects/"+v.Project+"/locations/"+v.Location+"/batchPredictionJobs/"+id]
	jobs.mu.Unlock()
	if !ok {
		googleError(w, http.StatusNotFound, "NOT_FOUND", "", "The BatchPredictionJob does not exist.")
		return true
	}
	switch {
	case method == "" && r.Method == http.MethodGet:
		v.advanceJob(jobs, j)
	case method == "cancel" && r.Method == http.MethodPost:
		jobs.mu.Lock()
		if j.state != "JOB_STATE_SUCCEEDED" && j.state != "JOB_STATE_CANCELLED" {
			j.state, j.cancelled = "JOB_STATE_CANCELLING", true
		}
		jobs.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{})
		return true
	case method == "" && r.Method == http.MethodDelete:
		jobs.mu.Lock()
		ended := j.state == "JOB_STATE_SUCCEEDED" || j.state == "JOB_STATE_CANCELLED"
		if ended {
			delete(jobs.jobs, j.name)
		}
		jobs.mu.Unlock()
		if !ended {
			googleError(w, http.StatusBadRequest, "FAILED_PRECONDITION", "", "The BatchPredictionJob is not in a final state.")
			return true
		}
		writeJSON(w, http.StatusOK, map[string]any{"name": j.name + "/operations/delete", "done": true})
		return true
	default:
		googleError(w, http.StatusNotFound, "NOT_FOUND", "", "Unknown method "+r.Method+" "+p)
		return true
	}
	jobs.mu.Lock()
	o := j.object()
	jobs.mu.Unlock()
	writeJSON(w, http.StatusOK, o)
	return true
}

// splitGSURI splits gs://bucket/object.
func splitGSURI(uri string) (bucket, object string, ok bool) {
	rest, found := strings.CutPrefix(uri, "gs://")
	if !found {
		return "", "", false
	}
	bucket, object, ok = strings.Cut(rest, "/")
	return bucket, object, ok && bucket != "" && object != ""
}

// createJob checks a job as Vertex AI does (a publisher model, JSONL in
// and out on Cloud Storage, an input that exists and reads) and creates
// it, pending.
func (v *Vertex) createJob(w http.ResponseWriter, r *http.Request, jobs *vertexJobs) {
	var req struct {
		DisplayName string `json:"displayName"`
		Model       string `json:"model"`
		InputConfig struct {
			InstancesFormat string `json:"instancesFormat"`
			GCSSource       struct {
				URIs []string `json:"uris"`
			} `json:"gcsSource"`
		} `json:"inputConfig"`
		OutputConfig struct {
			PredictionsFormat string `json:"predictionsFormat"`
			GCSDestination    struct {
				OutputURIPrefix string `json:"outputUriPrefix"`
			} `json:"gcsDestination"`
		} `json:"outputConfig"`
	}
	raw, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(raw, &req); err != nil || req.DisplayName == "" {
		googleError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "", "BatchPredictionJob.display_name is required.")
		return
	}
	publisher, model, ok := strings.Cut(strings.TrimPrefix(req.Model, "publishers/"), "/models/")
	if !strings.HasPrefix(req.Model, "publishers/") || !ok || (publisher != "google" && publisher != "anthropic") {
		googleError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "", "Invalid model "+req.Model)
		return
	}
	if req.InputConfig.InstancesFormat != "jsonl" || len(req.InputConfig.GCSSource.URIs) != 1 || req.OutputConfig.PredictionsFormat != "jsonl" {
		googleError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "", "Gemini batch prediction takes one jsonl input and jsonl output.")
		return
	}
	bucket, object, ok := splitGSURI(req.InputConfig.GCSSource.URIs[0])
	if !ok {
		googleError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "", "The input is not a gs:// URI.")
		return
	}
	if _, err := jobs.gcs.GetObject(bucket, object); err != nil {
		googleError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "", "The input file "+req.InputConfig.GCSSource.URIs[0]+" does not exist.")
		return
	}
	if _, _, ok := splitGSURI(req.OutputConfig.GCSDestination.OutputURIPrefix); !ok {
		googleError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "", "The output is not a gs:// prefix.")
		return
	}
	jobs.mu.Lock()
	if jobs.refusal != "" {
		msg := jobs.refusal
		jobs.mu.Unlock()
		googleError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "", msg)
		return
	}
	jobs.seq++
	j := &vertexFakeJob{name: fmt.Sprintf("projects/%s/locations/%s/batchPredictionJobs/%d", v.Project, v.Location, 7000+jobs.seq),
		displayName: req.DisplayName, model: publisher + "/" + model, input: req.InputConfig.GCSSource.URIs[0],
		outputPrefix: req.OutputConfig.GCSDestination.OutputURIPrefix, state: "JOB_STATE_PENDING", created: time.Now()}
	jobs.jobs[j.name] = j
	jobs.order = append(jobs.order, j.name)
	o := j.object()
	jobs.mu.Unlock()
	writeJSON(w, http.StatusOK, o)
}

// advanceJob moves a job a step on, as a read of it finds it.
func (v *Vertex) advanceJob(jobs *vertexJobs, j *vertexFakeJob) {
	v.fake.batch.mu.Lock()
	held := v.fake.batch.held
	v.fake.batch.mu.Unlock()
	jobs.mu.Lock()
	if held || j.state == "JOB_STATE_SUCCEEDED" || j.state == "JOB_STATE_CANCELLED" || j.state == "JOB_STATE_FAILED" {
		jobs.mu.Unlock()
		return
	}
	switch {
	case j.cancelled:
		// Cancelled before it ran: no predictions.
		j.state = "JOB_STATE_CANCELLED"
		jobs.mu.Unlock()
		return
	case j.state == "JOB_STATE_PENDING":
		j.state = "JOB_STATE_RUNNING"
		jobs.mu.Unlock()
		return
	}
	input, prefix := j.input, j.outputPrefix
	jobs.mu.Unlock()
	bucket, object, _ := splitGSURI(input)
	obj, err := jobs.gcs.GetObject(bucket, object)
	if err != nil {
		jobs.mu.Lock()
		j.state = "JOB_STATE_FAILED"
		jobs.mu.Unlock()
		return
	}
	publisher, model, _ := strings.Cut(j.model, "/")
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(obj.Content))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var in map[string]json.RawMessage
		if json.Unmarshal(sc.Bytes(), &in) != nil || len(in["request"]) == 0 {
			lines = append(lines, mustRaw(map[string]any{"status": "Invalid JSON: the line has no request", "processed_time": time.Now().UTC()}))
			continue
		}
		u := "/v1/projects/" + v.Project + "/locations/" + v.Location + "/publishers/" + publisher + "/models/" + model
		if publisher == "anthropic" {
			u += ":rawPredict"
		} else {
			u += ":generateContent"
		}
		hr := httptest.NewRequest(http.MethodPost, u, bytes.NewReader(in["request"]))
		hr.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		if publisher == "anthropic" {
			v.rawPredict(rec, hr, model, "rawPredict")
		} else {
			serveGenerateContent(v.fake, rec, hr, model, "generateContent")
		}
		out := map[string]any{"status": "", "processed_time": time.Now().UTC().Format(time.RFC3339Nano), "request": in["request"]}
		if cid, ok := in["custom_id"]; ok {
			out["custom_id"] = cid
		}
		if rec.Code == http.StatusOK {
			out["response"] = json.RawMessage(bytes.TrimSpace(rec.Body.Bytes()))
		} else {
			out["status"] = http.StatusText(rec.Code) + ": " + strings.TrimSpace(rec.Body.String())
		}
		lines = append(lines, mustRaw(out))
	}
	var buf bytes.Buffer
	for i := len(lines) - 1; i >= 0; i-- {
		buf.Write(lines[i])
		buf.WriteByte('\n')
	}
	ob, op, _ := splitGSURI(prefix)
	dir := strings.TrimSuffix(op, "/") + "/prediction-model-" + time.Now().UTC().Format("2006-01-02T15:04:05.000000Z")
	jobs.gcs.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: ob, Name: dir + "/predictions.jsonl",
		ContentType: "application/jsonl"}, Content: buf.Bytes()})
	jobs.mu.Lock()
	j.state, j.outputDir = "JOB_STATE_SUCCEEDED", "gs://"+ob+"/"+dir
	jobs.mu.Unlock()
}

// object is the job as the API shows it.
func (j *vertexFakeJob) object() map[string]any {
	o := map[string]any{"name": j.name, "displayName": j.displayName, "model": "publishers/" + strings.Replace(j.model, "/", "/models/", 1),
		"inputConfig":  map[string]any{"instancesFormat": "jsonl", "gcsSource": map[string]any{"uris": []string{j.input}}},
		"outputConfig": map[string]any{"predictionsFormat": "jsonl", "gcsDestination": map[string]any{"outputUriPrefix": j.outputPrefix}},
		"state":        j.state, "createTime": j.created.UTC().Format(time.RFC3339Nano)}
	if j.outputDir != "" {
		o["outputInfo"] = map[string]any{"gcsOutputDirectory": j.outputDir}
	}
	return o
}
