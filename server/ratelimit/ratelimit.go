// Package ratelimit counts requests and tokens per inference key in fixed
// UTC minutes and decides whether one more request may start (DESIGN §6:
// rate limits belong to inference keys and workspace settings).
//
// It is pure: no I/O, and the clock is injected. How much of a limit this
// process may spend in a minute is asked of a Source. Local grants the whole
// limit, which is right for a single data plane; with several data planes a
// lease source hands each one a slice of the limit, so the planes together
// never admit more than the limit (peers must not multiply it by the
// replica count). See docs/rate-limits.md.
package ratelimit

import (
	"sync"
	"time"

	"github.com/google/uuid"
)

// Limits are a key's per-minute limits; 0 is no limit.
type Limits struct {
	RequestsPerMinute int64
	TokensPerMinute   int64
}

// None reports whether nothing is limited.
func (l Limits) None() bool { return l.RequestsPerMinute <= 0 && l.TokensPerMinute <= 0 }

// Window is one UTC minute, numbered from the Unix epoch. Windows are fixed
// rather than sliding so that every data plane agrees on where a minute
// starts and ends: a lease is a slice of one window's limit, which a
// sliding window has no stable name for.
type Window int64

// WindowOf is the minute t falls in.
func WindowOf(t time.Time) Window { return Window(floorDiv(t.Unix(), 60)) }

// End is the instant the window's counts are forgotten.
func (w Window) End() time.Time { return time.Unix(int64(w+1)*60, 0) }

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// Dimension is what a limit counts.
type Dimension uint8

// The two dimensions of a limit.
const (
	Requests Dimension = iota
	Tokens
)

func (d Dimension) String() string {
	if d == Tokens {
		return "tokens"
	}
	return "requests"
}

// Source says how much of a key's limit this process may spend in one
// window. The Limiter asks when a key's window opens (or its limit
// changes) and again whenever what was granted is used up, so a lease
// source can top a plane up mid-window. Allowance runs under the limiter's
// lock on the request path: it must answer from what it already holds and
// never block on the network. What it grants for one window should not
// shrink; an answer above limit is taken as limit.
type Source interface {
	Allowance(key uuid.UUID, d Dimension, limit int64, w Window) int64
}

// Local grants every process the whole limit: exact for one data plane.
type Local struct{}

// Allowance returns limit.
func (Local) Allowance(_ uuid.UUID, _ Dimension, limit int64, _ Window) int64 { return limit }

// Status is one dimension's state after a decision, as the
// x-ratelimit-*-requests and -tokens headers report it.
type Status struct {
	// Limit is the per-minute limit; 0 means the dimension is not limited
	// and the rest is meaningless.
	Limit int64
	// Remaining is what this process may still admit in the window.
	Remaining int64
	// Reset is how long until the dimension is back to its full limit: 0
	// when nothing was spent in the window yet.
	Reset time.Duration
}

// Decision is the answer to Admit.
type Decision struct {
	Allowed bool
	// Exceeded is the dimension that refused the request (when !Allowed).
	Exceeded Dimension
	// RetryAfter is how long until the window frees (when !Allowed).
	RetryAfter       time.Duration
	Requests, Tokens Status
}

// Limiter holds the counts of every limited key. It is safe for concurrent
// use; keys are spread over shards so requests of different keys rarely
// wait for each other.
type Limiter struct {
	source Source
	now    func() time.Time
	shards [shardCount]shard
}

const shardCount = 64

type shard struct {
	mu   sync.Mutex
	keys map[uuid.UUID]*counts
}

// counts are one key's spending in its current window. The map keeps one
// entry per limited key this process has served, a few dozen bytes each;
// a key's entry is reused when its next window opens.
type counts struct {
	window           Window
	requests, tokens meter
}

type meter struct {
	used int64
	// allowance is what the source granted for window and limit; -1 when
	// it must be asked.
	allowance int64
	limit     int64
}

// New returns a limiter that takes allowances from source (Local when nil)
// and reads the time from now (time.Now when nil).
func New(source Source, now func() time.Time) *Limiter {
	if source == nil {
		source = Local{}
	}
	if now == nil {
		now = time.Now
	}
	l := &Limiter{source: source, now: now}
	for i := range l.shards {
		l.shards[i].keys = map[uuid.UUID]*counts{}
	}
	return l
}

// Admit decides whether key may start one more request under lim, and
// counts it if so. A request is admitted while the window's requests are
// under the request limit and its tokens so far under the token limit: a
// request's tokens are only known once it ends (Spend). A key without
// limits is always admitted and costs nothing.
func (l *Limiter) Admit(key uuid.UUID, lim Limits) Decision {
	if lim.None() {
		return Decision{Allowed: true}
	}
	now := l.now()
	w := WindowOf(now)
	untilEnd := w.End().Sub(now)
	s := &l.shards[key[15]%shardCount]
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.current(key, w)
	d := Decision{Allowed: true}
	switch {
	case !l.room(&c.requests, key, Requests, lim.RequestsPerMinute, w):
		d.Allowed, d.Exceeded = false, Requests
	case !l.room(&c.tokens, key, Tokens, lim.TokensPerMinute, w):
		d.Allowed, d.Exceeded = false, Tokens
	}
	if d.Allowed {
		c.requests.used++
	} else {
		d.RetryAfter = untilEnd
	}
	d.Requests = c.requests.status(lim.RequestsPerMinute, untilEnd)
	d.Tokens = c.tokens.status(lim.TokensPerMinute, untilEnd)
	return d
}

// Spend adds a finished request's tokens to key's current window. Only a
// token limit needs them.
func (l *Limiter) Spend(key uuid.UUID, lim Limits, tokens int64) {
	if lim.TokensPerMinute <= 0 || tokens <= 0 {
		return
	}
	w := WindowOf(l.now())
	s := &l.shards[key[15]%shardCount]
	s.mu.Lock()
	s.current(key, w).tokens.used += tokens
	s.mu.Unlock()
}

// current returns key's counts for window w, starting them afresh when
// the window has moved on.
func (s *shard) current(key uuid.UUID, w Window) *counts {
	c := s.keys[key]
	if c == nil {
		c = &counts{window: w, requests: fresh, tokens: fresh}
		s.keys[key] = c
	} else if c.window != w {
		*c = counts{window: w, requests: fresh, tokens: fresh}
	}
	return c
}

var fresh = meter{allowance: -1}

// room reports whether m has room for one more request under limit,
// asking the source for an allowance when it has none for this limit or
// has used it up.
func (l *Limiter) room(m *meter, key uuid.UUID, d Dimension, limit int64, w Window) bool {
	if limit <= 0 {
		return true
	}
	if m.allowance < 0 || m.limit != limit || m.used >= m.allowance {
		m.allowance, m.limit = min(max(l.source.Allowance(key, d, limit, w), 0), limit), limit
	}
	return m.used < m.allowance
}

func (m *meter) status(limit int64, untilEnd time.Duration) Status {
	if limit <= 0 {
		return Status{}
	}
	st := Status{Limit: limit, Remaining: max(m.allowance-m.used, 0)}
	if m.allowance < 0 {
		// Not asked yet (a token meter behind a refused request): only
		// the limit bounds what remains.
		st.Remaining = max(limit-m.used, 0)
	}
	if m.used > 0 {
		st.Reset = untilEnd
	}
	return st
}

// Used reports what key has spent in the current window, for a lease
// source that tops its allowance up before it runs out.
func (l *Limiter) Used(key uuid.UUID) (w Window, requests, tokens int64) {
	w = WindowOf(l.now())
	s := &l.shards[key[15]%shardCount]
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.keys[key]; c != nil && c.window == w {
		return w, c.requests.used, c.tokens.used
	}
	return w, 0, 0
}
