package dataplane

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// RemoteBatches is a remote data plane's BatchStore: the control plane's
// files and batches, reached over the data-plane sync API
// (POST /api/v1/data-plane/batch-store/{op}) as the enrolled data plane,
// with the management key it polls bundles with. The control plane
// confines every op to the organizations this plane is enrolled for, so
// any enrolled plane serves any of their files and batches, and none
// another tenant's (docs/batches.md).
//
// A call that got no answer (the control plane unreachable, a cut
// connection) is tried again, twice, when repeating it cannot do a thing
// twice: reads; an expire; a take (start-line), idempotent on its request id; an
// end or requeue, which name the take's request id; a create, whose id is
// this plane's own (a conflict on the repeat is the first call's
// success). The errors that remain reach the endpoints as 503s.
type RemoteBatches struct {
	Client *client.Client
	// ID is the data plane's enrolled id.
	ID string

	mu sync.Mutex
	// taken is the request id each line this process took runs under:
	// a requeue names it, so it never touches a line taken again since.
	taken map[string]string
	// owed are the ends and requeues the control plane did not take (it
	// was unreachable): sent again before the runner's next pass, so a
	// line sent while the control plane was away is not left running
	// (and its batch unfinished) until this plane restarts. Both name
	// their take, so sending one again changes nothing once it landed.
	owed []owedCall
}

type owedCall struct {
	op      string
	req     wire.BatchStoreRequest
	batchID string
	line    int
}

// NewRemoteBatches is the store of data plane id, through c.
func NewRemoteBatches(c *client.Client, id string) *RemoteBatches {
	return &RemoteBatches{Client: c, ID: id, taken: map[string]string{}}
}

var _ BatchStore = (*RemoteBatches)(nil)

// maxRemoteFile is the largest file read back from the control plane (an
// output file may be larger than an upload; the control plane takes one
// of up to 256 MiB).
const maxRemoteFile = 256 << 20

// remoteRetries and remoteRetryWait pace the repeats of a call that got
// no answer.
const (
	remoteRetries   = 2
	remoteRetryWait = 500 * time.Millisecond
)

func (s *RemoteBatches) call(ctx context.Context, op string, req wire.BatchStoreRequest, files ...[]byte) (wire.BatchStoreResult, []byte, error) {
	var out wire.BatchStoreResult
	var content []byte
	var err error
	for attempt := 0; ; attempt++ {
		out, content, err = s.Client.BatchStore(ctx, s.ID, op, req, maxRemoteFile, files...)
		var ae *client.APIError
		if errors.As(err, &ae) {
			switch {
			case ae.Status == 404 && strings.HasPrefix(ae.Detail, "no such "):
				return out, nil, ErrBatchNotFound
			case ae.Status == 409 && attempt > 0 && (op == "create-file" || op == "create-batch"):
				// The first attempt stored it; its answer was lost.
				return out, nil, nil
			case ae.Status == 409 && op == "delete-batch":
				return out, nil, ErrBatchNotEnded
			}
			return out, nil, err
		}
		if err == nil || op == "delete-file" || op == "delete-batch" || attempt == remoteRetries || ctx.Err() != nil {
			return out, content, err
		}
		select {
		case <-ctx.Done():
			return out, nil, err
		case <-time.After(remoteRetryWait):
		}
	}
}

func fileFromWire(f *wire.BatchStoreFile, content []byte) *BatchFile {
	return &BatchFile{ID: f.ID, OrgID: f.OrgID, WorkspaceID: f.WorkspaceID, Purpose: f.Purpose, Filename: f.Filename, Bytes: f.Bytes,
		Content: content, CreatedAt: f.CreatedAt}
}

func fileToWire(f *BatchFile) *wire.BatchStoreFile {
	if f == nil {
		return nil
	}
	return &wire.BatchStoreFile{ID: f.ID, OrgID: f.OrgID, WorkspaceID: f.WorkspaceID, Purpose: f.Purpose, Filename: f.Filename,
		Bytes: int64(len(f.Content)), CreatedAt: f.CreatedAt}
}

func (s *RemoteBatches) CreateFile(ctx context.Context, f *BatchFile) error {
	_, _, err := s.call(ctx, "create-file", wire.BatchStoreRequest{File: fileToWire(f), Now: f.CreatedAt}, f.Content)
	return err
}

func (s *RemoteBatches) File(ctx context.Context, ws uuid.UUID, id string) (*BatchFile, error) {
	out, content, err := s.call(ctx, "file", wire.BatchStoreRequest{WorkspaceID: ws, ID: id})
	if err != nil {
		return nil, err
	}
	if out.File == nil {
		return nil, ErrBatchNotFound
	}
	return fileFromWire(out.File, content), nil
}

func (s *RemoteBatches) Files(ctx context.Context, ws uuid.UUID, purpose, after string, limit int) ([]BatchFile, error) {
	out, _, err := s.call(ctx, "files", wire.BatchStoreRequest{WorkspaceID: ws, Purpose: purpose, After: after, Limit: limit})
	if err != nil {
		return nil, err
	}
	fs := make([]BatchFile, len(out.Files))
	for i := range out.Files {
		fs[i] = *fileFromWire(&out.Files[i], nil)
	}
	return fs, nil
}

func (s *RemoteBatches) DeleteFile(ctx context.Context, ws uuid.UUID, id string, now time.Time) error {
	_, _, err := s.call(ctx, "delete-file", wire.BatchStoreRequest{WorkspaceID: ws, ID: id, Now: now})
	return err
}

func (s *RemoteBatches) CreateBatch(ctx context.Context, b *Batch, customIDs []string) error {
	_, _, err := s.call(ctx, "create-batch", wire.BatchStoreRequest{Batch: b, CustomIDs: customIDs, Now: b.CreatedAt})
	return err
}

func (s *RemoteBatches) Batch(ctx context.Context, ws uuid.UUID, id string) (*Batch, error) {
	return s.oneBatch(ctx, "batch", wire.BatchStoreRequest{WorkspaceID: ws, ID: id})
}

func (s *RemoteBatches) oneBatch(ctx context.Context, op string, req wire.BatchStoreRequest) (*Batch, error) {
	out, _, err := s.call(ctx, op, req)
	if err != nil {
		return nil, err
	}
	if out.Batch == nil {
		return nil, ErrBatchNotFound
	}
	return out.Batch, nil
}

func (s *RemoteBatches) Batches(ctx context.Context, ws uuid.UUID, messages bool, after, before string, limit int) ([]Batch, error) {
	out, _, err := s.call(ctx, "batches", wire.BatchStoreRequest{WorkspaceID: ws, Messages: messages, After: after, BeforeID: before, Limit: limit})
	if err != nil {
		return nil, err
	}
	return out.Batches, nil
}

// DeleteBatch is not repeated when its answer is lost (as delete-file):
// a repeat would find the batch gone and answer 404 for a delete that
// happened.
func (s *RemoteBatches) DeleteBatch(ctx context.Context, ws uuid.UUID, id string, now time.Time) error {
	_, _, err := s.call(ctx, "delete-batch", wire.BatchStoreRequest{WorkspaceID: ws, ID: id, Now: now})
	return err
}

func (s *RemoteBatches) Counts(ctx context.Context, batchID string) (BatchCounts, error) {
	out, _, err := s.call(ctx, "counts", wire.BatchStoreRequest{BatchID: batchID})
	if err != nil || out.Counts == nil {
		return BatchCounts{}, err
	}
	return *out.Counts, nil
}

func (s *RemoteBatches) Cancel(ctx context.Context, ws uuid.UUID, id string, now time.Time) (*Batch, error) {
	return s.oneBatch(ctx, "cancel", wire.BatchStoreRequest{WorkspaceID: ws, ID: id, Now: now})
}

func (s *RemoteBatches) Active(ctx context.Context) ([]Batch, error) {
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	out, _, err := s.call(ctx, "active", wire.BatchStoreRequest{})
	if err != nil {
		return nil, err
	}
	return out.Batches, nil
}

func takenKey(batchID string, line int) string { return batchID + "#" + strconv.Itoa(line) }

func (s *RemoteBatches) StartLine(ctx context.Context, batchID, requestID string, now time.Time) (BatchLine, bool, error) {
	out, _, err := s.call(ctx, "start-line", wire.BatchStoreRequest{BatchID: batchID, RequestID: requestID, Now: now})
	var ae *client.APIError
	if err != nil && !errors.As(err, &ae) && !errors.Is(err, ErrBatchNotFound) {
		// No answer: the control plane may have taken a line under
		// requestID that this plane will never send. It is owed back
		// (line 0: whichever runs under the take), or it would stay
		// running, its batch unfinished, until this plane restarts.
		s.owe(err, "requeue", wire.BatchStoreRequest{BatchID: batchID, RequestID: requestID, Now: now}, batchID, 0)
	}
	if err != nil || !out.OK || out.Line == nil {
		return BatchLine{}, false, err
	}
	l := *out.Line
	s.mu.Lock()
	s.taken[takenKey(batchID, l.Line)] = requestID
	s.mu.Unlock()
	return l, true, nil
}

// owe keeps an end or requeue the control plane did not answer, unless
// it refused it (an answer: sending it again would change nothing).
func (s *RemoteBatches) owe(err error, op string, req wire.BatchStoreRequest, batchID string, line int) {
	var ae *client.APIError
	if errors.Is(err, ErrBatchNotFound) || errors.As(err, &ae) && ae.Status < 500 {
		s.forget(batchID, line)
		return
	}
	s.mu.Lock()
	s.owed = append(s.owed, owedCall{op: op, req: req, batchID: batchID, line: line})
	s.mu.Unlock()
}

// settle sends the owed ends and requeues again, in order; it stops at
// the first the control plane still does not take.
func (s *RemoteBatches) settle(ctx context.Context) error {
	for {
		s.mu.Lock()
		if len(s.owed) == 0 {
			s.mu.Unlock()
			return nil
		}
		o := s.owed[0]
		s.mu.Unlock()
		_, _, err := s.call(ctx, o.op, o.req)
		var ae *client.APIError
		if err != nil && !(errors.As(err, &ae) && ae.Status < 500) && !errors.Is(err, ErrBatchNotFound) {
			return fmt.Errorf("sending an owed %s of %s line %d again: %w", o.op, o.batchID, o.line, err)
		}
		s.mu.Lock()
		s.owed = s.owed[1:]
		s.mu.Unlock()
		s.forget(o.batchID, o.line)
	}
}

// forget drops a line's take once it ended or went back.
func (s *RemoteBatches) forget(batchID string, line int) {
	s.mu.Lock()
	delete(s.taken, takenKey(batchID, line))
	s.mu.Unlock()
}

func (s *RemoteBatches) EndLine(ctx context.Context, l BatchLine, now time.Time) (bool, error) {
	req := wire.BatchStoreRequest{Result: &l, Now: now}
	out, _, err := s.call(ctx, "end-line", req)
	if err != nil {
		s.owe(err, "end-line", req, l.BatchID, l.Line)
		return false, err
	}
	s.forget(l.BatchID, l.Line)
	return out.OK, nil
}

func (s *RemoteBatches) Requeue(ctx context.Context, batchID string, line int, now time.Time) (bool, error) {
	s.mu.Lock()
	requestID, ok := s.taken[takenKey(batchID, line)]
	s.mu.Unlock()
	if !ok {
		// Not a line this process took: not its to put back.
		return false, nil
	}
	req := wire.BatchStoreRequest{BatchID: batchID, Line: line, RequestID: requestID, Now: now}
	out, _, err := s.call(ctx, "requeue", req)
	if err != nil {
		s.owe(err, "requeue", req, batchID, line)
		return false, err
	}
	s.forget(batchID, line)
	return out.OK, nil
}

func (s *RemoteBatches) Lines(ctx context.Context, batchID string, after, limit int) ([]BatchLine, error) {
	out, _, err := s.call(ctx, "lines", wire.BatchStoreRequest{BatchID: batchID, AfterLine: after, Limit: limit})
	if err != nil {
		return nil, err
	}
	return out.Lines, nil
}

// Interrupt ends only the lines this data plane took (an earlier process
// of it): the control plane confines it so, and another plane's lines in
// flight are left running.
func (s *RemoteBatches) Interrupt(ctx context.Context, batchID string, before, now time.Time, message string) (int, error) {
	out, _, err := s.call(ctx, "interrupt", wire.BatchStoreRequest{BatchID: batchID, Before: before, Now: now, Message: message})
	return out.N, err
}

// ExpireLines is repeated like a read when its answer is lost: expiring
// the lines still pending again changes nothing.
func (s *RemoteBatches) ExpireLines(ctx context.Context, batchID string, now time.Time) (int, error) {
	out, _, err := s.call(ctx, "expire", wire.BatchStoreRequest{BatchID: batchID, Now: now})
	return out.N, err
}

func (s *RemoteBatches) Finish(ctx context.Context, batchID, status string, output, errFile *BatchFile, now time.Time) (bool, error) {
	var files [][]byte
	for _, f := range []*BatchFile{output, errFile} {
		if f != nil {
			files = append(files, f.Content)
		}
	}
	out, _, err := s.call(ctx, "finish", wire.BatchStoreRequest{BatchID: batchID, Status: status, Output: fileToWire(output), Error: fileToWire(errFile), Now: now}, files...)
	return out.OK, err
}

func (s *RemoteBatches) Upstreams(ctx context.Context, batchID string) ([]BatchUpstream, error) {
	out, _, err := s.call(ctx, "upstreams", wire.BatchStoreRequest{BatchID: batchID})
	if err != nil {
		return nil, err
	}
	return out.Upstreams, nil
}

// UpdateUpstream moves a group on from status from: repeated after its
// answer was lost, it finds the group in exactly the state it wrote and is
// answered true; another plane's step answers false.
func (s *RemoteBatches) UpdateUpstream(ctx context.Context, u BatchUpstream, from string, now time.Time) (bool, error) {
	out, _, err := s.call(ctx, "update-upstream", wire.BatchStoreRequest{BatchID: u.BatchID, Upstream: &u, From: from, Now: now})
	return out.OK, err
}

func (s *RemoteBatches) UpstreamLines(ctx context.Context, batchID string, seq int) ([]BatchLine, error) {
	out, _, err := s.call(ctx, "upstream-lines", wire.BatchStoreRequest{BatchID: batchID, Seq: seq})
	if err != nil {
		return nil, err
	}
	return out.Lines, nil
}
