package dataplane

import (
	"context"
	"errors"
	"github.com/gw-gateway/gw/server/guardrails/webhook"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/telemetry"
	"github.com/gw-gateway/gw/server/tokens"
	"github.com/gw-gateway/gw/wire"
)

// DefaultUpstreamTimeout bounds an upstream call that no fallback rule
// times. It matches gw serve's write timeout: a response cannot outlive it
// anyway.
const DefaultUpstreamTimeout = 10 * time.Minute

// DefaultMaxStreamDuration bounds how long a stream may last, however
// fast its upstream keeps sending (gw serve --max-stream-duration).
const DefaultMaxStreamDuration = 30 * time.Minute

// DefaultMaxRequestBytes bounds a chat completion's body. Images and PDFs
// travel inline as base64, so it is generous.
const DefaultMaxRequestBytes = 32 << 20

// inferenceConfig is what chat completions need beyond the bundles.
type inferenceConfig struct {
	keyring   SecretOpener
	usage     UsageSink
	upstreams *providers.Set
	timeout   time.Duration
	maxStream time.Duration
	maxSocket time.Duration
	maxBody   int64
	bodyRead  time.Duration
	log       *slog.Logger
	metrics   *telemetry.Metrics
	// hooks calls guardrail webhooks, dialling through egress (guard.go).
	hooks *webhook.Caller
}

func newInferenceConfig(opts Options, egressPolicy func() egress.Policy) inferenceConfig {
	c := inferenceConfig{keyring: opts.Keyring, usage: opts.Usage, upstreams: opts.Upstreams,
		timeout: opts.UpstreamTimeout, maxStream: opts.MaxStreamDuration, maxBody: opts.MaxRequestBytes, bodyRead: opts.BodyReadTimeout,
		log: opts.Logger, metrics: opts.Metrics, hooks: webhook.New(egressPolicy, nil)}
	if c.upstreams == nil {
		c.upstreams = providers.NewSet(providers.NewGuardedHTTPClient(egressPolicy))
	}
	if c.timeout <= 0 {
		c.timeout = DefaultUpstreamTimeout
	}
	if c.maxStream <= 0 {
		c.maxStream = DefaultMaxStreamDuration
	}
	if c.maxSocket = opts.MaxSocketDuration; c.maxSocket <= 0 {
		c.maxSocket = DefaultMaxSocketDuration
	}
	if c.bodyRead <= 0 {
		c.bodyRead = DefaultBodyReadTimeout
	}
	if c.maxBody <= 0 {
		c.maxBody = DefaultMaxRequestBytes
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c *inferenceConfig) enabled() bool { return c.keyring != nil && c.usage != nil }

// errAttemptTimeout is the cause an attempt's context is cancelled with
// when its time is up, which tells a timeout from a caller who left.
var errAttemptTimeout = errors.New("upstream attempt timed out")

// serveChatCompletions answers POST /inf/v1/chat/completions.
func (p *Plane) serveChatCompletions(w http.ResponseWriter, r *http.Request) {
	p.serveInference(w, r, chatDialect{})
}

// gate adds the checks every inference endpoint makes after the caller
// (the method, and whether inference is configured) to the caller's own
// refusal, which comes first.
func (p *Plane) gate(r *http.Request, refusal *response) *response {
	switch {
	case refusal != nil:
		return refusal
	case r.Method != http.MethodPost:
		return errPostOnly
	case !p.inference.enabled():
		return errInferenceNotConfigured
	}
	return nil
}

// serveInference is every inference endpoint's admission, in the dialect
// of its path (dialect.go).
//
// The order of refusals is deliberate: the key (401), the method, the body
// (400), the model's visibility (404, the same answer as discovery gives,
// so an unknown and a hidden model stay indistinguishable), then the
// policies in the inference phase (403), strict parameters, capabilities
// and limits (400). Only then is a secret opened and an upstream called.
// Every request that got as far as a visible model leaves exactly one
// usage event, whatever happens after (exchange.finish).
func (p *Plane) serveInference(w http.ResponseWriter, r *http.Request, d dialect) {
	// The exchange is allocated with its admission, in one piece.
	x := &exchange{d: d}
	refusal := p.admitInto(&x.admission, w, r, d.name(), true)
	defer x.end()
	if refusal != nil {
		d.refuse(x.w, refusal)
		return
	}
	x.serve()
}

// exchange is one model request in flight (a chat completion in any
// dialect, an embedding): its admission (the key, tags, rate limits, the
// policies' decision, the budget reservation, the one usage event) and
// what reading, routing and calling a model adds to it.
type exchange struct {
	admission
	// d is the endpoint's dialect.
	d dialect

	// req is the request as routing reads it (parsed.req); whole: it is
	// the whole request, which a translating adapter is given.
	req   *providers.ChatRequest
	whole bool
	// body is the request as read, valid until serve returns, for the
	// estimate a translated stream starts with; hold counts it and what
	// was made of it in the body budget.
	body []byte
	hold *bodyHold
	// native is the request in its own dialect, for upstreams that speak
	// it.
	native *providers.NativeRequest
	// translateErr is why the request cannot be translated for an
	// upstream that does not speak its dialect.
	translateErr error
	// caps are the request's capabilities in the policy vocabulary.
	caps []policy.Capability
	// input is what the budgets' cost bound needs of the body; counts the
	// body counted by each counter its routes needed (counted).
	input  inputShape
	counts bodyCounts

	// requested is the visible model asked for; from then on the request
	// is metered. targets are an alias's targets (the first is requested);
	// rt is the route chosen, reserved once its budgets hold its bound.
	// attempts is the chain of upstream calls made (the last one open
	// while attemptOpen).
	requested *routeModel
	targets   []aliasTarget
	rt        *route
	reserved  bool
	// alias is the model alias asked for, if one was; aliasRest its
	// other targets, in the order they serve as fallbacks.
	alias     string
	aliasRest []string
	// fallbackList is the request's own fallback list (fallbacks.go): as
	// written until the model stage, then the catalog models it names;
	// fallbackFrom says which member gave it (fallbackMembers' index + 1).
	fallbackList   []string
	fallbackFrom   uint8
	attempts       []wire.UsageAttempt
	attemptStarted time.Time
	attemptOpen    bool

	// attemptSpan is the attempt in flight's span, whose context
	// attemptCtx the upstream call runs in (so its trace context is
	// forwarded).
	attemptSpan  trace.Span
	attemptCtx   context.Context
	attemptModel *routeModel
	// sentCall is the attempt in flight's upstream call, trace its hook
	// on whether its request went out whole (floor.go).
	sentCall *providers.Call
	trace    *writeTrace
	// fwdHeader is what the upstream calls forward of the request's
	// headers (forwardHeader), with the beta flags of fwdVendor's, once
	// fwdMade.
	fwdHeader http.Header
	fwdVendor betaVendor
	fwdMade   bool
	// guardBlock is the guardrails' block of the request's input, answered
	// once its model is known (guardedStage).
	guardBlock *response
	// guardStreamNoted: a streamed answer's output stage is recorded
	// (once, whatever the attempts).
	guardStreamNoted bool
}

// route is a model the request may be sent to, with everything decided
// about sending it there.
type route struct {
	model    *routeModel
	decision policy.Decision
	adapter  providers.Adapter
	cred     *upstreamCredential
	// maxTokens is the output limit a request_limits policy imposes; 0
	// leaves the request's own.
	maxTokens int64
	// native: the adapter forwards the request in its own dialect, and
	// answers in it.
	native bool
	// prepared is the request as the adapter's Check translated it, which
	// every attempt of the route sends (translated once per route).
	prepared providers.Prepared
	// req and nativeReq, when set, are the request as this route sends it
	// in place of the exchange's: a low reasoning effort left out for a
	// model that does not reason (lowEffort).
	req       *providers.ChatRequest
	nativeReq *providers.NativeRequest
}

// serve walks the request through its stages (stages.go). Every request
// that got as far as a visible model is finished, whatever happens after;
// should a stage not finish it (a bug, or a panic on the way), it is still
// metered, as an error.
func (x *exchange) serve() {
	defer x.releaseBody()
	defer x.finishUnfinished()
	for i := range modelStages {
		if !modelStages[i].run(x) {
			return
		}
	}
}

// coolingTarget says whether the model's upstream, with the credential
// the key would call it with, is cooling down.
func (x *exchange) coolingTarget(id string) bool {
	m := x.key.org.models[id]
	if m == nil {
		return false
	}
	creds := x.key.org.credentials
	c := creds.pick(x.key.workspace, m.model.Provider, creds.eligible(x.key.workspace, m.model.Provider))
	return c != nil && x.p.health.cooling(c.id, id, x.p.now())
}

// targetIDs are the model ids of alias targets.
func targetIDs(ts []aliasTarget) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.id
	}
	return out
}

// requestedModel is the model id the caller asked for: the alias's name,
// or the catalog model's id.
func (x *exchange) requestedModel() string {
	if x.alias != "" {
		return x.alias
	}
	return x.requested.model.ID
}

// lastModel is the model of the last attempt, else the one asked for.
func (x *exchange) lastModel() *routeModel {
	if n := len(x.attempts); n > 0 {
		if m := x.key.org.models[x.attempts[n-1].Model]; m != nil {
			return m
		}
	}
	return x.requested
}

// visible returns the model if the key may use it: it is in the key's
// discovery view, which already applied allowlists, price ceilings,
// unconditional denies and credential eligibility.
func (x *exchange) visible(id string) *routeModel {
	if _, ok := x.view.byID[id]; !ok {
		return nil
	}
	// An alias's name is in the view too, and is no catalog model.
	return x.key.org.models[id]
}

// route decides whether and how the request may go to model m, or returns
// the refusal.
func (x *exchange) route(m *routeModel) (*route, *response) {
	req, key := x.req, x.key
	if !x.d.serves(m.model) {
		return nil, errWrongEndpoint(m.model, x.d.name())
	}
	dp, refusal := x.decideRoute(m)
	if refusal != nil {
		return nil, refusal
	}
	d := *dp
	adapter, native := x.p.inference.upstreams.Native(x.d.name(), m.kind, m.model.UpstreamModel())
	if !native {
		var ok bool
		if adapter, ok = x.p.inference.upstreams.For(m.kind); !ok || !x.d.translates() {
			if n, ok := x.d.(interface {
				notNative(string, catalog.Kind) *response
			}); ok {
				// An endpoint only some upstreams have (compact.go).
				return nil, n.notNative(m.model.ID, m.kind)
			}
			return nil, errProviderKind(m.model.Provider, m.kind)
		}
		if x.translateErr != nil {
			return nil, invalidResponse(x.translateErr)
		}
		if refusal := x.translateWhole(); refusal != nil {
			return nil, refusal
		}
	}
	if d.StrictParameters {
		if unknown := x.d.unknown(x, !native); len(unknown) > 0 {
			return nil, invalidRequest(unknown[0], "unknown_parameter",
				"Unrecognized request argument supplied: "+unknown[0]+". A strict_parameters policy applies to this request.")
		}
	}
	if refusal := x.dropTools(native, d.StrictParameters); refusal != nil {
		return nil, refusal
	}
	dropEffort := req.LowEffort() && !m.model.HasCapability(catalog.CapabilityReasoning) && !d.StrictParameters
	delete(x.w.Header(), "X-Gw-Dropped-Params")
	for _, c := range req.Capabilities() {
		if c == catalog.CapabilityReasoning && dropEffort {
			continue
		}
		if !m.model.HasCapability(c) {
			// The member is named in the message too: Anthropic's error
			// shape has no param.
			param := x.ownParam(capabilityParam[c])
			return nil, invalidRequest(param, "unsupported_capability",
				"The model '"+m.model.ID+"' does not support "+string(c)+", which this request's "+param+" requires.")
		}
	}
	for _, md := range req.Modalities() {
		if !m.model.HasModality(md) {
			return nil, invalidRequest("messages", "unsupported_modality",
				"The model '"+m.model.ID+"' does not accept "+string(md)+" input.")
		}
	}
	rt := &route{model: m, decision: d, adapter: adapter, native: native}
	if dropEffort {
		x.lowEffort(rt)
	}
	if refusal := x.adapt(rt, d.StrictParameters); refusal != nil {
		return nil, refusal
	}
	if limit := d.MaxOutputTokens; limit > 0 && (req.MaxTokens == 0 || req.MaxTokens > limit) {
		if req.MaxTokens > limit && d.StrictParameters {
			return nil, invalidRequest(x.maxTokensParam(), "max_tokens_exceeded",
				"max_tokens is "+strconv.FormatInt(req.MaxTokens, 10)+"; a policy limits output to "+strconv.FormatInt(limit, 10)+" tokens.")
		}
		rt.maxTokens = limit
	}
	if err := adapter.Check(x.call(rt, "", ""), d.StrictParameters); err != nil {
		if !native {
			err = x.ownParams(err)
		}
		return nil, invalidResponse(err)
	}
	rt.cred = key.org.credentials.pick(key.workspace, m.model.Provider, d.CredentialScopes)
	if rt.cred == nil {
		// Evaluate allows a request only when a usable scope has a
		// credential, so this is a bundle that contradicts itself.
		return nil, policyDenied("no credential for model '" + m.model.ID + "' is available")
	}
	return rt, nil
}

// decideRoute is admission.decide for model m, from the key's decision
// cache when the request is the key's own: the same decision, evaluated
// once per key, model and request facts on each bundle.
func (x *exchange) decideRoute(m *routeModel) (*policy.Decision, *response) {
	key := x.key
	req := policy.Request{Model: m.model.ID, Provider: m.model.Provider, InputPricePerMTok: m.input,
		OutputPricePerMTok: m.output, Stream: x.req.Stream, Capabilities: x.caps}
	caps, known := capsMask(x.caps)
	if x.caller != nil || key.playground || !known {
		req.CredentialScopes = key.org.credentials.eligible(key.workspace, m.model.Provider)
		return x.decide(req)
	}
	d, lists := key.decisions.decision(decisionKey{model: m.model.ID, stream: x.req.Stream, caps: caps}, func() policy.Decision {
		req.CredentialScopes = key.org.credentials.eligible(key.workspace, m.model.Provider)
		return x.evaluate(req)
	})
	x.lists = lists
	return x.decided(d)
}

// translateWhole makes the whole request's translation, which an adapter
// that translates it for its upstream is given, in place of the outline's
// that routing read (the same request, as far as routing reads it).
func (x *exchange) translateWhole() *response {
	if x.whole {
		return nil
	}
	req, held, err := x.d.(translator).translate(x.body)
	if err != nil {
		return invalidResponse(err)
	}
	if x.hold != nil {
		x.hold.count(held)
	}
	x.req, x.whole = req, true
	return nil
}

// lowEffort has the route leave out a reasoning effort of none or minimal
// for a model that does not reason, which serves such a request as asked
// (issue 35): the chat request without reasoning_effort, a native request
// without its member (reasoning, Responses'), named in
// x-gw-dropped-params. A strict_parameters policy refuses instead, as the
// capability check does.
func (x *exchange) lowEffort(rt *route) {
	rt.req = x.req.WithoutReasoningEffort()
	param := x.ownParam("reasoning_effort")
	if rt.native && x.native != nil {
		n := *x.native
		n.Edits = append(append([]providers.Edit(nil), x.native.Edits...), providers.Edit{Name: param})
		rt.nativeReq = &n
	}
	x.w.Header()["X-Gw-Dropped-Params"] = []string{param}
}

// toolDropper is a dialect whose translation leaves out tools only its
// own vendor runs.
type toolDropper interface {
	dropped(members providers.Members) []providers.DroppedTool
	// translated names the tools the translation sends in another form
	// (x-gw-translated-tools).
	translated(members providers.Members) []string
}

// dropTools names, in x-gw-dropped-tools, the tools a translation for
// this route leaves out (a native upstream gets them all), or refuses the
// first of them when strict_parameters applies.
func (x *exchange) dropTools(native, strict bool) *response {
	h := x.w.Header()
	delete(h, "X-Gw-Dropped-Tools")
	delete(h, "X-Gw-Translated-Tools")
	td, ok := x.d.(toolDropper)
	if native || !ok {
		return nil
	}
	if names := td.translated(x.native.Members); len(names) > 0 {
		h["X-Gw-Translated-Tools"] = []string{strings.Join(names, ", ")}
	}
	dropped := td.dropped(x.native.Members)
	if len(dropped) == 0 {
		return nil
	}
	if strict {
		return invalidRequest(dropped[0].Param, "unsupported_value", "Tool '"+dropped[0].Name+
			"' cannot run on this model, and a strict_parameters policy applies to this request.")
	}
	names := make([]string, len(dropped))
	for i, t := range dropped {
		names[i] = t.Name
	}
	h["X-Gw-Dropped-Tools"] = []string{strings.Join(names, ", ")}
	return nil
}

// call is the upstream call along the route.
func (x *exchange) call(rt *route, baseURL, secret string) *providers.Call {
	m := rt.model.model
	req := x.req
	if rt.req != nil {
		req = rt.req
	}
	c := &providers.Call{
		Request: req, UpstreamModel: m.UpstreamModel(), ResponseModel: m.ID,
		UpstreamModelJSON: rt.model.upstreamJSON, ResponseModelJSON: rt.model.idJSON,
		BaseURL: baseURL, Secret: secret, MaxTokens: rt.maxTokens, DefaultMaxTokens: m.MaxOutputTokens,
		RequestID: x.requestID, Header: x.forwardHeader(rt), Prepared: &rt.prepared, AnthropicVersion: m.AnthropicVersion(),
		Translated: x.d.name() != endpointChatCompletions, PromptCache: x.promptCache(),
	}
	if rt.native {
		c.Native = x.native
		if rt.nativeReq != nil {
			c.Native = rt.nativeReq
		}
	}
	if rt.cred != nil {
		c.CredentialID, c.Generation, c.Settings = rt.cred.idString, uint64(x.key.org.version), rt.cred.settings
	}
	return c
}

// capabilityParam names the request member that required a capability.
var capabilityParam = map[catalog.Capability]string{
	catalog.CapabilityStreaming:        "stream",
	catalog.CapabilityTools:            "tools",
	catalog.CapabilityReasoning:        "reasoning_effort",
	catalog.CapabilityStructuredOutput: "response_format",
}

func (x *exchange) maxTokensParam() string {
	if _, ok := x.req.Members.Get("max_completion_tokens"); ok {
		return "max_completion_tokens"
	}
	return "max_tokens"
}

// run calls the upstream of the first route and, when it fails in a way
// the request's fallback rule names, the fallback models in order, each
// re-checked as if it had been asked for, until one answers or the rule's
// attempts are spent. Once a stream has started, there is no falling back:
// the caller has already read part of an answer.
func (x *exchange) run(first *route) {
	plan := x.fallbackPlan(first)
	rt := first
	for n := 1; ; n++ {
		failure := x.attempt(rt, plan.timeout)
		x.p.health.record(rt.cred.id, rt.model.model.ID, rt.model.model.Provider, failure, x.p.now())
		if failure != nil && errors.Is(failure, errCoolingDown) {
			// A target skipped was not called: it spends none of the
			// attempts a fallback rule allows.
			n--
		}
		if failure == nil {
			return
		}
		var next *route
		if n < plan.attempts && plan.triggered(failure.Kind) {
			next, plan.candidates = x.nextCandidate(plan.candidates)
		}
		if next == nil {
			x.fail(rt, failure)
			return
		}
		// The failed attempt's reservation is gone; the next model's was
		// made when it was chosen.
		x.closeAttempt(failureKind(failure))
		x.p.inference.metrics.ObserveFallback(string(trigger(failure.Kind)))
		x.p.inference.log.Warn("upstream failed; falling back",
			"request_id", x.id, "model", rt.model.model.ID, "error", failure.Error(), "fallback_model", next.model.model.ID, "attempt", n+1)
		rt = next
	}
}

// fallbackPlan is what may follow a failed attempt: the candidates in
// order, how many attempts in all, and each attempt's timeout.
type fallbackPlan struct {
	fb *policy.Fallback
	// anyTransient: every transient failure moves the request on (an
	// alias's other targets, a request's own list), not only those the
	// policies' rule names.
	anyTransient bool
	candidates   []string
	attempts     int
	timeout      time.Duration
}

// fallbackPlan combines an alias's other targets, then the request's own
// list (fallbacks.go), each tried on any transient failure, with the
// fallback rule of the policies.
func (x *exchange) fallbackPlan(first *route) fallbackPlan {
	p := fallbackPlan{fb: first.decision.Fallback, timeout: x.p.inference.timeout, attempts: 1}
	if p.fb != nil {
		p.timeout, p.attempts, p.candidates = time.Duration(p.fb.TimeoutMS)*time.Millisecond, p.fb.MaxAttempts, p.fb.Models
	}
	if len(x.fallbackList) > 0 {
		p.anyTransient = true
		p.candidates = append(slices.Clip(x.fallbackList), p.candidates...)
		p.attempts += len(x.fallbackList)
	}
	if len(x.aliasRest) > 0 {
		p.anyTransient = true
		p.candidates = append(slices.Clip(x.aliasRest), p.candidates...)
		p.attempts += len(x.aliasRest)
	}
	return p
}

// triggered says whether a failure of kind k moves the request on.
func (p *fallbackPlan) triggered(k providers.ErrorKind) bool {
	t := trigger(k)
	if t == "" {
		return false
	}
	return p.anyTransient || (p.fb != nil && slices.Contains(p.fb.On, t))
}

// nextCandidate returns the first remaining fallback model the request may
// be routed to, and the candidates after it. A candidate the key may not
// see, or that policies, capabilities or limits refuse for this request,
// is skipped: a fallback never does what asking for the model directly
// would not.
func (x *exchange) nextCandidate(candidates []string) (*route, []string) {
	for len(candidates) > 0 {
		id := candidates[0]
		candidates = candidates[1:]
		m := x.visible(id)
		if m == nil {
			continue
		}
		decided := x.decision
		if rt, refusal := x.route(m); refusal == nil {
			// A candidate the budgets cannot take is skipped like one the
			// policies refuse; the attempt before it gives back its bound
			// only once a candidate holds one, so the answer is never
			// left without a reservation.
			prev := x.budget
			if x.reserveRoute(rt) == nil {
				prev.Settle(0)
				return rt, candidates
			}
			x.budget = prev
		}
		// A candidate skipped leaves the request on the model it was on.
		x.decision = decided
	}
	return nil, nil
}

// trigger maps an upstream failure to the fallback trigger it is.
func trigger(k providers.ErrorKind) policy.FallbackTrigger {
	switch k {
	case providers.RateLimited:
		return policy.TriggerRateLimited
	case providers.Unavailable:
		return policy.TriggerUpstreamUnavailable
	case providers.Timeout:
		return policy.TriggerTimeout
	}
	return ""
}

// attempt sends the request along rt. It returns nil when the exchange is
// over, answered and recorded, and the failure otherwise, with nothing
// written yet.
func (x *exchange) attempt(rt *route, timeout time.Duration) *providers.Error {
	m := rt.model
	x.endAdmission()
	x.startAttempt(m)
	x.attemptCtx = x.traceWrites(x.attemptCtx)
	if f := x.p.health.admit(rt.cred.id, m.model.ID, x.p.now()); f != nil {
		return f
	}
	secret, err := rt.cred.open(x.p.inference.keyring)
	if err != nil {
		// The error names neither the secret nor the sealed value.
		x.p.inference.log.Error("provider credential cannot be opened", "request_id", x.id, "credential_id", rt.cred.id, "error", err)
		x.finish(outcome{status: statusError, reason: failCredential, failure: failCredential, model: m, cred: rt.cred})
		x.setAttemptHeaders(nil)
		x.d.refuse(x.w, errCredentialUnavailable(m.model.ID))
		return nil
	}
	baseURL := rt.cred.baseURL
	if baseURL == "" {
		baseURL = m.baseURL
	}
	if baseURL == "" {
		return &providers.Error{Kind: providers.Unavailable, Message: "no base URL is configured for provider " + m.model.Provider}
	}
	call := x.call(rt, baseURL, secret)
	call.InputFloor = x.inputFloor(rt)
	x.sentCall = call
	x.journalAttempt(rt)
	if x.req.Stream {
		return x.stream(rt, call, timeout)
	}
	// One cancel for the attempt's timeout and the gateway's shutdown
	// (the plane's call registry), not a context each.
	ctx, cancel := context.WithCancelCause(x.attemptCtx)
	defer cancel(nil)
	deadline := time.AfterFunc(timeout, func() { cancel(errAttemptTimeout) })
	defer deadline.Stop()
	x.p.calls.add(x, cancel)
	defer x.p.calls.remove(x)
	c, err := rt.adapter.Complete(ctx, call)
	if err != nil {
		return x.failure(ctx, rt, err)
	}
	body, err := x.d.answer(c, rt.native, m.model.ID)
	if err == nil && !rt.native {
		body, err = x.customCalls(body)
	}
	if err != nil {
		return x.failure(ctx, rt, err)
	}
	// The guard stage on the answer: redacted before the caller reads it,
	// or refused whole (the upstream's tokens were spent and are metered).
	body, block := x.guardOutput(body)
	// Recorded before the answer is written: a caller who has read it can
	// count on its event.
	x.finish(outcome{status: statusOK, model: m, cred: rt.cred, usage: c.Usage})
	if block != nil {
		x.setAttemptHeaders(m)
		x.d.refuse(x.w, block)
		return nil
	}
	x.setAttemptHeaders(m)
	h := x.w.Header()
	// The settled cost, in USD, for every caller (issue 35).
	if x.costUSD != "" {
		h["X-Gw-Cost-Usd"] = []string{x.costUSD}
	}
	h["Content-Type"] = contentTypeJSON
	h["Cache-Control"] = noStore
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	x.w.WriteHeader(http.StatusOK)
	_, _ = x.w.Write(body)
	return nil
}

// stream relays a streaming answer. The attempt's timeout runs until the
// first chunk: up to then nothing is written and another model may still
// answer; after it, the stream lasts as long as the caller stays, at most
// the plane's maximum stream duration, or until the gateway's shutdown
// deadline.
//
// A stream ends with [DONE] only when the upstream's ended whole; one that
// broke off or was cut short ends with an error event, which the OpenAI
// SDKs report as an error, and is metered as an error. However it ends, its
// usage event is never below what was relayed: what the upstream did not
// report, the adapter counts (providers.Usage.Estimated).
func (x *exchange) stream(rt *route, call *providers.Call, timeout time.Duration) *providers.Error {
	// A caller who leaves ends the upstream call at once, before the first
	// chunk or after: providers stop generating and bill what they
	// generated, which is what the usage event counts.
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(x.attemptCtx))
	defer cancel(nil)
	x.p.calls.add(x, cancel)
	defer x.p.calls.remove(x)
	stopWatch := context.AfterFunc(x.r.Context(), func() { cancel(errClientGone) })
	defer stopWatch()
	longest := time.AfterFunc(x.p.inference.maxStream, func() { cancel(errStreamTooLong) })
	defer longest.Stop()
	// The server's write timeout must not cut a stream the maximum allows.
	_ = http.NewResponseController(x.w).SetWriteDeadline(time.Now().Add(x.p.inference.maxStream + streamWriteGrace))
	timer := time.AfterFunc(timeout, func() { cancel(errAttemptTimeout) })
	s, err := rt.adapter.Stream(ctx, call)
	if err != nil {
		timer.Stop()
		return x.failure(ctx, rt, err)
	}
	defer s.Close()
	first, err := s.Recv()
	if !timer.Stop() {
		return &providers.Error{Kind: providers.Timeout, Cause: errAttemptTimeout}
	}
	if err == io.EOF {
		return &providers.Error{Kind: providers.Unavailable, Message: "the upstream stream ended without a chunk"}
	}
	if err != nil {
		return x.failure(ctx, rt, err)
	}

	x.setAttemptHeaders(rt.model)
	x.firstToken = time.Since(x.started)
	out, copies := x.streamWriter(rt, s)
	o := outcome{status: statusOK, model: rt.model, cred: rt.cred}
	// A stream that can tell a whole chunk is already buffered lets the
	// chunks of one upstream read go out in one write and flush.
	pending, _ := s.(interface{ Pending() bool })
	// Where every chunk is copied before the next is asked for, the
	// stream may hand each in a buffer of its own (no allocation a
	// chunk); anywhere a decorator may keep one, each is a fresh slice.
	view, _ := s.(providers.ViewStream)
	if !copies {
		view = nil
	}
	for chunk := first; ; {
		// Writes that coalesce are fewer, and a write to a connection the
		// caller closed may still succeed into the kernel's buffer; the
		// request's context says at once that the caller left.
		err := x.r.Context().Err()
		if err == nil {
			err = out.chunk(chunk, pending != nil && pending.Pending())
		}
		if errors.Is(err, errGuardBlocked) {
			// A guardrail ended the answer (its error event is written):
			// the upstream call ends now, metered for what it generated.
			cancel(errGuardBlocked)
			_ = s.Close()
			o.usage = s.Usage()
			x.finish(o)
			return nil
		}
		if err != nil {
			// The caller is gone: the upstream call ends now, billed for
			// what it generated.
			cancel(errClientGone)
			_ = s.Close()
			o.status, o.reason, o.failure = statusError, failClientGone, failClientGone
			o.usage = s.Usage()
			x.finish(o)
			return nil
		}
		if view != nil {
			chunk, err = view.RecvView()
		} else {
			chunk, err = s.Recv()
		}
		if err == io.EOF {
			o.usage = s.Usage()
			// The held tail is checked before the event is recorded.
			drainGuard(out)
			x.finish(o)
			_ = out.end(o.usage)
			return nil
		}
		if err != nil {
			f := x.failure(ctx, rt, err)
			o.usage = s.Usage()
			kind := failureKind(f)
			o.status, o.failure, o.reason = statusError, kind, kind
			switch {
			case errors.Is(f, providers.ErrStreamTruncated):
				o.reason = reasonTruncated
			case errors.Is(f, errStreamTooLong):
				o.reason = reasonMaxStreamDuration
			}
			if kind != failClientGone {
				x.p.inference.log.Warn("upstream stream failed", "request_id", x.id, "model", rt.model.model.ID, "error", f.Error())
			}
			x.finish(o)
			if kind != failClientGone {
				_ = out.fail(rt.model.model.ID, f)
			}
			return nil
		}
	}
}

// estimateInput gives a Messages stream translated from Chat Completions
// the input estimate its message_start reports: the upstream's own count
// comes only with the last chunk.
func (x *exchange) estimateInput(out streamOut, rt *route) {
	ms, ok := out.(*messagesStream)
	if !ok {
		return
	}
	if t, ok := ms.translate.(*providers.MessagesStream); ok {
		t.InputTokens = tokens.CountJSON(tokens.ForModel(rt.model.model.UpstreamModel()), x.body)
	}
}

// streamWriteGrace is the time a stream at its maximum duration still has
// to write its end.
const streamWriteGrace = time.Minute

// errClientGone and errStreamTooLong are the causes a stream's call is
// ended with when the caller leaves and when it reaches the maximum
// duration.
var (
	errClientGone    = errors.New("the caller went away")
	errStreamTooLong = errors.New("the stream reached the maximum stream duration")
)

// failure classifies an adapter's error. The attempt's own deadline makes
// a timeout whatever the adapter saw (a stream's is a cancellation).
func (x *exchange) failure(ctx context.Context, rt *route, err error) *providers.Error {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errAttemptTimeout):
		return &providers.Error{Kind: providers.Timeout, Cause: errAttemptTimeout}
	case errors.Is(cause, errShuttingDown):
		return &providers.Error{Kind: providers.Canceled, Cause: errShuttingDown}
	case errors.Is(cause, errStreamTooLong):
		return &providers.Error{Kind: providers.Timeout, Message: "the stream reached the gateway's maximum stream duration", Cause: errStreamTooLong}
	case errors.Is(cause, errClientGone):
		return &providers.Error{Kind: providers.Canceled, Cause: errClientGone}
	}
	var f *providers.Error
	if errors.As(err, &f) {
		return f
	}
	var inv *providers.InvalidRequestError
	if errors.As(err, &inv) {
		// Check has passed this request, so this is not expected; it is
		// still the request's fault, and no fallback would fare better.
		return &providers.Error{Kind: providers.Rejected, Status: http.StatusBadRequest, Message: inv.Message, Param: inv.Param, Code: inv.Code}
	}
	return &providers.Error{Kind: providers.Unavailable, Cause: err}
}

// fail records the request as ended by the last upstream failure, then
// answers with it.
func (x *exchange) fail(rt *route, f *providers.Error) {
	m := rt.model.model
	kind := failureKind(f)
	if f.Kind == providers.Unauthorized {
		f.Credential = rt.cred.idString
	}
	if kind != failClientGone {
		x.p.inference.log.Warn("upstream failed", "request_id", x.id, "model", m.ID, "provider", m.Provider,
			"credential_id", rt.cred.id, "error", f.Error())
	}
	x.finish(outcome{status: statusError, reason: kind, failure: kind, model: rt.model, cred: rt.cred, usage: x.unanswered(f)})
	if kind == failClientGone {
		// Nobody is left to read an answer.
		return
	}
	x.setAttemptHeaders(nil)
	x.d.refuse(x.w, upstreamFailure(m.ID, f))
}
