package dataplane

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/gw-gateway/gw/server/telemetry"
)

// BundleInfo describes the admitted bundles for the bundle gauges: version
// and compile time per organization.
func (p *Plane) BundleInfo() []telemetry.BundleInfo {
	orgs := p.state.Load().orgs
	out := make([]telemetry.BundleInfo, 0, len(orgs))
	for id, a := range orgs {
		out = append(out, telemetry.BundleInfo{OrgID: id.String(), Version: a.version, CompiledAt: a.compiledAt})
	}
	return out
}

// meteredWriter remembers the status an inference answered with, for its
// metrics and access log fields.
type meteredWriter struct {
	http.ResponseWriter
	status int
}

func (w *meteredWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *meteredWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController flush the connection's writer.
func (w *meteredWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observe counts an inference once its handler returns: endpoint is the
// dialect's name (chat.completions, responses, messages, embeddings), x is
// nil for a request refused before it had an exchange (a bad key, a rate
// limit), and rateRefused names the limit that refused it, if one did.
func (p *Plane) observe(r *http.Request, w *meteredWriter, endpoint string, key *admittedKey, x *exchange, rateRefused string, started time.Time) {
	in := &telemetry.Inference{Endpoint: endpoint, Status: w.status, Duration: time.Since(started)}
	if in.Status == 0 {
		in.Status = http.StatusOK
	}
	if key != nil {
		k := key.inference
		in.OrgID, in.WorkspaceID, in.KeyID = k.org.orgID.String(), k.workspace.String(), k.idString
	}
	switch {
	case x != nil && x.finished:
		o := &x.final
		in.RequestedModel = x.requestedModel()
		in.Model, in.Provider = o.model.model.ID, o.model.model.Provider
		in.Stream = x.req != nil && x.req.Stream
		u := o.usage
		in.InputTokens, in.OutputTokens, in.CacheReadTokens, in.CacheWriteTokens = u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens
		in.CostNanoUSD, in.CostUSD = x.costNano, x.costUSD
		in.Attempts, in.Upstream, in.FirstToken = len(x.attempts), x.upstream, x.firstToken
		in.Outcome, in.Reason = finishedOutcome(o.status, o.reason, in.Status)
	case rateRefused != "":
		in.Outcome, in.Reason = telemetry.OutcomeDeniedRateLimit, rateRefused
	case x != nil && x.requested != nil:
		// Answered without a usage event (count_tokens): labelled with
		// the model it was for, its outcome by its status.
		in.RequestedModel = x.requestedModel()
		in.Model, in.Provider = x.requested.model.ID, x.requested.model.Provider
		in.Outcome = statusOutcome(in.Status)
		if x.refused != "" {
			in.Outcome, in.Reason = finishedOutcome(statusDenied, x.refused, in.Status)
		}
	default:
		in.Outcome = statusOutcome(in.Status)
	}
	p.inference.metrics.ObserveInference(in)
	telemetry.SetInference(r.Context(), in)
}

// statusOutcome is the outcome of a request that left no usage event, by
// the status it was answered with.
func statusOutcome(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return telemetry.OutcomeUnauthorized
	case status >= 400 && status < 500:
		return telemetry.OutcomeInvalidRequest
	case status >= 500:
		return telemetry.OutcomeError
	}
	return telemetry.OutcomeOK
}

// finishedOutcome maps a usage event's status and reason to the outcome
// label and the reason the metrics carry.
func finishedOutcome(status, reason string, httpStatus int) (string, string) {
	switch status {
	case statusOK:
		return telemetry.OutcomeOK, ""
	case statusDenied:
		switch reason {
		case "policy_denied":
			return telemetry.OutcomeDeniedPolicy, reason
		case "budget_exceeded":
			return telemetry.OutcomeDeniedBudget, "exceeded"
		case "budget_unavailable":
			return telemetry.OutcomeDeniedBudget, "unavailable"
		case "budget_busy":
			return telemetry.OutcomeDeniedBudget, "busy"
		}
		if httpStatus >= 500 {
			return telemetry.OutcomeError, reason
		}
		return telemetry.OutcomeInvalidRequest, reason
	}
	switch reason {
	case failClientGone:
		return telemetry.OutcomeClientGone, reason
	case failShutdown, failCredential, reasonInternal:
		return telemetry.OutcomeError, reason
	}
	return telemetry.OutcomeUpstreamError, reason
}

// operation is the GenAI operation name of the exchange's endpoint:
// embeddings for /embeddings, chat for every conversational dialect.
func (x *exchange) operation() attribute.KeyValue {
	if x.d.name() == endpointEmbeddings {
		return semconv.GenAIOperationNameEmbeddings
	}
	return semconv.GenAIOperationNameChat
}

// startAttemptSpan opens an upstream attempt's span, a GenAI client span
// named after the operation and model, under the request's span.
func (x *exchange) startAttemptSpan(m *routeModel) {
	x.attemptCtx, x.attemptSpan = x.r.Context(), nil
	if !telemetry.Tracing() {
		return
	}
	op := x.operation()
	x.attemptCtx, x.attemptSpan = telemetry.StartSpan(x.r.Context(), op.Value.AsString()+" "+m.model.ID, trace.SpanKindClient,
		op, semconv.GenAIProviderNameKey.String(m.model.Provider),
		semconv.GenAIRequestModel(m.model.ID), attribute.Int("gw.attempt", len(x.attempts)))
}

// endAttemptSpan closes the attempt's span; failure is how it failed, if
// it did.
func (x *exchange) endAttemptSpan(m *routeModel, failure string, d time.Duration, o *outcome) {
	x.p.inference.metrics.ObserveAttempt(m.model.ID, m.model.Provider, attemptOutcome(failure), d)
	s := x.attemptSpan
	if s == nil {
		return
	}
	x.attemptSpan = nil
	if o != nil && failure == "" {
		s.SetAttributes(semconv.GenAIResponseModel(m.model.ID),
			semconv.GenAIUsageInputTokens(int(o.usage.InputTokens)), semconv.GenAIUsageOutputTokens(int(o.usage.OutputTokens)))
	}
	if failure != "" {
		s.SetAttributes(semconv.ErrorTypeKey.String(failure))
		s.SetStatus(codes.Error, failure)
	}
	s.End()
}

func attemptOutcome(failure string) string {
	if failure == "" {
		return telemetry.OutcomeOK
	}
	return failure
}

// endAdmission ends the admission span, if still open: admission is over
// when the first upstream attempt starts or the request is refused.
func (x *exchange) endAdmission() {
	if x.admission != nil {
		x.admission.End()
		x.admission = nil
	}
}

// annotateRequestSpan puts the request's GenAI attributes on its server
// span (the middleware's), when one is recorded.
func (x *exchange) annotateRequestSpan(o *outcome) {
	s := trace.SpanFromContext(x.r.Context())
	if !s.IsRecording() {
		return
	}
	s.SetAttributes(x.operation(), semconv.GenAIRequestModel(x.requestedModel()),
		semconv.GenAIResponseModel(o.model.model.ID), semconv.GenAIProviderNameKey.String(o.model.model.Provider),
		semconv.GenAIUsageInputTokens(int(o.usage.InputTokens)), semconv.GenAIUsageOutputTokens(int(o.usage.OutputTokens)),
		attribute.String("gw.outcome", o.status), attribute.Int("gw.attempts", len(x.attempts)))
	if o.reason != "" {
		s.SetAttributes(semconv.ErrorTypeKey.String(o.reason))
	}
}

// startUsageSpan opens the span of the usage event's recording, if
// tracing is on.
func (x *exchange) startUsageSpan() trace.Span {
	if !telemetry.Tracing() {
		return nil
	}
	_, s := telemetry.StartSpan(x.r.Context(), "gw.usage.record", trace.SpanKindInternal)
	return s
}

// startAdmission opens the admission span: key, rate limit, body, model,
// policies and budgets, up to the first upstream call.
func startAdmission(ctx context.Context) trace.Span {
	if !telemetry.Tracing() {
		return nil
	}
	_, s := telemetry.StartSpan(ctx, "gw.admission", trace.SpanKindInternal)
	return s
}
