package store

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Batches run by remote data planes (docs/batches.md): the control plane
// serves a data plane's batch-store calls from these, each confined by the
// caller to the organizations the data plane is enrolled for. A line a
// data plane takes is marked with its id (taken_by) and every later write
// to the line names the request id it was taken under, so a retried or
// late call never touches a line another take holds.

// BatchOwner is the organization and workspace of batch id, whichever
// workspace it is in: for a caller that confines by organization itself.
func (s *Store) BatchOwner(ctx context.Context, id string) (org, ws uuid.UUID, err error) {
	var b Batch
	if err := s.db.NewSelect().Model(&b).Column("org_id", "workspace_id").Where("id = ?", id).Scan(ctx); err != nil {
		return uuid.Nil, uuid.Nil, mapErr(err)
	}
	return b.OrgID, b.WorkspaceID, nil
}

// ActiveBatchesIn are ActiveBatches of the organizations orgs only.
func (s *Store) ActiveBatchesIn(ctx context.Context, orgs []uuid.UUID) ([]Batch, error) {
	out := []Batch{}
	if len(orgs) == 0 {
		return out, nil
	}
	err := s.db.NewSelect().Model(&out).Where("status IN (?)", bun.In([]string{BatchValidating, BatchInProgress, BatchCancelling})).
		Where("org_id IN (?)", bun.In(orgs)).OrderExpr("created_at, id").Scan(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	return out, nil
}

// TakeBatchLine is StartBatchLine for data plane takenBy, idempotent by
// requestID: a take repeated under the same id (a retried call whose
// answer was lost) finds the line the first one took instead of taking a
// second, and two concurrent takes under one id cannot both hold a line
// (the unique index on batch_id, request_id).
func (s *Store) TakeBatchLine(ctx context.Context, batchID, requestID, takenBy string, now time.Time) (BatchLine, bool, error) {
	if l, ok, err := s.lineTakenAs(ctx, batchID, requestID); err != nil || ok {
		return l, ok, err
	}
	var line BatchLine
	ok := false
	err := s.InTx(ctx, func(tx *Store) error {
		err := tx.db.NewSelect().Model(&line).Where("batch_id = ? AND status = ?", batchID, LinePending).OrderExpr("line").Limit(1).Scan(ctx)
		if err != nil {
			if err = mapErr(err); errors.Is(err, ErrNotFound) {
				return nil
			}
			return err
		}
		res, err := tx.db.NewUpdate().Model((*BatchLine)(nil)).Set("status = ?", LineRunning).Set("request_id = ?", requestID).
			Set("taken_by = ?", takenBy).Set("updated_at = ?", now.UTC()).
			Where("batch_id = ? AND line = ? AND status = ?", batchID, line.Line, LinePending).Exec(ctx)
		if err != nil {
			return mapErr(err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			line.Status, line.RequestID, ok = LineRunning, &requestID, true
		}
		return nil
	})
	if errors.Is(err, ErrConflict) {
		// A take under the same request id committed first: its line.
		return s.lineTakenAs(ctx, batchID, requestID)
	}
	return line, ok, err
}

func (s *Store) lineTakenAs(ctx context.Context, batchID, requestID string) (BatchLine, bool, error) {
	var l BatchLine
	err := s.db.NewSelect().Model(&l).Where("batch_id = ? AND request_id = ?", batchID, requestID).Scan(ctx)
	if err != nil {
		if err = mapErr(err); errors.Is(err, ErrNotFound) {
			return BatchLine{}, false, nil
		}
		return BatchLine{}, false, err
	}
	return l, true, nil
}

// EndTakenBatchLine is EndBatchLine for the line data plane takenBy runs
// under l.RequestID, or a line in a provider batch under that id, only: a repeated call finds it ended (false), and a
// line requeued and taken again since (another request id, perhaps
// another plane) is not touched.
func (s *Store) EndTakenBatchLine(ctx context.Context, l BatchLine, takenBy string, now time.Time) (bool, error) {
	if l.RequestID == nil || *l.RequestID == "" {
		return false, nil
	}
	res, err := s.db.NewUpdate().Model((*BatchLine)(nil)).Set("status = ?", l.Status).Set("status_code = ?", l.StatusCode).
		Set("response = ?", l.Response).Set("error = ?", l.Error).Set("cost_nano_usd = ?", l.CostNanoUSD).Set("updated_at = ?", now.UTC()).
		Where("batch_id = ? AND line = ? AND request_id = ?", l.BatchID, l.Line, *l.RequestID).
		// A line in a provider batch (its request id fixed at creation)
		// is ended by whichever plane reads the results, once.
		Where("(status = ? AND taken_by = ?) OR status = ?", LineRunning, takenBy, LineUpstream).Exec(ctx)
	if err != nil {
		return false, mapErr(err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// RequeueTakenBatchLine is RequeueBatchLine for the line data plane
// takenBy runs under requestID only: a repeated requeue cannot put back a
// line taken again since (and sent). Line 0 is whichever line runs under
// the take: a take whose answer the plane never got (so it sent nothing).
func (s *Store) RequeueTakenBatchLine(ctx context.Context, batchID string, line int, requestID, takenBy string, now time.Time) (bool, error) {
	q := s.db.NewUpdate().Model((*BatchLine)(nil)).Set("status = ?", LinePending).Set("request_id = NULL").Set("taken_by = NULL").
		Set("updated_at = ?", now.UTC()).Where("batch_id = ? AND status = ? AND request_id = ? AND taken_by = ?", batchID, LineRunning, requestID, takenBy)
	if line != 0 {
		q = q.Where("line = ?", line)
	}
	res, err := q.Exec(ctx)
	if err != nil {
		return false, mapErr(err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// InterruptTakenBatchLines is InterruptBatchLines for the lines data
// plane takenBy took: a data plane that starts again ends its own earlier
// process's lines, never those another plane has in flight.
func (s *Store) InterruptTakenBatchLines(ctx context.Context, batchID, takenBy string, before, now time.Time, message string) (int, error) {
	res, err := s.db.NewUpdate().Model((*BatchLine)(nil)).Set("status = ?", LineFailed).Set("error = ?", message).Set("updated_at = ?", now.UTC()).
		Where("batch_id = ? AND status = ? AND taken_by = ? AND updated_at < ?", batchID, LineRunning, takenBy, before.UTC()).Exec(ctx)
	if err != nil {
		return 0, mapErr(err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// LineBound is a line's upper-bound cost as its batch's submission
// counted it, at the model that gave the largest (stored as JSON).
type LineBound struct {
	Line         int    `json:"line"`
	NanoUSD      int64  `json:"nano_usd"`
	Model        string `json:"model"`
	Provider     string `json:"provider"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
}

// Value implements driver.Valuer.
func (b LineBound) Value() (driver.Value, error) {
	out, err := json.Marshal(b)
	return string(out), err
}

// Scan implements sql.Scanner.
func (b *LineBound) Scan(src any) error { return scanJSON(src, "LineBound", b) }

// LostBatchLines are the running lines that remote data planes took and
// will not end (docs/batches.md): the plane's last heartbeat is older
// than staleBefore (a plane that never sent one: the take is), or its
// enrollment no longer holds the line's organization (revoked, pending
// again, deleted, or the organization taken out of it). Lines with no
// bound (batches older than it) are left out: their plane ends them when
// it starts again. Oldest batch first, at most limit.
func (s *Store) LostBatchLines(ctx context.Context, staleBefore time.Time, limit int) ([]BatchLine, error) {
	var out []BatchLine
	err := s.db.NewSelect().Model(&out).
		Where("?TableAlias.status = ? AND ?TableAlias.taken_by IS NOT NULL AND ?TableAlias.bound IS NOT NULL", LineRunning).
		Where("(COALESCE((SELECT dp.last_seen_at FROM data_planes AS dp WHERE dp.id = ?TableAlias.taken_by), ?TableAlias.updated_at) < ?"+
			" OR NOT EXISTS (SELECT 1 FROM data_plane_enrollments AS e"+
			" JOIN data_plane_enrollment_orgs AS o ON o.data_plane_id = e.data_plane_id"+
			" JOIN batches AS b ON b.id = ?TableAlias.batch_id AND b.org_id = o.org_id"+
			" WHERE e.data_plane_id = ?TableAlias.taken_by AND e.status = ?))", staleBefore.UTC(), EnrollmentApproved).
		OrderExpr("?TableAlias.batch_id, ?TableAlias.line").Limit(int64(limit)).Scan(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	return out, nil
}

// EndLostBatchLine fails l, a line LostBatchLines found, with message at
// its bound's cost, and stores ev, its usage event, in one transaction:
// either the line ends and its event is kept, or neither. It is false,
// and nothing is stored, when the line no longer runs under that take
// (its plane came back and ended it, or gave it back). The event's id is
// the line's request id, so the plane's own event, shipped later, is the
// same event to ingestion and kept once.
func (s *Store) EndLostBatchLine(ctx context.Context, l BatchLine, message string, ev UsageEvent, now time.Time) (bool, error) {
	if l.RequestID == nil || l.TakenBy == nil || l.Bound == nil {
		return false, nil
	}
	ended := false
	err := s.InTx(ctx, func(tx *Store) error {
		res, err := tx.db.NewUpdate().Model((*BatchLine)(nil)).Set("status = ?", LineFailed).Set("error = ?", message).
			Set("cost_nano_usd = ?", l.Bound.NanoUSD).Set("updated_at = ?", now.UTC()).
			Where("batch_id = ? AND line = ? AND status = ? AND taken_by = ? AND request_id = ?", l.BatchID, l.Line, LineRunning, *l.TakenBy, *l.RequestID).
			Exec(ctx)
		if err != nil {
			return mapErr(err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return nil
		}
		ended = true
		_, err = tx.InsertUsageEvents(ctx, []UsageEvent{ev})
		return err
	})
	return ended, err
}
