package api

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun/dialect"

	"github.com/gw-gateway/gw/server/store"
)

// Sign-in throttling (issue 10, item 2): password guessing is bounded per
// account and per client address. On PostgreSQL the counts are in the
// database, which every control-plane replica shares, so N replicas give an
// attacker one allowance, not N (issue 17); SQLite, one process, counts in
// memory.
const (
	// throttleWindow is how long a run of failures counts.
	throttleWindow = 15 * time.Minute
	// accountFailureLimit failures in a row for one account lock it.
	accountFailureLimit = 10
	// addressFailureLimit is higher: many people may share one address
	// (an office, a NAT), and each has their own account limit.
	addressFailureLimit = 50
	// throttleLockout is how long a locked account or address waits.
	throttleLockout = 15 * time.Minute
	// inviteFailureLimit: unknown invitation tokens from one address.
	// People get one invitation link each; ten misses are not typos.
	inviteFailureLimit = 10
	// throttleMaxEntries bounds the in-memory table however many
	// addresses and emails a stranger makes up.
	throttleMaxEntries = 100_000
	// attemptLapse is how long an attempt begun and never settled counts
	// (its replica died mid-check): longer than any check takes (the
	// password gate waits at most 10 s).
	attemptLapse = time.Minute
	// throttleSweepEvery paces the deletion of spent rows in the database.
	throttleSweepEvery = time.Minute
)

// attemptCounter counts consecutive failures per subject (an email, an
// address). An attempt reserves its place before it is checked (begin),
// so concurrent guesses cannot slip past the limit while the checks run,
// and is then settled (end) or given back (cancel).
type attemptCounter interface {
	// begin reserves an attempt, or answers the time to wait when the
	// subject is locked (or would be, counting the attempts running).
	begin(ctx context.Context, subject string) (wait time.Duration, ok bool, err error)
	// end settles an attempt: a success clears the count (unless the
	// counter keeps it), a failure counts and reports whether it locked
	// the subject just now.
	end(ctx context.Context, subject string, success bool) (locked bool, err error)
	// cancel gives back an attempt that was never decided.
	cancel(ctx context.Context, subject string) error
}

// throttleRule is what a counter enforces.
type throttleRule struct {
	limit int
	// keepOnSuccess: a success does not clear the count. For addresses:
	// signing in to one's own account must not buy more guesses at others.
	keepOnSuccess bool
}

// throttleEntry is one subject's run of attempts. Its methods are the
// rules; the counters only keep entries, in memory or in the database.
type throttleEntry struct {
	failures, inFlight int
	inFlightUntil      time.Time
	first              time.Time
	lockedUntil        time.Time
}

func (e *throttleEntry) begin(now time.Time, r throttleRule) (time.Duration, bool) {
	if e.inFlight > 0 && now.After(e.inFlightUntil) {
		// Attempts begun by a replica that died are not waited for.
		e.inFlight = 0
	}
	if e.inFlight == 0 && e.lockedUntil.IsZero() && now.Sub(e.first) > throttleWindow {
		*e = throttleEntry{first: now}
	}
	if now.Before(e.lockedUntil) {
		return e.lockedUntil.Sub(now), false
	}
	if !e.lockedUntil.IsZero() {
		// The lockout is over: a fresh run of attempts begins.
		*e = throttleEntry{first: now}
	}
	if e.failures+e.inFlight >= r.limit {
		return time.Second, false
	}
	e.inFlight++
	e.inFlightUntil = now.Add(attemptLapse)
	return 0, true
}

// end settles an attempt; drop says the entry holds nothing any more.
func (e *throttleEntry) end(now time.Time, r throttleRule, success bool) (locked, drop bool) {
	e.cancel()
	switch {
	case success && r.keepOnSuccess:
		return false, false
	case success && e.inFlight == 0:
		return false, true
	case success:
		e.failures = 0
		return false, false
	}
	e.failures++
	if e.failures >= r.limit && e.lockedUntil.IsZero() {
		e.lockedUntil = now.Add(throttleLockout)
		return true, false
	}
	return false, false
}

func (e *throttleEntry) cancel() {
	if e.inFlight > 0 {
		e.inFlight--
	}
}

// spent reports whether the entry can be forgotten.
func (e *throttleEntry) spent(now time.Time) bool {
	return (e.inFlight == 0 || now.After(e.inFlightUntil)) && now.After(e.lockedUntil) && now.Sub(e.first) > throttleWindow
}

// memoryThrottle keeps the entries in this process.
type memoryThrottle struct {
	rule    throttleRule
	mu      sync.Mutex
	entries map[string]*throttleEntry
	now     func() time.Time
}

func newMemoryThrottle(r throttleRule) *memoryThrottle {
	return &memoryThrottle{rule: r, entries: map[string]*throttleEntry{}, now: time.Now}
}

func (t *memoryThrottle) begin(_ context.Context, subject string) (time.Duration, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	e := t.entries[subject]
	if e == nil {
		if len(t.entries) >= throttleMaxEntries {
			t.sweep(now)
		}
		e = &throttleEntry{first: now}
		t.entries[subject] = e
	}
	wait, ok := e.begin(now, t.rule)
	return wait, ok, nil
}

func (t *memoryThrottle) end(_ context.Context, subject string, success bool) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.entries[subject]
	if e == nil {
		return false, nil
	}
	locked, drop := e.end(t.now(), t.rule, success)
	if drop {
		delete(t.entries, subject)
	}
	return locked, nil
}

func (t *memoryThrottle) cancel(_ context.Context, subject string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.entries[subject]; e != nil {
		e.cancel()
	}
	return nil
}

// sweep drops entries whose window or lockout has passed; called with mu.
func (t *memoryThrottle) sweep(now time.Time) {
	for k, e := range t.entries {
		if e.spent(now) {
			delete(t.entries, k)
		}
	}
}

// sharedThrottle keeps the entries in the database (auth_throttles), one
// row per subject, each change under the row's lock: what replicas on one
// PostgreSQL share.
type sharedThrottle struct {
	store *store.Store
	name  string
	rule  throttleRule
	now   func() time.Time
	// lastSweep is when spent rows were last deleted (unix nanoseconds).
	lastSweep atomic.Int64
}

func (t *sharedThrottle) update(ctx context.Context, subject string, fn func(e *throttleEntry, now time.Time) (drop bool)) error {
	now := t.now().UTC()
	err := t.store.UpdateAuthThrottle(ctx, t.name, subject, now, func(row *store.AuthThrottle) bool {
		e := throttleEntry{failures: row.Failures, inFlight: row.InFlight, inFlightUntil: row.InFlightUntil, first: row.FirstAt}
		if row.LockedUntil != nil {
			e.lockedUntil = *row.LockedUntil
		}
		drop := fn(&e, now)
		row.Failures, row.InFlight, row.InFlightUntil, row.FirstAt, row.LockedUntil = e.failures, e.inFlight, e.inFlightUntil, e.first, nil
		if !e.lockedUntil.IsZero() {
			row.LockedUntil = &e.lockedUntil
		}
		return drop
	})
	if err != nil {
		return fmt.Errorf("throttle %s: %w", t.name, err)
	}
	return nil
}

func (t *sharedThrottle) begin(ctx context.Context, subject string) (wait time.Duration, ok bool, err error) {
	t.sweep(ctx)
	err = t.update(ctx, subject, func(e *throttleEntry, now time.Time) bool {
		wait, ok = e.begin(now, t.rule)
		return false
	})
	return wait, ok, err
}

func (t *sharedThrottle) end(ctx context.Context, subject string, success bool) (locked bool, err error) {
	err = t.update(ctx, subject, func(e *throttleEntry, now time.Time) bool {
		var drop bool
		locked, drop = e.end(now, t.rule, success)
		return drop
	})
	return locked, err
}

func (t *sharedThrottle) cancel(ctx context.Context, subject string) error {
	return t.update(ctx, subject, func(e *throttleEntry, _ time.Time) bool {
		e.cancel()
		return false
	})
}

// sweep deletes spent rows, at most once a minute per process: what the
// in-memory table's bound does for memory, this does for the table.
func (t *sharedThrottle) sweep(ctx context.Context) {
	now := t.now()
	last := t.lastSweep.Load()
	if now.UnixNano()-last < int64(throttleSweepEvery) || !t.lastSweep.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	// A failed sweep costs only space; the next one catches up.
	_, _ = t.store.DeleteStaleAuthThrottles(ctx, now.Add(-throttleWindow), now)
}

// clientAddress is the connection's address, without the port. Headers
// such as X-Forwarded-For are not trusted: anyone can send them.
func clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// errThrottled is the 429 a throttled attempt gets.
func errThrottled(wait time.Duration) *Error {
	e := errorf(http.StatusTooManyRequests, "too many failed attempts; try again in %s", roundUp(wait))
	e.RetryAfter = wait
	return e
}

func roundUp(d time.Duration) string {
	secs := int(math.Ceil(d.Seconds()))
	if secs < 120 {
		return strconv.Itoa(secs) + " seconds"
	}
	return strconv.Itoa((secs+59)/60) + " minutes"
}

// signInGuard throttles one kind of attempt per account and per address.
type signInGuard struct {
	accounts, addresses attemptCounter
}

// newSignInGuard counts in the database on PostgreSQL, where replicas
// share it, and in memory on SQLite.
func newSignInGuard(st *store.Store, name string, addressLimit int) *signInGuard {
	accounts := throttleRule{limit: accountFailureLimit}
	addresses := throttleRule{limit: addressLimit, keepOnSuccess: true}
	if st.DB().Dialect().Name() != dialect.PG {
		return &signInGuard{accounts: newMemoryThrottle(accounts), addresses: newMemoryThrottle(addresses)}
	}
	return &signInGuard{
		accounts:  &sharedThrottle{store: st, name: name + ".account", rule: accounts, now: time.Now},
		addresses: &sharedThrottle{store: st, name: name + ".address", rule: addresses, now: time.Now},
	}
}

// guardAttempt runs try under the guard for account ("" for none) from the
// request's address. try reports whether the attempt succeeded; an error
// from it settles nothing. When the attempt locks the account or the
// address, an audit entry says so.
func (s *Server) guardAttempt(r *Request, g *signInGuard, action, account string, try func() (bool, error)) error {
	addr := clientAddress(r.R)
	if wait, ok, err := g.addresses.begin(r.ctx, addr); err != nil {
		return err
	} else if !ok {
		return errThrottled(wait)
	}
	if account != "" {
		wait, ok, err := g.accounts.begin(r.ctx, account)
		if err != nil || !ok {
			s.settleLog(r, g.addresses.cancel(r.ctx, addr))
			if err != nil {
				return err
			}
			return errThrottled(wait)
		}
	}
	ok, err := try()
	if err != nil {
		s.settleLog(r, g.addresses.cancel(r.ctx, addr))
		if account != "" {
			s.settleLog(r, g.accounts.cancel(r.ctx, account))
		}
		return err
	}
	s.settleAttempt(r, g, action, addr, account, ok)
	return nil
}

// settleAttempt counts an attempt's outcome against the address (and
// account) and audits a lockout it causes. It cannot fail the request:
// the attempt was made.
func (s *Server) settleAttempt(r *Request, g *signInGuard, action, addr, account string, ok bool) {
	var locked []string
	if l, err := g.addresses.end(r.ctx, addr, ok); err != nil {
		s.settleLog(r, err)
	} else if l {
		locked = append(locked, "client_address")
	}
	if account != "" {
		if l, err := g.accounts.end(r.ctx, account, ok); err != nil {
			s.settleLog(r, err)
		} else if l {
			locked = append(locked, "account")
		}
	}
	if len(locked) == 0 {
		return
	}
	details := map[string]any{"locked": locked, "client_address": addr,
		"retry_after_seconds": int(throttleLockout.Seconds())}
	if account != "" {
		details["email"] = account
	}
	// One row: no transaction needed, and none to roll back with the
	// refused attempt.
	if err := r.audit(s.store, auditEntry{Action: action, TargetType: "client", TargetID: addr, Details: details}); err != nil {
		s.log.Error("audit of a throttled sign-in", "request_id", r.ID, "error", err)
	}
}

// settleLog logs a failure to settle an attempt already made: the attempt
// stands (failing the request would not undo it), and a reservation left
// behind lapses after attemptLapse.
func (s *Server) settleLog(r *Request, err error) {
	if err != nil {
		s.log.Error("settling a throttled attempt", "request_id", r.ID, "error", err)
	}
}
