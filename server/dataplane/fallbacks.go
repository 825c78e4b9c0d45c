package dataplane

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/gw-gateway/gw/server/providers"
)

// Per-request fallback lists (issue 35): OpenRouter's models: [...] and
// LiteLLM's fallbacks: [...] in a request's body name the models to try,
// in order, when the one asked for fails in a way worth another try (a
// rate limit, an upstream unavailable, a timeout: what moves an alias to
// its next target). They are fallbacks through the same machinery as an
// alias's targets and a policy's fallback rule (run, nextCandidate): each
// entry is re-checked as if it had been asked for — visibility, the
// policies, capabilities, limits, budgets — and skipped when refused; the
// model asked for is judged as always, its refusal answered. An entry the
// key cannot see (unknown, or hidden by the policies) is a 404 naming it
// before anything is sent: a list is never quietly shorter than written.
// An alias among the entries stands for its targets, in order.

// maxRequestFallbacks bounds a list: each entry may be an upstream call.
const maxRequestFallbacks = 10

// fallbackMembers are the body members that carry a list, OpenRouter's and
// LiteLLM's; a request gives at most one of them.
var fallbackMembers = [...]string{"models", "fallbacks"}

// fallbacksStage takes a fallback list out of the body: no upstream takes
// either member (OpenAI refuses an unknown one), so every later stage and
// upstream sees the body without it. A body without one is left as it is,
// without a second parse. A list with no model asked for (OpenRouter
// allows it) asks for its first entry.
func (x *exchange) fallbacksStage() bool {
	list, from, body, refusal := fallbackList(x.body)
	if refusal != nil {
		x.d.refuse(x.w, refusal)
		return false
	}
	if from != 0 {
		x.hold.count(int64(len(body)))
		x.body, x.fallbackList, x.fallbackFrom = body, list, from
	}
	return true
}

// fallbackList takes a request's list out of body: the entries, which
// member gave them (fallbackMembers' index + 1; 0 for none, body
// unchanged) and the body without it, or the 400 for a list gw cannot
// take. count_tokens calls it too, and counts without the list.
func fallbackList(body []byte) ([]string, uint8, []byte, *response) {
	if !bytes.Contains(body, []byte(`"models"`)) && !bytes.Contains(body, []byte(`"fallbacks"`)) {
		return nil, 0, body, nil
	}
	members, err := providers.ParseObject(body)
	if err != nil {
		// The dialect's parse says what is wrong with it.
		return nil, 0, body, nil
	}
	var from uint8
	var name string
	var raw json.RawMessage
	for i, m := range fallbackMembers {
		v, ok := members.Get(m)
		if !ok {
			continue
		}
		if name != "" {
			return nil, 0, nil, invalidRequest(m, "invalid_value",
				"Give one fallback list, models (OpenRouter's) or fallbacks (LiteLLM's), not both.")
		}
		name, raw, from = m, v, uint8(i+1)
	}
	if name == "" {
		return nil, 0, body, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, 0, nil, invalidRequest(name, "invalid_type",
			name+" is a list of model ids (strings), tried in order when the model fails; per-entry settings are not taken.")
	}
	if len(list) > maxRequestFallbacks {
		return nil, 0, nil, invalidRequest(name, "invalid_value",
			name+" lists at most "+strconv.Itoa(maxRequestFallbacks)+" models; it has "+strconv.Itoa(len(list))+".")
	}
	body = providers.WithoutMember(body, name)
	if _, ok := members.Get("model"); !ok && len(list) > 0 {
		first, _ := json.Marshal(list[0])
		body = providers.WithMember(body, "model", first)
		list = list[1:]
	}
	return list, from, body, nil
}

// requestFallbacks resolves the request's list to catalog models, in
// order (an alias's targets in its place), or returns the 404 naming the
// first entry the key cannot see. An entry that is the model asked for
// m, one of its alias's targets, or given twice, is tried once.
func (x *exchange) requestFallbacks(m *routeModel) ([]string, *response) {
	out := make([]string, 0, len(x.fallbackList))
	seen := map[string]bool{m.model.ID: true}
	for _, t := range x.targets {
		seen[t.id] = true
	}
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for i, id := range x.fallbackList {
		if m := x.visible(id); m != nil {
			add(m.model.ID)
			continue
		}
		if ts := x.view.aliases[id]; ts != nil {
			for _, t := range ts {
				add(t.id)
			}
			continue
		}
		param := fallbackMembers[x.fallbackFrom-1] + "[" + strconv.Itoa(i) + "]"
		return nil, errorResponse(http.StatusNotFound, apiError{
			Message: "The model '" + id + "' in " + param + " does not exist or you do not have access to it.",
			Type:    typeInvalidRequest, Param: ref(param), Code: ref("model_not_found"),
		})
	}
	return out, nil
}
