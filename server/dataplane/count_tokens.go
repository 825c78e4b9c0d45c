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
)

// tokenCounter is the adapter that can ask an upstream to count a
// Messages request's tokens (providers.AnthropicNative).
type tokenCounter interface {
	CountTokens(ctx context.Context, call *providers.Call) ([]byte, error)
}

// bytesPerToken is the count_tokens estimate for models whose upstream
// cannot count: about four bytes of JSON a token, the usual rule of thumb
// for English text with BPE tokenizers.
const bytesPerToken = 4

// serveCountTokens answers POST /inf/v1/messages/count_tokens. It is
// admitted like an inference request (key, rate limit, body, visibility,
// policies), but calls no model and costs nothing, so it leaves no usage
// event and holds no budget. Anthropic upstreams count the request
// themselves; for other models gw estimates from the request's size.
func (p *Plane) serveCountTokens(w http.ResponseWriter, r *http.Request) {
	d := messagesDialect{}
	p.limitBodyTime(w)
	id := uuid.New()
	requestID := setRequestID(w, r, id)
	key, refusal := p.authenticate(r)
	refusal = p.gate(r, refusal)
	if refusal != nil {
		d.refuse(w, refusal)
		return
	}
	release := p.topUp(r.Context(), key.inference)
	admitted, _ := p.admitRate(w, key.inference, d)
	release()
	if !admitted {
		return
	}
	body, release := p.readBody(w, r, d, key.inference.id)
	if body == nil {
		return
	}
	defer release()
	members, err := providers.ParseObject(body)
	if err != nil {
		d.refuse(w, invalidResponse(invalidJSON))
		return
	}
	// count_tokens has no max_tokens; the translation, which wants one,
	// gets a nominal one, and the upstream none.
	withLimit := make(map[string]json.RawMessage, len(members)+1)
	for k, v := range members {
		withLimit[k] = v
	}
	withLimit["max_tokens"] = json.RawMessage("1")
	req, _, translateErr, err := d.parse(mustJSON(withLimit))
	if err != nil {
		d.refuse(w, invalidResponse(err))
		return
	}
	x := &exchange{p: p, w: w, r: r, d: d, key: key.inference, view: key.models, started: time.Now(), id: id,
		requestID: requestID, req: req, native: members, translateErr: translateErr}
	m := x.visible(req.Model)
	if m == nil {
		d.refuse(w, errModelNotFound)
		return
	}
	rt, refusal := x.route(m)
	if refusal != nil {
		d.refuse(w, refusal)
		return
	}
	counter, ok := rt.adapter.(tokenCounter)
	if !ok || m.kind != catalog.KindAnthropic {
		n := 0
		for _, name := range []string{"system", "messages", "tools"} {
			n += len(members[name])
		}
		writeJSON(w, mustJSON(map[string]int{"input_tokens": (n + bytesPerToken - 1) / bytesPerToken}))
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

func writeJSON(w http.ResponseWriter, body []byte) {
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	h["Cache-Control"] = noStore
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
