package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/usage"
	"github.com/gw-gateway/gw/wire"
)

// LostPlaneAfter is how long a remote data plane's heartbeat may be stale
// before the control plane ends the batch lines it took and never ended
// (docs/batches.md). A plane heartbeats every few seconds; fifteen
// minutes outlasts a restart, a deploy or a network partition that heals,
// after which the plane ends its own lines (and ships their events), so
// only a plane gone for good has its lines billed at their bound.
const LostPlaneAfter = 15 * time.Minute

// lostLinesInterval is how often the control plane looks for them.
const lostLinesInterval = time.Minute

// LostLinesLease names the lease a control-plane replica holds while it
// ends lost planes' lines (store.TakeLease): one replica at a time, so a
// line's end is looked for once.
const LostLinesLease = "batch-lost-lines"

// reasonDataPlaneLost is the reason of the usage event of a line a lost
// data plane took.
const reasonDataPlaneLost = "data_plane_lost"

// lostLine is the error a lost plane's line ends with: interrupted, as a
// line a crashed process left, never sent again.
func lostLine(plane string) string {
	return fmt.Sprintf("interrupted: data plane %q, which was sending this request, was lost (no heartbeat for %s, or its enrollment for the "+
		"organization withdrawn); it is not sent again and is billed at its upper bound", plane, LostPlaneAfter)
}

// EndLostBatchLines ends, as of now, the running lines of remote data
// planes that are gone (store.LostBatchLines: no heartbeat for
// LostPlaneAfter, or their enrollment for the batch's organization
// withdrawn), so their batches can finish: each line fails interrupted
// and leaves one usage event at its upper bound as its batch's submission
// counted it — the request may have reached its upstream, and metering
// never records less than was delivered. The event's id is the line's
// request id, the id the plane's own event carries: if the plane comes
// back and ships its event, ingestion keeps the first stored (this one)
// and its end of the line is refused (the line ended). It returns how
// many lines it ended.
func EndLostBatchLines(ctx context.Context, st *store.Store, now time.Time) (int, error) {
	lines, err := st.LostBatchLines(ctx, now.Add(-LostPlaneAfter), 1000)
	if err != nil {
		return 0, err
	}
	batches := map[string]*lostBatch{}
	ended := 0
	var first error
	for _, l := range lines {
		b, ok := batches[l.BatchID]
		if !ok {
			if b, err = lostBatchOf(ctx, st, l.BatchID); err != nil {
				first = cmpErr(first, err)
				continue
			}
			batches[l.BatchID] = b
		}
		ev, err := lostLineEvent(b, l)
		if err != nil {
			first = cmpErr(first, err)
			continue
		}
		ok, err = st.EndLostBatchLine(ctx, l, lostLine(*l.TakenBy), ev, now)
		if ok {
			ended++
		}
		first = cmpErr(first, err)
	}
	return ended, first
}

// lostBatch is what a lost line's event names of its batch.
type lostBatch struct {
	id         string
	org, ws    uuid.UUID
	key, owner *uuid.UUID
	// endpoint is the batch's endpoint as events name it.
	endpoint string
	// tags are the key's cost-centre tags, which a line's event carries
	// (a batch line sends no X-Gw-Tags of its own).
	tags map[string]string
}

func lostBatchOf(ctx context.Context, st *store.Store, id string) (*lostBatch, error) {
	org, ws, err := st.BatchOwner(ctx, id)
	if err != nil {
		return nil, err
	}
	b, err := st.Batch(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	out := &lostBatch{id: id, org: org, ws: ws, key: b.InferenceKeyID, endpoint: dataplane.BatchEndpointName(b.Endpoint)}
	if b.InferenceKeyID != nil {
		// The key's owner, as the plane's event names it; a key deleted
		// since leaves the event without one.
		k, err := st.GetInferenceKey(ctx, ws, *b.InferenceKeyID)
		switch {
		case err == nil:
			if k.UserID != uuid.Nil {
				owner := k.UserID
				out.owner = &owner
			}
			if len(k.Tags) > 0 {
				out.tags = map[string]string(k.Tags)
			}
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
	}
	return out, nil
}

// lostLineEvent is the usage event of a lost plane's line: an error,
// reason data_plane_lost, usage_source estimated, its tokens and cost the
// line's bound (the dearest input-side price on every input token, its
// output cap at the output price), occurring when the line was taken.
func lostLineEvent(b *lostBatch, l store.BatchLine) (store.UsageEvent, error) {
	id, err := uuid.Parse(*l.RequestID)
	if err != nil {
		return store.UsageEvent{}, fmt.Errorf("line %d of %s: request id %q is not a UUID: %w", l.Line, b.id, *l.RequestID, err)
	}
	bound, reason, batch, requestID, endpoint := l.Bound, reasonDataPlaneLost, b.id, *l.RequestID, b.endpoint
	e := wire.UsageEventIn{ID: id, OrgID: b.org, WorkspaceID: b.ws, InferenceKeyID: b.key, OwnerID: b.owner,
		Model: bound.Model, Provider: bound.Provider, InputTokens: bound.InputTokens, OutputTokens: bound.OutputTokens,
		CostUSD: catalog.FormatNanoUSD(bound.NanoUSD), Status: "error", OccurredAt: l.UpdatedAt, RequestID: &requestID,
		Reason: &reason, UsageSource: wire.UsageSourceEstimated, BatchID: &batch, Tags: b.tags, Endpoint: &endpoint}
	return usage.Row(e, store.Now())
}

// endLostBatchLines runs EndLostBatchLines every lostLinesInterval on
// the control plane (roles all and control-plane, whichever runs the
// batches' store): every replica runs the loop, the lease's holder ends
// the lines.
func (s *Server) endLostBatchLines(_ context.Context, cp *controlPlane) error {
	holder := uuid.NewString()
	s.loops = append(s.loops, func(ctx context.Context) {
		every(ctx, lostLinesInterval, func() {
			if ok, err := cp.st.TakeLease(ctx, LostLinesLease, holder, 2*lostLinesInterval, store.Now()); err != nil || !ok {
				return
			}
			n, err := EndLostBatchLines(ctx, cp.st, time.Now())
			if n > 0 {
				s.log.Warn("batches: ended the lines of lost data planes, each billed at its upper bound", "lines", n)
			}
			if err != nil && ctx.Err() == nil {
				s.log.Warn("batches: ending the lines of lost data planes", "error", err)
			}
		})
	})
	return nil
}
