package dataplane

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/playground"
	"github.com/gw-gateway/gw/server/ratelimit"
	"github.com/gw-gateway/gw/wire"
)

// rateLeases makes rate limits hold across data planes: each plane may
// admit, in a key's minute, only what the control plane granted it of the
// key's limit, through the same lease mechanism as budgets (counters named
// rl/<key>/<requests|tokens>, period minute). The limiter reads the grants
// without blocking (ratelimit.Source); topUp, called before the limiter on
// the request path, asks for a slice more when what is left of the grant
// runs low, so a busy plane takes more of the minute and an idle one holds
// at most a slice.
type rateLeases struct {
	source BudgetSource
	holder string
	log    *slog.Logger

	mu   sync.Mutex
	held map[rateSlot]*rateLease
	// swept is the window whose predecessors were last dropped.
	swept ratelimit.Window
}

type rateSlot struct {
	key uuid.UUID
	dim ratelimit.Dimension
	w   ratelimit.Window
}

type rateLease struct {
	granted int64
	// pending counts requests between topUp and the limiter's decision.
	pending int64
	// others is what other data planes hold of the key's limit in the
	// window, as of the last grant.
	others int64
	// full: the control plane had nothing more in this window; asking
	// again before it ends would only cost a round trip per request.
	full     bool
	fetching chan struct{}
	// failed is why the last ask got no answer (the control plane
	// unreachable, or refusing the counter); nil after an answer. A
	// refusal while it is set is not the key's limit being reached.
	failed error
}

func newRateLeases(source BudgetSource, holder string, log *slog.Logger) *rateLeases {
	return &rateLeases{source: source, holder: holder, log: log, held: map[rateSlot]*rateLease{}}
}

// Allowance implements ratelimit.Source: what was granted, never waiting.
func (r *rateLeases) Allowance(key uuid.UUID, d ratelimit.Dimension, _ int64, w ratelimit.Window) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l := r.held[rateSlot{key, d, w}]; l != nil {
		return l.granted
	}
	return 0
}

// rateSlice is how much of a limit a plane asks for at a time.
func rateSlice(limit int64) int64 { return max(1, limit/10) }

// topUp makes sure the key's grant in the current minute has room for the
// request: when what is left of it, less what requests being admitted
// right now have claimed, would not cover it, it asks the control plane
// for the shortfall and a slice more (one ask at a time per key and
// dimension; concurrent requests wait for it and look again). The
// returned func releases the claim once the limiter has decided. A plane
// that cannot reach the control plane admits within what it holds.
func (p *Plane) topUp(ctx context.Context, key *inferenceKey) (release func()) {
	r := p.rateLeases
	if r == nil || key.limits.None() {
		return func() {}
	}
	w, _, _ := p.limiter.Used(key.id)
	r.forget(w)
	// What the limiter counted so far, read again after every wait: a
	// request that waited for a fetch must not judge by what was used
	// before it.
	used := func(d ratelimit.Dimension) func() int64 {
		return func() int64 {
			_, req, tok := p.limiter.Used(key.id)
			if d == ratelimit.Tokens {
				return tok
			}
			return req
		}
	}
	var claimed []*rateLease
	if lim := key.limits.RequestsPerMinute; lim > 0 {
		// A request takes one: it is claimed until the limiter counts it.
		claimed = append(claimed, r.topUp(ctx, key, rateSlot{key.id, ratelimit.Requests, w}, lim, used(ratelimit.Requests), 1))
	}
	if lim := key.limits.TokensPerMinute; lim > 0 {
		// Tokens are counted when the request ends; admission needs one
		// token of room, and claims none.
		r.topUp(ctx, key, rateSlot{key.id, ratelimit.Tokens, w}, lim, used(ratelimit.Tokens), 0)
	}
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, l := range claimed {
			l.pending--
		}
	}
}

func (r *rateLeases) topUp(ctx context.Context, key *inferenceKey, slot rateSlot, limit int64, usedNow func() int64, claim int64) *rateLease {
	slice := rateSlice(limit)
	for {
		used := usedNow()
		r.mu.Lock()
		l := r.held[slot]
		if l == nil {
			l = &rateLease{}
			r.held[slot] = l
		}
		if l.full || l.granted-used-l.pending >= max(claim, 1) {
			l.pending += claim
			r.mu.Unlock()
			return l
		}
		if wait := l.fetching; wait != nil {
			r.mu.Unlock()
			select {
			case <-wait:
				continue // look again: the fetch may have been enough
			case <-ctx.Done():
				return &rateLease{pending: claim} // nothing to release in the map
			}
		}
		done := make(chan struct{})
		l.fetching = done
		before, need := l.granted, used+l.pending+max(claim, 1)
		r.mu.Unlock()

		// The shortfall (tokens are counted after a request, so what was
		// used can pass what was granted) and a slice more.
		g, err := r.ask(ctx, key, slot, need-before+slice, used)
		if err != nil && r.log != nil {
			r.log.Warn("rate-limit lease refused or unreachable; admitting within what is held", "key_id", key.id, "error", err)
		}

		r.mu.Lock()
		if err == nil {
			l.granted, l.others = max(l.granted, g.GrantedNanoUSD), g.OthersNanoUSD
		}
		l.failed = err
		// Nothing more (or no answer): stop asking in this window; the
		// limiter refuses once what is held is spent.
		l.full = err != nil || l.granted == before
		l.fetching = nil
		close(done)
		r.mu.Unlock()
	}
}

func (r *rateLeases) ask(ctx context.Context, key *inferenceKey, slot rateSlot, want, used int64) (wire.BudgetLeaseGrant, error) {
	start := time.Unix(int64(slot.w)*60, 0).UTC()
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseTimeout)
	defer cancel()
	// The control plane reads the limit from the key and its workspace,
	// a playground's from the workspace its counter names.
	counter := fmt.Sprintf("rl/%s/%s", key.id, slot.dim)
	if key.playground {
		counter = playground.RateCounter(key.workspace, key.owner, slot.dim.String())
	}
	grants, err := r.source.Lease(lctx, r.holder, []wire.BudgetLeaseAsk{{
		Counter: counter, PeriodStart: start, WantNanoUSD: want, UsedNanoUSD: used,
	}})
	if err != nil {
		return wire.BudgetLeaseGrant{}, err
	}
	if len(grants) != 1 {
		return wire.BudgetLeaseGrant{}, fmt.Errorf("rate lease: %d grants for one ask", len(grants))
	}
	return grants[0], nil
}

// failure is why the slot's last ask got no answer; nil when it got one
// (or none was made).
func (r *rateLeases) failure(slot rateSlot) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l := r.held[slot]; l != nil {
		return l.failed
	}
	return nil
}

// forget drops the leases of windows before w, once per window.
func (r *rateLeases) forget(w ratelimit.Window) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w <= r.swept {
		return
	}
	r.swept = w
	for s, l := range r.held {
		if s.w < w && l.fetching == nil {
			delete(r.held, s)
		}
	}
}

// remaining is what the key has left of its limit in the window as this
// plane can tell: the limit less what other planes hold and what this one
// used. It is what the x-ratelimit-remaining headers report, rather than
// what is left of this plane's current slice, which more leases extend.
func (r *rateLeases) remaining(slot rateSlot, limit, used int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var others int64
	if l := r.held[slot]; l != nil {
		others = l.others
	}
	return max(0, limit-others-used)
}
