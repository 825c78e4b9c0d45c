package dataplane

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/gw-gateway/gw/server/mcpgw"
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
		observeToolCall(m, r, mcpgw.Call{Server: "up", Tool: "echo"}, c.status, c.reason, 20*time.Millisecond)
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
	observeToolCall(nil, httptest.NewRequest("POST", "/inf/v1/mcp", nil), mcpgw.Call{Server: "up", Tool: "echo"}, statusOK, "", time.Millisecond)
}

// The other MCP requests are observed too: initialize, tools/list and
// server/discover (and every method gw answers) put mcp.method.name,
// mcp.protocol.version and the session's digest as mcp.session.id on the
// request's span — no tool attributes —, error.type and
// rpc.response.status_code (the JSON-RPC error code) when the answer is an
// error, and are timed in mcp_server_operation_duration_seconds by method
// and error type.
func TestMCPOperationTelemetry(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	m := telemetry.NewMetrics("test", "all")
	ops := []mcpgw.Operation{
		{Method: "initialize", Version: "2025-11-25", SessionID: "gwmcp1.sealed-token", Duration: 30 * time.Millisecond},
		{Method: "tools/list", Server: "up", Version: "2025-06-18", SessionID: "gwmcp1.sealed-token", Duration: 10 * time.Millisecond},
		{Method: "server/discover", Version: "2026-07-28", Duration: time.Millisecond},
		{Method: "tools/list", Version: "2025-11-25", SessionID: "gwmcp1.expired", ErrorCode: -32000, Duration: time.Millisecond},
	}
	for _, op := range ops {
		ctx, span := tp.Tracer("t").Start(context.Background(), "POST /inf/v1/mcp")
		observeOperation(m, httptest.NewRequest("POST", "/inf/v1/mcp", nil).WithContext(ctx), op)
		span.End()
	}
	spans := rec.Ended()
	if len(spans) != len(ops) {
		t.Fatalf("%d spans", len(spans))
	}
	digest := ""
	for i, s := range spans {
		attrs := map[string]string{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		op := ops[i]
		if attrs["mcp.method.name"] != op.Method || attrs["mcp.protocol.version"] != op.Version || attrs["gw.mcp.server"] != op.Server {
			t.Errorf("span %d attributes %v", i, attrs)
		}
		if _, ok := attrs["gen_ai.tool.name"]; ok {
			t.Errorf("span %d names a tool: %v", i, attrs)
		}
		id, hasID := attrs["mcp.session.id"]
		switch {
		case op.SessionID == "" && hasID:
			t.Errorf("span %d has a session: %v", i, attrs)
		case op.SessionID != "" && (len(id) != 16 || strings.Contains(id, "sealed")):
			t.Errorf("span %d session %q", i, id)
		}
		if i == 0 {
			digest = id
		}
		if i == 1 && id != digest {
			t.Errorf("the same session has digests %q and %q", digest, id)
		}
		wantErr := ""
		if op.ErrorCode != 0 {
			wantErr = "-32000"
		}
		if attrs["error.type"] != wantErr || attrs["rpc.response.status_code"] != wantErr {
			t.Errorf("span %d error attributes %v", i, attrs)
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
			series = append(series, fmt.Sprintf("%s|%s|%s|%s:%d", l["mcp_method_name"], l["gw_mcp_server"], l["gen_ai_tool_name"], l["error_type"],
				mt.GetHistogram().GetSampleCount()))
		}
	}
	want := "initialize|||:1,server/discover|||:1,tools/list|up||:1,tools/list|||-32000:1"
	if strings.Join(series, ",") != want {
		t.Fatalf("series %q, want %q", strings.Join(series, ","), want)
	}
}
