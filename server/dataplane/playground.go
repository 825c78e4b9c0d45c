package dataplane

import (
	"encoding/json"
	"net/http"
	"slices"
	"sync"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/playground"
)

// The Workspace Playground (spec group) runs a management principal's chat
// completion through the same admission as an inference key's: discovery's
// view decides what it may try, the workspace's policies apply, budgets
// and rate limits count it, and finish records one usage event, attributed
// to the caller (Caller) instead of an inference key.
//
// A playground request has no inference key, so it runs on a key made up
// for the caller:
//
//   - its owner is the caller's user, so a selected_users target matches
//     the caller; no selected_keys target does (there is no key to list);
//   - its rate limits are the workspace's own settings, the limits a key
//     of the workspace without limits of its own gets, counted per user
//     and workspace (playground.KeyID), so one person's playground cannot
//     use up another's; across data planes they are leased as
//     playground.RateCounter, which names the workspace and the user;
//   - a per_key budget counts it under that same id, which the control
//     plane resolves to the user (server/budgets).

// playgroundOrg is what the playground needs of one admitted bundle: what
// discovery computed per policy and model, kept so that the view of a
// caller, who is not among the bundle's keys, is decided the same way
// (keyGroup.visibleModels) rather than by a second implementation.
type playgroundOrg struct {
	models    []catalogModel
	available map[uuid.UUID][]scopeMask
	verdicts  [][]verdict
	targets   map[uuid.UUID]*workspaceTargets
	routes    *inferenceOrg
	limits    map[uuid.UUID]*bundle.RateLimits

	// views caches the encoded views by visible set, as buildAdmitted
	// shares them between key groups.
	mu    sync.Mutex
	views map[string]*modelView
	// aliases are the bundle's model aliases, which the playground routes
	// as inference keys do.
	aliases *aliasIndex
}

func newPlaygroundOrg(b *bundle.Body, models []catalogModel, available map[uuid.UUID][]scopeMask, verdicts [][]verdict, routes *inferenceOrg,
	aliases *aliasIndex) *playgroundOrg {
	limits := make(map[uuid.UUID]*bundle.RateLimits, len(b.Workspaces))
	for _, w := range b.Workspaces {
		limits[w.ID] = w.RateLimits
	}
	return &playgroundOrg{models: models, available: available, verdicts: verdicts, targets: policyTargets(b),
		routes: routes, limits: limits, views: map[string]*modelView{}, aliases: aliases}
}

// key returns the key a user's playground request in workspace ws runs
// on and the models it may try, or nil if the bundle has no such
// workspace.
func (o *playgroundOrg) key(ws, user uuid.UUID) (*inferenceKey, *modelView) {
	avail, ok := o.available[ws]
	if !ok {
		return nil, nil
	}
	var applicable []int
	if t := o.targets[ws]; t != nil {
		applicable = append(applicable, t.everyKey...)
		applicable = append(applicable, t.byOwner[user]...)
		slices.Sort(applicable)
		applicable = slices.Compact(applicable)
	}
	g := keyGroup{workspace: ws, policies: applicable}
	visible := make([]bool, len(o.models))
	bits := g.visibleModels(avail, o.verdicts, visible)
	seen, bits := o.aliases.visibleAliases(ws, visible, bits)
	set := string(bits)
	o.mu.Lock()
	view := o.views[set]
	if view == nil {
		view = newModelView(o.models, visible, seen)
		o.views[set] = view
	}
	o.mu.Unlock()
	// The guardrails apply to a person trying models exactly as to their
	// keys: a workspace's guardrails (and those that select the person)
	// are no less in force in the web UI (issue 32: no route left uncovered).
	id := playground.KeyID(ws, user)
	return &inferenceKey{org: o.routes, id: id, workspace: ws, workspaceString: ws.String(), owner: user,
		policies: o.routes.policies[ws], limits: keyLimits(o.limits[ws]), playground: true,
		guards: o.routes.guardsFor(bundle.Key{ID: id, WorkspaceID: ws, OwnerID: user})}, view
}

// errPlaygroundNotReady answers for a workspace whose bundle this data
// plane has not admitted (yet): a workspace created a moment ago, or an
// organization whose bundle failed to compile.
var errPlaygroundNotReady = errorResponse(http.StatusServiceUnavailable, apiError{
	Message: "The gateway has not loaded this workspace's configuration yet; retry shortly.",
	Type:    typeServer, Code: ref("bundle_not_ready"),
}, headerField{"Retry-After", []string{"1"}})

// playgroundKey finds the caller's key and view, or the refusal.
func (p *Plane) playgroundKey(orgID, ws uuid.UUID, c Caller) (*inferenceKey, *modelView, *response) {
	if !p.ready.Load() {
		return nil, nil, errNotReady
	}
	a := p.state.Load().orgs[orgID]
	if a == nil || a.playground == nil {
		return nil, nil, errPlaygroundNotReady
	}
	key, view := a.playground.key(ws, c.UserID)
	if key == nil {
		return nil, nil, errPlaygroundNotReady
	}
	return key, view, nil
}

// PlaygroundModels lists, as discovery's model objects, the chat models
// the caller may try in the workspace: the models an inference key of the
// caller's in that workspace would discover, less the embedding models
// (the playground chats).
func (p *Plane) PlaygroundModels(orgID, workspaceID uuid.UUID, c Caller) ([]json.RawMessage, error) {
	key, view, refusal := p.playgroundKey(orgID, workspaceID, c)
	if refusal != nil {
		return nil, playground.ErrNotReady
	}
	out := []json.RawMessage{}
	for _, m := range p.state.Load().orgs[orgID].playground.models {
		obj, ok := view.byID[m.id]
		if !ok || key.org.models[m.id].model.Embeds() {
			continue
		}
		out = append(out, json.RawMessage(obj.body))
	}
	return out, nil
}

// ServePlayground answers a playground chat completion in the workspace,
// run as the caller, whom the management API has authenticated and
// authorized. The answer is the data plane's, in its shape: the model's
// answer as Chat Completions, streamed or not, and its errors in OpenAI's
// shape.
func (p *Plane) ServePlayground(w http.ResponseWriter, r *http.Request, orgID, workspaceID uuid.UUID, c Caller) {
	// The management API has settled the request's id; the data plane
	// keeps it, so both planes' logs and the usage event share it.
	x := &exchange{d: chatDialect{}}
	a := &x.admission
	p.begin(a, w, r, endpointChatCompletions)
	defer a.end()
	key, view, refusal := p.playgroundKey(orgID, workspaceID, c)
	refusal = p.gate(r, refusal)
	if refusal == nil {
		a.key, a.view, a.caller = key, view, &c
		refusal = a.admitRate()
	}
	if refusal == nil {
		// The workspace's archive holds every request it meters, the
		// playground's included (issue 32).
		a.startArchive()
	}
	if refusal != nil {
		a.endAdmission()
		refusal.write(a.w)
		return
	}
	x.serve()
}

// streamCost tells the caller (every caller since issue 35, the
// playground page first) the exact cost of a streamed Chat Completions
// answer, which is known only once it has ended: an SSE comment before
// [DONE] (": gw-cost-usd 0.0000123"), queued; false for another dialect's
// stream, which gets it after its last event (costedStream). Every SSE
// parser skips comments, so the stream stays what the SDKs read. A
// non-streaming answer carries the cost in X-Gw-Cost-Usd.
func (x *exchange) streamCost(out streamOut) bool {
	s, ok := out.(chatStream)
	if ok {
		s.buf = append(append(append(s.buf, ": gw-cost-usd "...), x.costUSD...), "\n\n"...)
	}
	return ok
}
