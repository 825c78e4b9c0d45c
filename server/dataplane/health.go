package dataplane

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/providers"
)

// Routing learns from failures (issue 19): a target, a credential and a
// model together, that answered 429 is not called again until its
// Retry-After has passed (with no header, for an exponential backoff), and
// one that keeps failing with 5xx or timeouts has its circuit opened for a
// while, then half-opened for a single probe. A skipped target shows in
// the attempt chain with failure cooling_down, and the request moves on
// to its fallbacks as if the target had failed that way.
//
// The book is read on every attempt, so a target with no failure costs a
// read lock and a map miss, and nothing is allocated for it; state exists
// only for targets that failed. It is per process and outlives bundles: a
// new bundle does not make a rate-limited upstream ready again.

// Health tuning. The backoff starts at a second and doubles to a minute;
// five consecutive failures open a circuit for thirty seconds.
const (
	backoffFirst     = time.Second
	backoffMax       = time.Minute
	retryAfterMax    = 10 * time.Minute
	circuitThreshold = 5
	circuitOpenFor   = 30 * time.Second
)

// Target states, as the metric and gw status show them.
const (
	targetHealthy     = "healthy"
	targetCoolingDown = "cooling_down"
	targetCircuitOpen = "circuit_open"
	targetHalfOpen    = "half_open"
)

// errCoolingDown is the cause of a skipped attempt.
var errCoolingDown = errors.New("the target is cooling down after failures")

type targetKey struct {
	cred  uuid.UUID
	model string
}

// targetHealth is a failed target's state.
type targetHealth struct {
	mu sync.Mutex
	// provider is kept for the metric's label.
	provider string
	// coolUntil ends a rate limit's pause; backoff is the last pause
	// without a Retry-After, which the next doubles.
	coolUntil time.Time
	backoff   time.Duration
	// failures counts consecutive 5xx and timeouts; openUntil ends an
	// open circuit, after which one probe (probeUntil, the probe's own
	// deadline should it never report) is let through.
	failures   int
	openUntil  time.Time
	probeUntil time.Time
}

// healthBook holds the targets' states.
type healthBook struct {
	mu      sync.RWMutex
	targets map[targetKey]*targetHealth
	// observe reports a target's state as it changes (the metric).
	observe func(model, provider, credential, state string)
	// off: nothing is learned (Options.ForgetFailures).
	off bool
}

func newHealthBook(observe func(model, provider, credential, state string)) *healthBook {
	if observe == nil {
		observe = func(string, string, string, string) {}
	}
	return &healthBook{targets: map[targetKey]*targetHealth{}, observe: observe}
}

func (b *healthBook) get(k targetKey) *targetHealth {
	b.mu.RLock()
	h := b.targets[k]
	b.mu.RUnlock()
	return h
}

// admit says whether the target may be called now; when not, the
// failure to record (rate_limited while a 429's pause lasts, unavailable
// while the circuit is open) with the seconds left as its Retry-After.
func (b *healthBook) admit(cred uuid.UUID, model string, now time.Time) *providers.Error {
	h := b.get(targetKey{cred, model})
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch state, probeOut := h.state(now); {
	case state == targetCoolingDown:
		return &providers.Error{Kind: providers.RateLimited, Status: 429, RetryAfter: secondsLeft(h.coolUntil, now), Cause: errCoolingDown}
	case state == targetCircuitOpen:
		return &providers.Error{Kind: providers.Unavailable, Status: 503, RetryAfter: secondsLeft(h.openUntil, now), Cause: errCoolingDown}
	case state == targetHalfOpen && probeOut:
		// The one probe is out.
		return &providers.Error{Kind: providers.Unavailable, Status: 503, RetryAfter: "1", Cause: errCoolingDown}
	case state == targetHalfOpen:
		h.probeUntil = now.Add(circuitOpenFor)
		b.observe(model, h.provider, cred.String(), targetHalfOpen)
	}
	return nil
}

// state is the target's state now (empty when healthy) and, half open,
// whether its one probe is out. The caller holds h.mu.
func (h *targetHealth) state(now time.Time) (state string, probeOut bool) {
	switch {
	case now.Before(h.coolUntil):
		return targetCoolingDown, false
	case now.Before(h.openUntil):
		return targetCircuitOpen, false
	case h.failures >= circuitThreshold:
		return targetHalfOpen, now.Before(h.probeUntil)
	}
	return "", false
}

// cooling reports whether admit would refuse the target now, without
// taking the half-open probe.
func (b *healthBook) cooling(cred uuid.UUID, model string, now time.Time) bool {
	h := b.get(targetKey{cred, model})
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	state, probeOut := h.state(now)
	return state == targetCoolingDown || state == targetCircuitOpen || probeOut
}

// record learns from an attempt's end: f nil for an answer.
func (b *healthBook) record(cred uuid.UUID, model, provider string, f *providers.Error, now time.Time) {
	if b.off {
		return
	}
	k := targetKey{cred, model}
	h := b.get(k)
	if f == nil || (f.Kind != providers.RateLimited && f.Kind != providers.Unavailable && f.Kind != providers.Timeout) ||
		errors.Is(f, errCoolingDown) || errors.Is(f, errShuttingDown) {
		if h != nil && f == nil {
			b.forget(k, h, cred, model)
		}
		return
	}
	if h == nil {
		b.mu.Lock()
		if h = b.targets[k]; h == nil {
			h = &targetHealth{provider: provider}
			b.targets[k] = h
		}
		b.mu.Unlock()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if f.Kind == providers.RateLimited {
		pause, ok := retryAfter(f.RetryAfter)
		if !ok {
			h.backoff = min(max(h.backoff*2, backoffFirst), backoffMax)
			pause = h.backoff
		}
		h.coolUntil = now.Add(pause)
		b.observe(model, provider, cred.String(), targetCoolingDown)
		return
	}
	h.failures++
	if h.failures >= circuitThreshold {
		h.openUntil, h.probeUntil = now.Add(circuitOpenFor), time.Time{}
		b.observe(model, provider, cred.String(), targetCircuitOpen)
	}
}

// forget drops a target that answered: it is healthy again.
func (b *healthBook) forget(k targetKey, h *targetHealth, cred uuid.UUID, model string) {
	b.mu.Lock()
	delete(b.targets, k)
	b.mu.Unlock()
	b.observe(model, h.provider, cred.String(), targetHealthy)
}

// TargetHealth counts the upstream targets (credential and model) that
// are cooling down after a 429, whose circuit is open, and half open, as
// /readyz reports them for gw status.
func (p *Plane) TargetHealth() map[string]int { return p.health.counts(p.now()) }

// counts counts the targets in each state other than healthy.
func (b *healthBook) counts(now time.Time) map[string]int {
	out := map[string]int{targetCoolingDown: 0, targetCircuitOpen: 0, targetHalfOpen: 0}
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, h := range b.targets {
		h.mu.Lock()
		if state, _ := h.state(now); state != "" {
			out[state]++
		}
		h.mu.Unlock()
	}
	return out
}

// retryAfter reads a Retry-After in seconds (an HTTP date is rare from
// model APIs and is treated as absent).
func retryAfter(v string) (time.Duration, bool) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, false
	}
	return min(time.Duration(n)*time.Second, retryAfterMax), true
}

func secondsLeft(until, now time.Time) string {
	return strconv.Itoa(max(int((until.Sub(now)+time.Second-1)/time.Second), 1))
}
