package dataplane

import (
	"context"
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/batchfile"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/spend"
)

// A batch's hold on its budgets (docs/batches.md, "The batch's hold"):
// the upper-bound cost a batch was accepted with is held from its
// submission for its whole run, in the process that accepted it, and
// shrinks as its lines run. A line gw's runner sends draws its share
// from the hold in the same ledger step as its own reservation is made
// (spend.Source), so synchronous traffic never finds that room free in
// between; a provider batch group's reservation draws its share the same
// way when it is sent (holdGroup, batchnative.go). A line that ends without drawing (refused
// before its reservation, cancelled, expired) gives its share back; when
// the batch ends, what is left is released.
//
// Lines another process sends (a remote data plane, another replica)
// reserve in that process's ledger; this one gives back the shares of
// the lines no longer pending as it sees them end (trimLines), so their
// room is held twice at most while they run, never spent twice.
//
// A restarted process holds again the shares of the batch's pending
// lines, when the batch was accepted under its budget holder (the
// journal keeps it across restarts) and its budgets take them
// (reholdBatch); else its lines reserve their own bounds as they run.

// batchHold is one batch's hold and the shares it still keeps.
type batchHold struct {
	r *spend.Reservation
	// lines are the shares of the lines gw's runner sends, by line
	// number; groups the provider batch groups', by seq: those not yet
	// drawn or given back.
	lines  map[int]int64
	groups map[int]int64
	// nextTrim is when tendHold next looks at the batch's counts.
	nextTrim time.Time
	// since is when the hold was kept: a batch listed without it before
	// then may just not have been stored yet (endedElsewhere).
	since time.Time
}

// budgetDraw is a reservation's share of a batch's hold, drawn by the
// first reservation made with it.
type budgetDraw struct {
	src spend.Source
	// drawn: the first reservation made with it took the share, or
	// (not fitting with it) gave it back; either way the hold no longer
	// keeps it.
	drawn bool
}

// trimEvery is how many paces apart tendHold reads a held batch's counts.
const trimEvery = 10

// holdBatch holds the batch's bound against every budget d counts it
// against (nothing when none applies): refused as a request over a
// budget is. The hold is the caller's to keep (keepBatchHold) or release.
func (a *admission) holdBatch(d *policy.Decision, bound int64) (*spend.Reservation, *response) {
	if refusal := a.reserveFrom(d, func() (int64, error) { return bound, nil }, spend.Source{Hold: true}); refusal != nil {
		return nil, refusal
	}
	r := a.budget
	a.budget = nil
	return r, nil
}

// keepBatchHold keeps b's hold, each line's share its bound (admitLines):
// the lines of a provider batch group make up the group's share.
func (p *Plane) keepBatchHold(b *Batch, r *spend.Reservation, bounds []LineBound) {
	if r == nil {
		return
	}
	shares := make(map[int]int64, len(bounds))
	for _, lb := range bounds {
		shares[lb.Line] = lb.NanoUSD
	}
	h := &batchHold{r: r, lines: shares, groups: map[int]int64{}, since: time.Now()}
	for _, g := range b.Upstreams {
		for _, l := range g.Lines {
			h.groups[g.Seq] += shares[l.Line]
			delete(h.lines, l.Line)
		}
	}
	p.runner.mu.Lock()
	p.runner.batchHolds[b.ID] = h
	p.runner.mu.Unlock()
}

// lineDraw is the share of b's hold the line about to be sent draws, nil
// when the hold keeps none for it.
func (p *Plane) lineDraw(batchID string, line int) *budgetDraw {
	p.runner.mu.Lock()
	defer p.runner.mu.Unlock()
	h := p.runner.batchHolds[batchID]
	if h == nil {
		return nil
	}
	share, ok := h.lines[line]
	if !ok {
		return nil
	}
	return &budgetDraw{src: spend.Source{From: h.r, Share: share}}
}

// lineDone forgets the line's share once it was sent: drawn, or given
// back when the line ended before its reservation (refused, failed). A
// line requeued unsent (a rate limit) keeps it.
func (p *Plane) lineDone(batchID string, line int, d *budgetDraw, requeued bool) {
	if requeued && (d == nil || !d.drawn) {
		return
	}
	p.runner.mu.Lock()
	defer p.runner.mu.Unlock()
	h := p.runner.batchHolds[batchID]
	if h == nil {
		return
	}
	share, ok := h.lines[line]
	if !ok {
		return
	}
	delete(h.lines, line)
	if d == nil || !d.drawn {
		h.r.GiveBack(share)
	}
}

// groupDraw is the share of b's hold a provider batch group's own
// reservation draws (holdGroup), nil when there is none.
func (p *Plane) groupDraw(batchID string, seq int) *budgetDraw {
	p.runner.mu.Lock()
	defer p.runner.mu.Unlock()
	h := p.runner.batchHolds[batchID]
	if h == nil {
		return nil
	}
	share, ok := h.groups[seq]
	if !ok {
		return nil
	}
	return &budgetDraw{src: spend.Source{From: h.r, Share: share}}
}

// groupDone forgets a group's share: drawn by its own reservation, or
// given back when the group ended without one.
func (p *Plane) groupDone(batchID string, seq int, drawn bool) {
	p.runner.mu.Lock()
	defer p.runner.mu.Unlock()
	h := p.runner.batchHolds[batchID]
	if h == nil {
		return
	}
	share, ok := h.groups[seq]
	if !ok {
		return
	}
	delete(h.groups, seq)
	if !drawn {
		h.r.GiveBack(share)
	}
}

// releaseBatchHold releases what b's hold has left: the batch ended.
func (p *Plane) releaseBatchHold(batchID string) {
	p.runner.mu.Lock()
	h := p.runner.batchHolds[batchID]
	delete(p.runner.batchHolds, batchID)
	p.runner.mu.Unlock()
	if h != nil {
		h.r.Release()
	}
}

// tendHold keeps b's hold to what its pending lines may still need, at
// each pass of the runner: a cancelled batch, or one past its window, has
// no pending line left to send (the cancel or the expiry ended them), so
// its lines' shares go back; lines other processes took give theirs back
// as they end (trimLines). A batch this process accepted and holds nothing
// for (it restarted) is held again (reholdBatch).
func (p *Plane) tendHold(ctx context.Context, b *Batch) {
	p.runner.mu.Lock()
	h := p.runner.batchHolds[b.ID]
	p.runner.mu.Unlock()
	if h == nil {
		if !p.runner.reheldBatch[b.ID] {
			p.runner.reheldBatch[b.ID] = true
			p.reholdBatch(ctx, b)
		}
		return
	}
	ended := b.Status == batchCancelling || b.Status == batchCancelled || !p.now().Before(b.CreatedAt.Add(batchWindow(b)))
	if ended {
		p.trimLines(b.ID, 0)
		return
	}
	if p.now().Before(h.nextTrim) {
		return
	}
	h.nextTrim = p.now().Add(trimEvery * p.runner.pace)
	c, err := p.batches.Counts(ctx, b.ID)
	if err != nil {
		return
	}
	p.trimLines(b.ID, c.Total-c.Completed-c.Failed-c.Cancelled-c.Expired)
}

// trimLines keeps the shares of at most the open lines (pending or
// running anywhere) of the batch, the largest — an upper bound of what
// its pending lines need, whichever they are — and gives the others
// back.
func (p *Plane) trimLines(batchID string, open int) {
	p.runner.mu.Lock()
	defer p.runner.mu.Unlock()
	h := p.runner.batchHolds[batchID]
	if h == nil || len(h.lines) <= open {
		return
	}
	nums := make([]int, 0, len(h.lines))
	for n := range h.lines {
		nums = append(nums, n)
	}
	sort.Slice(nums, func(i, j int) bool { return h.lines[nums[i]] > h.lines[nums[j]] })
	var back int64
	for _, n := range nums[max(open, 0):] {
		back += h.lines[n]
		delete(h.lines, n)
	}
	h.r.GiveBack(back)
}

// reholdBatch holds again, in a process that restarted, the shares of
// the pending lines of a batch it had accepted (its budget holder is
// this process's, which the budget journal keeps): the hold went with
// the process that made it, and the journal did not count it as spent.
// The budgets may no longer take it (synchronous traffic took the room
// meanwhile): the lines then reserve their own bounds as they run, as
// any request, and a budget whose room is gone refuses them.
func (p *Plane) reholdBatch(ctx context.Context, b *Batch) {
	if b.BudgetHolder == "" || b.BudgetHolder != p.budgets.holder || b.Status != batchInProgress {
		return
	}
	key, refusal := p.batchKey(&batchLineCtx{keyID: b.InferenceKeyID, orgID: b.OrgID})
	if refusal != nil {
		return
	}
	input, err := p.batchInput(ctx, b)
	if err != nil {
		return
	}
	var pending []batchfile.Line
	for after := 0; ; {
		lines, err := p.batches.Lines(ctx, b.ID, after, 1000)
		if err != nil {
			return
		}
		if len(lines) == 0 {
			break
		}
		for _, l := range lines {
			after = l.Line
			if in, ok := input[l.Line]; ok && l.Status == "pending" {
				pending = append(pending, in)
			}
		}
	}
	if len(pending) == 0 {
		return
	}
	// The runner waits for room a moment only (it has other batches to
	// move on).
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	r, err := batchAdmissionRequest(rctx, b.Endpoint)
	if err != nil {
		return
	}
	a := &admission{p: p, r: r, key: key.inference, view: key.models, id: uuid.Must(uuid.NewV7())}
	merged, bound, bounds, refusal := a.admitLines(pending, nil)
	if refusal != nil {
		return
	}
	hold, refusal := a.holdBatch(merged, bound)
	if refusal != nil {
		p.inference.log.Warn("batches: the budgets do not take the pending lines' bound again after a restart; each line reserves its own as it runs",
			"batch_id", b.ID, "error", errorMessage(refusal.body))
		return
	}
	p.keepBatchHold(&Batch{ID: b.ID}, hold, bounds)
}

// createHeldBatch stores b with its hold kept under b's id (each line's
// share its bound, b.LineBounds), registered
// before the store has the batch: a runner that saw the batch first would
// take it for one accepted before a restart and hold it a second time. A
// batch not stored releases its hold.
func (p *Plane) createHeldBatch(ctx context.Context, b *Batch, customIDs []string, held *spend.Reservation) error {
	if held != nil {
		b.BudgetHolder = p.budgets.holder
	}
	p.keepBatchHold(b, held, b.LineBounds)
	if err := p.batches.CreateBatch(ctx, b, customIDs); err != nil {
		p.releaseBatchHold(b.ID)
		return err
	}
	return nil
}

// cancelledHold gives back at once, in the process that holds it, the
// shares of a cancelled batch's lines: the cancel ended every pending
// one, and those running hold their own reservations. (A cancel through
// another process is seen at the runner's next pass, tendHold.)
func (p *Plane) cancelledHold(batchID string) { p.trimLines(batchID, 0) }

// endedElsewhere releases the holds of the batches that are no longer
// active (listed, at listed, in active): another process finished them (a
// remote data plane's runner, which took their last lines). A hold kept
// after the listing began is of a batch that may not have been stored
// then, and stays.
func (p *Plane) endedElsewhere(active []Batch, listed time.Time) {
	on := make(map[string]bool, len(active))
	for _, b := range active {
		on[b.ID] = true
	}
	p.runner.mu.Lock()
	var ended []string
	for id, h := range p.runner.batchHolds {
		if !on[id] && h.since.Before(listed) {
			ended = append(ended, id)
		}
	}
	p.runner.mu.Unlock()
	for _, id := range ended {
		p.releaseBatchHold(id)
	}
	for id := range p.runner.reheldBatch {
		if !on[id] {
			delete(p.runner.reheldBatch, id)
		}
	}
}

// tendHolds keeps this process's batch holds while another process runs
// the batches (it holds the runner's lease, batchlease.go): their shares
// go back as the lines end there, a batch that ended is released, and
// after a restart the batches this process accepted are held again.
func (p *Plane) tendHolds(ctx context.Context) {
	listed := time.Now()
	active, err := p.batches.Active(ctx)
	if err != nil {
		return
	}
	p.endedElsewhere(active, listed)
	for i := range active {
		p.tendHold(ctx, &active[i])
	}
}
