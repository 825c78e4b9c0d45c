package telemetry

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// MaxRequestIDLen bounds a caller's X-Request-Id: it is stored with the
// request's usage event, whose request_id holds at most 100 characters.
const MaxRequestIDLen = 100

// RequestID returns the caller's X-Request-Id when it is one gw can keep
// (at most MaxRequestIDLen characters of [A-Za-z0-9._:-]), and "" otherwise.
func RequestID(h http.Header) string {
	id := h.Get("X-Request-Id")
	if id == "" || len(id) > MaxRequestIDLen {
		return ""
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return ""
		}
	}
	return id
}

// NewRequestID makes a request id for a request that came without one:
// "req_" and 24 hex digits, the first 12 the time in milliseconds and the
// rest random, so ids made later sort after (as UUIDv7 does). The id is
// stored with the request's usage event, in an index: random ids were
// inserted all over it, a leaf page dirtied and written to the WAL per
// event and the tree walked cold for each (issue 33, eighth round), where
// time-ordered ones grow it at its right edge. 48 random bits within a
// millisecond keep two requests' ids apart. They come from the runtime's
// per-thread ChaCha8 generator (math/rand/v2), not crypto/rand's DRBG
// (0.8 µs a request under the harness's load, issue 33, fourteenth
// round): the id names a request and guards nothing (a caller may send
// its own), so it needs to be distinct, not secret.
func NewRequestID() string {
	return newRequestID(time.Now())
}

func newRequestID(now time.Time) string {
	var raw [12]byte
	r := rand.Uint64()
	binary.BigEndian.PutUint64(raw[:8], uint64(now.UnixMilli())<<16|r>>48)
	binary.BigEndian.PutUint32(raw[8:], uint32(r))
	var id [4 + 2*len(raw)]byte
	copy(id[:], "req_")
	hex.Encode(id[4:], raw[:])
	return string(id[:])
}

type requestKey struct{}

// request is what the middleware learns about a request from the handler
// that served it: the data plane fills inference for the access log line.
type request struct {
	inference *Inference
}

// SetInference hands a finished inference request's record to the access
// log line of the request ctx belongs to (if the middleware serves it).
func SetInference(ctx context.Context, in *Inference) {
	if r, ok := ctx.Value(requestKey{}).(*request); ok {
		r.inference = in
	}
}

// Middleware is what every request of gw serve goes through, outermost:
//   - one request id per request, the caller's X-Request-Id kept when sane,
//     set on the request (so the API and the data plane use the same one)
//     and on the answer;
//   - the caller's trace context, and a server span when tracing is on;
//   - control-plane metrics by route (for paths under apiPrefix);
//   - one access log line, with the inference fields when the request was
//     an inference. Never headers or bodies: they carry secrets.
type Middleware struct {
	Log     *slog.Logger
	Metrics *Metrics
	// APIPrefix: requests under it are counted in gw_api_*.
	APIPrefix string
}

// Wrap returns next behind the middleware.
func (mw *Middleware) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := RequestID(r.Header)
		if id == "" {
			id = NewRequestID()
			r.Header.Set("X-Request-Id", id)
		}
		w.Header().Set("X-Request-Id", id)
		st := &request{}
		ctx := context.WithValue(r.Context(), requestKey{}, st)
		if r.Header.Get("Traceparent") != "" {
			ctx = Propagator.Extract(ctx, propagation.HeaderCarrier(r.Header))
		}
		var span trace.Span = noopSpan
		if tracing {
			ctx, span = tracer.Start(ctx, r.Method+" "+r.URL.Path, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(semconv.HTTPRequestMethodKey.String(r.Method), semconv.URLPath(r.URL.Path),
					attribute.String("gw.request_id", id)))
		}
		r = r.WithContext(ctx)
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		d := time.Since(start)
		route := routeOf(r)
		if st.inference != nil {
			// The data plane routes /inf/v1/ itself; an inference
			// endpoint's path is one of a few fixed ones.
			route = r.URL.Path
		}
		if span.IsRecording() {
			if route != "" {
				span.SetName(r.Method + " " + route)
				span.SetAttributes(semconv.HTTPRoute(route))
			}
			span.SetAttributes(semconv.HTTPResponseStatusCode(rec.status))
			if rec.status >= 500 {
				span.SetStatus(codes.Error, http.StatusText(rec.status))
			}
			span.End()
		}
		if mw.APIPrefix != "" && strings.HasPrefix(r.URL.Path, mw.APIPrefix) {
			if route == "" {
				route = "unmatched"
			}
			mw.Metrics.observeAPI(methodLabel(r.Method), route, rec.status, d)
		}
		logAccess(mw.Log, &accessLine{method: r.Method, path: r.URL.Path, status: rec.status, durationMS: d.Milliseconds(),
			requestID: id, inference: st.inference})
	})
}

// inferenceAttrCount is how many attributes appendInferenceAttrs adds.
const inferenceAttrCount = 18

func appendInferenceAttrs(attrs []slog.Attr, in *Inference) []slog.Attr {
	return append(attrs,
		slog.String("endpoint", in.Endpoint), slog.String("org_id", in.OrgID), slog.String("workspace_id", in.WorkspaceID),
		slog.String("key_id", in.KeyID), slog.String("model_requested", in.RequestedModel), slog.String("model", in.Model),
		slog.String("provider", in.Provider), slog.String("outcome", in.Outcome), slog.String("reason", in.Reason),
		slog.Bool("stream", in.Stream),
		slog.Int64("input_tokens", in.InputTokens), slog.Int64("output_tokens", in.OutputTokens),
		slog.Int64("cache_read_tokens", in.CacheReadTokens), slog.Int64("cache_write_tokens", in.CacheWriteTokens),
		slog.String("cost_usd", in.CostUSD), slog.Int("attempts", in.Attempts),
		slog.Float64("total_ms", durationMS(in.Duration)), slog.Float64("upstream_ms", durationMS(in.Upstream)),
	)
}

// routeOf is the ServeMux pattern that served r, without its method: the
// mux sets it on the request it is given, which the handlers below share.
func routeOf(r *http.Request) string {
	p := r.Pattern
	if i := strings.IndexByte(p, ' '); i >= 0 {
		p = p[i+1:]
	}
	return p
}

// methodLabel keeps methods a bounded label.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions:
		return m
	}
	return "other"
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (r *statusRecorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's own writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
