package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/batchfile"
	"github.com/gw-gateway/gw/server/budgets"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/wire"
)

// The data plane's batch store (issue 34, part 1; docs/batches.md): a
// remote data plane serves /inf/v1/files and /inf/v1/batches from the
// control plane's files and batches through this one route, each op
// confined to the organizations the calling data plane is enrolled for.
// An id outside them is not found, as another workspace's is to the
// all-in-one plane: no op reads or changes another tenant's file, batch
// or line.

// Limits of a batch-store call: its JSON head (a message batch's custom
// ids are up to 100,000 of 64 bytes, escaped, and their lines' bounds); an output or error file a
// finish carries (a batch's answers, unbounded by the input's limits); the
// whole body. An uploaded file is at most batchfile.DefaultLimits.Bytes, a
// message batch's requests batchfile.MessageBatchFileBytes.
const (
	batchStoreHeadLimit = 64 << 20
	batchStoreFileLimit = 256 << 20
	batchStoreBodyLimit = batchStoreHeadLimit + 2*batchStoreFileLimit
	// batchStoreBodyDeadline: 576 MiB at ~8 Mbit/s.
	batchStoreBodyDeadline = 10 * time.Minute
)

// batchStoreBodies bounds the calls carrying a file body that the
// process holds at once (each up to 200 MiB, a finish up to twice 256):
// a third is refused 503, and the data plane retries.
var batchStoreBodies = make(chan struct{}, 2)

func (s *Server) batchStoreRoutes() []*Route {
	return []*Route{{Method: "POST", Path: "/api/v1/data-plane/batch-store/{op}", Tag: "Data Plane API", Statuses: []int{404, 503}, Binary: true,
		Summary: "A remote data plane's call on the control plane's files and batches (op: one of " + strings.Join(wire.BatchStoreOps, ", ") +
			"), confined to the organizations it is enrolled for; the body is the request as one JSON line, then the bytes of the files it carries, " +
			"the answer {data} as one JSON line, then, for op file, the file's bytes",
		Perms: []auth.Permission{auth.PolicyStateSync}, MaxBody: batchStoreBodyLimit, Body: wire.BatchStoreRequest{}, Result: wire.BatchStoreResult{},
		Query:  []QueryParam{{Name: "data_plane_id", Description: "The enrolled data plane calling.", Required: true}},
		Handle: s.batchStoreCall}}
}

// batchStoreCaller is one call's data plane and the organizations it may
// reach.
type batchStoreCaller struct {
	s     *Server
	r     *Request
	plane string
	orgs  []uuid.UUID
}

func (s *Server) batchStoreCall(r *Request) (any, error) {
	e, err := s.pollerEnrollment(r)
	if err != nil {
		return nil, err
	}
	if e.Status != store.EnrollmentApproved {
		return nil, errorf(http.StatusForbidden, "data plane %q is not enrolled (its enrollment is %s)", e.DataPlaneID, e.Status)
	}
	op := r.R.PathValue("op")
	if !slices.Contains(wire.BatchStoreOps, op) {
		return nil, errorf(http.StatusNotFound, "no batch-store op %q: the ops are %s", op, strings.Join(wire.BatchStoreOps, ", "))
	}
	if op == "create-file" || op == "finish" || op == "file" {
		select {
		case batchStoreBodies <- struct{}{}:
			defer func() { <-batchStoreBodies }()
		default:
			r.W.Header().Set("Retry-After", "2")
			return nil, errorf(http.StatusServiceUnavailable, "too many file bodies in transit on the control plane; retry shortly")
		}
	}
	_ = http.NewResponseController(r.W).SetReadDeadline(time.Now().Add(batchStoreBodyDeadline))
	body := bufio.NewReaderSize(r.R.Body, 64<<10)
	req, err := readBatchStoreHead(body)
	if err != nil {
		return nil, err
	}
	c := batchStoreCaller{s: s, r: r, plane: e.DataPlaneID, orgs: e.OrgIDs}
	out, content, err := c.do(op, req, body)
	if err != nil {
		return nil, err
	}
	if content != nil {
		r.W.Header().Set("Content-Type", "application/octet-stream")
	} else {
		r.W.Header().Set("Content-Type", "application/json")
	}
	r.W.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(r.W)
	enc.SetEscapeHTML(false)
	// Encode ends the line: the bytes, if any, follow it.
	_ = enc.Encode(wire.Envelope[wire.BatchStoreResult]{Data: out})
	if content != nil {
		_, _ = r.W.Write(content)
	}
	return answered{}, nil
}

// readBatchStoreHead reads the request's first line, strictly.
func readBatchStoreHead(body *bufio.Reader) (*wire.BatchStoreRequest, error) {
	var head bytes.Buffer
	for {
		chunk, err := body.ReadSlice('\n')
		head.Write(chunk)
		if head.Len() > batchStoreHeadLimit {
			return nil, errBodyTooLarge(batchStoreHeadLimit)
		}
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if errors.Is(err, io.EOF) && head.Len() > 0 {
				break
			}
			return nil, batchStoreReadError(err)
		}
	}
	dec := json.NewDecoder(&head)
	dec.DisallowUnknownFields()
	var req wire.BatchStoreRequest
	if err := dec.Decode(&req); err != nil {
		return nil, errorf(http.StatusBadRequest, "the batch-store request is not one JSON line: %v", err)
	}
	return &req, nil
}

func batchStoreReadError(err error) error {
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		return errBodyTooLarge(mbe.Limit)
	case errors.As(err, &ne) && ne.Timeout():
		return errorf(http.StatusRequestTimeout, "the request body did not arrive in time")
	}
	return errorf(http.StatusBadRequest, "reading request body: %v", err)
}

// readContent reads a file's n bytes after the head, at most limit.
func readContent(body io.Reader, n, limit int64) ([]byte, error) {
	if n < 0 || n > limit {
		return nil, errorf(http.StatusRequestEntityTooLarge, "a file of %d bytes is over the limit of %d", n, limit)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(body, buf); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, errorf(http.StatusBadRequest, "the body ended before the file's %d bytes", n)
		}
		return nil, batchStoreReadError(err)
	}
	return buf, nil
}

// notFound is an id outside the caller's organizations, said as the
// all-in-one plane says another workspace's: it does not exist.
func batchStoreNotFound(kind, id string) error {
	return errorf(http.StatusNotFound, "no such %s: %q", kind, id)
}

// workspace checks that ws is in one of the caller's organizations and
// returns that organization.
func (c batchStoreCaller) workspace(ws uuid.UUID) (uuid.UUID, error) {
	w, err := c.s.store.GetWorkspace(c.r.ctx, ws)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !slices.Contains(c.orgs, w.OrgID)) {
		return uuid.Nil, batchStoreNotFound("workspace", ws.String())
	}
	if err != nil {
		return uuid.Nil, err
	}
	return w.OrgID, nil
}

// batch checks that batch id is in one of the caller's organizations.
func (c batchStoreCaller) batch(id string) (org, ws uuid.UUID, err error) {
	org, ws, err = c.s.store.BatchOwner(c.r.ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !slices.Contains(c.orgs, org)) {
		return uuid.Nil, uuid.Nil, batchStoreNotFound("batch", id)
	}
	return org, ws, err
}

// fileIn checks that f, a file to store, is of the workspace it names,
// in the organization it names, one of the caller's.
func (c batchStoreCaller) fileIn(f *wire.BatchStoreFile, org, ws uuid.UUID) error {
	if f.OrgID != org || f.WorkspaceID != ws {
		return errorf(http.StatusUnprocessableEntity, "file %q names another workspace or organization than its batch's", f.ID)
	}
	if !strings.HasPrefix(f.ID, "file-") || len(f.ID) > 64 || f.Purpose == "" || len(f.Filename) > 1024 {
		return errorf(http.StatusUnprocessableEntity, "file %q is not a gw file record (id file-…, a purpose, a filename)", f.ID)
	}
	return nil
}

// mapStore turns the store's not-found into the op's 404.
func mapStore(err error, kind, id string) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return batchStoreNotFound(kind, id)
	case errors.Is(err, store.ErrConflict):
		return errorf(http.StatusConflict, "%s %q exists already", kind, id)
	}
	return err
}

// do runs one op; content is op file's bytes.
func (c batchStoreCaller) do(op string, req *wire.BatchStoreRequest, body io.Reader) (out wire.BatchStoreResult, content []byte, err error) {
	ctx, st := c.r.ctx, c.s.store
	switch op {
	case "create-file":
		f := req.File
		if f == nil {
			return out, nil, errorf(http.StatusUnprocessableEntity, "create-file needs file")
		}
		org, err := c.workspace(f.WorkspaceID)
		if err != nil {
			return out, nil, err
		}
		if err := c.fileIn(f, org, f.WorkspaceID); err != nil {
			return out, nil, err
		}
		// A message batch's requests as gw wrote them are bound by
		// Anthropic's limits, an upload by OpenAI's.
		limit := batchfile.DefaultLimits.Bytes
		if f.Purpose == store.PurposeMessageBatch {
			limit = batchfile.MessageBatchFileBytes
		}
		data, err := readContent(body, f.Bytes, limit)
		if err != nil {
			return out, nil, err
		}
		row := storeFile(f, data)
		if err := st.CreateBatchFile(ctx, row); err != nil {
			return out, nil, mapStore(err, "file", f.ID)
		}
		out.File = f
	case "file", "delete-file":
		if _, err := c.workspace(req.WorkspaceID); err != nil {
			return out, nil, err
		}
		if op == "delete-file" {
			return out, nil, mapStore(st.DeleteBatchFile(ctx, req.WorkspaceID, req.ID, req.Now), "file", req.ID)
		}
		f, err := st.BatchFile(ctx, req.WorkspaceID, req.ID)
		if err != nil {
			return out, nil, mapStore(err, "file", req.ID)
		}
		w := wireFile(f)
		// The bytes that follow the line: what the plane reads.
		w.Bytes = int64(len(f.Content))
		out.File = &w
		return out, f.Content, nil
	case "files":
		if _, err := c.workspace(req.WorkspaceID); err != nil {
			return out, nil, err
		}
		fs, err := st.BatchFiles(ctx, req.WorkspaceID, req.Purpose, req.After, batchStoreLimit(req.Limit))
		if err != nil {
			return out, nil, err
		}
		out.Files = make([]wire.BatchStoreFile, len(fs))
		for i := range fs {
			out.Files[i] = wireFile(&fs[i])
		}
	case "create-batch":
		b := req.Batch
		if b == nil {
			return out, nil, errorf(http.StatusUnprocessableEntity, "create-batch needs batch")
		}
		// The holder of the batch's budget hold is one of the calling
		// plane's own, as its leases are (budgets.HolderOf).
		if b.BudgetHolder != "" && (!budgets.HolderOf(c.plane, b.BudgetHolder) || len(b.BudgetHolder) > 200) {
			return out, nil, errorf(http.StatusUnprocessableEntity, "budget_holder %q is not data plane %q's", b.BudgetHolder, c.plane)
		}
		org, err := c.workspace(b.WorkspaceID)
		if err != nil {
			return out, nil, err
		}
		if b.OrgID != org || !(strings.HasPrefix(b.ID, "batch_") || strings.HasPrefix(b.ID, "msgbatch_")) || len(b.ID) > 64 {
			return out, nil, errorf(http.StatusUnprocessableEntity, "batch %q is not a gw batch of its workspace's organization", b.ID)
		}
		if lim := batchfile.LimitsFor(b.Endpoint).Lines; len(req.CustomIDs) == 0 || int64(len(req.CustomIDs)) > lim {
			return out, nil, errorf(http.StatusUnprocessableEntity, "a batch has 1 to %d lines", lim)
		}
		// The key and the input file are the workspace's own: a batch
		// runs as its key and reads its file.
		if _, err := st.GetInferenceKey(ctx, b.WorkspaceID, b.InferenceKeyID); err != nil {
			return out, nil, mapStore(err, "inference key", b.InferenceKeyID.String())
		}
		if _, err := st.BatchFile(ctx, b.WorkspaceID, b.InputFileID); err != nil {
			return out, nil, mapStore(err, "file", b.InputFileID)
		}
		// A provider batch group runs with a credential the organization
		// may use: its own or a platform one, never another tenant's.
		for _, u := range b.Upstreams {
			cred, err := st.GetProviderCredential(ctx, u.CredentialID)
			if errors.Is(err, store.ErrNotFound) || (err == nil && cred.OrgID != nil && *cred.OrgID != org) ||
				(err == nil && cred.WorkspaceID != nil && *cred.WorkspaceID != b.WorkspaceID) {
				return out, nil, batchStoreNotFound("credential", u.CredentialID.String())
			}
			if err != nil {
				return out, nil, err
			}
		}
		for _, lb := range b.LineBounds {
			if lb.Line < 1 || lb.Line > len(req.CustomIDs) || lb.NanoUSD < 0 || lb.Model == "" || lb.Provider == "" || lb.InputTokens < 0 || lb.OutputTokens < 0 {
				return out, nil, errorf(http.StatusUnprocessableEntity, "line_bounds: line %d's bound is not one of the batch's lines with a model, a provider and counts of 0 or more", lb.Line)
			}
		}
		row, err := storeBatch(b)
		if err != nil {
			return out, nil, err
		}
		if err := st.CreateBatch(ctx, row, req.CustomIDs); err != nil {
			return out, nil, mapStore(err, "batch", b.ID)
		}
		out.Batch = b
	case "delete-batch":
		if _, err := c.workspace(req.WorkspaceID); err != nil {
			return out, nil, err
		}
		err := st.DeleteBatch(ctx, req.WorkspaceID, req.ID, req.Now)
		if errors.Is(err, store.ErrBatchNotEnded) {
			return out, nil, errorf(http.StatusConflict, "batch %q has not ended: cancel it, and delete it once it has", req.ID)
		}
		if err != nil {
			return out, nil, mapStore(err, "batch", req.ID)
		}
		out.OK = true
	case "batch", "cancel":
		if _, err := c.workspace(req.WorkspaceID); err != nil {
			return out, nil, err
		}
		var b *store.Batch
		if op == "cancel" {
			b, err = st.CancelBatch(ctx, req.WorkspaceID, req.ID, req.Now)
		} else {
			b, err = st.Batch(ctx, req.WorkspaceID, req.ID)
		}
		if err != nil {
			return out, nil, mapStore(err, "batch", req.ID)
		}
		w := b.Wire()
		out.Batch = &w
	case "batches":
		if _, err := c.workspace(req.WorkspaceID); err != nil {
			return out, nil, err
		}
		bs, err := st.Batches(ctx, req.WorkspaceID, req.Messages, req.After, req.BeforeID, batchStoreLimit(req.Limit))
		if err != nil {
			return out, nil, err
		}
		out.Batches = store.WireAll(bs, (*store.Batch).Wire)
	case "active":
		bs, err := st.ActiveBatchesIn(ctx, c.orgs)
		if err != nil {
			return out, nil, err
		}
		out.Batches = store.WireAll(bs, (*store.Batch).Wire)
	default:
		return c.lineOp(op, req, body)
	}
	return out, nil, nil
}

// lineOp runs the ops that name a batch only: each checks the batch is
// in the caller's organizations first.
func (c batchStoreCaller) lineOp(op string, req *wire.BatchStoreRequest, body io.Reader) (out wire.BatchStoreResult, content []byte, err error) {
	ctx, st := c.r.ctx, c.s.store
	id := req.BatchID
	if op == "end-line" {
		if req.Result == nil {
			return out, nil, errorf(http.StatusUnprocessableEntity, "end-line needs result")
		}
		id = req.Result.BatchID
	}
	org, ws, err := c.batch(id)
	if err != nil {
		return out, nil, err
	}
	switch op {
	case "counts":
		n, err := st.BatchCounts(ctx, id)
		if err != nil {
			return out, nil, err
		}
		out.Counts = &wire.BatchStoreCounts{Total: n.Total, Completed: n.Completed, Failed: n.Failed, Cancelled: n.Cancelled, Expired: n.Expired}
	case "start-line":
		if req.RequestID == "" {
			return out, nil, errorf(http.StatusUnprocessableEntity, "start-line needs request_id")
		}
		l, ok, err := st.TakeBatchLine(ctx, id, req.RequestID, c.plane, req.Now)
		if err != nil {
			return out, nil, err
		}
		if out.OK = ok; ok {
			w := l.Wire()
			out.Line = &w
		}
	case "end-line":
		l := req.Result
		// An ended state only: a line put back to pending would be sent
		// again (requeue is for a line never sent).
		if l.Status != store.LineCompleted && l.Status != store.LineFailed && l.Status != store.LineCancelled {
			return out, nil, errorf(http.StatusUnprocessableEntity, "a line ends %s, %s or %s, not %q", store.LineCompleted, store.LineFailed,
				store.LineCancelled, l.Status)
		}
		out.OK, err = st.EndTakenBatchLine(ctx, store.BatchLine{BatchID: id, Line: l.Line, Status: l.Status, StatusCode: l.StatusCode,
			RequestID: &l.RequestID, Response: optText(l.Response), Error: optText(l.Error), CostNanoUSD: l.CostNanoUSD}, c.plane, req.Now)
	case "requeue":
		out.OK, err = st.RequeueTakenBatchLine(ctx, id, req.Line, req.RequestID, c.plane, req.Now)
	case "lines":
		ls, err := st.BatchLines(ctx, id, req.AfterLine, batchStoreLimit(req.Limit))
		if err != nil {
			return out, nil, err
		}
		out.Lines = store.WireAll(ls, (*store.BatchLine).Wire)
	case "interrupt":
		out.N, err = st.InterruptTakenBatchLines(ctx, id, c.plane, req.Before, req.Now, req.Message)
	case "expire":
		out.N, err = st.ExpireBatchLines(ctx, id, req.Now)
	case "finish":
		if req.Status != store.BatchCompleted && req.Status != store.BatchCancelled && req.Status != store.BatchExpired {
			return out, nil, errorf(http.StatusUnprocessableEntity, "a batch finishes %s, %s or %s, not %q", store.BatchCompleted, store.BatchCancelled,
				store.BatchExpired, req.Status)
		}
		var files [2]*store.BatchFile
		for i, f := range []*wire.BatchStoreFile{req.Output, req.Error} {
			if f == nil {
				continue
			}
			if err := c.fileIn(f, org, ws); err != nil {
				return out, nil, err
			}
			data, err := readContent(body, f.Bytes, batchStoreFileLimit)
			if err != nil {
				return out, nil, err
			}
			files[i] = storeFile(f, data)
		}
		out.OK, err = st.FinishBatch(ctx, id, req.Status, files[0], files[1], req.Now)
	case "upstreams":
		us, err := st.BatchUpstreams(ctx, id)
		if err != nil {
			return out, nil, err
		}
		out.Upstreams = store.WireAll(us, (*store.BatchUpstream).Wire)
	case "update-upstream":
		u := req.Upstream
		if u == nil || u.BatchID != id {
			return out, nil, errorf(http.StatusUnprocessableEntity, "update-upstream needs upstream, of batch_id")
		}
		row := store.BatchUpstream{BatchID: id, Seq: u.Seq, Status: u.Status, UpstreamFileID: optText(u.FileID), UpstreamBatchID: optText(u.UpstreamID),
			Error: optText(u.Error)}
		if !u.SubmittingAt.IsZero() {
			at := u.SubmittingAt.UTC()
			row.SubmittingAt = &at
		}
		out.OK, err = st.UpdateBatchUpstream(ctx, row, req.From, req.Now)
	case "upstream-lines":
		ls, err := st.UpstreamBatchLines(ctx, id, req.Seq)
		if err != nil {
			return out, nil, err
		}
		out.Lines = store.WireAll(ls, (*store.BatchLine).Wire)
	}
	return out, nil, err
}

// batchStoreLimit bounds a page: the plane asks for at most 1,001 rows
// (finishBatch reads 1,000 lines at a time).
func batchStoreLimit(n int) int {
	return min(max(n, 1), 1001)
}

func optText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func storeFile(f *wire.BatchStoreFile, data []byte) *store.BatchFile {
	return &store.BatchFile{ID: f.ID, OrgID: f.OrgID, WorkspaceID: f.WorkspaceID, Purpose: f.Purpose, Filename: f.Filename,
		Bytes: int64(len(data)), Content: data, CreatedAt: f.CreatedAt}
}

func wireFile(f *store.BatchFile) wire.BatchStoreFile {
	return wire.BatchStoreFile{ID: f.ID, OrgID: f.OrgID, WorkspaceID: f.WorkspaceID, Purpose: f.Purpose, Filename: f.Filename,
		Bytes: f.Bytes, CreatedAt: f.CreatedAt}
}

func storeBatch(b *wire.BatchStoreBatch) (*store.Batch, error) {
	key := b.InferenceKeyID
	row := &store.Batch{ID: b.ID, OrgID: b.OrgID, WorkspaceID: b.WorkspaceID, InferenceKeyID: &key, Endpoint: b.Endpoint,
		InputFileID: b.InputFileID, CompletionWindow: b.CompletionWindow, Status: store.BatchInProgress, ReservedNanoUSD: b.ReservedNanoUSD,
		BudgetHolder: optText(b.BudgetHolder), CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt, LineBounds: store.LineBoundsOf(b.LineBounds)}
	if len(b.Metadata) > 0 {
		m, err := json.Marshal(b.Metadata)
		if err != nil {
			return nil, err
		}
		row.Metadata = optText(string(m))
	}
	for _, u := range b.Upstreams {
		su := store.BatchUpstream{Seq: u.Seq, Kind: u.Kind, CredentialID: u.CredentialID, Model: u.Model, UpstreamModel: u.UpstreamModel}
		for _, l := range u.Lines {
			su.Lines = append(su.Lines, store.UpstreamLine{Line: l.Line, RequestID: l.RequestID})
		}
		row.Upstreams = append(row.Upstreams, su)
	}
	return row, nil
}
