package dataplane

import "github.com/google/uuid"

// UseLegacyBound makes p price requests' budget bounds as earlier releases
// did (a flat 2,000 input tokens over the body, at the dearest input-side
// price), for tests and benchmarks that measure against them.
func UseLegacyBound(p *Plane) {
	p.budgets.boundMode = boundLegacy
	p.budgets.ledger.AdmitTails(false)
}

// UsePreviousAdmission makes p admit as the previous release did: input
// bound at a token a body byte, no tail admissions.
func UsePreviousAdmission(p *Plane) {
	p.budgets.boundMode = boundBytes
	p.budgets.ledger.AdmitTails(false)
}

// DrawHeaviestFirst makes alias draws land on the first target that is not
// cooling down (the order the alias lists them in) until the test ends.
func DrawHeaviestFirst(t interface{ Cleanup(func()) }) {
	old := aliasDraw
	aliasDraw = func(int) int { return 0 }
	t.Cleanup(func() { aliasDraw = old })
}

// BodyBytesHeld reports the body bytes key's requests on p hold.
func BodyBytesHeld(p *Plane, key uuid.UUID) int64 {
	_, n := p.bodies.inFlight(key)
	return n
}
