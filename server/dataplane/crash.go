package dataplane

import (
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/spend"
	"github.com/gw-gateway/gw/server/tokens"
	"github.com/gw-gateway/gw/wire"
)

// reasonCrashed: the process serving the request died (SIGKILL, the OOM
// killer, a crash) while the request was at its upstream; its event was
// recorded at the next start, from the request journal.
const reasonCrashed = "crashed"

// journalAttempt records the request in the plane's request journal as
// it goes to rt's upstream (each attempt anew: the model, prices and
// reservation are the attempt's).
func (x *exchange) journalAttempt(rt *route) {
	j := x.p.journal
	if j == nil {
		return
	}
	if x.slot == nil {
		if x.slot = j.acquire(); x.slot == nil {
			return
		}
	}
	s := x.slot
	key, m := x.key, rt.model
	r := journalRecord{id: x.id, occurred: x.occurred, started: x.started, attemptStarted: x.attemptStarted,
		org: key.org.orgID, workspace: key.workspace, key: key.id, owner: key.owner, credential: rt.cred.id,
		model: m.model.ID, provider: m.model.Provider, requested: x.requestedModel(), endpoint: x.d.name(), requestID: x.requestID,
		bundleVersion: key.org.version, pricing: m.model.Pricing, inputTokens: x.crashInput(rt),
		outputCap: outputCap(rt, x.req.MaxTokens, x.req.N), tags: x.tags}
	if c := x.caller; c != nil {
		r.key, r.owner = uuid.Nil, c.UserID
		if c.ManagementKeyID != nil {
			r.managementKey = *c.ManagementKeyID
		}
	}
	if n := len(x.attempts); n > 1 {
		r.attempts = x.attempts[:n-1]
	}
	if bl := x.batchLine; bl != nil {
		r.batchID, r.batchKind = bl.batchID, string(m.kind)
	}
	s.holds, s.budgets = s.holds[:0], s.budgets[:0]
	if x.budget != nil {
		r.bound = x.budget.Bound()
		x.budget.Held(func(c spend.Counter, start time.Time, held int64) {
			s.holds = append(s.holds, journalHold{counter: c, start: start, held: held})
		})
		if d := x.decision; d != nil {
			for _, b := range d.Budgets {
				s.budgets = append(s.budgets, journalBudget{policyID: b.PolicyID, name: b.PolicyName, period: string(b.Period),
					aggregation: string(b.Aggregation), amount: b.AmountUSD.Text})
			}
		}
	}
	r.holds, r.budgets = s.holds, s.budgets
	if !s.open(&r) {
		s.release(false)
		x.slot = nil
	}
}

// journalFinishing records the request's outcome in its journal slot,
// before finish settles its reservation.
func (a *admission) journalFinishing(o *usageRecord) {
	if a.slot == nil {
		return
	}
	u := o.usage
	failure := o.failure
	nano := o.costNano
	a.slot.finishing(journalFinal{at: time.Now(), input: u.InputTokens, output: u.OutputTokens, cacheRead: u.CacheReadTokens,
		cacheWrite: u.CacheWriteTokens, cacheWrite1h: min(u.CacheWrite1hTokens, u.CacheWriteTokens), reasoning: u.ReasoningTokens,
		costNano: nano, ok: o.status == statusOK, estimated: u.Estimated, reason: o.reason, failure: failure})
}

// journalRecording hands the request's slot, before its event goes to a
// sink that buffers, to the journal to free once the sink has stored it
// (registered first: the sink may store it before Record returns).
func (a *admission) journalRecording() {
	if a.slot != nil && a.slot.j.awaitStored {
		a.slot.await()
		a.slot = nil
	}
}

// journalRecorded frees the request's slot once a sink that writes before
// Record returns has its event (without a write: see RequestJournal).
func (a *admission) journalRecorded() {
	if a.slot != nil {
		a.slot.release(false)
		a.slot = nil
	}
}

// A remnant: a slot a process left, read back.
type remnant struct {
	slot *journalSlot
	rec  journalRecord
	// raw is the record as written, rewritten as it is at the start.
	raw      []byte
	progress journalProgress
	final    journalFinal
	// finished: finish had its outcome (slotFinishing, readable).
	finished bool
}

// settleBudgets releases, from the budget counters a journal kept, what
// the reservations of requests in flight at a crash held beyond their
// cost, and returns the counters to restore. record writes the changed
// counters to the budget journal; each remnant is flagged before it
// does, so that a crash in between leaves a bound counted, never
// released twice.
func (j *RequestJournal) settleBudgets(states []spend.CounterState, record func([]spend.CounterState)) []spend.CounterState {
	var crashed []crashedHold
	var settled []*journalSlot
	for _, r := range j.remnants {
		// Only a request still at its upstream releases: one that was
		// finishing may have settled already (even if its outcome is torn).
		if r.slot.state != slotOpen || r.slot.flags&flagSettled != 0 || r.rec.bound <= 0 || len(r.rec.holds) == 0 {
			continue
		}
		_, cost := crashedEvent(r)
		crashed = append(crashed, crashedHold{holds: r.rec.holds, cost: cost})
		settled = append(settled, r.slot)
	}
	if len(crashed) == 0 {
		return states
	}
	out, changed := releaseCrashed(states, crashed)
	for _, s := range settled {
		s.markSettled()
	}
	if len(changed) > 0 {
		record(changed)
	}
	return out
}

// crashedHold is what a crashed request's reservation gives back: on
// each counter it held, what it held there (its bound, or a tail
// admission's estimate and reserve) less its cost.
type crashedHold struct {
	holds []journalHold
	cost  int64
}

// releaseCrashed takes the releases out of the counters' reservations
// (which a restored ledger counts as spent), never more than a counter
// held: a reservation that had settled after all releases nothing twice.
// It returns the counters, and those it changed.
func releaseCrashed(states []spend.CounterState, crashed []crashedHold) (all, changed []spend.CounterState) {
	all = append([]spend.CounterState(nil), states...)
	touched := make([]bool, len(all))
	for _, c := range crashed {
		for _, h := range c.holds {
			for i := range all {
				if all[i].Counter == h.counter && all[i].Start.Equal(h.start) {
					take := min(max(0, h.held-c.cost), all[i].Reserved)
					if take > 0 {
						all[i].Reserved -= take
						touched[i] = true
					}
				}
			}
		}
	}
	for i, t := range touched {
		if t {
			changed = append(changed, all[i])
		}
	}
	return all, changed
}

// recoverRemnants records the event of each request the last process
// left, then frees its slot (at once, or once the sink has stored it).
func (j *RequestJournal) recoverRemnants(sink UsageSink, log *slog.Logger) {
	remnants := j.remnants
	j.remnants = nil
	if len(remnants) == 0 {
		return
	}
	var crashed, ended int
	for _, r := range remnants {
		ev, _ := crashedEvent(r)
		if j.awaitStored {
			r.slot.await()
		}
		sink.Record(ev)
		if !j.awaitStored {
			r.slot.release(false)
		}
		if r.finished {
			ended++
		} else {
			crashed++
		}
	}
	if crashed > 0 {
		log.Warn("the last process died with requests at their upstreams; their usage events are recorded now, reason crashed",
			"requests", crashed)
	}
	if ended > 0 {
		// Most were stored already: ingestion keeps the first of an id.
		log.Info("the last process stopped without emptying its request journal; the events of the requests it had ended are recorded again",
			"requests", ended)
	}
}

// crashedEvent is the usage event of a remnant, and its cost: a request
// that ended (finishing) with its outcome; one in flight as an error,
// reason crashed, usage_source estimated, with the input the upstream
// reported (else the input the admission bound counted) and the output
// relayed (crashOutput), at the prices it was admitted at.
func crashedEvent(r remnant) (wire.UsageEventIn, int64) {
	rec := r.rec
	last := rec.attemptStarted
	if r.progress.some && r.progress.at.After(last) {
		last = r.progress.at
	}
	t := catalog.Tokens{}
	var reasoning int64
	status, reason, source := statusError, reasonCrashed, wire.UsageSourceEstimated
	failure := reasonCrashed
	if r.finished {
		f := r.final
		last = f.at
		t = catalog.Tokens{Input: f.input, Output: f.output, CacheRead: f.cacheRead, CacheWrite: f.cacheWrite, CacheWrite1h: f.cacheWrite1h}
		reasoning = f.reasoning
		reason, failure = f.reason, f.failure
		if f.ok {
			status, reason = statusOK, ""
		}
		if !f.estimated {
			source = wire.UsageSourceUpstream
		}
	} else {
		p := r.progress.p
		if p.InputReported {
			t.Input, t.CacheRead, t.CacheWrite, t.CacheWrite1h = p.Input, p.CacheRead, p.CacheWrite, p.CacheWrite1h
		} else {
			t.Input = rec.inputTokens
		}
		t.Output, reasoning = crashOutput(p, rec.outputCap)
	}
	var nano int64
	prices := &wire.UsagePrices{}
	if pp, err := rec.pricing.Parse(); err == nil {
		// A batch line in the journal is one gw's runner sent, a
		// synchronous request upstream: priced as one (batchPricing).
		if nano, err = pp.CostNanoUSD(t); err != nil {
			nano = 0
		}
		a := pp.AppliedTo(t)
		prices = &wire.UsagePrices{InputPerMTok: a.InputPerMTok, OutputPerMTok: a.OutputPerMTok, CacheReadPerMTok: a.CacheReadPerMTok,
			CacheWritePerMTok: a.CacheWritePerMTok, CacheWrite1hPerMTok: a.CacheWrite1hPerMTok, LongContext: a.LongContext}
	}
	if r.finished {
		nano = r.final.costNano
	}
	requestID, endpoint := rec.requestID, rec.endpoint
	e := wire.UsageEventIn{ID: rec.id, OrgID: rec.org, WorkspaceID: rec.workspace,
		Model: rec.model, Provider: rec.provider, InputTokens: t.Input, OutputTokens: t.Output, CacheReadTokens: t.CacheRead,
		CacheWriteTokens: t.CacheWrite, CacheWrite1hTokens: t.CacheWrite1h, ReasoningTokens: reasoning,
		CostUSD: catalog.FormatNanoUSD(nano), Status: status, LatencyMS: max(0, last.Sub(rec.started).Milliseconds()),
		OccurredAt: rec.occurred, RequestID: &requestID, Endpoint: &endpoint, RequestedModel: rec.requested, UsageSource: source,
		Tags: rec.tags}
	e.InferenceKeyID, e.ManagementKeyID, e.OwnerID, e.ProviderCredentialID =
		optionalID(rec.key), optionalID(rec.managementKey), optionalID(rec.owner), optionalID(rec.credential)
	if reason != "" {
		e.Reason = &reason
	}
	if rec.batchID != "" {
		batch := rec.batchID
		e.BatchID = &batch
	}
	current := wire.UsageAttempt{Model: rec.model, Provider: rec.provider, LatencyMS: max(0, last.Sub(rec.attemptStarted).Milliseconds())}
	if failure != "" {
		current.Failure = &failure
	}
	e.Attempts = append(append([]wire.UsageAttempt{}, rec.attempts...), current)
	pv := &wire.UsageProvenance{BundleVersion: rec.bundleVersion, Prices: prices, Policies: []wire.UsagePolicy{}, Budgets: []wire.UsageBudget{}}
	for _, b := range rec.budgets {
		c := spend.Counter{PolicyID: b.policyID, Period: spend.Period(b.period), Aggregation: b.aggregation}
		if b.aggregation == "per_key" {
			c.KeyID = rec.key
		}
		pv.Budgets = append(pv.Budgets, wire.UsageBudget{PolicyID: b.policyID, PolicyName: b.name, Counter: c.String(), Period: b.period,
			Aggregation: b.aggregation, AmountUSD: b.amount})
	}
	e.Provenance = pv
	return e, nano
}

// crashInput is the input billed for a request a crash cut before its
// upstream reported one: the admission bound's count (inputShape.tokens)
// with a token per two bytes of the body rather than one per byte, the
// rule crashOutput counts by (the body is not kept, nor counted on the
// request's path), and never above the bound's. Above every tokenizer's
// count of text (three to four and a half bytes a token on prose, about
// three a token on CJK, less on JSON and code), though a body of escaped
// text or inline data counts high, as it does in the bound.
func crashInput(s inputShape, kind catalog.Kind) int64 {
	bound := s.tokens(kind)
	return min(bound, (s.bytes+1)/2+max(0, bound-s.bytes))
}

// crashInput is the input a crash bills for the request on rt: the count
// its budgets' bound took when it took one (exact for OpenAI's encodings,
// the bound's calibrated figure elsewhere: what the reservation holds),
// else the estimate from the body's size.
func (x *exchange) crashInput(rt *route) int64 {
	if r, ok := x.counts.of(tokens.ForModel(rt.model.model.UpstreamModel())); ok {
		return x.input.framed(r.Bound, rt.model.kind)
	}
	return crashInput(x.input, rt.model.kind)
}

// crashOutput is the output of a stream a crash cut, from what was
// relayed: a token per two bytes of text (gw's estimate for a tokenizer
// it does not have, without its surcharge for punctuation; the text
// itself is not kept), never fewer than the deltas relayed, never more
// than the request could produce; its reasoning share as reasoning.
func crashOutput(p providers.Progress, outputCap int64) (out, reasoning int64) {
	if p.TextBytes <= 0 && p.Pieces <= 0 {
		return 0, 0
	}
	out = max((p.TextBytes+1)/2, p.Pieces)
	if outputCap > 0 {
		out = min(out, outputCap)
	}
	if p.TextBytes > 0 {
		reasoning = out * min(p.ReasoningBytes, p.TextBytes) / p.TextBytes
	}
	return out, reasoning
}

// optionalID is id, or nil for uuid.Nil.
func optionalID(id uuid.UUID) *uuid.UUID {
	if id == uuid.Nil {
		return nil
	}
	return &id
}
