package dataplane

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/gw-gateway/gw/server/telemetry"
)

// A tools/call's request span carries the OpenTelemetry MCP conventions'
// attributes (mcp.method.name, gen_ai.tool.name, gen_ai.operation.name,
// mcp.protocol.version, a digest as mcp.session.id, error.type when it
// failed; never the session token itself), and the call is timed in
// mcp_server_operation_duration_seconds by method, server, tool and error
// type.
func TestToolCallTelemetry(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	m := telemetry.NewMetrics("test", "all")
	for _, c := range []struct{ status, reason, session string }{{statusOK, "", "sealed-session-token"}, {statusDenied, "tool_denied", ""}} {
		ctx, span := tp.Tracer("t").Start(context.Background(), "POST /inf/v1/mcp")
		r := httptest.NewRequest("POST", "/inf/v1/mcp/up", nil).WithContext(ctx)
		r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if c.session != "" {
			r.Header.Set("Mcp-Session-Id", c.session)
		}
		observeToolCall(m, r, "up", "echo", c.status, c.reason, 20*time.Millisecond)
		span.End()
	}
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	for i, s := range spans {
		attrs := map[string]string{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		if attrs["mcp.method.name"] != "tools/call" || attrs["gen_ai.tool.name"] != "echo" || attrs["gen_ai.operation.name"] != "execute_tool" ||
			attrs["mcp.protocol.version"] != "2025-11-25" || attrs["gw.mcp.server"] != "up" {
			t.Errorf("span %d attributes %v", i, attrs)
		}
		switch i {
		case 0:
			if id := attrs["mcp.session.id"]; len(id) != 16 || strings.Contains(id, "sealed") || attrs["error.type"] != "" {
				t.Errorf("ok call: %v", attrs)
			}
		case 1:
			if _, ok := attrs["mcp.session.id"]; ok || attrs["error.type"] != "tool_denied" {
				t.Errorf("refused call: %v", attrs)
			}
		}
	}
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var series []string
	for _, mf := range mfs {
		if mf.GetName() != "mcp_server_operation_duration_seconds" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range mt.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			series = append(series, l["mcp_method_name"]+" "+l["gw_mcp_server"]+" "+l["gen_ai_tool_name"]+" "+l["error_type"])
		}
	}
	if strings.Join(series, ",") != "tools/call up echo ,tools/call up echo tool_denied" {
		t.Fatalf("series %q", series)
	}
	// A nil *Metrics (a plane without metrics) records nothing.
	observeToolCall(nil, httptest.NewRequest("POST", "/inf/v1/mcp", nil), "up", "echo", statusOK, "", time.Millisecond)
}
