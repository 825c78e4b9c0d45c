package ratelimit_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/ratelimit"
)

// clock is a settable time source.
type clock struct{ t atomic.Int64 }

func newClock(t time.Time) *clock { c := &clock{}; c.set(t); return c }
func (c *clock) set(t time.Time)  { c.t.Store(t.UnixNano()) }
func (c *clock) now() time.Time   { return time.Unix(0, c.t.Load()).UTC() }

// start is 15 s into a UTC minute.
var start = time.Date(2026, 11, 23, 10, 0, 15, 0, time.UTC)

// step is one thing that happens to a key: a request (admit) or the end of
// one (spend), at an offset from start.
type step struct {
	at     time.Duration
	spend  int64 // > 0: spend these tokens instead of admitting
	allow  bool
	reqRem int64
	tokRem int64
	reset  time.Duration // of the refusing or requests dimension
	retry  time.Duration
}

func TestLimiter(t *testing.T) {
	cases := []struct {
		name  string
		lim   ratelimit.Limits
		steps []step
	}{
		{"requests within a minute", ratelimit.Limits{RequestsPerMinute: 2}, []step{
			{at: 0, allow: true, reqRem: 1, reset: 45 * time.Second},
			{at: time.Second, allow: true, reqRem: 0, reset: 44 * time.Second},
			{at: 2 * time.Second, allow: false, reqRem: 0, reset: 43 * time.Second, retry: 43 * time.Second},
			// The next UTC minute starts afresh.
			{at: 45 * time.Second, allow: true, reqRem: 1, reset: 60 * time.Second},
		}},
		{"tokens admit while under the limit", ratelimit.Limits{TokensPerMinute: 100}, []step{
			{at: 0, allow: true, tokRem: 100},
			{at: time.Second, spend: 99},
			// 99 < 100: admitted, and may overshoot.
			{at: 2 * time.Second, allow: true, tokRem: 1},
			{at: 3 * time.Second, spend: 50},
			{at: 4 * time.Second, allow: false, tokRem: 0, reset: 41 * time.Second, retry: 41 * time.Second},
			{at: 46 * time.Second, allow: true, tokRem: 100},
		}},
		{"either dimension refuses", ratelimit.Limits{RequestsPerMinute: 5, TokensPerMinute: 10}, []step{
			{at: 0, allow: true, reqRem: 4, tokRem: 10, reset: 45 * time.Second},
			{at: 0, spend: 10},
			{at: time.Second, allow: false, reqRem: 4, tokRem: 0, reset: 44 * time.Second, retry: 44 * time.Second},
		}},
		{"refused requests are not counted", ratelimit.Limits{RequestsPerMinute: 1}, []step{
			{at: 0, allow: true, reqRem: 0, reset: 45 * time.Second},
			{at: 0, allow: false, reqRem: 0, reset: 45 * time.Second, retry: 45 * time.Second},
			{at: 0, allow: false, reqRem: 0, reset: 45 * time.Second, retry: 45 * time.Second},
			{at: 45 * time.Second, allow: true, reqRem: 0, reset: 60 * time.Second},
		}},
		{"no limits", ratelimit.Limits{}, []step{
			{at: 0, allow: true}, {at: 0, spend: 1 << 40}, {at: 0, allow: true},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock(start)
			l := ratelimit.New(nil, c.now)
			key := uuid.New()
			for i, s := range tc.steps {
				c.set(start.Add(s.at))
				if s.spend > 0 {
					l.Spend(key, tc.lim, s.spend)
					continue
				}
				d := l.Admit(key, tc.lim)
				if d.Allowed != s.allow || d.Requests.Remaining != s.reqRem || d.Tokens.Remaining != s.tokRem || d.RetryAfter != s.retry {
					t.Fatalf("step %d: %+v, want allow %v, remaining %d requests %d tokens, retry %v", i, d, s.allow, s.reqRem, s.tokRem, s.retry)
				}
				if d.Requests.Limit != tc.lim.RequestsPerMinute || d.Tokens.Limit != tc.lim.TokensPerMinute {
					t.Fatalf("step %d: limits %+v", i, d)
				}
				reset := d.Requests.Reset
				if !d.Allowed && d.Exceeded == ratelimit.Tokens {
					reset = d.Tokens.Reset
				}
				if reset != s.reset {
					t.Fatalf("step %d: reset %v, want %v", i, reset, s.reset)
				}
			}
		})
	}
}

func TestLimiterKeysAreSeparate(t *testing.T) {
	l := ratelimit.New(nil, newClock(start).now)
	lim := ratelimit.Limits{RequestsPerMinute: 1}
	a, b := uuid.New(), uuid.New()
	if !l.Admit(a, lim).Allowed || !l.Admit(b, lim).Allowed || l.Admit(a, lim).Allowed {
		t.Fatal("one key's requests counted against another")
	}
}

// A limit lowered mid-minute applies at once to what was already spent.
func TestLimiterLimitChanges(t *testing.T) {
	l := ratelimit.New(nil, newClock(start).now)
	key := uuid.New()
	for range 3 {
		l.Admit(key, ratelimit.Limits{RequestsPerMinute: 10})
	}
	if d := l.Admit(key, ratelimit.Limits{RequestsPerMinute: 3}); d.Allowed || d.Requests.Limit != 3 {
		t.Fatalf("lowered limit: %+v", d)
	}
	if d := l.Admit(key, ratelimit.Limits{RequestsPerMinute: 5}); !d.Allowed || d.Requests.Remaining != 1 {
		t.Fatalf("raised limit: %+v", d)
	}
}

// lease grants a fixed slice per window and records what it was asked.
type lease struct {
	mu    sync.Mutex
	slice int64
	asked []ratelimit.Window
}

func (s *lease) Allowance(_ uuid.UUID, _ ratelimit.Dimension, _ int64, w ratelimit.Window) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, w)
	return s.slice
}

// A lease source's slice bounds this process, not the limit: two planes
// each granted half of 4 admit 4 between them.
func TestLimiterLeaseSource(t *testing.T) {
	c := newClock(start)
	key := uuid.New()
	lim := ratelimit.Limits{RequestsPerMinute: 4}
	src := &lease{slice: 2}
	planes := []*ratelimit.Limiter{ratelimit.New(src, c.now), ratelimit.New(src, c.now)}
	admitted := 0
	for range 5 {
		for _, p := range planes {
			if d := p.Admit(key, lim); d.Allowed {
				admitted++
			} else if d.Requests.Limit != 4 || d.Requests.Remaining != 0 {
				t.Fatalf("refusal: %+v", d)
			}
		}
	}
	if admitted != 4 {
		t.Fatalf("admitted %d across two planes, want 4", admitted)
	}
	// Once used up, the source is asked again (it may top up).
	if len(src.asked) < 4 || src.asked[0] != ratelimit.WindowOf(start) {
		t.Fatalf("asked %v", src.asked)
	}
	// A source granting more than the limit is held to the limit.
	big := ratelimit.New(&lease{slice: 100}, c.now)
	for range 4 {
		big.Admit(key, lim)
	}
	if big.Admit(key, lim).Allowed {
		t.Fatal("an allowance above the limit was honored")
	}
}

func TestLimiterConcurrent(t *testing.T) {
	l := ratelimit.New(nil, newClock(start).now)
	key := uuid.New()
	lim := ratelimit.Limits{RequestsPerMinute: 1000}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 500 {
				if l.Admit(key, lim).Allowed {
					admitted.Add(1)
				}
				l.Spend(key, lim, 1)
			}
		})
	}
	wg.Wait()
	if admitted.Load() != 1000 {
		t.Fatalf("admitted %d of 4000 under a limit of 1000", admitted.Load())
	}
}

func TestWindowOf(t *testing.T) {
	w := ratelimit.WindowOf(start)
	if !w.End().Equal(time.Date(2026, 11, 23, 10, 1, 0, 0, time.UTC)) {
		t.Fatalf("end %v", w.End())
	}
	if ratelimit.WindowOf(time.Unix(-1, 0)) != -1 || ratelimit.WindowOf(time.Unix(59, 999)) != 0 {
		t.Fatal("windows are not floored minutes")
	}
}

func BenchmarkAdmit(b *testing.B) {
	c := newClock(start)
	l := ratelimit.New(nil, c.now)
	keys := make([]uuid.UUID, 1024)
	for i := range keys {
		keys[i] = uuid.New()
	}
	lim := ratelimit.Limits{RequestsPerMinute: 1 << 40, TokensPerMinute: 1 << 40}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			k := keys[i%len(keys)]
			if !l.Admit(k, lim).Allowed {
				b.Fatal("refused")
			}
			l.Spend(k, lim, 100)
			i++
		}
	})
}
