package dataplane

import (
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/providers"
)

// A model request's stages (issue 29): after its admission (admitRequest:
// the key, the method, tags, rate limits), an exchange walks modelStages
// in order. Each stage has one job, reads what the stages before it set on
// the exchange and either lets the request go on (true) or ends it, having
// answered (and, once the model is known, finished it: one usage event).
// A new step of every model request is one entry here; a new endpoint that
// is no model request reuses the admission (admission.go) instead.
//
//	admit ─ read ─ tags ─ fallbacks ─ guard ─ parse ─ model ─ guarded ─ route ─ reserve ─ [cache] ─ attempt ─ finish
//
// tags completes the request's cost-centre tags with the body's
// (LiteLLM's metadata.tags, taken out of the body: tags.go); fallbacks
// takes a request's own fallback list out of it (fallbacks.go). guard is the
// guardrails' input stage (guard.go): every text the caller
// sends, checked before the request is read for routing, so a redaction
// is what every upstream sees; a block is answered once the model is known
// (guarded), as a denied event. cache is the response cache (cache.go):
// it runs with the route chosen and its budget held, before any upstream
// call; a hit finishes the request itself, a miss it keeps runs the
// attempt itself to record the answer (docs/cache.md). A stage that
// refuses after the model is known calls x.deny(refusal). The stream side
// of attempt is the stream writer and its decorators (streamWriter), the
// guardrails' output stage among them.
type stage struct {
	name string
	run  func(*exchange) bool
}

var modelStages = [...]stage{
	{"read", (*exchange).readStage},
	{"tags", (*exchange).tagsStage},
	{"fallbacks", (*exchange).fallbacksStage},
	{"guard", (*exchange).guardStage},
	{"parse", (*exchange).parseStage},
	{"model", (*exchange).modelStage},
	{"guarded", (*exchange).guardedStage},
	{"route", (*exchange).routeStage},
	{"reserve", (*exchange).reserveStage},
	{"cache", (*exchange).cacheStage},
	{"attempt", (*exchange).attemptStage},
}

// readStage reads the body within the plane's limits (bodybudget.go).
func (x *exchange) readStage() bool {
	x.body, x.hold = x.readBody(x.d)
	return x.body != nil
}

// parseStage reads the body in the endpoint's dialect: the request as
// routing reads it, what the budgets' bound needs of it, and its
// capabilities in the policy vocabulary.
func (x *exchange) parseStage() bool {
	p, err := x.d.parse(x.body)
	if err != nil {
		x.d.refuse(x.w, invalidResponse(err))
		return false
	}
	x.hold.count(p.held)
	req := p.req
	x.req, x.whole, x.native, x.translateErr = req, p.whole, p.native, p.translateErr
	x.streamed = req.Stream
	x.input = inputShapeOf(x.body)
	for _, c := range req.Capabilities() {
		if c != catalog.CapabilityStreaming {
			x.caps = append(x.caps, policy.Capability(c))
		}
	}
	return true
}

// modelStage finds the model asked for among those the key may see, or
// an alias's first target that is not cooling down (404 otherwise). From
// here on the request is metered.
func (x *exchange) modelStage() bool {
	m := x.visible(x.req.Model)
	if m == nil {
		if x.targets = x.view.aliases[x.req.Model]; x.targets != nil {
			x.targets = pickTargets(x.targets, x.coolingTarget)
			x.alias, m = x.req.Model, x.key.org.models[x.targets[0].id]
		}
	}
	if m == nil {
		x.d.refuse(x.w, errModelNotFound)
		return false
	}
	if x.fallbackFrom != 0 {
		// Before the request is metered: a list naming a model the key
		// cannot see is refused as the model would be.
		list, refusal := x.requestFallbacks(m)
		if refusal != nil {
			x.d.refuse(x.w, refusal)
			return false
		}
		x.fallbackList = list
	}
	x.requested = m
	return true
}

// routeStage decides whether and how the request may go to its model:
// the endpoint, policies, strict parameters, capabilities, limits, the
// adapter's check (route).
func (x *exchange) routeStage() bool {
	rt, refusal := x.route(x.requested)
	if refusal != nil {
		return x.nextTarget(refusal)
	}
	x.rt = rt
	return true
}

// reserveStage holds the route's cost bound against its budgets.
func (x *exchange) reserveStage() bool {
	if x.reserved {
		// An alias's next target took the request, reserved.
		return true
	}
	if refusal := x.reserveRoute(x.rt); refusal != nil {
		return x.nextTarget(refusal)
	}
	x.reserved = true
	if len(x.targets) > 1 {
		x.aliasRest = targetIDs(x.targets[1:])
	}
	return true
}

// nextTarget handles a refusal of the model asked for: an alias's first
// target refused for this request (an endpoint, a capability, a budget),
// the next that takes it serves, routed and reserved; otherwise the
// request is denied.
func (x *exchange) nextTarget(refusal *response) bool {
	if len(x.targets) > 1 {
		if next, rest := x.nextCandidate(targetIDs(x.targets[1:])); next != nil {
			x.rt, x.aliasRest, x.requested, x.reserved = next, rest, next.model, true
			return true
		}
	}
	x.deny(refusal)
	return false
}

// deny finishes the request as denied on the model asked for, and answers
// the refusal.
func (x *exchange) deny(refusal *response) {
	x.finish(outcome{status: statusDenied, reason: refusalReason(refusal), model: x.requested})
	x.d.refuse(x.w, refusal)
}

// guardStage runs the guardrails' input stage on the body as read
// (guardInput): a redaction replaces the body every later stage reads; a
// block waits for the model (guardedStage).
func (x *exchange) guardStage() bool {
	x.body, x.guardBlock = x.guardInput(x.body)
	return true
}

// guardedStage answers the guardrails' block of the input, once the model
// asked for is known to be visible (an unknown one is a 404 first), as a
// denied event.
func (x *exchange) guardedStage() bool {
	if x.guardBlock == nil {
		return true
	}
	x.finish(outcome{status: statusDenied, reason: reasonGuardrailBlocked, model: x.requested})
	x.d.refuse(x.w, x.guardBlock)
	return false
}

// attemptStage calls the route's upstream, falling back as the request's
// rule and alias allow (run); every path through it finishes the request.
func (x *exchange) attemptStage() bool {
	x.run(x.rt)
	return true
}

// finishUnfinished records a request that reached its model and was not
// finished (a bug, or a panic on the way) as an error.
func (x *exchange) finishUnfinished() {
	if x.requested != nil && !x.finished {
		x.p.inference.log.Error("a request ended without finishing; it is recorded as an error", "request_id", x.id)
		x.finish(outcome{status: statusError, reason: reasonInternal, model: x.lastModel(), failure: failUnavailable})
	}
}

// releaseBody gives back what the request held of the body budget.
func (x *exchange) releaseBody() {
	if x.hold != nil {
		x.hold.release()
	}
}

// streamWriter is a stream's writer: the dialect's, decorated with what
// the request adds around its chunks and its end. A decorator is added
// only where it has work, so a plain stream writes through the dialect's
// writer alone. A guardrail that reads a stream as it goes is one more
// decorator here. copies says every chunk is copied before chunk returns
// (the chat relay with no guardrail: eventStream.add), so a chunk need
// only last until the next one is asked for (providers.ViewStream).
func (x *exchange) streamWriter(rt *route, s providers.ChunkStream) (out streamOut, copies bool) {
	base := x.d.startStream(x.w, rt.native, rt.model.model.ID)
	x.customStream(base)
	out = x.guardStream(base, rt)
	_, chat := base.(chatStream)
	copies = chat && out == base
	x.estimateInput(out, rt)
	out = costedStream{streamOut: out, x: x, base: base}
	if progress, ok := s.(providers.ProgressStream); ok && x.slot != nil {
		out = journaledStream{streamOut: out, slot: x.slot, progress: progress}
	}
	return out, copies
}

// journaledStream journals a stream's progress before each chunk is
// relayed: a crash never bills less than the caller read.
type journaledStream struct {
	streamOut
	slot     *journalSlot
	progress providers.ProgressStream
}

func (s journaledStream) chunk(data []byte, more bool) error {
	s.slot.progress(s.progress)
	return s.streamOut.chunk(data, more)
}

// costedStream tells the caller the stream's exact cost at its end
// (streamCost); base is the dialect's own writer under the decorators.
type costedStream struct {
	streamOut
	x    *exchange
	base streamOut
}

func (s costedStream) end(u providers.Usage) error {
	if s.x.streamCost(s.base) {
		return s.streamOut.end(u)
	}
	if err := s.streamOut.end(u); err != nil {
		return err
	}
	if t, ok := s.base.(costCommenter); ok {
		return t.costComment(s.x.costUSD)
	}
	return nil
}

// costCommenter is a stream of named events, which has no [DONE]: the
// cost comment follows its last event.
type costCommenter interface {
	costComment(usd string) error
}

// costComment writes the SSE comment with the stream's cost, which every
// SSE parser skips (streamCost).
func (s *translatedStream) costComment(usd string) error {
	s.out.comment("gw-cost-usd " + usd)
	return s.out.last()
}
