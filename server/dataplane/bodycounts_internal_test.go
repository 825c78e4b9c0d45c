package dataplane

import (
	"testing"

	"github.com/gw-gateway/gw/server/tokens"
)

// TestBodyCounts: each counter's count is found again, whichever of the
// kept ones it is (the inline two and the spill), and a counter never
// added is not found.
func TestBodyCounts(t *testing.T) {
	counters := []tokens.Counter{tokens.ForModel("gpt-4o"), tokens.ForModel("gpt-4"), tokens.ForModel("claude-sonnet-4")}
	var b bodyCounts
	for i, c := range counters {
		if _, ok := b.of(c); ok {
			t.Fatalf("counter %d found before it was added", i)
		}
		b.add(c, tokens.Request{Bound: int64(10 + i), Floor: int64(i)})
		for j, d := range counters[:i+1] {
			if r, ok := b.of(d); !ok || r.Bound != int64(10+j) || r.Floor != int64(j) {
				t.Fatalf("after %d added, counter %d: %+v %v", i+1, j, r, ok)
			}
		}
	}
	if b.n != 3 || len(b.spill) != 1 {
		t.Fatalf("kept %d, spilled %d; want 3 and 1", b.n, len(b.spill))
	}
}
