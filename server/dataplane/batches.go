package dataplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/batchfile"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/wire"
)

// Files and Batches in OpenAI's shape (issue 34, part 1; docs/batches.md).
// Their state is the control plane's (its database): a plane serves them
// only when given a BatchStore (Options.Batches), which the all-in-one gw
// does in process and a remote data plane over the sync API
// (batchremote.go); a plane without one answers 501 batches_unavailable.
const (
	filesPath   = "/inf/v1/files"
	batchesPath = "/inf/v1/batches"

	endpointFiles   = "files"
	endpointBatches = "batches"
)

// ErrBatchNotFound is a BatchStore's answer for an id its workspace has
// not (another workspace's included).
var ErrBatchNotFound = errors.New("not found")

// ErrBatchNotEnded is a BatchStore's refusal to delete a batch that has
// not ended.
var ErrBatchNotEnded = errors.New("the batch has not ended")

// BatchFile is the control plane's record of a file with its bytes, as
// the plane reads and writes it.
type BatchFile struct {
	ID                 string
	OrgID, WorkspaceID uuid.UUID
	Purpose, Filename  string
	Bytes              int64
	Content            []byte
	CreatedAt          time.Time
}

// A batch, its provider groups, its lines and their counts are the sync
// route's wire types (wire/batchstore.go): one shape, whichever store a
// plane has — the control plane's database in process (server/batchstore)
// or over the sync API (batchremote.go). Only a file differs: its bytes
// travel beside the wire record, and here they are in it.
type (
	Batch         = wire.BatchStoreBatch
	BatchUpstream = wire.BatchStoreUpstream
	UpstreamLine  = wire.BatchStoreUpstreamLine
	BatchLine     = wire.BatchStoreLine
	BatchCounts   = wire.BatchStoreCounts
	LineBound     = wire.BatchStoreLineBound
)

// The states of a batch and of a line (OpenAI's names for a batch's).
const (
	batchInProgress = "in_progress"
	batchCompleted  = "completed"
	batchCancelling = "cancelling"
	batchCancelled  = "cancelled"
	batchExpired    = "expired"
	lineCompleted   = "completed"
	lineFailed      = "failed"
	// lineExpired: the batch's completion window ended before the line
	// was sent (batchexpiry.go).
	lineExpired = "expired"
)

// BatchStore is the control plane's store of files and batches, every
// read by workspace (another's id is ErrBatchNotFound).
type BatchStore interface {
	CreateFile(ctx context.Context, f *BatchFile) error
	File(ctx context.Context, ws uuid.UUID, id string) (*BatchFile, error)
	Files(ctx context.Context, ws uuid.UUID, purpose, after string, limit int) ([]BatchFile, error)
	DeleteFile(ctx context.Context, ws uuid.UUID, id string, now time.Time) error
	CreateBatch(ctx context.Context, b *Batch, customIDs []string) error
	Batch(ctx context.Context, ws uuid.UUID, id string) (*Batch, error)
	// Batches are the workspace's Anthropic Message Batches when
	// messages, else its OpenAI batches, newest first: older than after,
	// or (before not "") the nearest newer than before.
	Batches(ctx context.Context, ws uuid.UUID, messages bool, after, before string, limit int) ([]Batch, error)
	// DeleteBatch deletes an ended batch, its lines and the files it
	// owns (ErrBatchNotEnded while it runs); its usage events stay.
	DeleteBatch(ctx context.Context, ws uuid.UUID, id string, now time.Time) error
	Counts(ctx context.Context, batchID string) (BatchCounts, error)
	Cancel(ctx context.Context, ws uuid.UUID, id string, now time.Time) (*Batch, error)
	// Active are the batches of every workspace with lines to run or end.
	Active(ctx context.Context) ([]Batch, error)
	// StartLine takes the next pending line, running under requestID
	// (ok false: none pending); EndLine records a running line's outcome
	// once.
	StartLine(ctx context.Context, batchID, requestID string, now time.Time) (BatchLine, bool, error)
	EndLine(ctx context.Context, l BatchLine, now time.Time) (bool, error)
	// Requeue puts a running line that was never sent back to pending.
	Requeue(ctx context.Context, batchID string, line int, now time.Time) (bool, error)
	Lines(ctx context.Context, batchID string, after, limit int) ([]BatchLine, error)
	// Interrupt fails the lines marked running before before.
	Interrupt(ctx context.Context, batchID string, before, now time.Time, message string) (int, error)
	// ExpireLines ends the pending lines as expired (never sent), leaving
	// running ones to end; it returns how many it ended.
	ExpireLines(ctx context.Context, batchID string, now time.Time) (int, error)
	// Finish ends the batch in status with the files it wrote (nil: none).
	Finish(ctx context.Context, batchID, status string, output, errFile *BatchFile, now time.Time) (bool, error)
	// Upstreams are the batch's provider batch groups; UpdateUpstream
	// moves one on from status from (false: it was not in it);
	// UpstreamLines are a group's lines still in the provider batch.
	Upstreams(ctx context.Context, batchID string) ([]BatchUpstream, error)
	UpdateUpstream(ctx context.Context, u BatchUpstream, from string, now time.Time) (bool, error)
	UpstreamLines(ctx context.Context, batchID string, seq int) ([]BatchLine, error)
}

// maxUploadOverhead is what a multipart upload may carry beyond its
// file: the boundaries, headers and the purpose field.
const maxUploadOverhead = 64 << 10

// maxUploads bounds the uploads a plane reads at once (each held whole in
// memory, up to 200 MiB).
const maxUploads = 2

var (
	errBatchesUnavailable = errorResponse(http.StatusNotImplemented, apiError{Type: typeInvalidRequest, Code: ref("batches_unavailable"),
		Message: "Files and batches are served by the control plane's own data plane (gw serve --role all); this data plane has no store for them."})
	errUploadsBusy = errorResponse(http.StatusServiceUnavailable, apiError{Type: typeServer, Code: ref("overloaded"),
		Message: "Too many file uploads in progress on this gateway; retry shortly."}, headerField{"Retry-After", []string{"2"}})
	errBatchMethod = errorResponse(http.StatusMethodNotAllowed, apiError{Type: typeInvalidRequest, Code: ref("method_not_allowed"),
		Message: "This method is not allowed on this URL."})
)

func notFoundID(kind, id string) *response {
	return errorResponse(http.StatusNotFound, apiError{Type: typeInvalidRequest, Code: ref("not_found"),
		Message: fmt.Sprintf("No such %s: %q.", kind, id)})
}

func batchStoreFailed(p *Plane, err error) *response {
	p.inference.log.Error("batch store", "error", err)
	return errorResponse(http.StatusServiceUnavailable, apiError{Type: typeServer, Code: ref("batches_unavailable"),
		Message: "The store of files and batches is not available; try again."})
}

// batchCaller is the key of a files or batches request, once the plane
// has the control plane's store of them; else it answers the refusal and
// returns nil.
func (p *Plane) batchCaller(w http.ResponseWriter, r *http.Request) *admittedKey {
	key, refusal := p.authenticate(r)
	if refusal != nil {
		refusal.write(w)
		return nil
	}
	if p.batches == nil {
		errBatchesUnavailable.write(w)
		return nil
	}
	return key
}

// serveFiles answers /inf/v1/files and /inf/v1/files/{id}[/content].
func (p *Plane) serveFiles(w http.ResponseWriter, r *http.Request, rest string) {
	key := p.batchCaller(w, r)
	if key == nil {
		return
	}
	ws, ctx := key.inference.workspace, r.Context()
	id, sub, _ := strings.Cut(rest, "/")
	switch {
	case id == "" && r.Method == http.MethodPost:
		p.uploadFile(w, r, key.inference)
	case id == "" && r.Method == http.MethodGet:
		limit, after := listPage(r)
		files, err := p.batches.Files(ctx, ws, r.URL.Query().Get("purpose"), after, limit+1)
		if err != nil {
			batchStoreFailed(p, err).write(w)
			return
		}
		out := make([]fileObject, 0, len(files))
		for i := range files[:min(limit, len(files))] {
			out = append(out, fileObjectOf(&files[i]))
		}
		page := filePage{Object: "list", Data: out, HasMore: len(files) > limit}
		if len(out) > 0 {
			page.FirstID, page.LastID = &out[0].ID, &out[len(out)-1].ID
		}
		writeObject(w, http.StatusOK, page)
	case sub == "" && (r.Method == http.MethodGet || r.Method == http.MethodDelete):
		if r.Method == http.MethodDelete {
			if err := p.batches.DeleteFile(ctx, ws, id, p.now()); err != nil {
				p.batchErr(err, "file", id).write(w)
				return
			}
			writeObject(w, http.StatusOK, fileDeleted{ID: id, Object: "file", Deleted: true})
			return
		}
		f, err := p.batches.File(ctx, ws, id)
		if err != nil {
			p.batchErr(err, "file", id).write(w)
			return
		}
		writeObject(w, http.StatusOK, fileObjectOf(f))
	case sub == "content" && r.Method == http.MethodGet:
		f, err := p.batches.File(ctx, ws, id)
		if err != nil {
			p.batchErr(err, "file", id).write(w)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(f.Content)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(f.Content)
	case sub == "" || sub == "content":
		errBatchMethod.write(w)
	default:
		unknownURL(r).write(w)
	}
}

func (p *Plane) batchErr(err error, kind, id string) *response {
	if errors.Is(err, ErrBatchNotFound) {
		return notFoundID(kind, id)
	}
	return batchStoreFailed(p, err)
}

// uploadFile stores a multipart upload (OpenAI's files.create: a file
// and purpose "batch"), refused 413 past the batch file limit. The file
// is checked line by line when a batch names it, as OpenAI does.
func (p *Plane) uploadFile(w http.ResponseWriter, r *http.Request, key *inferenceKey) {
	// An upload is held whole in memory until stored: at most
	// maxUploads at once in a plane, the others refused 503 to retry.
	select {
	case p.uploads <- struct{}{}:
		defer func() { <-p.uploads }()
	default:
		errUploadsBusy.write(w)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, batchfile.DefaultLimits.Bytes+maxUploadOverhead)
	mr, err := r.MultipartReader()
	if err != nil {
		invalidRequest("file", "invalid_request", "Upload the file as multipart/form-data with the fields file and purpose.").write(w)
		return
	}
	var purpose, filename string
	var content []byte
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			uploadReadError(err).write(w)
			return
		}
		switch part.FormName() {
		case "purpose":
			b, err := io.ReadAll(io.LimitReader(part, 64))
			if err != nil {
				uploadReadError(err).write(w)
				return
			}
			purpose = strings.TrimSpace(string(b))
		case "file":
			filename = part.FileName()
			if content, err = io.ReadAll(part); err != nil {
				uploadReadError(err).write(w)
				return
			}
		}
	}
	switch {
	case purpose != "batch":
		invalidRequest("purpose", "invalid_purpose", fmt.Sprintf("purpose %q is not supported; gw takes files of purpose \"batch\".", purpose)).write(w)
		return
	case content == nil:
		invalidRequest("file", "missing_file", "The upload has no file field.").write(w)
		return
	case int64(len(content)) > batchfile.DefaultLimits.Bytes:
		fileTooLarge().write(w)
		return
	}
	if filename == "" {
		filename = "upload.jsonl"
	}
	f := &BatchFile{ID: "file-" + strings.ReplaceAll(uuid.NewString(), "-", ""), OrgID: key.org.orgID, WorkspaceID: key.workspace,
		Purpose: "batch", Filename: filename, Bytes: int64(len(content)), Content: content, CreatedAt: p.now()}
	if err := p.batches.CreateFile(r.Context(), f); err != nil {
		batchStoreFailed(p, err).write(w)
		return
	}
	writeObject(w, http.StatusOK, fileObjectOf(f))
}

func fileTooLarge() *response {
	return errorResponse(http.StatusRequestEntityTooLarge, apiError{Type: typeInvalidRequest, Code: ref("file_too_large"), Param: ref("file"),
		Message: fmt.Sprintf("A batch file may be at most %d bytes.", batchfile.DefaultLimits.Bytes)})
}

func uploadReadError(err error) *response {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return fileTooLarge()
	}
	return invalidRequest("file", "invalid_request", "The multipart upload could not be read: "+err.Error())
}

// fileObject is OpenAI's File object.
type fileObject struct {
	ID        string  `json:"id"`
	Object    string  `json:"object"`
	Bytes     int64   `json:"bytes"`
	CreatedAt int64   `json:"created_at"`
	ExpiresAt *int64  `json:"expires_at"`
	Filename  string  `json:"filename"`
	Purpose   string  `json:"purpose"`
	Status    string  `json:"status"`
	Details   *string `json:"status_details"`
}

func fileObjectOf(f *BatchFile) fileObject {
	return fileObject{ID: f.ID, Object: "file", Bytes: f.Bytes, CreatedAt: f.CreatedAt.Unix(), Filename: f.Filename, Purpose: f.Purpose, Status: "processed"}
}

// filePage and batchPage are OpenAI's cursor pages; fileDeleted its
// answer to a delete.
type filePage struct {
	Object  string       `json:"object"`
	Data    []fileObject `json:"data"`
	HasMore bool         `json:"has_more"`
	FirstID *string      `json:"first_id"`
	LastID  *string      `json:"last_id"`
}

type batchPage struct {
	Object  string        `json:"object"`
	Data    []batchObject `json:"data"`
	HasMore bool          `json:"has_more"`
	FirstID *string       `json:"first_id"`
	LastID  *string       `json:"last_id"`
}

type fileDeleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// listPage is a list's limit (1 to 100, 20 by default) and its after.
func listPage(r *http.Request) (int, string) {
	limit := 20
	if n, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && n > 0 {
		limit = min(n, 100)
	}
	return limit, r.URL.Query().Get("after")
}

func writeObject(w http.ResponseWriter, status int, v any) {
	newResponse(status, mustJSON(v)).write(w)
}

// serveBatches answers /inf/v1/batches, /inf/v1/batches/{id} and
// /inf/v1/batches/{id}/cancel.
func (p *Plane) serveBatches(w http.ResponseWriter, r *http.Request, rest string) {
	if rest == "" && r.Method == http.MethodPost {
		p.createBatch(w, r)
		return
	}
	key := p.batchCaller(w, r)
	if key == nil {
		return
	}
	ws, ctx := key.inference.workspace, r.Context()
	id, sub, _ := strings.Cut(rest, "/")
	switch {
	case id == "" && r.Method == http.MethodGet:
		limit, after := listPage(r)
		bs, err := p.batches.Batches(ctx, ws, false, after, "", limit+1)
		if err != nil {
			batchStoreFailed(p, err).write(w)
			return
		}
		out := make([]batchObject, 0, len(bs))
		for i := range bs[:min(limit, len(bs))] {
			o, err := p.batchObjectOf(ctx, &bs[i])
			if err != nil {
				batchStoreFailed(p, err).write(w)
				return
			}
			out = append(out, o)
		}
		page := batchPage{Object: "list", Data: out, HasMore: len(bs) > limit}
		if len(out) > 0 {
			page.FirstID, page.LastID = &out[0].ID, &out[len(out)-1].ID
		}
		writeObject(w, http.StatusOK, page)
	case sub == "" && r.Method == http.MethodGet:
		b, err := p.batches.Batch(ctx, ws, id)
		if err == nil && b.Endpoint == batchfile.MessagesEndpoint {
			// An Anthropic batch is served in its own shape only.
			err = ErrBatchNotFound
		}
		if err != nil {
			p.batchErr(err, "batch", id).write(w)
			return
		}
		p.writeBatch(w, b)
	case sub == "cancel" && r.Method == http.MethodPost:
		if strings.HasPrefix(id, messageBatchPrefix) {
			notFoundID("batch", id).write(w)
			return
		}
		b, err := p.batches.Cancel(ctx, ws, id, p.now())
		if err != nil {
			p.batchErr(err, "batch", id).write(w)
			return
		}
		p.cancelledHold(id)
		p.wakeRunner()
		p.writeBatch(w, b)
	case sub == "" || sub == "cancel":
		errBatchMethod.write(w)
	default:
		unknownURL(r).write(w)
	}
}

func (p *Plane) writeBatch(w http.ResponseWriter, b *Batch) {
	o, err := p.batchObjectOf(context.Background(), b)
	if err != nil {
		batchStoreFailed(p, err).write(w)
		return
	}
	writeObject(w, http.StatusOK, o)
}

// batchObject is OpenAI's Batch object.
type batchObject struct {
	ID               string            `json:"id"`
	Object           string            `json:"object"`
	Endpoint         string            `json:"endpoint"`
	Errors           *batchErrors      `json:"errors"`
	InputFileID      string            `json:"input_file_id"`
	CompletionWindow string            `json:"completion_window"`
	Status           string            `json:"status"`
	OutputFileID     *string           `json:"output_file_id"`
	ErrorFileID      *string           `json:"error_file_id"`
	CreatedAt        int64             `json:"created_at"`
	InProgressAt     *int64            `json:"in_progress_at"`
	ExpiresAt        *int64            `json:"expires_at"`
	FinalizingAt     *int64            `json:"finalizing_at"`
	CompletedAt      *int64            `json:"completed_at"`
	FailedAt         *int64            `json:"failed_at"`
	ExpiredAt        *int64            `json:"expired_at"`
	CancellingAt     *int64            `json:"cancelling_at"`
	CancelledAt      *int64            `json:"cancelled_at"`
	RequestCounts    batchCountsObject `json:"request_counts"`
	Metadata         map[string]string `json:"metadata"`
}

// batchErrors is OpenAI's errors member: gw refuses a bad file at
// submission, so a batch it took has none (null).
type batchErrors struct {
	Object string `json:"object"`
	Data   []any  `json:"data"`
}

type batchCountsObject struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
}

func (p *Plane) batchObjectOf(ctx context.Context, b *Batch) (batchObject, error) {
	c, err := p.batches.Counts(ctx, b.ID)
	if err != nil {
		return batchObject{}, err
	}
	at := func(t time.Time) *int64 { v := t.Unix(); return &v }
	str := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	o := batchObject{ID: b.ID, Object: "batch", Endpoint: b.Endpoint, InputFileID: b.InputFileID, CompletionWindow: b.CompletionWindow,
		Status: b.Status, OutputFileID: str(b.OutputFileID), ErrorFileID: str(b.ErrorFileID), CreatedAt: b.CreatedAt.Unix(),
		InProgressAt: at(b.CreatedAt), ExpiresAt: at(b.CreatedAt.Add(24 * time.Hour)),
		// An expired line counts as failed, as OpenAI counts it.
		RequestCounts: batchCountsObject{Total: c.Total, Completed: c.Completed, Failed: c.Failed + c.Expired}, Metadata: b.Metadata}
	if o.Metadata == nil {
		o.Metadata = map[string]string{}
	}
	switch b.Status {
	case batchCompleted:
		o.FinalizingAt, o.CompletedAt = at(b.UpdatedAt), at(b.UpdatedAt)
	case batchCancelling:
		o.CancellingAt = at(b.UpdatedAt)
	case batchCancelled:
		o.CancellingAt, o.CancelledAt = at(b.UpdatedAt), at(b.UpdatedAt)
	case batchExpired:
		o.ExpiredAt = at(b.UpdatedAt)
	}
	return o, nil
}

// batchRequest is OpenAI's batches.create body.
type batchRequest struct {
	InputFileID      string            `json:"input_file_id"`
	Endpoint         string            `json:"endpoint"`
	CompletionWindow string            `json:"completion_window"`
	Metadata         map[string]string `json:"metadata"`
}

// createBatch submits a batch through the one admission path
// (admission.go): the key, its rate limits and tags; then every line's
// model is one the key may use and its policies allow (a line refused
// fails the whole submission, naming the line: nothing is stored,
// reserved or sent); then the whole batch's upper-bound cost, at the
// prices each line is billed at, must fit the budgets its lines count
// against. That bound is held from now for the batch's whole run, and
// each line draws its share as it is sent (batchhold.go): the batch is
// refused up front when it cannot fit, and synchronous traffic cannot
// take the room of the lines it accepted.
func (p *Plane) createBatch(w http.ResponseWriter, r *http.Request) {
	a, refusal := p.admitRequest(w, r, endpointBatches)
	defer a.end()
	if refusal != nil {
		refusal.write(a.w)
		return
	}
	if p.batches == nil {
		errBatchesUnavailable.write(a.w)
		return
	}
	body, hold := a.readBody(chatDialect{})
	if body == nil {
		return
	}
	defer hold.release()
	var req batchRequest
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		invalidRequest("", "invalid_request", "The body is not a batch request: "+err.Error()).write(a.w)
		return
	}
	switch {
	case req.CompletionWindow != "24h":
		invalidRequest("completion_window", "invalid_completion_window", `completion_window must be "24h".`).write(a.w)
		return
	case req.InputFileID == "":
		invalidRequest("input_file_id", "missing_input_file_id", "input_file_id is required.").write(a.w)
		return
	case !validMetadata(req.Metadata):
		invalidRequest("metadata", "invalid_metadata", "metadata is at most 16 pairs, each key at most 64 characters and each value at most 512.").write(a.w)
		return
	}
	ctx := r.Context()
	f, err := p.batches.File(ctx, a.key.workspace, req.InputFileID)
	if err != nil {
		p.batchErr(err, "file", req.InputFileID).write(a.w)
		return
	}
	if f.Purpose != "batch" {
		invalidRequest("input_file_id", "invalid_input_file", fmt.Sprintf("File %q is not of purpose \"batch\".", f.ID)).write(a.w)
		return
	}
	if req.Endpoint == batchfile.MessagesEndpoint {
		// Anthropic's batches are submitted at /inf/v1/messages/batches.
		invalidRequest("endpoint", batchfile.CodeInvalidURL, fmt.Sprintf("endpoint %q is not one of %s", req.Endpoint, strings.Join(batchfile.Endpoints, ", "))).write(a.w)
		return
	}
	lines, err := batchfile.Read(f.Content, req.Endpoint, batchfile.DefaultLimits)
	if err != nil {
		param := "input_file_id"
		if !strings.HasPrefix(req.Endpoint, "/v1/") || !validEndpoint(req.Endpoint) {
			param = "endpoint"
		}
		batchProblem(param, err).write(a.w)
		return
	}
	// The lines that can run on their provider's batch API go there
	// (batchnative.go), bounded at the batch prices; the others on gw's
	// runner, bounded and priced as the synchronous requests they are.
	upstreams := a.nativeGroups(lines, req.Endpoint)
	merged, bound, bounds, refusal := a.admitLines(lines, nativeLines(upstreams))
	if refusal != nil {
		refusal.write(a.w)
		return
	}
	// Held from now for the batch's whole run, each line drawing its
	// share as it is sent (batchhold.go).
	held, refusal := a.holdBatch(merged, bound)
	if refusal != nil {
		refusal.write(a.w)
		return
	}
	now := p.now()
	b := &Batch{ID: "batch_" + strings.ReplaceAll(uuid.NewString(), "-", ""), OrgID: a.key.org.orgID, WorkspaceID: a.key.workspace,
		InferenceKeyID: a.key.id, Endpoint: req.Endpoint, InputFileID: f.ID, CompletionWindow: req.CompletionWindow, Status: batchInProgress,
		Metadata: req.Metadata, ReservedNanoUSD: bound, CreatedAt: now, UpdatedAt: now}
	b.Upstreams, b.LineBounds = upstreams, bounds
	ids := make([]string, len(lines))
	for i, l := range lines {
		ids[i] = l.CustomID
	}
	if err := p.createHeldBatch(ctx, b, ids, held); err != nil {
		batchStoreFailed(p, err).write(a.w)
		return
	}
	// The answer is the batch as created, read before the runner is woken:
	// read after, it could count lines already run under a status still
	// in_progress.
	o, err := p.batchObjectOf(ctx, b)
	p.wakeRunner()
	if err != nil {
		batchStoreFailed(p, err).write(a.w)
		return
	}
	writeObject(a.w, http.StatusOK, o)
}

// validMetadata holds metadata to OpenAI's limits: 16 pairs, keys of up
// to 64 characters, values of up to 512.
func validMetadata(m map[string]string) bool {
	if len(m) > 16 {
		return false
	}
	for k, v := range m {
		if k == "" || utf8.RuneCountInString(k) > 64 || utf8.RuneCountInString(v) > 512 {
			return false
		}
	}
	return true
}

func validEndpoint(e string) bool {
	for _, ok := range batchfile.Endpoints {
		if e == ok {
			return true
		}
	}
	return false
}

// batchProblem is a 400 naming what is wrong with the file (its line and
// custom_id; batchfile.Problem).
func batchProblem(param string, err error) *response {
	code := "invalid_batch_file"
	var pr *batchfile.Problem
	if errors.As(err, &pr) {
		code = pr.Code
	}
	return invalidRequest(param, code, err.Error())
}

// admitLines decides every line: its model visible to the key and served
// (else unknown_model), the key's policies allowing it (a deny is the
// policy's message), each refusal naming the line. It returns the
// decision whose budgets the batch counts against (every budget any line
// counts against) and the batch's upper-bound cost at the batch prices,
// with each line's own bound (kept with the line: what a line a lost data
// plane took is billed, docs/batches.md).
func (a *admission) admitLines(lines []batchfile.Line, native map[int]bool) (*policy.Decision, int64, []LineBound, *response) {
	merged := &policy.Decision{Allowed: true}
	seen := map[string]bool{}
	var total int64
	bounds := make([]LineBound, 0, len(lines))
	for _, l := range lines {
		models := a.batchModels(l.Model)
		if len(models) == 0 {
			return nil, 0, nil, batchProblem("input_file_id", l.Problem("model_not_found", "model %q does not exist or this key may not use it", l.Model))
		}
		var lineBound LineBound
		for _, m := range models {
			d, refusal := a.decide(policy.Request{Model: m.model.ID, Provider: m.model.Provider, InputPricePerMTok: m.input, OutputPricePerMTok: m.output,
				CredentialScopes: a.key.org.credentials.eligible(a.key.workspace, m.model.Provider)})
			if refusal != nil {
				return nil, 0, nil, errorResponse(http.StatusForbidden, apiError{Type: typeInvalidRequest, Code: ref("policy_denied"), Param: ref("input_file_id"),
					Message: l.Problem("policy_denied", "%s", d.DenyMessage).Error()})
			}
			for _, b := range d.Budgets {
				k := b.PolicyID.String() + "|" + string(b.Period) + "|" + string(b.Aggregation)
				if !seen[k] {
					seen[k] = true
					merged.Budgets = append(merged.Budgets, b)
				}
			}
			n, err := lineBoundFor(m, l, native[l.Number])
			if err != nil {
				return nil, 0, nil, batchProblem("input_file_id", l.Problem("bound_too_large", "%v", err))
			}
			if n.NanoUSD >= lineBound.NanoUSD {
				lineBound = n
			}
		}
		if total > (1<<62)-lineBound.NanoUSD {
			return nil, 0, nil, batchProblem("input_file_id", l.Problem("bound_too_large", "the batch's cost bound does not fit"))
		}
		total += lineBound.NanoUSD
		bounds = append(bounds, lineBound)
	}
	a.decision = merged
	return merged, total, bounds, nil
}

// batchModels are the catalog models a line's model names: the model, or
// an alias's targets, when the key's view has it.
func (a *admission) batchModels(id string) []*routeModel {
	if _, ok := a.view.byID[id]; !ok {
		return nil
	}
	if m := a.key.org.models[id]; m != nil {
		return []*routeModel{m}
	}
	var out []*routeModel
	for _, t := range a.view.aliases[id] {
		if m := a.key.org.models[t.id]; m != nil {
			out = append(out, m)
		}
	}
	return out
}

// lineBoundOf bounds a line's cost: at the batch prices when the line
// runs on its provider's batch API (native), else at the synchronous
// prices gw's runner pays. A token per byte of its body (no encoding
// makes more tokens than bytes of JSON holding them), every one at the
// dearest input-side price, and its output cap (max_completion_tokens,
// max_tokens or max_output_tokens, else the model's) at the output price.
func lineBoundOf(m *routeModel, l batchfile.Line, native bool) (int64, error) {
	b, err := lineBoundFor(m, l, native)
	return b.NanoUSD, err
}

// lineBoundFor is lineBoundOf with what it counted: the model, and the
// input and output tokens it priced.
func lineBoundFor(m *routeModel, l batchfile.Line, native bool) (LineBound, error) {
	var caps struct {
		MaxCompletion *int64 `json:"max_completion_tokens"`
		MaxTokens     *int64 `json:"max_tokens"`
		MaxOutput     *int64 `json:"max_output_tokens"`
		N             *int64 `json:"n"`
		ServiceTier   string `json:"service_tier"`
	}
	_ = json.Unmarshal(l.Body, &caps)
	var asked, n int64
	for _, c := range []*int64{caps.MaxCompletion, caps.MaxTokens, caps.MaxOutput} {
		if c != nil && *c > 0 {
			asked = *c
			break
		}
	}
	if caps.N != nil {
		n = *caps.N
	}
	out := outputCap(&route{model: m}, asked, n)
	if l.URL == "/v1/embeddings" {
		out = 0
	}
	// gw's runner sends the line as a synchronous request, billed at the
	// base prices or the tier it asks for (as route's bound); a provider
	// batch has no service tier.
	pricing := m.pricing.Asked(caps.ServiceTier)
	if native {
		pricing = m.pricing.ForBatch(m.kind)
	}
	b := boundPricesOf(pricing)
	t := b.standard
	if b.long != nil {
		t = catalog.CeilPrices{Input: max(t.Input, b.long.Input), Output: max(t.Output, b.long.Output), CacheRead: max(t.CacheRead, b.long.CacheRead),
			CacheWrite: max(t.CacheWrite, b.long.CacheWrite), CacheWrite1h: max(t.CacheWrite1h, b.long.CacheWrite1h)}
	}
	in := int64(len(l.Body)) + 2_000
	nano, err := costBound(max(t.Input, t.CacheRead, t.CacheWrite, t.CacheWrite1h), t.Output, in, out)
	return LineBound{Line: l.Number, NanoUSD: nano, Model: m.model.ID, Provider: m.model.Provider, InputTokens: in, OutputTokens: out}, err
}

// nativeLines are the numbers of the lines the groups send to their
// providers' batch APIs.
func nativeLines(groups []BatchUpstream) map[int]bool {
	out := map[int]bool{}
	for _, g := range groups {
		for _, l := range g.Lines {
			out[l.Line] = true
		}
	}
	return out
}
