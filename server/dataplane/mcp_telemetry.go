package dataplane

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/gw-gateway/gw/server/mcpgw"
	"github.com/gw-gateway/gw/server/telemetry"
)

// mcpObservation is one MCP request as the OpenTelemetry MCP conventions
// describe it.
type mcpObservation struct {
	method, server, tool string
	version, sessionID   string
	// errorType is empty when the request succeeded: a tools/call's
	// reason, another method's JSON-RPC error code.
	errorType string
	// rpcCode is the JSON-RPC error code answered, "" for a result.
	rpcCode string
}

// observeMCP puts the OpenTelemetry MCP conventions' attributes on the
// request's span (one JSON-RPC message a request, so the request's server
// span is the operation's): mcp.method.name; for a tools/call
// gen_ai.tool.name and gen_ai.operation.name execute_tool;
// mcp.protocol.version and mcp.session.id when known; error.type (and
// rpc.response.status_code, the JSON-RPC error code) when it did not
// succeed; and times it in mcp.server.operation.duration. The session id
// is gw's sealed session token, so the span carries a digest of it (the
// first 16 hex digits of its SHA-256): the same for every request of a
// session, and no token a trace reader could replay.
func observeMCP(m *telemetry.Metrics, r *http.Request, o mcpObservation, d time.Duration) {
	m.ObserveMCPOperation(o.method, o.server, o.tool, o.errorType, d)
	s := trace.SpanFromContext(r.Context())
	if !s.IsRecording() {
		return
	}
	s.SetAttributes(semconv.McpMethodNameKey.String(o.method), attribute.String("gw.mcp.server", o.server))
	if o.tool != "" {
		s.SetAttributes(semconv.GenAIToolName(o.tool), semconv.GenAIOperationNameExecuteTool)
	}
	if o.version != "" {
		s.SetAttributes(semconv.McpProtocolVersionKey.String(o.version))
	}
	if o.sessionID != "" {
		sum := sha256.Sum256([]byte(o.sessionID))
		s.SetAttributes(semconv.McpSessionIDKey.String(hex.EncodeToString(sum[:8])))
	}
	if o.errorType != "" {
		s.SetAttributes(semconv.ErrorTypeKey.String(o.errorType))
	}
	if o.rpcCode != "" {
		s.SetAttributes(semconv.RPCResponseStatusCodeKey.String(o.rpcCode))
	}
}

// observeToolCall observes a tools/call: its error type is the outcome's
// reason (tool_denied, budget_exceeded, upstream_unavailable, …).
func observeToolCall(m *telemetry.Metrics, r *http.Request, c mcpgw.Call, status, reason string, d time.Duration) {
	o := mcpObservation{method: "tools/call", server: c.Server, tool: c.Tool, version: cmp.Or(c.Version, r.Header.Get("Mcp-Protocol-Version")),
		sessionID: r.Header.Get("Mcp-Session-Id")}
	if status != statusOK {
		o.errorType = cmp.Or(reason, status)
	}
	observeMCP(m, r, o, d)
}

// observeOperation observes any other request: its error type is the
// JSON-RPC error code answered.
func observeOperation(m *telemetry.Metrics, r *http.Request, op mcpgw.Operation) {
	o := mcpObservation{method: op.Method, server: op.Server, version: op.Version, sessionID: op.SessionID}
	if op.ErrorCode != 0 {
		o.errorType = strconv.Itoa(op.ErrorCode)
		o.rpcCode = o.errorType
	}
	observeMCP(m, r, o, op.Duration)
}
