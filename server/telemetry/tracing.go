package telemetry

import (
	"context"
	"net/http"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// instrumentation names gw's spans' scope.
const instrumentation = "github.com/gw-gateway/gw"

// tracer is the one gw's spans come from: a no-op until SetupTracing finds
// an exporter configured. tracing says whether spans are recorded, so the
// hot path skips building them when they are not.
var (
	tracer  trace.Tracer = noop.NewTracerProvider().Tracer(instrumentation)
	tracing bool
)

// Propagator reads and writes W3C traceparent/tracestate and baggage. It
// is used whether or not gw records spans: a caller's trace context is
// forwarded to the upstream even when gw itself is not traced.
var Propagator propagation.TextMapPropagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// TracingConfigured reports whether the standard OTEL_* environment asks
// for traces: an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), or OTEL_TRACES_EXPORTER=otlp, and
// neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none.
func TracingConfigured() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch strings.ToLower(os.Getenv("OTEL_TRACES_EXPORTER")) {
	case "none":
		return false
	case "otlp":
		return true
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// SetupTracing starts exporting spans over OTLP/HTTP (protobuf) when the
// environment asks for it (TracingConfigured), and returns the function
// that flushes and stops the exporter at shutdown. Endpoint, headers,
// timeout and sampler come from the OTEL_* variables the SDK reads itself;
// OTEL_SERVICE_NAME defaults to gw. When tracing is off it returns a no-op.
func SetupTracing(ctx context.Context, version, role string) (func(context.Context) error, error) {
	otel.SetTextMapPropagator(Propagator)
	if !TracingConfigured() {
		return func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, err
	}
	attrs := []attribute.KeyValue{semconv.ServiceVersion(version), attribute.String("gw.role", role)}
	if os.Getenv("OTEL_SERVICE_NAME") == "" {
		attrs = append(attrs, semconv.ServiceName("gw"))
	}
	// The environment (OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME) wins.
	res, err := resource.Merge(resource.NewSchemaless(attrs...), resource.Environment())
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	tracer, tracing = tp.Tracer(instrumentation), true
	return func(ctx context.Context) error {
		tracer, tracing = noop.NewTracerProvider().Tracer(instrumentation), false
		return tp.Shutdown(ctx)
	}, nil
}

// Tracing reports whether spans are recorded.
func Tracing() bool { return tracing }

// Tracer is gw's tracer (a no-op one when tracing is off).
func Tracer() trace.Tracer { return tracer }

// StartSpan starts a child of ctx's span when tracing is on; otherwise it
// returns ctx and a span that records nothing, without allocating.
func StartSpan(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !tracing {
		return ctx, noopSpan
	}
	return tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

var noopSpan = trace.SpanFromContext(context.Background())

// InjectHeaders writes ctx's trace context (traceparent, tracestate,
// baggage) into an outgoing request's headers: the upstream joins the
// caller's trace.
func InjectHeaders(ctx context.Context, h http.Header) {
	Propagator.Inject(ctx, propagation.HeaderCarrier(h))
}
