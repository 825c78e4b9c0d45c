package dataplane

import (
	"encoding/binary"
	"slices"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/policy"
)

// buildAdmitted builds an organization's runtime index from its verified
// bundle. Discovery depends on a key only through its workspace and the
// policies that apply to it, so keys are grouped by those, each group's
// visible models are decided once, and groups that end up seeing the same
// models share one encoded view.
func buildAdmitted(b *bundle.Body, hash string) (*admitted, error) {
	models, err := prepareModels(&b.Catalog)
	if err != nil {
		return nil, err
	}
	available := newCredentialIndex(b).availability(b.Workspaces, models)
	routes := newInferenceOrg(b, models)
	verdicts := evaluatePolicies(b.Policies, models, available)
	aliases := newAliasIndex(b, models)

	views := map[string]*modelView{}
	keys := make(map[string]*admittedKey, len(b.Keys))
	var batchKeys map[uuid.UUID]*admittedKey
	visible := make([]bool, len(models))
	for _, g := range groupKeys(b) {
		set := g.visibleModels(available[g.workspace], verdicts, visible)
		seen, set := aliases.visibleAliases(g.workspace, visible, set)
		view := views[string(set)]
		if view == nil {
			view = newModelView(models, visible, seen)
			views[string(set)] = view
		}
		for _, k := range g.keys {
			ak := &admittedKey{orgID: b.OrgID, models: view, inference: routes.key(k)}
			if k.BatchesOnly {
				// No token: it admits no request, and records only its
				// provider batches' lines (batchnative.go).
				if batchKeys == nil {
					batchKeys = map[uuid.UUID]*admittedKey{}
				}
				batchKeys[k.ID] = ak
				continue
			}
			if k.ExpiresAt != nil {
				ak.expires, ak.expiresAt = true, *k.ExpiresAt
			}
			keys[k.TokenHash] = ak
		}
	}
	pg := newPlaygroundOrg(b, models, available, verdicts, routes, aliases)
	return &admitted{orgID: b.OrgID, version: b.Version, hash: hash, keys: keys, compiledAt: b.CompiledAt,
		playground: pg, egress: b.Egress, grants: grantKeys(b, routes, pg), batchKeys: batchKeys}, nil
}

// keyGroup is the keys of one workspace to which the same policies apply;
// policies holds indexes into the bundle's policy list.
type keyGroup struct {
	workspace uuid.UUID
	policies  []int
	keys      []bundle.Key
}

// visibleModels combines the verdicts of the group's policies for each
// model (see evaluatePolicies), filling visible and returning it packed into
// bits, the key under which groups seeing the same models share a view.
func (g *keyGroup) visibleModels(available []scopeMask, verdicts [][]verdict, visible []bool) []byte {
	set := make([]byte, (len(visible)+7)/8)
	for m := range visible {
		usable, blocked := available[m], false
		for _, p := range g.policies {
			v := verdicts[p][m]
			blocked = blocked || v.blocked
			usable &= v.usable
		}
		visible[m] = !blocked && usable != 0
		if visible[m] {
			set[m/8] |= 1 << (m % 8)
		}
	}
	return set
}

// workspaceTargets indexes a workspace's policies by what they target.
type workspaceTargets struct {
	everyKey []int
	byOwner  map[uuid.UUID][]int
	byKeyID  map[string][]int
}

// groupKeys partitions the keys by workspace and applicable policies. A
// policy applies to a key of its workspace when its target covers the key,
// as policy.Evaluate decides it: workspace covers every key, selected_users
// the keys whose owner is listed, selected_keys the keys whose id is listed.
func groupKeys(b *bundle.Body) []*keyGroup {
	targets := policyTargets(b)
	byKey := map[string]*keyGroup{}
	var groups []*keyGroup
	var applicable []int
	var groupKey []byte
	for _, k := range b.Keys {
		applicable = applicable[:0]
		if t := targets[k.WorkspaceID]; t != nil {
			applicable = append(applicable, t.everyKey...)
			applicable = append(applicable, t.byOwner[k.OwnerID]...)
			applicable = append(applicable, t.byKeyID[k.ID.String()]...)
			slices.Sort(applicable)
			// A user or key listed twice in one target lists its policy twice.
			applicable = slices.Compact(applicable)
		}
		groupKey = append(groupKey[:0], k.WorkspaceID[:]...)
		for _, i := range applicable {
			groupKey = binary.BigEndian.AppendUint32(groupKey, uint32(i))
		}
		g := byKey[string(groupKey)]
		if g == nil {
			g = &keyGroup{workspace: k.WorkspaceID, policies: slices.Clone(applicable)}
			byKey[string(groupKey)] = g
			groups = append(groups, g)
		}
		g.keys = append(g.keys, k)
	}
	return groups
}

// policyTargets indexes each workspace's policies by what they target.
func policyTargets(b *bundle.Body) map[uuid.UUID]*workspaceTargets {
	targets := map[uuid.UUID]*workspaceTargets{}
	for i, p := range b.Policies {
		t := targets[p.WorkspaceID]
		if t == nil {
			t = &workspaceTargets{byOwner: map[uuid.UUID][]int{}, byKeyID: map[string][]int{}}
			targets[p.WorkspaceID] = t
		}
		switch target := p.Definition.Target; target.Kind {
		case policy.TargetWorkspace:
			t.everyKey = append(t.everyKey, i)
		case policy.TargetSelectedUsers:
			for _, u := range target.UserIDs {
				t.byOwner[u] = append(t.byOwner[u], i)
			}
		case policy.TargetSelectedKeys:
			for _, k := range target.KeyIDs {
				t.byKeyID[k] = append(t.byKeyID[k], i)
			}
		}
	}
	return targets
}
