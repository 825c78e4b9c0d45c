package dataplane

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/tags"
	"github.com/gw-gateway/gw/server/tokens"
)

// tokenCounter is the adapter that can ask an upstream to count a
// Messages request's tokens (providers.AnthropicNative).
type tokenCounter interface {
	CountTokens(ctx context.Context, call *providers.Call) ([]byte, error)
}

// serveCountTokens answers POST /inf/v1/messages/count_tokens. It is
// admitted like an inference request (key, tags, rate limit, body,
// visibility, policies), but calls no model and costs nothing, so it
// leaves no usage event and holds no budget. Anthropic upstreams count the request
// themselves; for other models gw estimates with the tokenizer of the
// model's family (server/tokens).
func (p *Plane) serveCountTokens(w http.ResponseWriter, r *http.Request) {
	d := messagesDialect{}
	// Counted and traced like every endpoint (endpoint
	// messages.count_tokens), once the handler returns; it is not in
	// flight (no event to wait for) and has no admission span.
	x := &exchange{d: d}
	a := &x.admission
	a.p, a.r, a.endpoint, a.started = p, r, endpointCountTokens, time.Now()
	a.mw = &meteredWriter{ResponseWriter: w}
	a.w = a.mw
	w = a.w
	refusal := a.authenticate()
	defer a.end()
	p.limitBodyTime(w)
	a.id = uuid.New()
	a.requestID = setRequestID(w, r, a.id)
	refusal = p.gate(r, refusal)
	var given map[string]string
	if refusal == nil {
		// The workspace's required tags are required here too (issue 27,
		// row 8), though a count leaves no event to carry them: the
		// headers' now, with the body's once it is read (tags.go).
		if given, refusal = headerTags(r, a.key); refusal == nil {
			_, refusal = completeTags(given, a.key, false)
		}
	}
	if refusal == nil {
		refusal = a.admitRate()
	}
	if refusal != nil {
		d.refuse(w, refusal)
		return
	}
	body, hold := a.readBody(d)
	if body == nil {
		return
	}
	defer hold.release()
	fromBody, stripped, refusal := bodyTags(body, a.key)
	if refusal == nil {
		// A fallback list is no part of what is counted (fallbacks.go).
		_, _, stripped, refusal = fallbackList(stripped)
	}
	if refusal == nil {
		_, refusal = completeTags(tags.Merge(given, fromBody), a.key, true)
	}
	if refusal != nil {
		d.refuse(w, refusal)
		return
	}
	if len(stripped) != len(body) {
		hold.count(int64(len(stripped)))
		body = stripped
	}
	members, err := providers.ParseObject(body)
	if err != nil {
		d.refuse(w, invalidResponse(invalidJSON))
		return
	}
	// count_tokens has no max_tokens; the translation, which wants one,
	// gets a nominal one, and the upstream none.
	withLimit := providers.WithMember(body, "max_tokens", []byte("1"))
	parsed, err := d.parse(withLimit)
	if err != nil {
		d.refuse(w, invalidResponse(err))
		return
	}
	hold.count(int64(len(withLimit)) + parsed.held)
	// The request as parsed (system turns folded), less the nominal limit.
	native := parsed.native
	native.Edits = append(native.Edits, providers.Edit{Name: "max_tokens"})
	native.Members.Delete("max_tokens")
	req := parsed.req
	x.req, x.whole, x.body, x.hold, x.native, x.translateErr = req, parsed.whole, withLimit, hold, native, parsed.translateErr
	m := x.countedModel(req.Model)
	if m == nil {
		d.refuse(w, errModelNotFound)
		return
	}
	// The model counted for: what the metrics label the request with.
	x.requested = m
	if _, ok := a.view.aliases[req.Model]; ok && x.visible(req.Model) == nil {
		x.alias = req.Model
	}
	x.final.requested, x.final.model, x.final.provider = x.requestedModel(), m.model.ID, m.model.Provider
	rt, refusal := x.route(m)
	if refusal != nil {
		x.refused = refusal.code
		d.refuse(w, refusal)
		return
	}
	counter, ok := rt.adapter.(tokenCounter)
	if !ok || m.kind != catalog.KindAnthropic {
		writeJSON(w, mustJSON(tokenCount{InputTokens: estimateTokens(m, members)}))
		return
	}
	secret, err := rt.cred.open(p.inference.keyring)
	if err != nil {
		d.refuse(w, errCredentialUnavailable(m.model.ID))
		return
	}
	baseURL := rt.cred.baseURL
	if baseURL == "" {
		baseURL = m.baseURL
	}
	ctx, cancel := context.WithTimeoutCause(r.Context(), p.inference.timeout, errAttemptTimeout)
	defer cancel()
	out, err := counter.CountTokens(ctx, x.call(rt, baseURL, secret))
	if err != nil {
		d.refuse(w, upstreamFailure(m.model.ID, x.failure(ctx, rt, err)))
		return
	}
	writeJSON(w, out)
}

// countedModel is the model a count is for: the one named, or an alias's
// first visible target (the one its requests go to when none is cooling).
func (x *exchange) countedModel(id string) *routeModel {
	if m := x.visible(id); m != nil {
		return m
	}
	if ts := x.view.aliases[id]; len(ts) > 0 {
		return x.key.org.models[ts[0].id]
	}
	return nil
}

// estimateTokens counts the prompt's members with the estimator for the
// model's family (server/tokens), as usage does when an upstream reports
// no counts.
func estimateTokens(m *routeModel, members providers.Members) int64 {
	prompt := make(map[string]json.RawMessage, 3)
	for _, name := range []string{"system", "messages", "tools"} {
		if v, ok := members.Get(name); ok {
			prompt[name] = v
		}
	}
	return tokens.CountJSON(tokens.ForModel(m.model.UpstreamModel()), mustJSON(prompt))
}

func writeJSON(w http.ResponseWriter, body []byte) {
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	h["Cache-Control"] = noStore
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
