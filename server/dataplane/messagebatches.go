package dataplane

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/batchfile"
)

// Anthropic's Message Batches (issue 34, part 1; docs/batches.md), on the
// same machinery as OpenAI's batches: the requests are written as the
// lines of a batch for the endpoint /v1/messages, kept as the batch's
// input file (purpose message_batch, gw's own: never listed), admitted by
// admitLines, bounded and checked against the budgets by reserve, run by
// the one runner (RunBatches) at the batch prices, one usage event a
// line. The batch object and the results are Anthropic's shapes, built
// from the batch and its lines; every refusal is Anthropic's error shape.
const (
	messageBatchesPath = messagesPath + "/batches"
	messageBatchPrefix = "msgbatch_"
	endpointMsgBatches = "message_batches"
	// purposeMessageBatch is the purpose of a message batch's input file
	// (store.PurposeMessageBatch).
	purposeMessageBatch = "message_batch"
)

// messageBatchRequest is Anthropic's messages.batches.create body.
type messageBatchRequest struct {
	Requests []messageBatchItem `json:"requests"`
}

type messageBatchItem struct {
	CustomID string          `json:"custom_id"`
	Params   json.RawMessage `json:"params"`
}

// messageBatchObject is Anthropic's MessageBatch.
type messageBatchObject struct {
	ID                string                   `json:"id"`
	Type              string                   `json:"type"`
	ProcessingStatus  string                   `json:"processing_status"`
	RequestCounts     messageBatchCountsObject `json:"request_counts"`
	EndedAt           *string                  `json:"ended_at"`
	CreatedAt         string                   `json:"created_at"`
	ExpiresAt         string                   `json:"expires_at"`
	ArchivedAt        *string                  `json:"archived_at"`
	CancelInitiatedAt *string                  `json:"cancel_initiated_at"`
	ResultsURL        *string                  `json:"results_url"`
}

type messageBatchCountsObject struct {
	Processing int `json:"processing"`
	Succeeded  int `json:"succeeded"`
	Errored    int `json:"errored"`
	Canceled   int `json:"canceled"`
	Expired    int `json:"expired"`
}

// messageBatchPage is Anthropic's page of a list.
type messageBatchPage struct {
	Data    []messageBatchObject `json:"data"`
	HasMore bool                 `json:"has_more"`
	FirstID *string              `json:"first_id"`
	LastID  *string              `json:"last_id"`
}

// messageBatchDeleted is Anthropic's answer to a delete.
type messageBatchDeleted struct {
	ID   string `json:"id"`
	Type string `json:"type"`
}

// maxMessageBatchPage is the largest page of Anthropic's list (its limit
// ranges from 1 to 1000, 20 by default).
const maxMessageBatchPage = 1000

// messageBatchListPage reads a list's limit, after_id and before_id as
// Anthropic's list takes them; a limit out of its range, or both cursors,
// is refused naming the parameter.
func messageBatchListPage(r *http.Request) (limit int, after, before string, refusal *response) {
	q := r.URL.Query()
	limit = 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxMessageBatchPage {
			return 0, "", "", invalidRequest("limit", "invalid_request", fmt.Sprintf("limit: %q is not an integer from 1 to %d.", v, maxMessageBatchPage))
		}
		limit = n
	}
	after, before = q.Get("after_id"), q.Get("before_id")
	if after != "" && before != "" {
		return 0, "", "", invalidRequest("before_id", "invalid_request", "before_id and after_id: give one cursor, not both.")
	}
	return limit, after, before, nil
}

// serveMessageBatches answers /inf/v1/messages/batches[/{id}[/results|/cancel]].
func (p *Plane) serveMessageBatches(w http.ResponseWriter, r *http.Request, rest string) {
	if rest == "" && r.Method == http.MethodPost {
		p.createMessageBatch(w, r)
		return
	}
	key, refusal := p.authenticate(r)
	if refusal != nil {
		anthropicError(refusal).write(w)
		return
	}
	if p.batches == nil {
		anthropicError(errBatchesUnavailable).write(w)
		return
	}
	ws, ctx := key.inference.workspace, r.Context()
	id, sub, _ := strings.Cut(rest, "/")
	var b *Batch
	if id != "" {
		var err error
		if b, err = p.batches.Batch(ctx, ws, id); err == nil && b.Endpoint != batchfile.MessagesEndpoint {
			// An OpenAI batch is served in its own shape only.
			err = ErrBatchNotFound
		}
		if err != nil {
			anthropicError(p.batchErr(err, "message batch", id)).write(w)
			return
		}
	}
	switch {
	case id == "" && r.Method == http.MethodGet:
		limit, after, before, refusal := messageBatchListPage(r)
		if refusal != nil {
			anthropicError(refusal).write(w)
			return
		}
		bs, err := p.batches.Batches(ctx, ws, true, after, before, limit+1)
		if err != nil {
			anthropicError(batchStoreFailed(p, err)).write(w)
			return
		}
		// has_more is in the page's direction: older ones past after_id's
		// page, newer ones past before_id's. The extra one read tells;
		// it is the farthest from the cursor, so the one left out.
		page := messageBatchPage{Data: make([]messageBatchObject, 0, len(bs)), HasMore: len(bs) > limit}
		if page.HasMore && before != "" {
			bs = bs[1:]
		}
		for i := range bs[:min(limit, len(bs))] {
			o, err := p.messageBatchObjectOf(r, &bs[i])
			if err != nil {
				anthropicError(batchStoreFailed(p, err)).write(w)
				return
			}
			page.Data = append(page.Data, o)
		}
		if n := len(page.Data); n > 0 {
			page.FirstID, page.LastID = &page.Data[0].ID, &page.Data[n-1].ID
		}
		writeObject(w, http.StatusOK, page)
	case sub == "" && r.Method == http.MethodGet:
		p.writeMessageBatch(w, r, b)
	case sub == "cancel" && r.Method == http.MethodPost:
		b, err := p.batches.Cancel(ctx, ws, id, p.now())
		if err != nil {
			anthropicError(p.batchErr(err, "message batch", id)).write(w)
			return
		}
		p.cancelledHold(id)
		p.wakeRunner()
		p.writeMessageBatch(w, r, b)
	case sub == "results" && r.Method == http.MethodGet:
		p.writeMessageBatchResults(w, r, b)
	case sub == "" && r.Method == http.MethodDelete:
		// As Anthropic: only an ended batch is deleted; its results and
		// requests go with it, its usage events stay.
		if err := p.batches.DeleteBatch(ctx, ws, id, p.now()); err != nil {
			if errors.Is(err, ErrBatchNotEnded) {
				anthropicError(invalidRequest("", "invalid_request", fmt.Sprintf("Message batch %q is still processing: cancel it, and delete it once it has ended.", id))).write(w)
				return
			}
			anthropicError(p.batchErr(err, "message batch", id)).write(w)
			return
		}
		writeObject(w, http.StatusOK, messageBatchDeleted{ID: id, Type: "message_batch_deleted"})
	case sub == "" || sub == "cancel" || sub == "results":
		anthropicError(errBatchMethod).write(w)
	default:
		anthropicError(unknownURL(r)).write(w)
	}
}

func (p *Plane) writeMessageBatch(w http.ResponseWriter, r *http.Request, b *Batch) {
	o, err := p.messageBatchObjectOf(r, b)
	if err != nil {
		anthropicError(batchStoreFailed(p, err)).write(w)
		return
	}
	writeObject(w, http.StatusOK, o)
}

// messageBatchEnded is whether b has ended (Anthropic's "ended": every
// line has an outcome).
func messageBatchEnded(b *Batch) bool {
	return b.Status != batchInProgress && b.Status != batchCancelling && b.Status != "validating"
}

func (p *Plane) messageBatchObjectOf(r *http.Request, b *Batch) (messageBatchObject, error) {
	c, err := p.batches.Counts(r.Context(), b.ID)
	if err != nil {
		return messageBatchObject{}, err
	}
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	ptr := func(t time.Time) *string { s := at(t); return &s }
	o := messageBatchObject{ID: b.ID, Type: "message_batch", ProcessingStatus: "in_progress", CreatedAt: at(b.CreatedAt),
		ExpiresAt: at(b.CreatedAt.Add(24 * time.Hour)),
		RequestCounts: messageBatchCountsObject{Processing: c.Total - c.Completed - c.Failed - c.Cancelled - c.Expired, Succeeded: c.Completed,
			Errored: c.Failed, Canceled: c.Cancelled, Expired: c.Expired}}
	switch {
	case b.Status == batchCancelling:
		o.ProcessingStatus, o.CancelInitiatedAt = "canceling", ptr(b.UpdatedAt)
	case messageBatchEnded(b):
		o.ProcessingStatus, o.EndedAt = "ended", ptr(b.UpdatedAt)
		if b.Status == batchCancelled {
			o.CancelInitiatedAt = ptr(b.UpdatedAt)
		}
		// Absolute, as Anthropic's is: its SDK fetches the URL as given.
		u := requestBase(r) + messageBatchesPath + "/" + b.ID + "/results"
		o.ResultsURL = &u
	}
	return o, nil
}

// requestBase is the scheme and host the caller reached gw at.
func requestBase(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	} else if f := r.Header.Get("X-Forwarded-Proto"); f == "https" || f == "http" {
		scheme = f
	}
	return scheme + "://" + r.Host
}

// writeMessageBatchResults answers a batch's results as Anthropic's JSONL,
// one line a request in order, from the lines' outcomes; 400 while the
// batch is still processing, as Anthropic answers.
func (p *Plane) writeMessageBatchResults(w http.ResponseWriter, r *http.Request, b *Batch) {
	if !messageBatchEnded(b) {
		anthropicError(invalidRequest("", "invalid_request", fmt.Sprintf("Message batch %q is still processing; its results are available once it has ended.", b.ID))).write(w)
		return
	}
	var out bytes.Buffer
	after := 0
	for {
		lines, err := p.batches.Lines(r.Context(), b.ID, after, 1000)
		if err != nil {
			anthropicError(batchStoreFailed(p, err)).write(w)
			return
		}
		if len(lines) == 0 {
			break
		}
		for _, l := range lines {
			after = l.Line
			out.Write(mustJSON(messageBatchResult(l)))
			out.WriteByte('\n')
		}
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(out.Len()))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out.Bytes())
}

// messageBatchResult is a line's result in Anthropic's shape: the message
// it answered, the error (Anthropic's error body, as /inf/v1/messages
// answered it, or one made of the line's error), or canceled.
func messageBatchResult(l BatchLine) map[string]any {
	res := map[string]any{}
	switch l.Status {
	case lineCompleted:
		res["type"], res["message"] = "succeeded", json.RawMessage(l.Response)
	case "cancelled":
		res["type"] = "canceled"
	case lineExpired:
		res["type"] = "expired"
	default:
		res["type"] = "errored"
		var e anthropicErrorBody
		if json.Unmarshal([]byte(l.Response), &e) == nil && e.Type == "error" && e.Error.Type != "" {
			res["error"] = json.RawMessage(l.Response)
		} else {
			res["error"] = anthropicErrorBody{Type: "error", Error: anthropicErrorObject{Type: "api_error", Message: l.Error}}
		}
	}
	if l.Status == lineCompleted && !json.Valid([]byte(l.Response)) {
		res["type"], res["message"] = "errored", nil
		res["error"] = anthropicErrorBody{Type: "error", Error: anthropicErrorObject{Type: "api_error", Message: "the answer was not JSON"}}
	}
	return map[string]any{"custom_id": l.CustomID, "result": res}
}

// readMessageBatchBody reads a message batch's body, refused past
// Anthropic's 256 MB (413 request_too_large, naming the limit).
func readMessageBatchBody(w http.ResponseWriter, r *http.Request) ([]byte, *response) {
	limit := batchfile.MessageBatchLimits.Bytes
	tooLarge := messageBatchTooLarge(fmt.Sprintf("A message batch is at most %d bytes (256 MB) and %d requests.", limit, batchfile.MessageBatchLimits.Lines))
	if r.ContentLength > limit {
		return nil, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			w.Header().Set("Connection", "close")
			return nil, tooLarge
		}
		return nil, invalidRequest("", "invalid_body", "The request body could not be read.")
	}
	return body, nil
}

func messageBatchTooLarge(msg string) *response {
	return errorResponse(http.StatusRequestEntityTooLarge, apiError{Type: typeInvalidRequest, Code: ref("request_too_large"), Message: msg})
}

// createMessageBatch submits an Anthropic batch through the one admission
// path, as createBatch does an OpenAI one: the key, its rate limits and
// tags; the requests read as a batch file's lines (each named
// requests[i] with its custom_id when refused); every line's model and
// policies (admitLines); the whole batch's bound at the batch prices
// against the budgets (402 billing_error when it does not fit), held for
// the batch's whole run as each line draws its share (batchhold.go).
func (p *Plane) createMessageBatch(w http.ResponseWriter, r *http.Request) {
	a, refusal := p.admitRequest(w, r, endpointMsgBatches)
	defer a.end()
	if refusal != nil {
		anthropicError(refusal).write(a.w)
		return
	}
	if p.batches == nil {
		anthropicError(errBatchesUnavailable).write(a.w)
		return
	}
	// Anthropic's limits, not a Messages request's: the body is up to
	// 256 MB, held whole while the batch is written, so it takes one of
	// the plane's upload slots (maxUploads), as a file upload does.
	select {
	case p.uploads <- struct{}{}:
		defer func() { <-p.uploads }()
	default:
		anthropicError(errUploadsBusy).write(a.w)
		return
	}
	body, refusal := readMessageBatchBody(a.w, r)
	if refusal != nil {
		anthropicError(refusal).write(a.w)
		return
	}
	var req messageBatchRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		anthropicError(invalidRequest("", "invalid_request", "The body is not a message batch request {requests: [{custom_id, params}]}: "+err.Error())).write(a.w)
		return
	}
	if len(req.Requests) == 0 {
		anthropicError(invalidRequest("requests", "invalid_request", "requests must hold at least one request.")).write(a.w)
		return
	}
	if n := int64(len(req.Requests)); n > batchfile.MessageBatchLimits.Lines {
		anthropicError(invalidRequest("requests", "invalid_request", fmt.Sprintf("requests: a message batch holds at most %d requests; this one has %d.",
			batchfile.MessageBatchLimits.Lines, n))).write(a.w)
		return
	}
	// The requests as a batch file's lines, read by the one reader (its
	// limits, custom_id rules, a body naming its model, no stream).
	var file bytes.Buffer
	for _, it := range req.Requests {
		file.Write(mustJSON(map[string]any{"custom_id": it.CustomID, "method": "POST", "url": batchfile.MessagesEndpoint, "body": it.Params}))
		file.WriteByte('\n')
	}
	if file.Len() > batchfile.MessageBatchFileBytes {
		// Within 256 MB, but the requests as lines grew past what gw keeps
		// of a batch (escaped custom ids).
		anthropicError(messageBatchTooLarge(fmt.Sprintf("The requests, written as a batch's lines, are %d bytes, more than the %d gw keeps of a message batch.",
			file.Len(), batchfile.MessageBatchFileBytes))).write(a.w)
		return
	}
	lines, err := batchfile.Read(file.Bytes(), batchfile.MessagesEndpoint, batchfile.LimitsFor(batchfile.MessagesEndpoint))
	if err != nil {
		var pr *batchfile.Problem
		if errors.As(err, &pr) && pr.Line > 0 {
			pr.Name = fmt.Sprintf("requests[%d]", pr.Line-1)
			pr.Message = strings.ReplaceAll(strings.ReplaceAll(pr.Message, "body.", "params."), "body must", "params must")
		}
		anthropicError(batchProblem("requests", err)).write(a.w)
		return
	}
	for i := range lines {
		lines[i].Name = fmt.Sprintf("requests[%d]", i)
	}
	upstreams := a.nativeGroups(lines, batchfile.MessagesEndpoint)
	merged, bound, bounds, refusal := a.admitLines(lines, nativeLines(upstreams))
	if refusal != nil {
		anthropicError(refusal).write(a.w)
		return
	}
	// Held for the batch's whole run, as createBatch's.
	held, refusal := a.holdBatch(merged, bound)
	if refusal != nil {
		anthropicError(refusal).write(a.w)
		return
	}
	now := p.now()
	f := &BatchFile{ID: "file-" + strings.ReplaceAll(uuid.NewString(), "-", ""), OrgID: a.key.org.orgID, WorkspaceID: a.key.workspace,
		Purpose: purposeMessageBatch, Filename: "message_batch.jsonl", Bytes: int64(file.Len()), Content: file.Bytes(), CreatedAt: now}
	b := &Batch{ID: messageBatchPrefix + strings.ReplaceAll(uuid.NewString(), "-", ""), OrgID: a.key.org.orgID, WorkspaceID: a.key.workspace,
		InferenceKeyID: a.key.id, Endpoint: batchfile.MessagesEndpoint, InputFileID: f.ID, CompletionWindow: "24h", Status: batchInProgress,
		ReservedNanoUSD: bound, CreatedAt: now, UpdatedAt: now}
	// As createBatch: what can run on Anthropic's own Message Batches
	// goes there (batchnative.go).
	b.Upstreams, b.LineBounds = upstreams, bounds
	ids := make([]string, len(lines))
	for i, l := range lines {
		ids[i] = l.CustomID
	}
	ctx := r.Context()
	if err := p.batches.CreateFile(ctx, f); err != nil {
		held.Release()
		anthropicError(batchStoreFailed(p, err)).write(a.w)
		return
	}
	if err := p.createHeldBatch(ctx, b, ids, held); err != nil {
		anthropicError(batchStoreFailed(p, err)).write(a.w)
		return
	}
	// Read before the runner is woken, as createBatch's answer is.
	o, err := p.messageBatchObjectOf(r, b)
	p.wakeRunner()
	if err != nil {
		anthropicError(batchStoreFailed(p, err)).write(a.w)
		return
	}
	writeObject(a.w, http.StatusOK, o)
}
