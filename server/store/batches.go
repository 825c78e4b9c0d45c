package store

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// BatchFile is a workspace's file: one uploaded for a batch (purpose
// "batch") or one a batch wrote ("batch_output"). Every read names the
// workspace: another workspace's id is ErrNotFound, as is a deleted file.
type BatchFile struct {
	bun.BaseModel `bun:"table:batch_files"`

	ID          string     `bun:"id,pk"`
	OrgID       uuid.UUID  `bun:"org_id,type:uuid"`
	WorkspaceID uuid.UUID  `bun:"workspace_id,type:uuid"`
	Purpose     string     `bun:"purpose"`
	Filename    string     `bun:"filename"`
	Bytes       int64      `bun:"bytes"`
	Content     []byte     `bun:"content"`
	CreatedAt   time.Time  `bun:"created_at"`
	DeletedAt   *time.Time `bun:"deleted_at"`
}

// CreateBatchFile stores f; an id taken is ErrConflict.
func (s *Store) CreateBatchFile(ctx context.Context, f *BatchFile) error {
	f.CreatedAt = f.CreatedAt.UTC()
	_, err := s.db.NewInsert().Model(f).Exec(ctx)
	return mapErr(err)
}

// BatchFile is the workspace's file id with its content, or ErrNotFound.
func (s *Store) BatchFile(ctx context.Context, workspaceID uuid.UUID, id string) (*BatchFile, error) {
	f := new(BatchFile)
	err := s.db.NewSelect().Model(f).Where("id = ? AND workspace_id = ? AND deleted_at IS NULL", id, workspaceID).Scan(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	return f, nil
}

// BatchFiles lists the workspace's files newest first, without their
// content: purpose filters when not "", after is the last id of the
// previous page ("" for the first), limit the page's size.
func (s *Store) BatchFiles(ctx context.Context, workspaceID uuid.UUID, purpose, after string, limit int) ([]BatchFile, error) {
	var out []BatchFile
	q := s.db.NewSelect().Model(&out).ExcludeColumn("content").
		Where("workspace_id = ? AND deleted_at IS NULL", workspaceID).OrderExpr("created_at DESC, id DESC").Limit(int64(limit))
	if purpose != "" {
		q = q.Where("purpose = ?", purpose)
	} else {
		// The requests of an Anthropic batch, kept as its input file, are
		// gw's own, never listed.
		q = q.Where("purpose <> ?", PurposeMessageBatch)
	}
	if after != "" {
		// Keyset: the files older than after (of this workspace; another
		// workspace's id pages nothing).
		q = q.Where("(created_at, id) < (SELECT created_at, id FROM batch_files WHERE id = ? AND workspace_id = ?)", after, workspaceID)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, mapErr(err)
	}
	return out, nil
}

// DeleteBatchFile marks the workspace's file deleted and drops its
// content; ErrNotFound when it has no such file.
func (s *Store) DeleteBatchFile(ctx context.Context, workspaceID uuid.UUID, id string, now time.Time) error {
	res, err := s.db.NewUpdate().Model((*BatchFile)(nil)).Set("deleted_at = ?", now.UTC()).Set("content = ?", []byte{}).
		Where("id = ? AND workspace_id = ? AND deleted_at IS NULL", id, workspaceID).Exec(ctx)
	if err != nil {
		return mapErr(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// Batch states, as OpenAI's Batch API names them.
const (
	BatchValidating = "validating"
	BatchInProgress = "in_progress"
	BatchFinalizing = "finalizing"
	BatchCompleted  = "completed"
	BatchFailed     = "failed"
	BatchCancelling = "cancelling"
	BatchCancelled  = "cancelled"
	BatchExpired    = "expired"
)

// Batch line states: pending (not sent), running (its request id fixed
// and the request sent or about to be), and the ended ones.
const (
	LinePending   = "pending"
	LineRunning   = "running"
	LineCompleted = "completed"
	LineFailed    = "failed"
	LineCancelled = "cancelled"
	// LineExpired: the batch's completion window ended before the line
	// was sent (ExpireBatchLines); it never will be, and costs nothing.
	LineExpired = "expired"
	// LineUpstream: the line is in a provider's batch (its group's
	// batch_upstreams row), ended when that batch's results are read.
	LineUpstream = "upstream"
)

// Provider batch group states (batch_upstreams.status).
const (
	UpstreamPending    = "pending"
	UpstreamSubmitting = "submitting"
	UpstreamSubmitted  = "submitted"
	UpstreamEnded      = "ended"
)

// Batch is a workspace's batch.
type Batch struct {
	bun.BaseModel `bun:"table:batches"`

	ID               string     `bun:"id,pk"`
	OrgID            uuid.UUID  `bun:"org_id,type:uuid"`
	WorkspaceID      uuid.UUID  `bun:"workspace_id,type:uuid"`
	InferenceKeyID   *uuid.UUID `bun:"inference_key_id,type:uuid"`
	Endpoint         string     `bun:"endpoint"`
	InputFileID      string     `bun:"input_file_id"`
	CompletionWindow string     `bun:"completion_window"`
	Status           string     `bun:"status"`
	Metadata         *string    `bun:"metadata"`
	ReservedNanoUSD  int64      `bun:"reserved_nano_usd"`
	// BudgetHolder is the budget holder holding the batch's bound
	// (migrations/20261202010001_batches_budget_holder.sql).
	BudgetHolder *string   `bun:"budget_holder"`
	OutputFileID *string   `bun:"output_file_id"`
	ErrorFileID  *string   `bun:"error_file_id"`
	CreatedAt    time.Time `bun:"created_at"`
	UpdatedAt    time.Time `bun:"updated_at"`

	// Upstreams are the batch's provider batch groups, stored with it by
	// CreateBatch (not a column).
	Upstreams []BatchUpstream `bun:"-"`
	// LineBounds are its lines' upper-bound costs, stored with them by
	// CreateBatch (not a column).
	LineBounds []LineBound `bun:"-"`
}

// BatchUpstream is a group of a batch's lines run as one provider batch
// (migrations/20261201010001_batch_upstreams.sql).
type BatchUpstream struct {
	bun.BaseModel `bun:"table:batch_upstreams"`

	BatchID         string     `bun:"batch_id,pk"`
	Seq             int        `bun:"seq,pk"`
	Kind            string     `bun:"kind"`
	CredentialID    uuid.UUID  `bun:"credential_id,type:uuid"`
	Model           string     `bun:"model"`
	UpstreamModel   string     `bun:"upstream_model"`
	Status          string     `bun:"status"`
	UpstreamFileID  *string    `bun:"upstream_file_id"`
	UpstreamBatchID *string    `bun:"upstream_batch_id"`
	SubmittingAt    *time.Time `bun:"submitting_at"`
	Error           *string    `bun:"error"`
	UpdatedAt       time.Time  `bun:"updated_at"`

	// Lines are the group's line numbers and their request ids, at
	// creation only (not a column).
	Lines []UpstreamLine `bun:"-"`
}

// UpstreamLine is a line of a provider batch group as created: its
// number and the request id its usage event will carry.
type UpstreamLine struct {
	Line      int
	RequestID string
}

// BatchLine is one request of a batch and, once it ended, its outcome.
type BatchLine struct {
	bun.BaseModel `bun:"table:batch_lines"`

	BatchID     string    `bun:"batch_id,pk"`
	Line        int       `bun:"line,pk"`
	CustomID    string    `bun:"custom_id"`
	Status      string    `bun:"status"`
	RequestID   *string   `bun:"request_id"`
	StatusCode  int       `bun:"status_code"`
	Response    *string   `bun:"response"`
	Error       *string   `bun:"error"`
	CostNanoUSD int64     `bun:"cost_nano_usd"`
	UpdatedAt   time.Time `bun:"updated_at"`
	// UpstreamSeq is the provider batch group of a line in one (status
	// upstream).
	UpstreamSeq *int `bun:"upstream_seq"`
	// Bound is the line's upper-bound cost as submission counted it (nil
	// for older batches' lines): what a line a lost data plane took is
	// billed (batchplanes.go).
	Bound *LineBound `bun:"bound,type:text"`
	// TakenBy is the remote data plane that took a running line (nil:
	// this control plane's own runner).
	TakenBy *string `bun:"taken_by"`
}

// BatchCounts are a batch's lines by outcome, as OpenAI's request_counts.
type BatchCounts struct {
	Total, Completed, Failed, Cancelled, Expired int
}

// CreateBatch stores b and its lines in one transaction: a batch is
// never seen without every line it was submitted with. Lines are pending,
// except those of b.Upstreams' groups (stored with them), which are
// upstream under their group and request id.
func (s *Store) CreateBatch(ctx context.Context, b *Batch, customIDs []string) error {
	b.CreatedAt, b.UpdatedAt = b.CreatedAt.UTC(), b.UpdatedAt.UTC()
	native := map[int]UpstreamLine{}
	seqOf := map[int]int{}
	bounds := make(map[int]*LineBound, len(b.LineBounds))
	for i := range b.LineBounds {
		bounds[b.LineBounds[i].Line] = &b.LineBounds[i]
	}
	for _, u := range b.Upstreams {
		for _, l := range u.Lines {
			native[l.Line], seqOf[l.Line] = l, u.Seq
		}
	}
	return s.InTx(ctx, func(tx *Store) error {
		if _, err := tx.db.NewInsert().Model(b).Exec(ctx); err != nil {
			return mapErr(err)
		}
		for i := range b.Upstreams {
			u := b.Upstreams[i]
			u.BatchID, u.Status, u.UpdatedAt = b.ID, UpstreamPending, b.CreatedAt
			if _, err := tx.db.NewInsert().Model(&u).Exec(ctx); err != nil {
				return mapErr(err)
			}
		}
		const chunk = 500 // rows an INSERT carries, under both databases' parameter limits
		for start := 0; start < len(customIDs); start += chunk {
			rows := make([]BatchLine, 0, min(chunk, len(customIDs)-start))
			for i, id := range customIDs[start:min(start+chunk, len(customIDs))] {
				row := BatchLine{BatchID: b.ID, Line: start + i + 1, CustomID: id, Status: LinePending, UpdatedAt: b.CreatedAt, Bound: bounds[start+i+1]}
				if n, ok := native[row.Line]; ok {
					seq, rid := seqOf[row.Line], n.RequestID
					row.Status, row.UpstreamSeq, row.RequestID = LineUpstream, &seq, &rid
				}
				rows = append(rows, row)
			}
			if _, err := tx.db.NewInsert().Model(&rows).Exec(ctx); err != nil {
				return mapErr(err)
			}
		}
		return nil
	})
}

// Batch is the workspace's batch id, or ErrNotFound.
func (s *Store) Batch(ctx context.Context, workspaceID uuid.UUID, id string) (*Batch, error) {
	b := new(Batch)
	if err := s.db.NewSelect().Model(b).Where("id = ? AND workspace_id = ?", id, workspaceID).Scan(ctx); err != nil {
		return nil, mapErr(err)
	}
	return b, nil
}

// PurposeMessageBatch is the purpose of the file gw writes of an
// Anthropic Message Batch's requests, its input; MessagesEndpoint the
// endpoint of such a batch.
const (
	PurposeMessageBatch = "message_batch"
	MessagesEndpoint    = "/v1/messages"
)

// Batches lists the workspace's batches newest first: its Anthropic
// Message Batches (endpoint MessagesEndpoint) when messages, else its
// OpenAI ones. after is the last id of the previous page ("" for the
// first): the page holds the limit batches just older than it. before,
// when not "", is the first id of the next page: the page holds the
// limit batches just newer than it (Anthropic's before_id), still newest
// first. Another workspace's id as either pages nothing.
func (s *Store) Batches(ctx context.Context, workspaceID uuid.UUID, messages bool, after, before string, limit int) ([]Batch, error) {
	var out []Batch
	q := s.db.NewSelect().Model(&out).Where("workspace_id = ?", workspaceID).Limit(int64(limit))
	if messages {
		q = q.Where("endpoint = ?", MessagesEndpoint)
	} else {
		q = q.Where("endpoint <> ?", MessagesEndpoint)
	}
	if after != "" {
		q = q.Where("(created_at, id) < (SELECT created_at, id FROM batches WHERE id = ? AND workspace_id = ?)", after, workspaceID)
	}
	if before != "" {
		// The nearest newer ones first, so the limit keeps those next to
		// before; turned newest first below.
		q = q.Where("(created_at, id) > (SELECT created_at, id FROM batches WHERE id = ? AND workspace_id = ?)", before, workspaceID).
			OrderExpr("created_at, id")
	} else {
		q = q.OrderExpr("created_at DESC, id DESC")
	}
	if err := q.Scan(ctx); err != nil {
		return nil, mapErr(err)
	}
	if before != "" {
		slices.Reverse(out)
	}
	return out, nil
}

// ErrBatchNotEnded refuses to delete a batch that still has lines to run
// or to end: it is cancelled first, as Anthropic requires.
var ErrBatchNotEnded = errors.New("the batch has not ended")

// DeleteBatch deletes the workspace's batch once it has ended (else
// ErrBatchNotEnded; ErrNotFound when the workspace has no such batch):
// its row and its lines, with their answers, go, and so do the bodies of
// the files it owns — its output and error files, and its input file
// when gw wrote it (a message batch's requests; an uploaded input file
// is the workspace's own, deleted through the files API). Its usage
// events stay: they are what was spent. In one transaction, so a batch
// is found whole or not at all.
func (s *Store) DeleteBatch(ctx context.Context, workspaceID uuid.UUID, id string, now time.Time) error {
	return s.InTx(ctx, func(tx *Store) error {
		b, err := tx.Batch(ctx, workspaceID, id)
		if err != nil {
			return err
		}
		switch b.Status {
		case BatchCompleted, BatchFailed, BatchCancelled, BatchExpired:
		default:
			return ErrBatchNotEnded
		}
		files := []string{}
		for _, f := range []*string{b.OutputFileID, b.ErrorFileID} {
			if f != nil {
				files = append(files, *f)
			}
		}
		q := tx.db.NewUpdate().Model((*BatchFile)(nil)).Set("deleted_at = ?", now.UTC()).Set("content = ?", []byte{}).
			Where("workspace_id = ? AND deleted_at IS NULL", workspaceID)
		if len(files) > 0 {
			q = q.Where("(id IN (?) OR (id = ? AND purpose = ?))", bun.In(files), b.InputFileID, PurposeMessageBatch)
		} else {
			q = q.Where("id = ? AND purpose = ?", b.InputFileID, PurposeMessageBatch)
		}
		if _, err := q.Exec(ctx); err != nil {
			return mapErr(err)
		}
		for _, m := range []any{(*BatchLine)(nil), (*BatchUpstream)(nil)} {
			if _, err := tx.db.NewDelete().Model(m).Where("batch_id = ?", id).Exec(ctx); err != nil {
				return mapErr(err)
			}
		}
		_, err = tx.db.NewDelete().Model((*Batch)(nil)).Where("id = ? AND workspace_id = ?", id, workspaceID).Exec(ctx)
		return mapErr(err)
	})
}

// BatchCounts counts the batch's lines by outcome.
func (s *Store) BatchCounts(ctx context.Context, batchID string) (BatchCounts, error) {
	var rows []struct {
		Status string `bun:"status"`
		N      int    `bun:"n"`
	}
	err := s.db.NewSelect().TableExpr("batch_lines").ColumnExpr("status, COUNT(*) AS n").
		Where("batch_id = ?", batchID).GroupExpr("status").Scan(ctx, &rows)
	if err != nil {
		return BatchCounts{}, mapErr(err)
	}
	var c BatchCounts
	for _, r := range rows {
		c.Total += r.N
		switch r.Status {
		case LineCompleted:
			c.Completed += r.N
		case LineFailed:
			c.Failed += r.N
		case LineCancelled:
			c.Cancelled += r.N
		case LineExpired:
			c.Expired += r.N
		}
	}
	return c, nil
}

// CancelBatch cancels the workspace's batch: its pending lines are
// cancelled (they will never be sent, and cost nothing) and the batch is
// cancelling while a line runs, else cancelled. A batch that has ended is
// left as it is. It returns the batch as it is now; ErrNotFound when the
// workspace has no such batch.
func (s *Store) CancelBatch(ctx context.Context, workspaceID uuid.UUID, id string, now time.Time) (*Batch, error) {
	var out *Batch
	err := s.InTx(ctx, func(tx *Store) error {
		b, err := tx.Batch(ctx, workspaceID, id)
		if err != nil {
			return err
		}
		out = b
		switch b.Status {
		case BatchCompleted, BatchFailed, BatchCancelled, BatchExpired:
			return nil
		}
		now := now.UTC()
		if _, err := tx.db.NewUpdate().Model((*BatchLine)(nil)).Set("status = ?", LineCancelled).Set("updated_at = ?", now).
			Where("batch_id = ? AND status = ?", id, LinePending).Exec(ctx); err != nil {
			return mapErr(err)
		}
		// A line running, or in a provider batch (which the runner cancels
		// there), ends on its own: the batch is cancelling until then.
		running, err := tx.db.NewSelect().Model((*BatchLine)(nil)).Where("batch_id = ? AND status IN (?)", id, bun.In([]string{LineRunning, LineUpstream})).Count(ctx)
		if err != nil {
			return mapErr(err)
		}
		b.Status, b.UpdatedAt = BatchCancelled, now
		if running > 0 {
			b.Status = BatchCancelling
		}
		_, err = tx.db.NewUpdate().Model(b).Column("status", "updated_at").WherePK().Exec(ctx)
		return mapErr(err)
	})
	return out, err
}

// StartBatchLine takes the batch's next line to send: the lowest pending
// one, marked running under requestID in the same transaction, so a
// process that dies after this and before the line ends finds it running
// (never pending: it is not sent twice) with the id its usage event
// carries. ok is false when no line is pending.
func (s *Store) StartBatchLine(ctx context.Context, batchID, requestID string, now time.Time) (line BatchLine, ok bool, err error) {
	err = s.InTx(ctx, func(tx *Store) error {
		err := tx.db.NewSelect().Model(&line).Where("batch_id = ? AND status = ?", batchID, LinePending).
			OrderExpr("line").Limit(1).Scan(ctx)
		if err != nil {
			if err = mapErr(err); errors.Is(err, ErrNotFound) {
				return nil
			}
			return err
		}
		res, err := tx.db.NewUpdate().Model((*BatchLine)(nil)).Set("status = ?", LineRunning).Set("request_id = ?", requestID).
			Set("updated_at = ?", now.UTC()).Where("batch_id = ? AND line = ? AND status = ?", batchID, line.Line, LinePending).Exec(ctx)
		if err != nil {
			return mapErr(err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			line.Status, line.RequestID, ok = LineRunning, &requestID, true
		}
		return nil
	})
	return line, ok, err
}

// EndBatchLine records the outcome of a line that is running or in a
// provider batch (status one of the ended line states). A line that is
// neither (ended already) is left as it is and reported false: an outcome
// is recorded once.
func (s *Store) EndBatchLine(ctx context.Context, l BatchLine, now time.Time) (bool, error) {
	res, err := s.db.NewUpdate().Model((*BatchLine)(nil)).Set("status = ?", l.Status).Set("status_code = ?", l.StatusCode).
		Set("response = ?", l.Response).Set("error = ?", l.Error).Set("cost_nano_usd = ?", l.CostNanoUSD).Set("updated_at = ?", now.UTC()).
		Where("batch_id = ? AND line = ? AND status IN (?)", l.BatchID, l.Line, bun.In([]string{LineRunning, LineUpstream})).Exec(ctx)
	if err != nil {
		return false, mapErr(err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// RequeueBatchLine puts a running line back to pending, its request id
// cleared: for a line refused before anything was sent (the key's rate
// limit), never for one that reached an upstream. A line not running is
// left as it is (false).
func (s *Store) RequeueBatchLine(ctx context.Context, batchID string, line int, now time.Time) (bool, error) {
	res, err := s.db.NewUpdate().Model((*BatchLine)(nil)).Set("status = ?", LinePending).Set("request_id = NULL").
		Set("updated_at = ?", now.UTC()).Where("batch_id = ? AND line = ? AND status = ?", batchID, line, LineRunning).Exec(ctx)
	if err != nil {
		return false, mapErr(err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// ExpireBatchLines ends as expired the batch's pending lines: its
// completion window ended before they were sent, and they never will be
// (they cost nothing). A line running, or in a provider batch (which the
// provider expires itself), is left to end. In one statement, so a line
// is either taken (StartBatchLine) or expired, never both. It returns how
// many it ended.
func (s *Store) ExpireBatchLines(ctx context.Context, batchID string, now time.Time) (int, error) {
	res, err := s.db.NewUpdate().Model((*BatchLine)(nil)).Set("status = ?", LineExpired).Set("updated_at = ?", now.UTC()).
		Where("batch_id = ? AND status = ?", batchID, LinePending).Exec(ctx)
	if err != nil {
		return 0, mapErr(err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// BatchLines are the batch's lines in order, from line after (0 for the
// first) on, at most limit of them.
func (s *Store) BatchLines(ctx context.Context, batchID string, after, limit int) ([]BatchLine, error) {
	var out []BatchLine
	err := s.db.NewSelect().Model(&out).Where("batch_id = ? AND line > ?", batchID, after).OrderExpr("line").Limit(int64(limit)).Scan(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	return out, nil
}

// ActiveBatches are the batches, of every workspace, that still have
// lines to run or to end (validating, in_progress, cancelling), oldest
// first: what a runner takes up when it starts, and again as it goes.
func (s *Store) ActiveBatches(ctx context.Context) ([]Batch, error) {
	var out []Batch
	err := s.db.NewSelect().Model(&out).Where("status IN (?)", bun.In([]string{BatchValidating, BatchInProgress, BatchCancelling})).
		OrderExpr("created_at, id").Scan(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	return out, nil
}

// InterruptBatchLines ends as failed, with message, the batch's lines
// that were marked running before before: lines a process took and that
// it cannot have ended (it stopped). They are never taken again, so never
// sent twice. Lines a remote data plane took (taken_by) are its to end
// (InterruptTakenBatchLines). It returns how many it ended.
func (s *Store) InterruptBatchLines(ctx context.Context, batchID string, before, now time.Time, message string) (int, error) {
	res, err := s.db.NewUpdate().Model((*BatchLine)(nil)).Set("status = ?", LineFailed).Set("error = ?", message).
		Set("updated_at = ?", now.UTC()).Where("batch_id = ? AND status = ? AND taken_by IS NULL AND updated_at < ?", batchID, LineRunning, before.UTC()).Exec(ctx)
	if err != nil {
		return 0, mapErr(err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// FinishBatch ends the batch in status, storing the files it wrote (nil:
// none) in the same transaction. A batch that ended already is left as it
// is (false): it is finished once.
func (s *Store) FinishBatch(ctx context.Context, batchID, status string, output, errFile *BatchFile, now time.Time) (bool, error) {
	done := false
	err := s.InTx(ctx, func(tx *Store) error {
		q := tx.db.NewUpdate().Model((*Batch)(nil)).Set("status = ?", status).Set("updated_at = ?", now.UTC()).
			Where("id = ? AND status IN (?)", batchID, bun.In([]string{BatchValidating, BatchInProgress, BatchCancelling, BatchFinalizing}))
		for _, f := range []*BatchFile{output, errFile} {
			if f == nil {
				continue
			}
			if err := tx.CreateBatchFile(ctx, f); err != nil {
				return err
			}
			col := "output_file_id"
			if f == errFile {
				col = "error_file_id"
			}
			q = q.Set(col+" = ?", f.ID)
		}
		res, err := q.Exec(ctx)
		if err != nil {
			return mapErr(err)
		}
		n, _ := res.RowsAffected()
		if done = n == 1; !done {
			return errNotFinished
		}
		return nil
	})
	if errors.Is(err, errNotFinished) {
		return false, nil
	}
	return done, err
}

// errNotFinished rolls back FinishBatch's files when the batch had ended.
var errNotFinished = errors.New("batch ended already")

// BatchUpstreams are the batch's provider batch groups, in order.
func (s *Store) BatchUpstreams(ctx context.Context, batchID string) ([]BatchUpstream, error) {
	var out []BatchUpstream
	if err := s.db.NewSelect().Model(&out).Where("batch_id = ?", batchID).OrderExpr("seq").Scan(ctx); err != nil {
		return nil, mapErr(err)
	}
	return out, nil
}

// UpdateBatchUpstream writes u's state (status, the provider's file and
// batch ids, submitting_at, error) when the group is still in status
// from; false when it is not (another process moved it on), so a step is
// taken once. A step repeated after its answer was lost finds the group
// already in exactly u's state and is answered true: the caller that took
// it goes on, where a false would have it leave a provider batch it made
// (another process's step differs at least in its own upload or its
// submitting_at, so it is still answered false).
func (s *Store) UpdateBatchUpstream(ctx context.Context, u BatchUpstream, from string, now time.Time) (bool, error) {
	res, err := s.db.NewUpdate().Model((*BatchUpstream)(nil)).Set("status = ?", u.Status).Set("upstream_file_id = ?", u.UpstreamFileID).
		Set("upstream_batch_id = ?", u.UpstreamBatchID).Set("submitting_at = ?", u.SubmittingAt).Set("error = ?", u.Error).
		Set("updated_at = ?", now.UTC()).Where("batch_id = ? AND seq = ? AND status = ?", u.BatchID, u.Seq, from).Exec(ctx)
	if err != nil {
		return false, mapErr(err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return true, nil
	}
	var cur BatchUpstream
	if err := s.db.NewSelect().Model(&cur).Where("batch_id = ? AND seq = ?", u.BatchID, u.Seq).Scan(ctx); err != nil {
		return false, mapErr(err)
	}
	return sameUpstreamState(cur, u), nil
}

// sameUpstreamState: a and b record the same step of a group. Times are
// compared to the microsecond, the finest both databases keep.
func sameUpstreamState(a, b BatchUpstream) bool {
	sameString := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	sameTime := func(x, y *time.Time) bool {
		return (x == nil) == (y == nil) && (x == nil || x.UTC().Truncate(time.Microsecond).Equal(y.UTC().Truncate(time.Microsecond)))
	}
	return a.Status == b.Status && sameString(a.UpstreamFileID, b.UpstreamFileID) && sameString(a.UpstreamBatchID, b.UpstreamBatchID) &&
		sameString(a.Error, b.Error) && sameTime(a.SubmittingAt, b.SubmittingAt)
}

// UpstreamBatchLines are the lines of the batch's group seq still in the
// provider batch (status upstream), in order.
func (s *Store) UpstreamBatchLines(ctx context.Context, batchID string, seq int) ([]BatchLine, error) {
	var out []BatchLine
	err := s.db.NewSelect().Model(&out).Where("batch_id = ? AND upstream_seq = ? AND status = ?", batchID, seq, LineUpstream).
		OrderExpr("line").Scan(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	return out, nil
}
