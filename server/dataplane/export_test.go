package dataplane

// UseLegacyBound makes p price requests' budget bounds as earlier releases
// did (a flat 2,000 input tokens over the body, at the dearest input-side
// price), for tests and benchmarks that measure against them.
func UseLegacyBound(p *Plane) { p.budgets.legacyBound = true }
