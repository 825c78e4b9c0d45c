package dataplane

import (
	"fmt"
	"reflect"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/policy"
)

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

// CheckCachedDecisions evaluates again every policy decision the keys in
// force on p have cached (decisions.go) and returns how many there are and
// the first that no longer equals its evaluation: a request that wrote
// into a shared decision's slices, or a cache that outlived its policies.
func CheckCachedDecisions(p *Plane) (int, error) {
	n := 0
	for _, k := range p.state.Load().keys {
		key := k.inference
		if key == nil || key.decisions == nil {
			continue
		}
		key.decisions.mu.RLock()
		for dk, cached := range key.decisions.m {
			n++
			m := key.org.models[dk.model]
			var caps []policy.Capability
			for i, c := range []policy.Capability{policy.CapabilityTools, policy.CapabilityReasoning, policy.CapabilityStructuredOutput} {
				if dk.caps&(1<<i) != 0 {
					caps = append(caps, c)
				}
			}
			fresh := policy.Evaluate(key.policies, policy.Request{Phase: policy.PhaseInference, KeyID: key.idString,
				OwnerUserID: key.owner, Model: m.model.ID, Provider: m.model.Provider, InputPricePerMTok: m.input,
				OutputPricePerMTok: m.output, Stream: dk.stream, Capabilities: caps,
				CredentialScopes: key.org.credentials.eligible(key.workspace, m.model.Provider)})
			if !reflect.DeepEqual(cached.d, fresh) {
				key.decisions.mu.RUnlock()
				return n, fmt.Errorf("the cached decision for %s (stream %v) is %+v; evaluated now it is %+v", dk.model, dk.stream, cached.d, fresh)
			}
		}
		key.decisions.mu.RUnlock()
	}
	return n, nil
}
