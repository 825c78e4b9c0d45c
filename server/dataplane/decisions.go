package dataplane

import (
	"sync"

	"github.com/gw-gateway/gw/server/policy"
)

// decisionCache keeps a key's policy decisions per model and the request
// facts the policies can read (issue 33): policy.Evaluate is a pure
// function of the key's policies, the key and its owner, the model with
// its prices and credential scopes (all fixed by the bundle), and the
// request's stream flag and capabilities. Every inferenceKey is built anew
// with each admitted bundle, so a new bundle starts with an empty cache
// and a decision never outlives the policies it was taken on.
//
// A cached decision is shared by every request that finds it, so its
// slices (Reasons, Budgets, CredentialScopes, Fallback.Models and .On) are
// read-only for everyone who holds a *policy.Decision: provenance,
// budgets, the request journal, the response cache's key and the fallback
// plan only read them (TestCachedDecisionIsReadOnly holds them to it).
type decisionCache struct {
	mu sync.RWMutex
	m  map[decisionKey]*cachedDecision
}

// cachedDecision is a cached decision and what its requests' usage events
// name of it in their provenance (provenance.go), made once.
type cachedDecision struct {
	d     policy.Decision
	lists provenanceLists
}

// decisionKey is what a decision depends on beyond the key: the model
// and the request facts a match can read.
type decisionKey struct {
	model  string
	stream bool
	caps   uint8
}

// maxCachedDecisions bounds a key's cache: models × stream × capability
// sets, far more than a key uses; past it decisions are evaluated per
// request, as before.
const maxCachedDecisions = 4096

// capsMask is the set of the request's capabilities, and false when one
// is not of the known three (never cached then).
func capsMask(caps []policy.Capability) (uint8, bool) {
	var m uint8
	for _, c := range caps {
		switch c {
		case policy.CapabilityTools:
			m |= 1
		case policy.CapabilityReasoning:
			m |= 2
		case policy.CapabilityStructuredOutput:
			m |= 4
		default:
			return 0, false
		}
	}
	return m, true
}

// decision returns the decision for req on the key's policies: the one
// cached for its model and facts, else evaluate's, cached. It must be
// the key's own request (not a playground caller's, whose owner varies by
// caller). A nil cache caches nothing.
// Its provenance lists are nil for a decision not cached.
func (c *decisionCache) decision(k decisionKey, evaluate func() policy.Decision) (*policy.Decision, *provenanceLists) {
	if c == nil {
		d := evaluate()
		return &d, nil
	}
	c.mu.RLock()
	e := c.m[k]
	c.mu.RUnlock()
	if e != nil {
		return &e.d, &e.lists
	}
	e = &cachedDecision{d: evaluate()}
	e.lists.decision = &e.d
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev := c.m[k]; prev != nil {
		return &prev.d, &prev.lists
	}
	if len(c.m) >= maxCachedDecisions {
		return &e.d, nil
	}
	if c.m == nil {
		c.m = make(map[decisionKey]*cachedDecision)
	}
	c.m[k] = e
	return &e.d, &e.lists
}
