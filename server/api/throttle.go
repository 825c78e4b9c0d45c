package api

import (
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gw-gateway/gw/server/store"
)

// Sign-in throttling (issue 10, item 2): password guessing is bounded per
// account and per client address. The state is in memory, per process:
// replicas each count on their own, which multiplies the allowance by the
// number of replicas but never lets it grow without bound.
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
	// throttleMaxEntries bounds the table's memory however many
	// addresses and emails a stranger makes up.
	throttleMaxEntries = 100_000
)

// throttle counts consecutive failures per key. An attempt reserves its
// place before the password is checked, so concurrent guesses cannot slip
// past the limit while the checks run.
type throttle struct {
	mu    sync.Mutex
	limit int
	// keepOnSuccess: a success does not clear the count. For addresses:
	// signing in to one's own account must not buy more guesses at others.
	keepOnSuccess bool
	entries       map[string]*throttleEntry
	now           func() time.Time
}

type throttleEntry struct {
	failures, inFlight int
	first              time.Time
	lockedUntil        time.Time
}

func newThrottle(limit int, keepOnSuccess bool) *throttle {
	return &throttle{limit: limit, keepOnSuccess: keepOnSuccess, entries: map[string]*throttleEntry{}, now: time.Now}
}

// begin reserves an attempt for key. It answers the time to wait when the
// key is locked (or would be, counting the attempts already running).
func (t *throttle) begin(key string) (wait time.Duration, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	e := t.entries[key]
	if e != nil && e.inFlight == 0 && e.lockedUntil.IsZero() && now.Sub(e.first) > throttleWindow {
		delete(t.entries, key)
		e = nil
	}
	if e == nil {
		if len(t.entries) >= throttleMaxEntries {
			t.sweep(now)
		}
		e = &throttleEntry{first: now}
		t.entries[key] = e
	}
	if now.Before(e.lockedUntil) {
		return e.lockedUntil.Sub(now), false
	}
	if !e.lockedUntil.IsZero() {
		// The lockout is over: a fresh run of attempts begins.
		*e = throttleEntry{first: now}
	}
	if e.failures+e.inFlight >= t.limit {
		return time.Second, false
	}
	e.inFlight++
	return 0, true
}

// end settles an attempt begun with begin. A success clears the key; a
// failure counts, and reports whether it locked the key (just now).
func (t *throttle) end(key string, success bool) (locked bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.entries[key]
	if e == nil {
		return false
	}
	e.inFlight--
	if success && t.keepOnSuccess {
		return false
	}
	if success {
		if e.inFlight == 0 {
			delete(t.entries, key)
		} else {
			e.failures = 0
		}
		return false
	}
	now := t.now()
	e.failures++
	if e.failures >= t.limit && e.lockedUntil.IsZero() {
		e.lockedUntil = now.Add(throttleLockout)
		return true
	}
	return false
}

// cancel gives back a reserved attempt that was never decided (the
// request failed for another reason).
func (t *throttle) cancel(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.entries[key]; e != nil {
		e.inFlight--
	}
}

// sweep drops entries whose window or lockout has passed; called with mu.
func (t *throttle) sweep(now time.Time) {
	for k, e := range t.entries {
		if e.inFlight == 0 && now.After(e.lockedUntil) && now.Sub(e.first) > throttleWindow {
			delete(t.entries, k)
		}
	}
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
	accounts, addresses *throttle
}

func newSignInGuard(addressLimit int) *signInGuard {
	return &signInGuard{accounts: newThrottle(accountFailureLimit, false), addresses: newThrottle(addressLimit, true)}
}

// attempt runs try under the guard for account ("" for none) from the
// request's address. try reports whether the attempt succeeded; an error
// from it settles nothing. When the attempt locks the account or the
// address, an audit entry says so.
func (s *Server) guardAttempt(r *Request, g *signInGuard, action, account string, try func() (bool, error)) error {
	addr := clientAddress(r.R)
	if wait, ok := g.addresses.begin(addr); !ok {
		return errThrottled(wait)
	}
	if account != "" {
		if wait, ok := g.accounts.begin(account); !ok {
			g.addresses.cancel(addr)
			return errThrottled(wait)
		}
	}
	ok, err := try()
	if err != nil {
		g.addresses.cancel(addr)
		if account != "" {
			g.accounts.cancel(account)
		}
		return err
	}
	var locked []string
	if g.addresses.end(addr, ok) {
		locked = append(locked, "client_address")
	}
	if account != "" && g.accounts.end(account, ok) {
		locked = append(locked, "account")
	}
	if len(locked) > 0 {
		details := map[string]any{"locked": locked, "client_address": addr,
			"retry_after_seconds": int(throttleLockout.Seconds())}
		if account != "" {
			details["email"] = account
		}
		aerr := s.store.InTx(r.ctx, func(tx *store.Store) error {
			return r.audit(tx, auditEntry{Action: action, TargetType: "client", TargetID: addr, Details: details})
		})
		if aerr != nil {
			s.log.Error("audit of a throttled sign-in", "request_id", r.ID, "error", aerr)
		}
	}
	return nil
}
