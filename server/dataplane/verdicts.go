package dataplane

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/policy"
)

// verdict is what one policy, alone, says about one model in discovery.
type verdict struct {
	// blocked: an allowlist, a price ceiling or a deny refused the model.
	blocked bool
	// usable: the scopes of the model's credentials the policy leaves.
	usable scopeMask
}

// evaluatePolicies asks policy.Evaluate, in the discovery phase, about each
// policy alone and each model: verdicts[p][m].
//
// Evaluating each policy alone and combining afterwards gives exactly what
// evaluating a group's policies together gives, because in discovery
// Evaluate combines policies by intersection (DESIGN §6): a model is listed
// when no applicable rule refuses it (allowlists, price ceilings and denies
// each refuse on their own) and the credential scopes every
// credential_access rule leaves still meet a scope the model has
// credentials in. So a model is visible to a group iff no policy of the
// group blocks it and the intersection of their usable scopes is not empty.
// The cost is one small Evaluate per policy and model instead of one large
// one per group and model: at 200 policies, 500 models and 200 groups that
// is the difference between a tenth of a second and seconds per admission.
// TestGroupedDiscoveryEqualsEvaluatingEachKey holds the two to the same
// answers.
func evaluatePolicies(policies []bundle.Policy, models []catalogModel, available map[uuid.UUID][]scopeMask) [][]verdict {
	verdicts := make([][]verdict, len(policies))
	parallel(len(policies), func(i int) {
		p := policies[i]
		// The group already decided the policy applies to its keys, so its
		// target is made one that covers any key.
		alone := []policy.Policy{{ID: p.ID, Name: p.Name, Enabled: true, Definition: policy.Definition{
			Target: policy.Target{Kind: policy.TargetWorkspace}, Rules: p.Definition.Rules,
		}}}
		avail := available[p.WorkspaceID]
		out := make([]verdict, len(models))
		for m, model := range models {
			if avail[m] == 0 {
				// No credential: the model is invisible to the workspace
				// whatever its policies say, so there is nothing to ask.
				out[m] = verdict{blocked: true}
				continue
			}
			d := policy.Evaluate(alone, policy.Request{
				Phase: policy.PhaseDiscovery, Model: model.id, Provider: model.provider,
				InputPricePerMTok: model.input, OutputPricePerMTok: model.output,
				CredentialScopes: avail[m].scopes(),
			})
			out[m] = verdict{
				blocked: !d.ModelAllowed || slices.ContainsFunc(d.Reasons, isDeny),
				usable:  maskOf(d.CredentialScopes),
			}
		}
		verdicts[i] = out
	})
	return verdicts
}

func isDeny(r policy.Reason) bool { return r.Action == policy.ActionDeny }

// parallel runs fn(0) … fn(n-1) over the CPUs.
func parallel(n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				fn(i)
			}
		})
	}
	wg.Wait()
}

// scopeMask is a set of credential scopes, one bit each.
type scopeMask uint8

var scopeOrder = []policy.CredentialScope{policy.ScopePlatform, policy.ScopeOrg, policy.ScopeWorkspace}

func maskOf(scopes []policy.CredentialScope) scopeMask {
	var m scopeMask
	for _, s := range scopes {
		if i := slices.Index(scopeOrder, s); i >= 0 {
			m |= 1 << i
		}
	}
	return m
}

// scopes lists the set in platform, org, workspace order.
func (m scopeMask) scopes() []policy.CredentialScope {
	var out []policy.CredentialScope
	for i, s := range scopeOrder {
		if m&(1<<i) != 0 {
			out = append(out, s)
		}
	}
	return out
}

// credentialIndex says in which scopes a provider has a credential that a
// workspace's keys are eligible for: a platform credential (no
// organization), one of the organization (no workspace), or one of that
// very workspace, never a sibling workspace's (spec 4.9 rule 2).
type credentialIndex struct {
	platform, org map[string]bool
	workspace     map[uuid.UUID]map[string]bool
}

func newCredentialIndex(b *bundle.Body) *credentialIndex {
	x := &credentialIndex{platform: map[string]bool{}, org: map[string]bool{}, workspace: map[uuid.UUID]map[string]bool{}}
	for _, c := range b.Credentials {
		switch c.Scope {
		case policy.ScopePlatform:
			x.platform[c.Provider] = true
		case policy.ScopeOrg:
			x.org[c.Provider] = true
		case policy.ScopeWorkspace:
			if x.workspace[*c.WorkspaceID] == nil {
				x.workspace[*c.WorkspaceID] = map[string]bool{}
			}
			x.workspace[*c.WorkspaceID][c.Provider] = true
		}
	}
	return x
}

// availability returns, per workspace, the eligible scopes of each model.
func (x *credentialIndex) availability(workspaces []bundle.Workspace, models []catalogModel) map[uuid.UUID][]scopeMask {
	out := make(map[uuid.UUID][]scopeMask, len(workspaces))
	for _, w := range workspaces {
		masks := make([]scopeMask, len(models))
		for m, model := range models {
			masks[m] = x.eligible(w.ID, model.provider)
		}
		out[w.ID] = masks
	}
	return out
}

func (x *credentialIndex) eligible(ws uuid.UUID, provider string) scopeMask {
	var m scopeMask
	if x.platform[provider] {
		m |= maskOf([]policy.CredentialScope{policy.ScopePlatform})
	}
	if x.org[provider] {
		m |= maskOf([]policy.CredentialScope{policy.ScopeOrg})
	}
	if x.workspace[ws][provider] {
		m |= maskOf([]policy.CredentialScope{policy.ScopeWorkspace})
	}
	return m
}
