package dataplane

import (
	"encoding/json"
	"github.com/gw-gateway/gw/server/guardrails"
	"net/http"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/spend"
	"github.com/gw-gateway/gw/wire"
)

// admission is the half of a request that every endpoint which spends
// shares, whatever it asks for: a chat completion in any dialect, and a
// request that is none (a tool call, a guardrail's own call, a batch).
// It is the one path from a caller's key to the request's single usage
// event:
//
//	a, refusal := p.admitRequest(w, r, endpoint) // the key, the method, tags, tag sets, rate limits
//	defer a.end()                                // metrics, the in-flight count
//	d, refusal := a.decide(policy.Request{…})     // the policies, for a model or a pseudo-model
//	refusal = a.reserve(d, bound)                 // the budgets the decision names, for a bound
//	…                                             // the work: an upstream call, a tool call
//	a.finish(usageRecord{…})                      // one usage event: the sink, the journal, settlement
//
// A chat completion's exchange is an admission and the stages that read
// and route a model request (stages.go); it meters through the same
// finish. Refusals are returned, never written: each endpoint answers in
// its own shape (a dialect's error, a JSON-RPC error).
type admission struct {
	p *Plane
	// batchLine is the batch line this request sends for the runner
	// (batchrun.go), nil for a caller's request: looked up once, in begin.
	batchLine *batchLineCtx
	// guardRecords are what the guardrails did to the request (guard.go),
	// recorded on its usage event.
	guardRecords []wire.GuardrailRecord
	// guardOut is a streamed answer's output stage (guard.go), whose
	// records the usage event takes when it is recorded.
	guardOut *guardrails.Run
	// archive keeps the request's payload for its workspace's archive
	// (archive.go), nil when it archives nothing.
	archive *archiveTap
	// w is the caller's writer (counted for the metrics), r the request.
	w  http.ResponseWriter
	mw *meteredWriter
	r  *http.Request
	// endpoint names the request in its usage event, metrics and traces
	// (endpointChatCompletions, …).
	endpoint string
	// started is when the handler began; occurred when the request was
	// admitted (its event's occurred_at).
	started  time.Time
	occurred time.Time
	// id is the request's usage event id; requestID the X-Request-Id
	// answered (the caller's own, or id).
	id        uuid.UUID
	requestID string
	// key is the request's inference key once authenticated (a made-up
	// one for a playground request, whose caller is the management
	// principal it runs as); view what the key may see.
	key    *inferenceKey
	view   *modelView
	caller *Caller
	// tags are the request's cost-centre tags: its key's over its
	// X-Gw-Tags header's (tags.Merge).
	tags map[string]string
	// inFlight: the request counts in the plane's flights (EndInFlight
	// waits for its event).
	inFlight bool
	// admitSpan spans the request's checks up to its first upstream call
	// (or its refusal).
	admitSpan trace.Span
	// rateRefused names the rate limit that refused the request, if one
	// did.
	rateRefused string

	// decision is the policies' decision the request is on (for a chat
	// completion: the model asked for, then each fallback taken), for the
	// provenance and the budgets.
	decision *policy.Decision
	// lists are the provenance lists of decision when it is a cached one
	// (decisions.go): used only while they are decision's (provenance.go).
	lists *provenanceLists
	// budget holds the cost bound against the request's budgets; finish
	// settles it to the exact cost.
	budget *spend.Reservation
	// slot is the request's record in the plane's request journal, from
	// its first upstream attempt until its event is recorded (crash.go).
	slot *journalSlot

	// finished: finish has run (a second call is a bug, ignored); final
	// is what it recorded, at costNano (costUSD as a decimal). (An
	// exchange and its admission are one allocation, which these fields
	// keep in the 896-byte size class.)
	finished bool
	final    usageRecord
	costNano int64
	costUSD  string
	// What the metrics label a request with beyond its event: refused
	// is the code a request that leaves no event (count_tokens) was
	// refused with once its model was known (which final's requested,
	// model and provider name, unfinished); streamed whether it streamed;
	// upstream the time spent upstream and firstToken a stream's time to
	// its first chunk.
	refused              string
	streamed             bool
	upstream, firstToken time.Duration
}

// usageRecord is what a finished request records in its usage event,
// beyond what its admission knows (key, workspace, organization, tags,
// request id, endpoint, latency, policies and budgets).
type usageRecord struct {
	// status is statusOK, statusError or statusDenied; reason a code of
	// gw's saying why a request was denied or ended in error; failure how
	// the attempt in flight failed, if one is and did.
	status, reason, failure string
	// model and provider are what answered (or the last tried or
	// refused); a request that is not a model's names what it called the
	// same way (a tool call: its server's pseudo-model). requested is the
	// model asked for, when not model.
	model, provider, requested string
	credentialID               *uuid.UUID
	usage                      providers.Usage
	// costNano is the exact cost, charged to the budgets the reservation
	// held.
	costNano int64
	// attempts is the chain of upstream calls made; prices the prices the
	// tokens were charged at, when an upstream was called.
	attempts []wire.UsageAttempt
	prices   *wire.UsagePrices
	// toolArguments (and their size) are a tool call's arguments for its
	// audit row, set only when the workspace records them.
	toolArguments      json.RawMessage
	toolArgumentsBytes int64
	// cacheHit: the response cache answered (cache.go); savingNano is
	// what the upstream call would have cost.
	cacheHit   bool
	savingNano int64
	// serviceTier is the service tier the request was billed in; "" for
	// none named.
	serviceTier string
	// batchID is the batch the request is a line of ("" for a synchronous
	// request); its prices are the batch prices (prices.price_class).
	batchID string
}

// beginRequest opens a request of endpoint: its answer metered, its id
// set and echoed, counted in flight (so EndInFlight waits for its
// event), its admission span open. end closes it.
func (p *Plane) beginRequest(w http.ResponseWriter, r *http.Request, endpoint string) *admission {
	a := new(admission)
	p.begin(a, w, r, endpoint)
	return a
}

// begin is beginRequest into a (an exchange's own, which is allocated
// with it).
func (p *Plane) begin(a *admission, w http.ResponseWriter, r *http.Request, endpoint string) {
	a.p, a.r, a.endpoint, a.started, a.inFlight = p, r, endpoint, time.Now(), true
	p.flights.Add(1)
	a.mw = &meteredWriter{ResponseWriter: w}
	a.w = a.mw
	// Time-ordered (UUIDv7): the usage tables' id and request-id indexes
	// grow at their right edge instead of splitting pages at random
	// (docs/decisions.md, issue 33).
	a.id = uuid.Must(uuid.NewV7())
	if a.batchLine = batchLineOf(r.Context()); a.batchLine != nil {
		// A batch line's event id is its take's request id, whoever
		// records it: this request, its request journal after a crash, or
		// the control plane billing a lost plane's line at its bound
		// (docs/batches.md): one event, kept once.
		if id, err := uuid.Parse(r.Header.Get("X-Request-Id")); err == nil {
			a.id = id
		}
	}
	a.requestID = setRequestID(a.w, r, a.id)
	a.admitSpan = startAdmission(r.Context())
}

// admitRequest is the admission of a request with an inference key, to
// any endpoint that spends: the key (401), the method and configuration,
// the request's tags and the key's tag sets, and the key's rate limits
// (429, with the x-ratelimit headers set on the answer). The admission is
// returned even with a refusal, which the caller writes in its own shape;
// defer its end either way.
func (p *Plane) admitRequest(w http.ResponseWriter, r *http.Request, endpoint string) (*admission, *response) {
	a := new(admission)
	return a, p.admitInto(a, w, r, endpoint, false)
}

// admitInto is admitRequest into a. With bodyTags (a model request, whose
// body may carry LiteLLM's metadata.tags) only the headers' tags are
// admitted here, and a.tags holds them until the tags stage completes the
// set once the body is read (tags.go).
func (p *Plane) admitInto(a *admission, w http.ResponseWriter, r *http.Request, endpoint string, bodyTags bool) *response {
	p.begin(a, w, r, endpoint)
	p.limitBodyTime(a.w)
	refusal := p.gate(r, a.authenticate())
	switch {
	case refusal != nil:
	case bodyTags:
		a.tags, refusal = headerTags(r, a.key)
		if refusal == nil {
			// Past the bound already: refused before the body is read.
			_, refusal = completeTags(a.tags, a.key, false)
		}
	default:
		a.tags, refusal = tagsOf(r, a.key)
		if refusal == nil {
			refusal = p.tagSets.admit(a.key.id, a.tags, p.now())
		}
	}
	if refusal == nil {
		refusal = a.admitRate()
	}
	if refusal != nil {
		a.endAdmission()
	} else {
		a.startArchive()
	}
	return refusal
}

// authenticate finds the request's inference key (Plane.authenticate),
// or the 401 to answer.
func (a *admission) authenticate() *response {
	key, refusal := a.p.authenticate(a.r)
	if key != nil {
		a.key, a.view = key.inference, key.models
	}
	return refusal
}

// admitRate counts the request against its key's rate limits, and marks
// it admitted (its occurred_at) when they take it.
func (a *admission) admitRate() *response {
	release := a.p.topUp(a.r.Context(), a.key)
	refusal, refused := a.p.admitRate(a.w, a.key)
	release()
	if refusal != nil {
		a.rateRefused = refused
		if bl := a.batchLine; bl != nil {
			// Refused before anything was sent: the runner puts the
			// line back to wait for the key's next window.
			bl.rateLimited = true
		}
		return refusal
	}
	a.occurred = a.p.now().UTC().Truncate(time.Microsecond)
	return nil
}

// end counts the request once its handler is done, however it ended, and
// takes it out of the flights.
func (a *admission) end() {
	a.submitArchive()
	a.p.observe(a)
	if a.inFlight {
		a.p.flights.Add(-1)
	}
}

// endAdmission ends the admission span, if still open: admission is over
// when the first upstream call starts or the request is refused.
func (a *admission) endAdmission() {
	if a.admitSpan != nil {
		a.admitSpan.End()
		a.admitSpan = nil
	}
}

// owner is who a policy's selected_users target matches: the key's
// owner; a playground request is the caller's, so a target matches the
// caller's user, not the owner of the key it runs on.
func (a *admission) owner() uuid.UUID {
	if a.caller != nil {
		return a.caller.UserID
	}
	return a.key.owner
}

// decide evaluates the key's policies in the inference phase for req (a
// model, or the pseudo-model a request that is none stands for), filling
// in the phase, the key and its owner. The decision becomes the request's
// (its provenance and budgets); a deny is the 403 returned.
func (a *admission) decide(req policy.Request) (*policy.Decision, *response) {
	d := a.evaluate(req)
	return a.decided(&d)
}

// evaluate is the key's policies' decision for req in the inference
// phase, for the key and its owner: what decide makes the request's, and
// what a key's decision cache keeps (decisions.go).
func (a *admission) evaluate(req policy.Request) policy.Decision {
	req.Phase, req.KeyID, req.OwnerUserID = policy.PhaseInference, a.key.idString, a.owner()
	return policy.Evaluate(a.key.policies, req)
}

// decided makes d the request's decision; a deny is the 403 returned. d
// may be shared with other requests (decisions.go): it is read, never
// written.
func (a *admission) decided(d *policy.Decision) (*policy.Decision, *response) {
	a.decision = d
	if !d.Allowed {
		return d, policyDenied(d.DenyMessage)
	}
	return d, nil
}

// reserve holds the request's cost bound against every budget decision d
// counts it against (none: nothing is held, and bound is not called),
// asking the control plane for leases when the ones held fall short and
// waiting for room while requests in flight hold it. A refusal names the
// budget and when it resets. finish settles the reservation to the exact
// cost.
func (a *admission) reserve(d *policy.Decision, bound func() (int64, error)) *response {
	return a.reserveFrom(d, bound, spend.Source{})
}

// reserveFrom is reserve with the room src says (spend.Source): a hold
// made for a batch's whole run, or a share of one drawn (batchhold.go).
// With none, a batch line the runner sends draws its share of its
// batch's hold (budgetState.reserve).
func (a *admission) reserveFrom(d *policy.Decision, bound func() (int64, error), src spend.Source) *response {
	if len(d.Budgets) == 0 {
		return nil
	}
	claims, err := a.claims(d)
	if err == nil {
		var n int64
		if n, err = bound(); err == nil {
			a.budget, err = a.p.budgets.reserve(a.r.Context(), a, claims, n, src)
		}
	}
	if refusal, ok := err.(*spend.Refusal); ok {
		return budgetRefused(refusal, a.p.now())
	}
	if err != nil {
		a.p.inference.log.Error("budget admission", "request_id", a.id, "error", err)
		return errBudgetUnavailable
	}
	return nil
}

// finish records the request's single usage event: see record. Every
// path of a metered request calls it exactly once, before the answer's
// last byte is written; a second call is a bug, logged and ignored.
func (a *admission) finish(u usageRecord) {
	if a.closing(u.status, u.reason) {
		a.record(u)
	}
}

// closing marks the request finished, and reports false (logging the
// bug) when it was already.
func (a *admission) closing(status, reason string) bool {
	if a.finished {
		a.p.inference.log.Error("a request finished twice; the second outcome is ignored", "request_id", a.id, "status", status, "reason", reason)
		return false
	}
	a.finished = true
	a.endAdmission()
	return true
}

// record is the one point where a metered request ends: it builds the
// request's usage event and hands it to the sink, so a caller who has read
// the whole answer can count on its event having been recorded. What else
// must happen once per request when it ends happens here: the journal has
// the outcome before the reservation settles to the exact cost, and the
// key's token rate limit is spent.
func (a *admission) record(u usageRecord) {
	tokens := u.usage.Tokens()
	// The journal has the outcome before the reservation settles (a crash
	// between the two leaves the bound counted, never released twice).
	a.journalFinishing(&u)
	// The reservation, if any, becomes the exact cost; the bound it held
	// is free again.
	charged := a.budget != nil
	// A cost above what the reservation held (an upstream reporting more
	// than the bound allows, a tail admission past its estimate and the
	// reserve) is charged what it held, and flagged.
	overBound := !a.budget.Settle(u.costNano)
	a.budget = nil
	key := a.key
	usage := u.usage
	// The event's request id and endpoint share one allocation.
	ids := &[2]string{a.requestID, a.endpoint}
	requestID, endpoint := &ids[0], &ids[1]
	requested := u.requested
	if requested == "" {
		requested = u.model
	}
	e := wire.UsageEventIn{
		ID: a.id, OrgID: key.org.orgID, WorkspaceID: key.workspace, InferenceKeyID: &key.id, OwnerID: &key.owner,
		Model: u.model, Provider: u.provider,
		InputTokens: usage.InputTokens, OutputTokens: usage.OutputTokens, CacheReadTokens: usage.CacheReadTokens, CacheWriteTokens: usage.CacheWriteTokens,
		CostUSD: catalog.FormatNanoUSD(u.costNano), Status: u.status,
		LatencyMS: time.Since(a.started).Milliseconds(), OccurredAt: a.occurred,
		RequestID: requestID, Endpoint: endpoint, RequestedModel: requested,
		Attempts:    append([]wire.UsageAttempt{}, u.attempts...),
		UsageSource: wire.UsageSourceUpstream, ReasoningTokens: usage.ReasoningTokens, CacheWrite1hTokens: tokens.CacheWrite1h,
		Provenance: a.provenance(&u, charged, overBound), Tags: a.tags,
		Guardrails:    a.allGuardRecords(),
		ToolArguments: u.toolArguments, ToolArgumentsBytes: u.toolArgumentsBytes,
	}
	if usage.Estimated {
		e.UsageSource = wire.UsageSourceEstimated
	}
	if u.cacheHit {
		saving := catalog.FormatNanoUSD(u.savingNano)
		e.UsageSource, e.CacheSavingUSD = wire.UsageSourceCache, &saving
	}
	if u.serviceTier != "" {
		tier := u.serviceTier
		e.ServiceTier = &tier
	}
	if bl := a.batchLine; bl != nil {
		// A batch line (batchrun.go): its event names the batch, and the
		// runner records the line's cost.
		u.batchID, bl.costNano, bl.recorded = bl.batchID, u.costNano, true
	}
	if u.batchID != "" {
		batch := u.batchID
		e.BatchID = &batch
	}
	if u.status != statusOK {
		reason := u.reason
		if reason == "" {
			reason = reasonInternal
		}
		e.Reason = &reason
	}
	e.ProviderCredentialID = u.credentialID
	if key.oauthGrant != uuid.Nil {
		// An OAuth access token: no inference key was used; the person
		// whose grant it is made the request.
		e.InferenceKeyID = nil
	}
	if c := a.caller; c != nil {
		// A playground request: no inference key was used; the caller's
		// management key (if any) and user are who made it.
		e.InferenceKeyID, e.ManagementKeyID, e.OwnerID = nil, c.ManagementKeyID, &c.UserID
	}
	usageSpan := a.startUsageSpan()
	a.journalRecording()
	a.p.inference.usage.Record(e)
	a.journalRecorded()
	if usageSpan != nil {
		usageSpan.End()
	}
	a.spendTokens(usage)
	u.requested = requested
	a.final, a.costNano, a.costUSD = u, u.costNano, e.CostUSD
	a.annotateRequestSpan(&u)
}

// readBody reads the request's body within the plane's size limit, read
// deadline and body budget, or answers the refusal in d's shape and
// returns nil; release the hold once the answer is written.
func (a *admission) readBody(d refuser) ([]byte, *bodyHold) {
	return a.p.readBody(a.w, a.r, d, a.key.id)
}
