package dataplane

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/gw-gateway/gw/server/ratelimit"
)

// appendResetDuration is Duration.String of the rounded duration, byte
// for byte, for the values a reset takes and the edges of the syntax.
func TestAppendResetDuration(t *testing.T) {
	for _, d := range []time.Duration{0, 1, time.Millisecond / 2, time.Millisecond, 20 * time.Millisecond, 999 * time.Millisecond,
		999*time.Millisecond + 600*time.Microsecond, time.Second, 1500 * time.Millisecond, 44637 * time.Millisecond,
		59*time.Second + 999*time.Millisecond, time.Minute, 6 * time.Minute, 61*time.Minute + 500*time.Millisecond,
		time.Hour, 25*time.Hour + 10*time.Millisecond, -time.Second, -1500 * time.Millisecond, -3 * time.Millisecond,
		math.MaxInt64, math.MinInt64, math.MinInt64 + 1} {
		want := d.Round(time.Millisecond).String()
		if got := string(appendResetDuration(nil, d)); got != want {
			t.Errorf("%d: %q, want %q", int64(d), got, want)
		}
	}
}

func FuzzAppendResetDuration(f *testing.F) {
	for _, d := range []int64{0, 1, 499_999, 500_000, 44_637_000_000, -1_500_000_000, math.MaxInt64, math.MinInt64} {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, n int64) {
		d := time.Duration(n)
		want := d.Round(time.Millisecond).String()
		if got := string(appendResetDuration([]byte("x"), d)); got != "x"+want {
			t.Fatalf("%d: %q, want %q", n, got, "x"+want)
		}
	})
}

// Each limit a key has gets its three headers, with its own values; a
// limit of 0 gets none.
func TestSetRateHeaders(t *testing.T) {
	req := ratelimit.Status{Limit: 60, Remaining: 59, Reset: 44637 * time.Millisecond}
	tok := ratelimit.Status{Limit: 1_000_000, Remaining: 999_000, Reset: 20 * time.Millisecond}
	for _, c := range []struct {
		name     string
		req, tok ratelimit.Status
		want     map[string]string
	}{
		{"both", req, tok, map[string]string{
			"X-Ratelimit-Limit-Requests": "60", "X-Ratelimit-Remaining-Requests": "59", "X-Ratelimit-Reset-Requests": "44.637s",
			"X-Ratelimit-Limit-Tokens": "1000000", "X-Ratelimit-Remaining-Tokens": "999000", "X-Ratelimit-Reset-Tokens": "20ms"}},
		{"requests", req, ratelimit.Status{}, map[string]string{
			"X-Ratelimit-Limit-Requests": "60", "X-Ratelimit-Remaining-Requests": "59", "X-Ratelimit-Reset-Requests": "44.637s"}},
		{"tokens", ratelimit.Status{}, tok, map[string]string{
			"X-Ratelimit-Limit-Tokens": "1000000", "X-Ratelimit-Remaining-Tokens": "999000", "X-Ratelimit-Reset-Tokens": "20ms"}},
		{"none", ratelimit.Status{}, ratelimit.Status{}, map[string]string{}},
	} {
		h := http.Header{}
		setRateHeaders(h, c.req, c.tok)
		if len(h) != len(c.want) {
			t.Errorf("%s: %d headers %v, want %v", c.name, len(h), h, c.want)
		}
		for k, v := range c.want {
			if got := h[k]; len(got) != 1 || got[0] != v {
				t.Errorf("%s: %s = %q, want %q", c.name, k, got, v)
			}
		}
		// A value is its own: an Add to one header never shows in another.
		for k := range h {
			h.Add(k, "more")
		}
		for k, v := range c.want {
			if got := h[k]; len(got) != 2 || got[0] != v {
				t.Errorf("%s: after Add, %s = %q", c.name, k, got)
			}
		}
	}
}
