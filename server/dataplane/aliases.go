package dataplane

import (
	"bytes"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/apidoc"
	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/catalog"
)

// A model alias (issue 19) is discovered when at least one of its targets
// is visible to the key, and answers the same 404 as an unknown model
// otherwise. A request for it goes to a visible target chosen by weight;
// the other visible targets are its fallbacks. Targets are catalog
// models, so resolving an alias never leads to another alias.

// aliasTarget is an alias's target found in the catalog: its index among
// the prepared models, its id and weight.
type aliasTarget struct {
	model  int
	id     string
	weight int
}

// indexedAlias is a bundle alias with its targets resolved; targets that
// left the catalog (retired) are dropped here and so skipped.
type indexedAlias struct {
	name    string
	targets []aliasTarget
}

// aliasIndex holds the bundle's aliases and, per workspace, those in
// force there: the workspace's own, and the organization's whose name the
// workspace does not override.
type aliasIndex struct {
	all         []indexedAlias
	byWorkspace map[uuid.UUID][]int
}

func newAliasIndex(b *bundle.Body, models []catalogModel) *aliasIndex {
	ix := &aliasIndex{byWorkspace: map[uuid.UUID][]int{}}
	if len(b.Aliases) == 0 {
		return ix
	}
	byID := make(map[string]int, len(models))
	for i, m := range models {
		byID[m.id] = i
	}
	var orgLevel []int
	wsNames := map[uuid.UUID]map[string]bool{}
	for i, a := range b.Aliases {
		ia := indexedAlias{name: a.Name}
		for _, t := range a.Targets {
			if m, ok := byID[t.Model]; ok {
				ia.targets = append(ia.targets, aliasTarget{model: m, id: t.Model, weight: t.Weight})
			}
		}
		ix.all = append(ix.all, ia)
		if a.WorkspaceID == nil {
			orgLevel = append(orgLevel, i)
			continue
		}
		ws := *a.WorkspaceID
		ix.byWorkspace[ws] = append(ix.byWorkspace[ws], i)
		if wsNames[ws] == nil {
			wsNames[ws] = map[string]bool{}
		}
		wsNames[ws][a.Name] = true
	}
	for _, w := range b.Workspaces {
		for _, i := range orgLevel {
			if !wsNames[w.ID][ix.all[i].name] {
				ix.byWorkspace[w.ID] = append(ix.byWorkspace[w.ID], i)
			}
		}
	}
	return ix
}

// viewAlias is an alias as one view sees it: its visible targets only.
type viewAlias struct {
	name    string
	targets []aliasTarget
}

// visibleAliases returns the aliases in force in workspace ws with at
// least one visible target, and appends to set one bit per bundle alias,
// so that views are shared only between groups that see the same aliases
// the same way.
func (ix *aliasIndex) visibleAliases(ws uuid.UUID, visible []bool, set []byte) ([]viewAlias, []byte) {
	if len(ix.all) == 0 {
		return nil, set
	}
	bits := make([]byte, (len(ix.all)+7)/8)
	var out []viewAlias
	for _, i := range ix.byWorkspace[ws] {
		a := ix.all[i]
		var seen []aliasTarget
		for _, t := range a.targets {
			if visible[t.model] {
				seen = append(seen, t)
			}
		}
		if len(seen) == 0 {
			continue
		}
		// The same alias may see different targets in different groups;
		// the model bits already tell those groups apart.
		bits[i/8] |= 1 << (i % 8)
		out = append(out, viewAlias{name: a.name, targets: seen})
	}
	return out, append(set, bits...)
}

// aliasObject is an alias as discovery shows it: the object of its first
// visible target under the alias's name, with the targets listed.
func aliasObject(a viewAlias, models []catalogModel) *response {
	m := models[a.targets[0].model].src
	typ, endpoints := string(catalog.ModelTypeChat), chatEndpoints
	if m.Embeds() {
		typ, endpoints = string(catalog.ModelTypeEmbedding), embeddingEndpoints
	}
	ids := make([]string, len(a.targets))
	for i, t := range a.targets {
		ids[i] = t.id
	}
	return newResponse(http.StatusOK, mustJSON(modelObject{
		Type: typ, Endpoints: endpoints,
		ID: a.name, Object: "model", Created: m.Created, OwnedBy: m.Provider,
		Name: a.name, Provider: m.Provider, ContextWindow: m.ContextWindow, MaxOutputTokens: m.MaxOutputTokens,
		Pricing: pricingObject(m.Pricing), Capabilities: apidoc.Strings(m.Capabilities), Modalities: apidoc.Strings(m.Modalities), AliasOf: ids,
	}))
}

// listEntry is one object of a discovery list.
type listEntry struct {
	id  string
	obj *response
}

// writeList encodes a sorted discovery list.
func writeList(entries []listEntry) []byte {
	slices.SortFunc(entries, func(a, b listEntry) int { return strings.Compare(a.id, b.id) })
	var list bytes.Buffer
	list.WriteString(`{"object":"list","data":[`)
	for i, e := range entries {
		if i > 0 {
			list.WriteByte(',')
		}
		list.Write(e.obj.body)
	}
	list.WriteString(`]}`)
	return list.Bytes()
}

// aliasDraw draws a number in [0, n); tests fix it.
var aliasDraw = rand.IntN

// pickTargets orders an alias's targets for one request: the first drawn
// by weight among those not cooling down (all of them, if every one is),
// the rest after it by weight, heaviest first, those cooling down last.
// The order is a fresh slice; the view's stays as it is.
func pickTargets(targets []aliasTarget, cooling func(id string) bool) []aliasTarget {
	// Each target's state is read once: another request may cool one down
	// meanwhile, and the draw must land on a target it counted.
	ready := make([]bool, len(targets))
	total := 0
	for i, t := range targets {
		if ready[i] = !cooling(t.id); ready[i] {
			total += t.weight
		}
	}
	if total == 0 {
		for i, t := range targets {
			ready[i], total = true, total+t.weight
		}
	}
	draw, first := aliasDraw(total), 0
	for i, t := range targets {
		if !ready[i] {
			continue
		}
		if draw < t.weight {
			first = i
			break
		}
		draw -= t.weight
	}
	order := make([]int, 0, len(targets)-1)
	for i := range targets {
		if i != first {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if ready[a] != ready[b] {
			if ready[a] {
				return -1
			}
			return 1
		}
		return targets[b].weight - targets[a].weight
	})
	out := make([]aliasTarget, 0, len(targets))
	out = append(out, targets[first])
	for _, i := range order {
		out = append(out, targets[i])
	}
	return out
}
