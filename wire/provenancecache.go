package wire

import (
	"sync/atomic"
	"unsafe"
)

// ProvenanceCache writes usage events' JSON as AppendUsageEventInJSON
// does, keeping the JSON of the provenances it wrote: an event whose
// provenance is one of them is given those bytes instead of having them
// written again. A data plane's events of one key on one bundle name one
// provenance, about half of each event's bytes (issue 33, eighteenth
// round: writing it was 1.4 µs of a remote data plane's request). It
// keeps one provenance for each of provenanceSlots slots, chosen by the
// lists' arrays: the keys a plane serves at once mostly keep their own.
//
// The same means: prices equal, the same bundle version and overage, no
// upstream usage, and the same policy and budget lists — the same arrays,
// not equal ones, as a cached decision shares among its events. A list
// must therefore not be written into once an event naming it has been
// encoded (the data plane's are read-only); the cache holds the lists it
// compares with, so their arrays are not reused meanwhile. Safe for
// concurrent use.
type ProvenanceCache struct {
	slots [provenanceSlots]atomic.Pointer[cachedProvenance]
}

const provenanceSlots = 64

type cachedProvenance struct {
	prices    UsagePrices
	hasPrices bool
	version   int64
	overBound bool
	policies  []UsagePolicy
	budgets   []UsageBudget
	json      []byte
}

// AppendUsageEventInJSON appends json.Marshal of e, as the package's
// AppendUsageEventInJSON does.
func (c *ProvenanceCache) AppendUsageEventInJSON(b []byte, e *UsageEventIn) ([]byte, error) {
	return appendUsageEventInJSON(b, e, c)
}

// append appends p's JSON (AppendUsageProvenanceJSON), from the cache
// when p is the provenance its slot holds; otherwise p's JSON takes the
// slot.
func (c *ProvenanceCache) append(b []byte, p *UsageProvenance) []byte {
	if p.UpstreamUsage != nil { // the request's own counts
		return AppendUsageProvenanceJSON(b, p)
	}
	slot := &c.slots[slotOf(p)]
	if l := slot.Load(); l != nil && l.is(p) {
		return append(b, l.json...)
	}
	start := len(b)
	b = AppendUsageProvenanceJSON(b, p)
	l := &cachedProvenance{hasPrices: p.Prices != nil, version: p.BundleVersion, overBound: p.OverBound,
		policies: p.Policies, budgets: p.Budgets, json: append([]byte(nil), b[start:]...)}
	if p.Prices != nil {
		l.prices = *p.Prices
	}
	slot.Store(l)
	return b
}

// slotOf is p's slot: by the addresses of its lists' arrays, which is
// what tells one cached decision's events from another's.
func slotOf(p *UsageProvenance) uintptr {
	h := uintptr(unsafe.Pointer(unsafe.SliceData(p.Policies)))*31 + uintptr(unsafe.Pointer(unsafe.SliceData(p.Budgets)))
	// Arrays are at least 8-byte aligned: the low bits say nothing.
	return (h >> 4) % provenanceSlots
}

func (l *cachedProvenance) is(p *UsageProvenance) bool {
	if p.BundleVersion != l.version || p.OverBound != l.overBound || (p.Prices != nil) != l.hasPrices ||
		(p.Prices != nil && *p.Prices != l.prices) {
		return false
	}
	return sameList(p.Policies, l.policies) && sameList(p.Budgets, l.budgets)
}

// sameList reports whether a and b are the same list: the same array
// and length, or both empty and both nil or both not (JSON's [] and
// null).
func sameList[T any](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 {
		return (a == nil) == (b == nil)
	}
	return unsafe.SliceData(a) == unsafe.SliceData(b)
}
