package telemetry

import (
	"slices"
	"sync"
)

// maxLabels is the most labels a cached vector has.
const maxLabels = 5

// children keeps a metric vector's children by their label values. A
// vector's WithLabelValues checks each value is UTF-8, hashes them byte by
// byte and looks the child up under a lock, every time: seven times for a
// request that is answered (issue 33: "metrics children resolved once, not
// per request"). A child once made stays in its vector (gw deletes no
// series), so the one kept here is always the vector's own.
type children[M any] struct {
	with func(...string) M
	mu   sync.RWMutex
	m    map[[maxLabels]string]M
}

func newChildren[M any](with func(...string) M) *children[M] {
	return &children[M]{with: with, m: map[[maxLabels]string]M{}}
}

// of returns the child with the label values, made by the vector the first
// time.
func (c *children[M]) of(values ...string) M {
	if len(values) > maxLabels {
		return c.with(slices.Clone(values)...) // not cached (no vector has as many)
	}
	var k [maxLabels]string
	copy(k[:], values)
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return v
	}
	// The vector keeps the slice it is given: a copy, so that values
	// stays on the caller's stack. Two requests that miss at once are
	// given the same child by the vector.
	v = c.with(slices.Clone(values)...)
	c.mu.Lock()
	c.m[k] = v
	c.mu.Unlock()
	return v
}
