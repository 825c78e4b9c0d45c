package dataplane

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
)

// After a burst of large bodies the process gives the memory back at
// once (the runtime alone would keep it for minutes); small bodies never
// cause a collection.
func TestBodyBudgetReturnsMemoryAfterLargeBodies(t *testing.T) {
	b := newBodyBudget(64<<20, 32<<20, 1<<20)
	var returned atomic.Int32
	b.returnMemory = func() { returned.Add(1) }
	a, c := uuid.New(), uuid.New()

	for range 1000 {
		if refusal := b.reserve(a, 4<<10); refusal != nil {
			t.Fatal("a small body refused")
		}
		b.release(a, 4<<10)
	}
	if b.pending || returned.Load() != 0 {
		t.Fatal("small bodies caused a memory return")
	}

	if b.reserve(a, 10<<20) != nil || b.reserve(c, 10<<20) != nil {
		t.Fatal("large bodies within the shares refused")
	}
	if b.reserve(a, 30<<20) != errKeyOverloaded {
		t.Fatal("a key's share was exceeded")
	}
	if b.reserve(c, 20<<20) != nil || b.reserve(uuid.New(), 30<<20) != errOverloaded {
		t.Fatal("the process budget was exceeded")
	}
	b.release(a, 10<<20)
	if b.pending {
		t.Fatal("memory returned while bodies are in flight")
	}
	b.release(c, 30<<20)
	if all, ofKey := b.inFlight(c); all != 0 || ofKey != 0 {
		t.Fatalf("%d bytes (%d of the key's) still held", all, ofKey)
	}
	deadline := time.Now().Add(5 * time.Second)
	for returned.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the memory of large bodies was not returned")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A share is never smaller than the largest body, nor the budget than a
// share: such a body would be refused for ever.
func TestBodyBudgetFitsTheLargestBody(t *testing.T) {
	b := newBodyBudget(8<<20, 4<<20, 32<<20)
	if b.perKey != 32<<20 || b.limit != 32<<20 {
		t.Fatalf("limit %d, share %d", b.limit, b.perKey)
	}
	if d := newBodyBudget(0, 0, DefaultMaxRequestBytes); d.limit != DefaultBodyBytesInFlight || d.perKey != DefaultKeyBodyBytesInFlight {
		t.Fatalf("defaults: limit %d, share %d", d.limit, d.perKey)
	}
}
