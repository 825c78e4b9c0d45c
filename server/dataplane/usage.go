package dataplane

import (
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"time"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/wire"
)

// UsageSink receives one usage event per chat completion (DESIGN §7).
// Record runs on the request path, before the answer's last byte is
// written, and must not block: a sink buffers and ships in the background.
type UsageSink interface {
	Record(wire.UsageEventIn)
}

// Usage event statuses (wire.UsageEvent.Status).
const (
	statusOK = "ok"
	// statusError: the upstream failed, the caller left mid-answer, or the
	// gateway shut down.
	statusError = "error"
	// statusDenied: gw refused the request for a model the key may see
	// (a policy, strict parameters, a missing capability or modality).
	statusDenied = "denied"
)

// The endpoints as usage events name them.
const (
	endpointChatCompletions = "chat.completions"
	endpointResponses       = "responses"
	endpointMessages        = "messages"
	endpointEmbeddings      = "embeddings"
	// endpointCountTokens names count_tokens in metrics and traces; it
	// leaves no usage event.
	endpointCountTokens = "messages.count_tokens"
)

// How an upstream attempt failed (wire.UsageAttemptFailures), and the
// reasons beyond them a request can end in error for.
const (
	failRateLimited   = "rate_limited"
	failUnavailable   = "upstream_unavailable"
	failTimeout       = "timeout"
	failUpstreamError = "upstream_error"
	failCredential    = "credential_unavailable"
	failClientGone    = "client_gone"
	failShutdown      = "shutdown"
	failCoolingDown   = "cooling_down"

	// reasonTruncated: the upstream's stream ended before its terminal
	// event, after part of the answer was relayed.
	reasonTruncated = "stream_truncated"
	// reasonInternal: the exchange ended without saying how (a bug).
	reasonInternal = "internal_error"
	// reasonMaxStreamDuration: the stream reached the plane's maximum
	// stream duration and was ended, billed for what was relayed.
	reasonMaxStreamDuration = "max_stream_duration"
)

// errShuttingDown is the cause the plane's base context is cancelled with
// when the server's shutdown deadline is reached.
var errShuttingDown = errors.New("the gateway is shutting down")

// failureKind is an upstream failure in the attempt chain's vocabulary.
func failureKind(f *providers.Error) string {
	if errors.Is(f, errShuttingDown) {
		return failShutdown
	}
	if errors.Is(f, errCoolingDown) {
		return failCoolingDown
	}
	switch f.Kind {
	case providers.RateLimited:
		return failRateLimited
	case providers.Timeout:
		return failTimeout
	case providers.Rejected, providers.Unauthorized:
		return failUpstreamError
	case providers.Canceled:
		return failClientGone
	}
	return failUnavailable
}

// outcome is how a request ended, for its usage event.
type outcome struct {
	status string
	// reason is a code of gw's saying why the request was denied or ended
	// in error; empty for ok.
	reason string
	// model is the model that answered, or the last one tried or refused;
	// cred the credential it was called with, if any.
	model *routeModel
	cred  *upstreamCredential
	usage providers.Usage
	// failure is how the current attempt failed, if one is in flight and
	// did (failureKind's words); empty when it answered.
	failure string
}

// startAttempt opens the attempt chain's next entry: model m is about to
// be called.
func (x *exchange) startAttempt(m *routeModel) {
	x.closeAttempt("")
	x.attempts = append(x.attempts, wire.UsageAttempt{Model: m.model.ID, Provider: m.model.Provider})
	x.startAttemptSpan(m)
	x.attemptModel = m
	x.attemptStarted, x.attemptOpen = time.Now(), true
}

// closeAttempt ends the open attempt, if any, with how it failed ("" when
// it answered).
func (x *exchange) closeAttempt(failure string) {
	x.closeAttemptWith(failure, nil)
}

// closeAttemptWith is closeAttempt with the request's outcome, when the
// attempt is the one the request ended on (its span gets the usage).
func (x *exchange) closeAttemptWith(failure string, o *outcome) {
	if !x.attemptOpen {
		return
	}
	a := &x.attempts[len(x.attempts)-1]
	d := time.Since(x.attemptStarted)
	x.upstream += d
	a.LatencyMS = d.Milliseconds()
	if failure != "" {
		a.Failure = &failure
	}
	x.attemptOpen = false
	x.endAttemptSpan(x.attemptModel, failure, d, o)
}

// setAttemptHeaders tells the caller which model answered and after how
// many attempts, before the answer's status line is written.
func (x *exchange) setAttemptHeaders(answered *routeModel) {
	h := x.w.Header()
	h["X-Gw-Attempts"] = attemptsHeader(len(x.attempts))
	if answered != nil {
		h["X-Gw-Model"] = answered.idHeader
	}
}

// attemptCounts are X-Gw-Attempts' values for the counts most answers
// have, made once: shared and capped, as header values that nothing
// writes into (an Add copies).
var attemptCounts = func() (v [8][]string) {
	for n := range v {
		v[n] = []string{strconv.Itoa(n)}[:1:1]
	}
	return v
}()

// attemptsHeader is the value of X-Gw-Attempts for n attempts.
func attemptsHeader(n int) []string {
	if n >= 0 && n < len(attemptCounts) {
		return attemptCounts[n]
	}
	return []string{strconv.Itoa(n)}
}

// reasonCode keeps a refusal's code as a reason only if it is a plain
// code: gw writes every refusal code, but a reason must never carry free
// text, and the ingest rules would refuse it.
var reasonCode = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

func refusalReason(r *response) string {
	if reasonCode.MatchString(r.code) {
		return r.code
	}
	return "invalid_request"
}

// finish is the one point where a chat completion that reached routing
// ends: it closes the attempt in flight, prices the tokens and records the
// request's single usage event through its admission (admission.record).
// Every path through the exchange calls it exactly once, before the
// answer's last byte is written (a second call is a bug, ignored).
//
// The cost is the tokens priced at the catalog's prices for the model that
// answered, exactly (catalog.Pricing.CostNanoUSD).
func (x *exchange) finish(o outcome) {
	if !x.closing(o.status, o.reason) {
		return
	}
	x.closeAttemptWith(o.failure, &o)
	m := o.model
	tokens := o.usage.Tokens()
	tier, pricing := x.serviceTier(o.usage, m)
	nano, err := pricing.CostNanoUSD(tokens)
	if err != nil {
		// Prices are validated when a catalog is imported and counts are
		// never negative, so this is a bug; the tokens still count.
		x.p.inference.log.Error("pricing a request", "request_id", x.id, "model", m.model.ID, "error", err)
		nano = 0
	}
	u := usageRecord{status: o.status, reason: o.reason, failure: o.failure, model: m.model.ID, provider: m.model.Provider,
		requested: x.requestedModel(), usage: o.usage, costNano: nano, attempts: x.attempts, serviceTier: tier}
	if o.cred != nil {
		u.credentialID = &o.cred.id
	}
	if len(x.attempts) > 0 {
		a := pricing.AppliedTo(tokens)
		u.prices = &wire.UsagePrices{InputPerMTok: a.InputPerMTok, OutputPerMTok: a.OutputPerMTok, CacheReadPerMTok: a.CacheReadPerMTok,
			CacheWritePerMTok: a.CacheWritePerMTok, CacheWrite1hPerMTok: a.CacheWrite1hPerMTok, LongContext: a.LongContext,
			ServiceTier: a.ServiceTier, PriceClass: pricing.PriceClass()}
	}
	x.record(u)
}

// serviceTier is the service tier a request is billed in and the prices
// that go with it: the tier its answer named (OpenAI's service_tier; the
// answer wins over the request, so a dearer tier than asked is charged as
// delivered), else the one the request asked for when the model's catalog
// prices it. "" is none named; a tier the catalog does not price (default,
// scale) is billed at the base prices.
func (x *exchange) serviceTier(u providers.Usage, m *routeModel) (string, catalog.ParsedPricing) {
	if bp, ok := batchPricing(x.batchLine, m); ok {
		// A batch line: the batch prices, which have no service tier.
		return "", bp
	}
	tier := u.ServiceTier
	if tier == "" {
		if asked := x.askedServiceTier(); asked != "" && m.pricing.ForServiceTier(asked).ServiceTier() == asked {
			tier = asked
		}
	}
	if tier == "" {
		return "", m.pricing
	}
	return tier, m.pricing.ForServiceTier(tier)
}

// askedServiceTier is the service tier the request asks for
// (service_tier), "" for none or one not written as a plain name.
func (x *exchange) askedServiceTier() string {
	var raw json.RawMessage
	if x.req != nil {
		raw = x.req.Members.Value("service_tier")
	}
	if raw == nil && x.native != nil {
		raw = x.native.Members.Value("service_tier")
	}
	return providers.ServiceTierName(raw)
}
