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
	"time"
)

// The providers' batch APIs, as the fakes speak them (issue 34): OpenAI's
// Files and Batches (POST /v1/files purpose batch, POST /v1/batches, GET
// /v1/batches[/{id}], POST /v1/batches/{id}/cancel, GET
// /v1/files/{id}/content, DELETE /v1/files/{id}) and Anthropic's Message Batches (POST
// /v1/messages/batches, GET …[/{id}], GET …/{id}/results, POST
// …/{id}/cancel). A batch advances a step each time it is read (OpenAI:
// validating, in_progress, then completed; Anthropic: in_progress, then
// ended) unless HoldBatches holds it; when it completes, each of its
// requests is answered by the fake's own handler, from the same script as
// a synchronous request (and recorded in Requests the same way), and the
// answers are written as the provider writes them: OpenAI's output and
// error files of {id, custom_id, response: {status_code, request_id,
// body}, error}, Anthropic's results of {custom_id, result: {type,
// message|error}}.
type batchAPI struct {
	mu    sync.Mutex
	held  bool
	seq   int
	files map[string][]byte
	jobs  map[string]*fakeJob
	order []string
	// calls are the batch API calls received, "METHOD path".
	calls []string
}

type fakeJob struct {
	id, endpoint, inputFileID string
	anthropic                 bool
	// deleted: an Anthropic batch deleted once ended; not found since
	// (it still counts in BatchesCreated).
	deleted                      bool
	reqs                         []fakeBatchRequest
	status                       string
	created, cancelAt, ended     time.Time
	outputFileID, errorFileID    string
	results                      []json.RawMessage
	succeeded, errored, canceled int
	metadata                     map[string]string
}

type fakeBatchRequest struct {
	CustomID string          `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
	Params   json.RawMessage `json:"params"`
}

// HoldBatches keeps every batch where it is (in progress) while held:
// a test's time to restart gw or cancel mid-batch.
func (f *fake) HoldBatches(held bool) {
	f.batch.mu.Lock()
	defer f.batch.mu.Unlock()
	f.batch.held = held
}

// BatchCalls are the batch API calls received so far ("POST /v1/batches").
func (f *fake) BatchCalls() []string {
	f.batch.mu.Lock()
	defer f.batch.mu.Unlock()
	return append([]string(nil), f.batch.calls...)
}

// BatchesCreated counts the batches created at the fake.
func (f *fake) BatchesCreated() int {
	f.batch.mu.Lock()
	defer f.batch.mu.Unlock()
	return len(f.batch.order)
}

// serveBatchAPI answers a batch API call; false when r is none.
// authorized says whether r carries the fake's key; run answers one of a
// batch's requests through the fake's own handler.
func (f *fake) serveBatchAPI(w http.ResponseWriter, r *http.Request, anthropic bool, authorized bool, run http.Handler) bool {
	prefix := "/v1/batches"
	if anthropic {
		prefix = "/v1/messages/batches"
	}
	p := r.URL.Path
	isFiles := !anthropic && (p == "/v1/files" || strings.HasPrefix(p, "/v1/files/"))
	if !isFiles && p != prefix && !strings.HasPrefix(p, prefix+"/") {
		return false
	}
	refuse := func(status int, msg string) {
		if anthropic {
			anthropicError(w, status, anthropicErrorType(status), msg)
		} else {
			openAIError(w, status, msg, openAIErrorType(status), "")
		}
	}
	if !authorized {
		refuse(http.StatusUnauthorized, "invalid api key")
		return true
	}
	if anthropic && r.Header.Get("Anthropic-Version") == "" {
		refuse(http.StatusBadRequest, "anthropic-version: header is required")
		return true
	}
	b := &f.batch
	b.mu.Lock()
	b.calls = append(b.calls, r.Method+" "+p)
	if b.files == nil {
		b.files, b.jobs = map[string][]byte{}, map[string]*fakeJob{}
	}
	b.mu.Unlock()
	rest := strings.TrimPrefix(strings.TrimPrefix(p, prefix), "/")
	switch {
	case isFiles && p == "/v1/files" && r.Method == http.MethodPost:
		f.uploadBatchFile(w, r)
	case isFiles && strings.HasSuffix(p, "/content") && r.Method == http.MethodGet:
		id := strings.TrimSuffix(strings.TrimPrefix(p, "/v1/files/"), "/content")
		b.mu.Lock()
		content, ok := b.files[id]
		b.mu.Unlock()
		if !ok {
			refuse(http.StatusNotFound, "No such File object: "+id)
			return true
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(content)
	case isFiles && strings.HasPrefix(p, "/v1/files/") && r.Method == http.MethodDelete:
		id := strings.TrimPrefix(p, "/v1/files/")
		b.mu.Lock()
		_, ok := b.files[id]
		delete(b.files, id)
		b.mu.Unlock()
		if !ok {
			refuse(http.StatusNotFound, "No such File object: "+id)
			return true
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "file", "deleted": true})
	case rest == "" && r.Method == http.MethodPost:
		f.createBatchJob(w, r, anthropic, refuse)
	case rest == "" && r.Method == http.MethodGet:
		b.mu.Lock()
		data := []any{}
		for i := len(b.order) - 1; i >= 0; i-- {
			if j := b.jobs[b.order[i]]; j.anthropic == anthropic && !j.deleted {
				data = append(data, j.object(f.URL))
			}
		}
		b.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "has_more": false})
	default:
		id, sub, _ := strings.Cut(rest, "/")
		b.mu.Lock()
		j, ok := b.jobs[id]
		ok = ok && !j.deleted
		b.mu.Unlock()
		if !ok {
			refuse(http.StatusNotFound, "No such batch: "+id)
			return true
		}
		switch {
		case sub == "" && r.Method == http.MethodGet:
			f.advance(j, run)
		case sub == "" && anthropic && r.Method == http.MethodDelete:
			// Anthropic deletes an ended batch and its results; one still
			// processing is refused.
			b.mu.Lock()
			ended := !j.ended.IsZero()
			j.deleted = j.deleted || ended
			b.mu.Unlock()
			if !ended {
				refuse(http.StatusBadRequest, "Batch "+id+" cannot be deleted while it is processing")
				return true
			}
			writeJSON(w, http.StatusOK, map[string]any{"id": id, "type": "message_batch_deleted"})
			return true
		case sub == "cancel" && r.Method == http.MethodPost:
			b.mu.Lock()
			if j.ended.IsZero() && j.cancelAt.IsZero() {
				j.cancelAt = time.Now()
				j.status = map[bool]string{true: "canceling", false: "cancelling"}[anthropic]
			}
			b.mu.Unlock()
		case sub == "results" && anthropic && r.Method == http.MethodGet:
			b.mu.Lock()
			ended, results := !j.ended.IsZero(), j.results
			b.mu.Unlock()
			if !ended {
				refuse(http.StatusBadRequest, "Batch "+id+" has not ended")
				return true
			}
			w.Header().Set("Content-Type", "application/binary")
			for _, l := range results {
				_, _ = w.Write(append(l, '\n'))
			}
			return true
		default:
			refuse(http.StatusNotFound, "Unknown request URL: "+r.Method+" "+p)
			return true
		}
		b.mu.Lock()
		o := j.object(f.URL)
		b.mu.Unlock()
		writeJSON(w, http.StatusOK, o)
	}
	return true
}

// uploadBatchFile takes a multipart upload of purpose batch, each line a
// request {custom_id, method, url, body} naming its model.
func (f *fake) uploadBatchFile(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		openAIError(w, http.StatusBadRequest, "the upload is not multipart", "invalid_request_error", "")
		return
	}
	if r.FormValue("purpose") != "batch" {
		openAIError(w, http.StatusBadRequest, "purpose must be batch", "invalid_request_error", "")
		return
	}
	file, _, err := r.FormFile("file")
	if err != nil {
		openAIError(w, http.StatusBadRequest, "file is required", "invalid_request_error", "")
		return
	}
	content, _ := io.ReadAll(file)
	if _, err := readBatchRequests(content); err != nil {
		openAIError(w, http.StatusBadRequest, err.Error(), "invalid_request_error", "invalid_batch_file")
		return
	}
	b := &f.batch
	b.mu.Lock()
	b.seq++
	id := fmt.Sprintf("file-fake%d", b.seq)
	b.files[id] = content
	b.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "file", "bytes": len(content), "created_at": time.Now().Unix(),
		"filename": "batch.jsonl", "purpose": "batch", "status": "processed"})
}

func readBatchRequests(content []byte) ([]fakeBatchRequest, error) {
	var out []fakeBatchRequest
	sc := bufio.NewScanner(bytes.NewReader(content))
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		var l fakeBatchRequest
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.CustomID == "" || l.Method != "POST" || l.URL == "" {
			return nil, fmt.Errorf("line %d is not a batch request", n)
		}
		var body struct {
			Model string `json:"model"`
		}
		if json.Unmarshal(l.Body, &body) != nil || body.Model == "" {
			return nil, fmt.Errorf("line %d: body.model is required", n)
		}
		out = append(out, l)
	}
	return out, nil
}

func (f *fake) createBatchJob(w http.ResponseWriter, r *http.Request, anthropic bool, refuse func(int, string)) {
	raw, _ := io.ReadAll(r.Body)
	b := &f.batch
	j := &fakeJob{anthropic: anthropic, created: time.Now()}
	if anthropic {
		var req struct {
			Requests []fakeBatchRequest `json:"requests"`
		}
		if json.Unmarshal(raw, &req) != nil || len(req.Requests) == 0 {
			refuse(http.StatusBadRequest, "requests: at least one request is required")
			return
		}
		for _, rq := range req.Requests {
			if rq.CustomID == "" || len(rq.Params) == 0 {
				refuse(http.StatusBadRequest, "each request needs custom_id and params")
				return
			}
			rq.Method, rq.URL, rq.Body = "POST", "/v1/messages", rq.Params
			j.reqs = append(j.reqs, rq)
		}
		j.status, j.endpoint = "in_progress", "/v1/messages"
	} else {
		var req struct {
			InputFileID      string            `json:"input_file_id"`
			Endpoint         string            `json:"endpoint"`
			CompletionWindow string            `json:"completion_window"`
			Metadata         map[string]string `json:"metadata"`
		}
		if json.Unmarshal(raw, &req) != nil || req.CompletionWindow != "24h" {
			refuse(http.StatusBadRequest, "completion_window must be 24h")
			return
		}
		b.mu.Lock()
		content, ok := b.files[req.InputFileID]
		b.mu.Unlock()
		if !ok {
			refuse(http.StatusBadRequest, "No such File object: "+req.InputFileID)
			return
		}
		reqs, _ := readBatchRequests(content)
		for _, rq := range reqs {
			if rq.URL != req.Endpoint {
				refuse(http.StatusBadRequest, "every line's url must be the batch's endpoint")
				return
			}
		}
		j.reqs, j.endpoint, j.inputFileID, j.status, j.metadata = reqs, req.Endpoint, req.InputFileID, "validating", req.Metadata
	}
	b.mu.Lock()
	b.seq++
	if anthropic {
		j.id = fmt.Sprintf("msgbatch_fake%d", b.seq)
	} else {
		j.id = fmt.Sprintf("batch_fake%d", b.seq)
	}
	b.jobs[j.id] = j
	b.order = append(b.order, j.id)
	o := j.object(f.URL)
	b.mu.Unlock()
	writeJSON(w, http.StatusOK, o)
}

// advance moves a job a step on, as a read of it finds it; running its
// requests when it completes.
func (f *fake) advance(j *fakeJob, run http.Handler) {
	b := &f.batch
	b.mu.Lock()
	if b.held || !j.ended.IsZero() {
		b.mu.Unlock()
		return
	}
	if !j.cancelAt.IsZero() {
		// Cancelled before it ran: nothing is run; Anthropic reports
		// each request canceled, OpenAI lists none.
		j.status = map[bool]string{true: "ended", false: "cancelled"}[j.anthropic]
		j.ended = time.Now()
		for _, rq := range j.reqs {
			if j.anthropic {
				j.results = append(j.results, mustRaw(map[string]any{"custom_id": rq.CustomID, "result": map[string]any{"type": "canceled"}}))
			}
			j.canceled++
		}
		b.mu.Unlock()
		return
	}
	if j.status == "validating" {
		j.status = "in_progress"
		b.mu.Unlock()
		return
	}
	reqs := j.reqs
	b.mu.Unlock()
	var output, errs bytes.Buffer
	var results []json.RawMessage
	succeeded, errored := 0, 0
	for i, rq := range reqs {
		hr := httptest.NewRequest(http.MethodPost, rq.URL, bytes.NewReader(rq.Body))
		hr.Header.Set("Content-Type", "application/json")
		hr.Header.Set("Authorization", "Bearer "+f.Key)
		hr.Header.Set("X-Api-Key", f.Key)
		hr.Header.Set("Anthropic-Version", "2023-06-01")
		rec := httptest.NewRecorder()
		run.ServeHTTP(rec, hr)
		body := bytes.TrimSpace(rec.Body.Bytes())
		ok := rec.Code == http.StatusOK
		if ok {
			succeeded++
		} else {
			errored++
		}
		if j.anthropic {
			result := map[string]any{"type": "succeeded", "message": json.RawMessage(body)}
			if !ok {
				result = map[string]any{"type": "errored", "error": json.RawMessage(body)}
			}
			results = append(results, mustRaw(map[string]any{"custom_id": rq.CustomID, "result": result}))
			continue
		}
		line := mustRaw(map[string]any{"id": fmt.Sprintf("batch_req_fake%d", i), "custom_id": rq.CustomID,
			"response": map[string]any{"status_code": rec.Code, "request_id": fmt.Sprintf("req_fake%d", i), "body": json.RawMessage(body)}, "error": nil})
		dst := &output
		if !ok {
			dst = &errs
		}
		dst.Write(line)
		dst.WriteByte('\n')
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	j.ended, j.succeeded, j.errored, j.results = time.Now(), succeeded, errored, results
	if j.anthropic {
		j.status = "ended"
		return
	}
	j.status = "completed"
	for _, f2 := range []struct {
		buf *bytes.Buffer
		dst *string
	}{{&output, &j.outputFileID}, {&errs, &j.errorFileID}} {
		if f2.buf.Len() == 0 {
			continue
		}
		b.seq++
		id := fmt.Sprintf("file-fake%d", b.seq)
		b.files[id] = f2.buf.Bytes()
		*f2.dst = id
	}
}

// object is the job as its API shows it.
func (j *fakeJob) object(base string) map[string]any {
	ts := func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return t.UTC().Format(time.RFC3339)
	}
	processing := 0
	if j.ended.IsZero() {
		processing = len(j.reqs)
	}
	if j.anthropic {
		o := map[string]any{"id": j.id, "type": "message_batch", "processing_status": j.status,
			"request_counts": map[string]int{"processing": processing, "succeeded": j.succeeded, "errored": j.errored, "canceled": j.canceled, "expired": 0},
			"created_at":     ts(j.created), "expires_at": ts(j.created.Add(24 * time.Hour)), "ended_at": ts(j.ended),
			"cancel_initiated_at": ts(j.cancelAt), "archived_at": nil, "results_url": nil}
		if !j.ended.IsZero() {
			o["results_url"] = base + "/v1/messages/batches/" + j.id + "/results"
		}
		return o
	}
	str := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	unix := func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return t.Unix()
	}
	o := map[string]any{"id": j.id, "object": "batch", "endpoint": j.endpoint, "errors": nil, "input_file_id": j.inputFileID,
		"completion_window": "24h", "status": j.status, "output_file_id": str(j.outputFileID), "error_file_id": str(j.errorFileID),
		"created_at": j.created.Unix(), "in_progress_at": nil, "expires_at": j.created.Add(24 * time.Hour).Unix(),
		"cancelling_at": unix(j.cancelAt), "metadata": j.metadata,
		"request_counts": map[string]int{"total": len(j.reqs), "completed": j.succeeded, "failed": j.errored}}
	if !j.ended.IsZero() {
		o["completed_at"] = j.ended.Unix()
		if j.status == "cancelled" {
			o["cancelled_at"], o["completed_at"] = j.ended.Unix(), nil
		}
	}
	return o
}

func mustRaw(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
