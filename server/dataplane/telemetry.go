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
	// tap keeps the answer for the payload archive (archive.go).
	tap *archiveTap
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
	n, err := w.ResponseWriter.Write(b)
	if w.tap != nil {
		w.tap.Write(b[:n])
	}
	return n, err
}

// Unwrap lets http.ResponseController flush the connection's writer.
func (w *meteredWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observe counts an inference once its handler returns: a.endpoint names
// it (chat.completions, responses, messages, embeddings, …); a request
// refused before its model was known (a bad key, a rate limit) has
// neither a usage event nor a model.
func (p *Plane) observe(a *admission) {
	in := &telemetry.Inference{Endpoint: a.endpoint, Status: a.mw.status, Duration: time.Since(a.started)}
	if in.Status == 0 {
		in.Status = http.StatusOK
	}
	if k := a.key; k != nil {
		in.OrgID, in.WorkspaceID, in.KeyID = k.org.orgIDString, k.workspaceString, k.idString
	}
	switch {
	case a.finished:
		o := &a.final
		in.RequestedModel = o.requested
		in.Model, in.Provider = o.model, o.provider
		in.Stream = a.streamed
		u := o.usage
		in.InputTokens, in.OutputTokens, in.CacheReadTokens, in.CacheWriteTokens = u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens
		in.CostNanoUSD, in.CostUSD = a.costNano, a.costUSD
		in.Attempts, in.Upstream, in.FirstToken = len(o.attempts), a.upstream, a.firstToken
		in.Outcome, in.Reason = finishedOutcome(o.status, o.reason, in.Status)
	case a.rateRefused != "":
		in.Outcome, in.Reason = telemetry.OutcomeDeniedRateLimit, a.rateRefused
	case a.final.model != "":
		// Answered without a usage event (count_tokens): labelled with
		// the model it was for, its outcome by its status.
		in.RequestedModel = a.final.requested
		in.Model, in.Provider = a.final.model, a.final.provider
		in.Outcome = statusOutcome(in.Status)
		if a.refused != "" {
			in.Outcome, in.Reason = finishedOutcome(statusDenied, a.refused, in.Status)
		}
	default:
		in.Outcome = statusOutcome(in.Status)
	}
	p.inference.metrics.ObserveInference(in)
	telemetry.SetInference(a.r.Context(), in)
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

// operationOf is the GenAI operation name of an endpoint: embeddings for
// /embeddings, chat for every conversational dialect.
func operationOf(endpoint string) attribute.KeyValue {
	if endpoint == endpointEmbeddings {
		return semconv.GenAIOperationNameEmbeddings
	}
	if endpoint == endpointMCP {
		return semconv.GenAIOperationNameExecuteTool
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
	op := operationOf(x.endpoint)
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

// annotateRequestSpan puts the request's GenAI attributes on its server
// span (the middleware's), when one is recorded.
func (a *admission) annotateRequestSpan(o *usageRecord) {
	// Without tracing no span records: the context's chain is not walked
	// for it (0.6 µs a request).
	if !telemetry.Tracing() {
		return
	}
	s := trace.SpanFromContext(a.r.Context())
	if !s.IsRecording() {
		return
	}
	s.SetAttributes(operationOf(a.endpoint), semconv.GenAIRequestModel(o.requested),
		semconv.GenAIResponseModel(o.model), semconv.GenAIProviderNameKey.String(o.provider),
		semconv.GenAIUsageInputTokens(int(o.usage.InputTokens)), semconv.GenAIUsageOutputTokens(int(o.usage.OutputTokens)),
		attribute.String("gw.outcome", o.status), attribute.Int("gw.attempts", len(o.attempts)))
	if o.reason != "" {
		s.SetAttributes(semconv.ErrorTypeKey.String(o.reason))
	}
}

// startUsageSpan opens the span of the usage event's recording, if
// tracing is on.
func (a *admission) startUsageSpan() trace.Span {
	if !telemetry.Tracing() {
		return nil
	}
	_, s := telemetry.StartSpan(a.r.Context(), "gw.usage.record", trace.SpanKindInternal)
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
