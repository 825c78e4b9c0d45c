package telemetry

import (
	"fmt"
	"regexp"
	"testing"
	"time"
)

// A request id gw makes keeps its documented shape and sorts by the time it
// was made, so the usage index on request ids grows at its right edge.
func TestNewRequestIDSortsByTime(t *testing.T) {
	shape := regexp.MustCompile(`^req_[0-9a-f]{24}$`)
	start := time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC)
	var ids []string
	seen := map[string]bool{}
	for ms := range 50 {
		at := start.Add(time.Duration(ms) * time.Millisecond)
		for range 200 {
			id := newRequestID(at)
			if !shape.MatchString(id) {
				t.Fatalf("id %q: want req_ and 24 hex digits", id)
			}
			if seen[id] {
				t.Fatalf("id %q made twice", id)
			}
			seen[id] = true
			ids = append(ids, id)
		}
		// Every id of a millisecond sorts after every id of the one before.
		if ms > 0 {
			prev := ids[len(ids)-400 : len(ids)-200]
			cur := ids[len(ids)-200:]
			for _, p := range prev {
				for _, c := range cur {
					if p >= c {
						t.Fatalf("id %q made a millisecond later does not sort after %q", c, p)
					}
				}
			}
		}
	}
	// The last 12 digits are random: within one millisecond each of them
	// takes more than one value (48 bits, none left constant).
	for pos := 16; pos < 28; pos++ {
		digits := map[byte]bool{}
		for _, id := range ids[:200] {
			digits[id[pos]] = true
		}
		if len(digits) < 2 {
			t.Fatalf("digit %d is the same in 200 ids of a millisecond", pos)
		}
	}
	// The first 12 digits are the time in milliseconds.
	if got, want := newRequestID(start)[4:16], fmt.Sprintf("%012x", start.UnixMilli()); got != want {
		t.Fatalf("time digits %q, want %q", got, want)
	}
}
