// Package batchstore gives a data plane in the control plane's process
// the control plane's files and batches (dataplane.BatchStore over
// server/store): the data plane links no database, so the all-in-one gw
// hands it this adapter (issue 34, part 1; docs/batches.md).
package batchstore

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/store"
)

// Store is a dataplane.BatchStore over the control plane's database.
type Store struct{ St *store.Store }

var (
	_ dataplane.BatchStore       = Store{}
	_ dataplane.BatchRunnerLease = Store{}
)

// RunnerLease names the lease of the process that runs the batches
// (dataplane.BatchRunnerLease), one of the replicas on the database.
const RunnerLease = "batch-runner"

func (s Store) TakeRunnerLease(ctx context.Context, holder string, ttl time.Duration) (bool, error) {
	return s.St.TakeLease(ctx, RunnerLease, holder, ttl, store.Now())
}

func (s Store) ReleaseRunnerLease(ctx context.Context, holder string) error {
	return s.St.ReleaseLease(ctx, RunnerLease, holder)
}

// mapErr turns the store's not-found into the plane's.
func mapErr(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return dataplane.ErrBatchNotFound
	}
	return err
}

func fileOf(f *store.BatchFile) dataplane.BatchFile {
	return dataplane.BatchFile{ID: f.ID, OrgID: f.OrgID, WorkspaceID: f.WorkspaceID, Purpose: f.Purpose, Filename: f.Filename,
		Bytes: f.Bytes, Content: f.Content, CreatedAt: f.CreatedAt}
}

func toFile(f *dataplane.BatchFile) *store.BatchFile {
	if f == nil {
		return nil
	}
	return &store.BatchFile{ID: f.ID, OrgID: f.OrgID, WorkspaceID: f.WorkspaceID, Purpose: f.Purpose, Filename: f.Filename,
		Bytes: f.Bytes, Content: f.Content, CreatedAt: f.CreatedAt}
}

func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (s Store) CreateFile(ctx context.Context, f *dataplane.BatchFile) error {
	return s.St.CreateBatchFile(ctx, toFile(f))
}

func (s Store) File(ctx context.Context, ws uuid.UUID, id string) (*dataplane.BatchFile, error) {
	f, err := s.St.BatchFile(ctx, ws, id)
	if err != nil {
		return nil, mapErr(err)
	}
	out := fileOf(f)
	return &out, nil
}

func (s Store) Files(ctx context.Context, ws uuid.UUID, purpose, after string, limit int) ([]dataplane.BatchFile, error) {
	fs, err := s.St.BatchFiles(ctx, ws, purpose, after, limit)
	if err != nil {
		return nil, mapErr(err)
	}
	return store.WireAll(fs, fileOf), nil
}

func (s Store) DeleteFile(ctx context.Context, ws uuid.UUID, id string, now time.Time) error {
	return mapErr(s.St.DeleteBatchFile(ctx, ws, id, now))
}

func (s Store) CreateBatch(ctx context.Context, b *dataplane.Batch, customIDs []string) error {
	key := b.InferenceKeyID
	row := &store.Batch{ID: b.ID, OrgID: b.OrgID, WorkspaceID: b.WorkspaceID, InferenceKeyID: &key, Endpoint: b.Endpoint,
		InputFileID: b.InputFileID, CompletionWindow: b.CompletionWindow, Status: b.Status, ReservedNanoUSD: b.ReservedNanoUSD,
		BudgetHolder: opt(b.BudgetHolder), CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt, LineBounds: store.LineBoundsOf(b.LineBounds)}
	if len(b.Metadata) > 0 {
		m, err := json.Marshal(b.Metadata)
		if err != nil {
			return err
		}
		row.Metadata = opt(string(m))
	}
	for _, u := range b.Upstreams {
		su := store.BatchUpstream{Seq: u.Seq, Kind: u.Kind, CredentialID: u.CredentialID, Model: u.Model, UpstreamModel: u.UpstreamModel}
		for _, l := range u.Lines {
			su.Lines = append(su.Lines, store.UpstreamLine{Line: l.Line, RequestID: l.RequestID})
		}
		row.Upstreams = append(row.Upstreams, su)
	}
	return s.St.CreateBatch(ctx, row, customIDs)
}

func (s Store) Batch(ctx context.Context, ws uuid.UUID, id string) (*dataplane.Batch, error) {
	b, err := s.St.Batch(ctx, ws, id)
	if err != nil {
		return nil, mapErr(err)
	}
	out := b.Wire()
	return &out, nil
}

func (s Store) Batches(ctx context.Context, ws uuid.UUID, messages bool, after, before string, limit int) ([]dataplane.Batch, error) {
	bs, err := s.St.Batches(ctx, ws, messages, after, before, limit)
	if err != nil {
		return nil, mapErr(err)
	}
	return batchesOf(bs), nil
}

func batchesOf(bs []store.Batch) []dataplane.Batch { return store.WireAll(bs, (*store.Batch).Wire) }

func (s Store) DeleteBatch(ctx context.Context, ws uuid.UUID, id string, now time.Time) error {
	err := s.St.DeleteBatch(ctx, ws, id, now)
	if errors.Is(err, store.ErrBatchNotEnded) {
		return dataplane.ErrBatchNotEnded
	}
	return mapErr(err)
}

func (s Store) Counts(ctx context.Context, batchID string) (dataplane.BatchCounts, error) {
	c, err := s.St.BatchCounts(ctx, batchID)
	return dataplane.BatchCounts{Total: c.Total, Completed: c.Completed, Failed: c.Failed, Cancelled: c.Cancelled, Expired: c.Expired}, mapErr(err)
}

func (s Store) Cancel(ctx context.Context, ws uuid.UUID, id string, now time.Time) (*dataplane.Batch, error) {
	b, err := s.St.CancelBatch(ctx, ws, id, now)
	if err != nil {
		return nil, mapErr(err)
	}
	out := b.Wire()
	return &out, nil
}

func (s Store) Active(ctx context.Context) ([]dataplane.Batch, error) {
	bs, err := s.St.ActiveBatches(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	return batchesOf(bs), nil
}

func (s Store) StartLine(ctx context.Context, batchID, requestID string, now time.Time) (dataplane.BatchLine, bool, error) {
	l, ok, err := s.St.StartBatchLine(ctx, batchID, requestID, now)
	if err != nil || !ok {
		return dataplane.BatchLine{}, false, mapErr(err)
	}
	return l.Wire(), true, nil
}

func (s Store) EndLine(ctx context.Context, l dataplane.BatchLine, now time.Time) (bool, error) {
	return s.St.EndBatchLine(ctx, store.BatchLine{BatchID: l.BatchID, Line: l.Line, Status: l.Status, StatusCode: l.StatusCode,
		Response: opt(l.Response), Error: opt(l.Error), CostNanoUSD: l.CostNanoUSD}, now)
}

func (s Store) Requeue(ctx context.Context, batchID string, line int, now time.Time) (bool, error) {
	return s.St.RequeueBatchLine(ctx, batchID, line, now)
}

func (s Store) Lines(ctx context.Context, batchID string, after, limit int) ([]dataplane.BatchLine, error) {
	ls, err := s.St.BatchLines(ctx, batchID, after, limit)
	if err != nil {
		return nil, mapErr(err)
	}
	return store.WireAll(ls, (*store.BatchLine).Wire), nil
}

func (s Store) Interrupt(ctx context.Context, batchID string, before, now time.Time, message string) (int, error) {
	return s.St.InterruptBatchLines(ctx, batchID, before, now, message)
}

func (s Store) ExpireLines(ctx context.Context, batchID string, now time.Time) (int, error) {
	return s.St.ExpireBatchLines(ctx, batchID, now)
}

func (s Store) Finish(ctx context.Context, batchID, status string, output, errFile *dataplane.BatchFile, now time.Time) (bool, error) {
	return s.St.FinishBatch(ctx, batchID, status, toFile(output), toFile(errFile), now)
}

func (s Store) Upstreams(ctx context.Context, batchID string) ([]dataplane.BatchUpstream, error) {
	us, err := s.St.BatchUpstreams(ctx, batchID)
	if err != nil {
		return nil, mapErr(err)
	}
	return store.WireAll(us, (*store.BatchUpstream).Wire), nil
}

func (s Store) UpdateUpstream(ctx context.Context, u dataplane.BatchUpstream, from string, now time.Time) (bool, error) {
	row := store.BatchUpstream{BatchID: u.BatchID, Seq: u.Seq, Status: u.Status, UpstreamFileID: opt(u.FileID), UpstreamBatchID: opt(u.UpstreamID), Error: opt(u.Error)}
	if !u.SubmittingAt.IsZero() {
		at := u.SubmittingAt.UTC()
		row.SubmittingAt = &at
	}
	return s.St.UpdateBatchUpstream(ctx, row, from, now)
}

func (s Store) UpstreamLines(ctx context.Context, batchID string, seq int) ([]dataplane.BatchLine, error) {
	ls, err := s.St.UpstreamBatchLines(ctx, batchID, seq)
	if err != nil {
		return nil, mapErr(err)
	}
	return store.WireAll(ls, (*store.BatchLine).Wire), nil
}
