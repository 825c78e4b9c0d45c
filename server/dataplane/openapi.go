package dataplane

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"github.com/gw-gateway/gw/server/apidoc"
	"github.com/gw-gateway/gw/server/catalog"
)

// openAPIPath serves the data plane's own OpenAPI document: discovery in
// full, from the types discovery encodes, and the inference endpoints by
// reference to the wire formats they speak (OpenAI's and Anthropic's own
// references), which gw accepts unchanged.
const openAPIPath = "/inf/v1/openapi.json"

// infOperation is one /inf/v1 endpoint as the document shows it: the
// types it takes and answers (body and answer, nil for discovery's GETs),
// and the error shape of its dialect.
type infOperation struct {
	method, path, id, summary string
	// dialect is the provider reference the body and answer follow; empty
	// for discovery, whose shapes are gw's own.
	dialect, reference string
	body, answer       any
	stream, anthropic  bool
	// mcp: an MCP endpoint (JSON-RPC over Streamable HTTP), whose every
	// answer, refusals included, is a JSON-RPC message.
	mcp bool
	// upgrade: a GET that becomes a WebSocket (101), whose messages the
	// reference describes.
	upgrade bool
}

// infOperations are the paths ServeHTTP routes, in its order.
var infOperations = []infOperation{
	{method: "get", path: modelsPath, id: "list_models", summary: "The models the inference key may use, sorted by id (OpenAI's list shape, with gw's members)",
		answer: modelList{}},
	{method: "get", path: modelPathPrefix + "{model_id}", id: "get_model", summary: "One model the key may use; an unknown and a hidden model are the same 404",
		answer: modelObject{}},
	{method: "post", path: chatCompletionsPath, id: "create_chat_completion", summary: "Chat Completions, as OpenAI's", stream: true,
		dialect: "OpenAI Chat Completions", reference: "https://platform.openai.com/docs/api-reference/chat/create",
		body: chatCompletionRequest{}, answer: chatCompletion{}},
	{method: "post", path: responsesPath, id: "create_response", summary: "Responses, as OpenAI's", stream: true,
		dialect: "OpenAI Responses", reference: "https://platform.openai.com/docs/api-reference/responses/create",
		body: responseRequest{}, answer: responseObject{}},
	{method: "get", path: responsesPath, id: "connect_responses_websocket", upgrade: true,
		summary: "Responses over a WebSocket, as OpenAI's WebSocket mode: response.create events in (the create body, stream_id for lanes, " +
			"previous_response_id of this connection's responses), the stream's events out as JSON text frames; each turn admitted, " +
			"budgeted and metered as a POST stream; closed after 60 minutes (docs/dialects.md)",
		dialect: "OpenAI Responses WebSocket mode", reference: "https://developers.openai.com/api/docs/guides/websocket-mode"},
	{method: "post", path: responsesCompactPath, id: "compact_response", summary: "Compact a Responses conversation, as OpenAI's " +
		"(models of the openai kind only; never streams)",
		dialect: "OpenAI Responses compaction", reference: "https://platform.openai.com/docs/api-reference/responses/compact",
		body: responseRequest{}, answer: compactedResponse{}},
	{method: "post", path: messagesPath, id: "create_message", summary: "Messages, as Anthropic's (also x-api-key authentication)", stream: true,
		dialect: "Anthropic Messages", reference: "https://docs.anthropic.com/en/api/messages", anthropic: true,
		body: messageRequest{}, answer: messageObject{}},
	{method: "post", path: countTokensPath, id: "count_message_tokens", summary: "Count a Messages request's input tokens, as Anthropic's",
		dialect: "Anthropic Messages token counting", reference: "https://docs.anthropic.com/en/api/messages-count-tokens", anthropic: true,
		body: countTokensRequest{}, answer: tokenCount{}},
	{method: "post", path: embeddingsPath, id: "create_embedding", summary: "Embeddings, as OpenAI's (embedding models only)",
		dialect: "OpenAI Embeddings", reference: "https://platform.openai.com/docs/api-reference/embeddings/create",
		body: embeddingRequest{}, answer: embeddingList{}},
	{method: "post", path: mcpPath, id: "mcp", mcp: true,
		summary: "MCP over Streamable HTTP: one server aggregating every MCP server the key may reach, tools named <server>__<tool> (docs/mcp.md)",
		dialect: "MCP Streamable HTTP", reference: "https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#streamable-http",
		body: jsonRPCMessage{}, answer: jsonRPCMessage{}},
	{method: "post", path: mcpPath + "/{server}", id: "mcp_server", mcp: true,
		summary: "MCP over Streamable HTTP: one MCP server, its tools under their own names (docs/mcp.md)",
		dialect: "MCP Streamable HTTP", reference: "https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#streamable-http",
		body: jsonRPCMessage{}, answer: jsonRPCMessage{}},
}

// jsonRPCMessage is a JSON-RPC 2.0 message as MCP exchanges them: a
// request or notification (method, params) or an answer (result or
// error), the same id as its request.
type jsonRPCMessage struct {
	JSONRPC string          `json:"jsonrpc" jsonschema:"enum=2.0"`
	ID      any             `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  map[string]any  `json:"params,omitempty"`
	Result  map[string]any  `json:"result,omitempty"`
	Error   *jsonRPCErrorIn `json:"error,omitempty"`
}

// jsonRPCErrorIn is a JSON-RPC error: gw's own codes are -32700 (not
// JSON), -32600 (not a JSON-RPC request; a refused key or request), -32001
// (refused: a tool policy, a budget, a rate limit) and -32002 (the
// upstream failed); an upstream's own are passed through.
type jsonRPCErrorIn struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// modelList is discovery's list answer.
type modelList struct {
	Object string        `json:"object" jsonschema:"enum=list"`
	Data   []modelObject `json:"data"`
}

// errorBody is every refusal's answer in OpenAI's shape (errorResponse).
type errorBody struct {
	Error apiError `json:"error"`
}

var (
	openAPIOnce sync.Once
	openAPIBody []byte
)

func serveOpenAPI(w http.ResponseWriter) {
	openAPIOnce.Do(func() { openAPIBody, _ = json.Marshal(dataPlaneOpenAPI()) })
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPIBody)
}

// dataPlaneOpenAPI is the OpenAPI 3.1 document of /inf/v1. Discovery's
// answers and every error are the types the plane encodes; the dialects'
// bodies and answers are their members gw reads or always sends, open to
// the rest of each provider's reference (server/apidoc reflects them all).
func dataPlaneOpenAPI() map[string]any {
	schemas := map[string]any{}
	closed := apidoc.New(schemas, apidoc.Enums{reflect.TypeOf(modelObject{}): {
		"capabilities": apidoc.Strings(catalog.Capabilities()), "modalities": apidoc.Strings(catalog.Modalities()),
		"type": {string(catalog.ModelTypeChat), string(catalog.ModelTypeEmbedding)}}}, nil, false)
	open := apidoc.New(schemas, nil, nil, true)
	openAIError, anthropicErr := closed.Ref(errorBody{}), closed.Ref(anthropicErrorBody{})
	paths := map[string]any{}
	for _, op := range infOperations {
		errRef := openAIError
		if op.anthropic {
			errRef = anthropicErr
		}
		if op.dialect == "" {
			// Discovery, which both dialects share, refuses in the
			// caller's (inDialectOf).
			errRef = map[string]any{"oneOf": []any{openAIError, anthropicErr}}
		}
		errResp := func(desc string) map[string]any {
			return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{"schema": errRef}}}
		}
		o := map[string]any{"operationId": op.id, "summary": op.summary, "tags": []string{"Inference"}}
		if op.mcp {
			o["tags"] = []string{"MCP"}
			o["responses"], o["requestBody"], o["parameters"] = mcpResponses(open), map[string]any{"required": true,
				"content": map[string]any{"application/json": map[string]any{"schema": open.Ref(op.body)}}}, mcpParameters(op.path)
			o["externalDocs"] = map[string]any{"description": "The " + op.dialect + " transport", "url": op.reference}
			paths[op.path] = mcpSessionOperations(open, op, o)
			continue
		}
		if op.upgrade {
			o["externalDocs"] = map[string]any{"description": "The " + op.dialect + " guide", "url": op.reference}
			o["parameters"] = []any{
				map[string]any{"name": "Upgrade", "in": "header", "required": true, "schema": map[string]any{"type": "string", "enum": []string{"websocket"}}},
				map[string]any{"name": "Connection", "in": "header", "required": true, "schema": map[string]any{"type": "string"},
					"description": "Upgrade (RFC 6455)."},
			}
			o["responses"] = map[string]any{
				"101": map[string]any{"description": "Switched to the WebSocket protocol. A refused turn is an error event " +
					"({type: \"error\", status, error: {type, code, message, param}, code, message, param}); the socket stays open."},
				"401": errResp("Missing, invalid or expired inference key: no socket."),
				"503": errResp("No configuration admitted yet, or inference not configured here."),
			}
			addOperation(paths, op, o)
			continue
		}
		responses := map[string]any{
			"401": errResp("Missing, invalid or expired inference key."),
			"405": errResp("Another method than the endpoint answers (Allow says which)."),
			"503": errResp("No configuration admitted yet (bundle_not_ready; retry after Retry-After), inference not configured here, " +
				"the in-flight body budget full (overloaded; retry after Retry-After), a credential this plane cannot open, " +
				"or the upstream overloaded or held back after failing."),
		}
		if op.dialect == "" {
			o["tags"] = []string{"Discovery"}
			if strings.Contains(op.path, "{model_id}") {
				o["parameters"] = []any{map[string]any{"name": "model_id", "in": "path", "required": true,
					"description": "Model id, e.g. openai/gpt-4o-mini. It may contain slashes, sent as they are or escaped as %2F.",
					"schema":      map[string]any{"type": "string"}}}
				responses["404"] = errResp("Unknown, or hidden from this key by its workspace's policies (the same answer).")
			}
			responses["200"] = map[string]any{"description": "Not cached (Cache-Control: no-store).",
				"content": map[string]any{"application/json": map[string]any{"schema": closed.Ref(op.answer)}}}
		} else {
			o["externalDocs"] = map[string]any{"description": "The " + op.dialect + " reference", "url": op.reference}
			o["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{
				"schema": open.Ref(op.body)}}}
			answer := open
			if op.path == countTokensPath {
				answer = closed // gw's own answer when it counts
			}
			content := map[string]any{"application/json": map[string]any{"schema": answer.Ref(op.answer)}}
			if op.stream {
				content["text/event-stream"] = map[string]any{"schema": map[string]any{"type": "string",
					"description": "With stream true: the " + op.dialect + " event stream."}}
			}
			responses["200"] = map[string]any{"description": "The model's answer; X-Gw-Model names the model that answered.", "content": content}
			o["parameters"] = []any{map[string]any{"name": "X-Gw-Tags", "in": "header", "required": false,
				"description": "Cost-centre tags for this request, key=value pairs separated by commas (up to 20; keys match " +
					"^[a-z0-9][a-z0-9_.-]*$, 1 to 64 characters; values 1 to 128 printable characters). The key's own tags win " +
					"for the same key; a workspace may require some keys, limit a key's values (tag_values), and a tag a tag budget " +
					"governs is set by keys only.",
				"schema": map[string]any{"type": "string"}},
				map[string]any{"name": "X-Litellm-Tags", "in": "header", "required": false,
					"description": "LiteLLM's tags, comma-separated, read as X-Gw-Tags (key=value, key:value, or a bare word as word=true); " +
						"X-Gw-Tags wins for the same key. A body's metadata.tags (a list of strings) is read the same way, under both headers.",
					"schema": map[string]any{"type": "string"}}}
			responses["400"] = errResp("A body the endpoint cannot take, parameters a strict_parameters policy refuses, " +
				"a malformed X-Gw-Tags, x-litellm-tags or metadata.tags (invalid_tags, param naming which), a tag a caller may not " +
				"set (tag_not_allowed), a tag the workspace requires missing (missing_required_tags), or a models/fallbacks list " +
				"gw cannot take.")
			responses["403"] = errResp("Denied by a workspace policy.")
			responses["404"] = errResp("Unknown model, or hidden from this key; also an entry of the request's models/fallbacks list " +
				"(param models[i] or fallbacks[i]).")
			responses["408"] = errResp("The body did not arrive in time.")
			responses["413"] = errResp("The body is larger than the data plane takes.")
			responses["402"] = errResp("A budget spent for the period (budget_exceeded; billing_error on /messages): final, x-should-retry: false, " +
				"Retry-After the seconds until the period resets.")
			responses["429"] = errResp("A rate limit of the key or the workspace, a budget whose room requests in flight hold (budget_busy), " +
				"or the provider's rate limit; retry after Retry-After if given.")
			responses["4XX"] = errResp("The provider refused the request: its status and words, passed on.")
			responses["500"] = errResp("An error of gw's.")
			responses["501"] = errResp("The model's provider speaks an API this gateway cannot call.")
			responses["502"] = errResp("Every upstream attempt failed.")
			responses["504"] = errResp("The provider did not answer in time.")
			if op.anthropic {
				responses["529"] = errResp("The provider is overloaded (overloaded_error), as Anthropic's own.")
			}
		}
		o["responses"] = responses
		addOperation(paths, op, o)
	}
	batchPaths(paths, closed, openAIError)
	messageBatchPaths(paths, closed, anthropicErr)
	for _, sch := range schemas {
		apidoc.OpenBooleanSchemas(sch)
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "gw data plane", "version": "1",
			"description": "Model discovery and inference of the gw LLM gateway. Authenticate with a workspace inference key (sk-gw-…). " +
				"Errors are in the shape of the endpoint's dialect: OpenAI's {error: {message, type, param, code}}, Anthropic's " +
				"{type: \"error\", error: {type, message}} on /messages and /messages/count_tokens."},
		"servers": []any{map[string]any{"url": "/"}},
		"tags":    []any{map[string]any{"name": "Discovery"}, map[string]any{"name": "Inference"}, map[string]any{"name": "MCP"}, map[string]any{"name": "Batches"}},
		"paths":   paths,
		"components": map[string]any{
			"schemas": schemas,
			"securitySchemes": map[string]any{
				"inferenceKey": map[string]any{"type": "http", "scheme": "bearer", "description": "A workspace inference key, sk-gw-…"},
				"anthropicKey": map[string]any{"type": "apiKey", "in": "header", "name": "x-api-key",
					"description": "The inference key as Anthropic's SDKs send it (Messages endpoints)."},
			},
		},
		"security": []any{map[string]any{"inferenceKey": []any{}}, map[string]any{"anthropicKey": []any{}}},
	}
}

// addOperation adds an operation to its path, beside the path's others
// (GET and POST /inf/v1/responses).
func addOperation(paths map[string]any, op infOperation, o map[string]any) {
	ops, _ := paths[op.path].(map[string]any)
	if ops == nil {
		ops = map[string]any{}
		paths[op.path] = ops
	}
	ops[op.method] = o
}

// compactedResponse is OpenAI's answer to responses/compact, passed on as
// the upstream sent it.
type compactedResponse struct {
	ID     string           `json:"id"`
	Object string           `json:"object"`
	Output []map[string]any `json:"output"`
	Usage  map[string]any   `json:"usage,omitempty"`
}

// mcpResponses are an MCP endpoint's answers: every one with a body is a
// JSON-RPC message (a refusal is a JSON-RPC error with the HTTP status).
func mcpResponses(open *apidoc.Reflector) map[string]any {
	rpc := func(desc string) map[string]any {
		return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{"schema": open.Ref(jsonRPCMessage{})}}}
	}
	answer := rpc("The JSON-RPC answer (a tools/call refused by a tool policy, a budget or a rate limit, or failed upstream, is a JSON-RPC error here). " +
		"An initialize answer carries Mcp-Session-Id (2025-06-18 and 2025-11-25). " +
		"When the upstream sends progress or log notifications, or a request of its own (sampling, elicitation, roots) for a caller that declared the capability, " +
		"and the caller accepts text/event-stream, the answer is an event stream: those messages, then the answer as the last event.")
	answer["content"].(map[string]any)["text/event-stream"] = map[string]any{"schema": map[string]any{"type": "string",
		"description": "Server-sent events, each a JSON-RPC message in its data line; the request's answer is the last."}}
	return map[string]any{
		"200": answer,
		"202": map[string]any{"description": "A notification or a response, accepted; no body."},
		"400": rpc("Not JSON (-32700), not a JSON-RPC 2.0 request, a batch, a bad id, Mcp-Method / Mcp-Name headers that disagree with the body, or bad X-Gw-Tags (-32600)."),
		"401": rpc("Missing, invalid or expired inference key; WWW-Authenticate names the protected resource metadata."),
		"404": rpc("No MCP server of that name the key may reach, or an unknown session."),
		"405": rpc("Another method than POST, GET or DELETE; a GET on a session with nothing to stream (no upstream session to listen to, or a 2026-07-28 caller)."),
		"408": rpc("The body did not arrive in time."),
		"413": rpc("The message is larger than the data plane takes; refused before it is read whole."),
		"503": rpc("No configuration admitted yet, inference not configured here, or the in-flight body budget full."),
	}
}

// mcpSessionOperations are an MCP path's three methods: the POST (o),
// the GET that opens the session's own event stream (what the upstream
// sends outside any request) and the DELETE that ends the session, both
// the transport's, on the same path and headers.
func mcpSessionOperations(open *apidoc.Reflector, op infOperation, o map[string]any) map[string]any {
	rpc := func(desc string) map[string]any {
		return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{"schema": open.Ref(jsonRPCMessage{})}}}
	}
	refusals := map[string]any{
		"400": rpc("No Mcp-Session-Id, or bad X-Gw-Tags (-32600)."),
		"401": rpc("Missing, invalid or expired inference key; WWW-Authenticate names the protected resource metadata."),
		"404": rpc("No MCP server of that name the key may reach, or an unknown or ended session."),
		"503": rpc("No configuration admitted yet, or inference not configured here."),
	}
	get := map[string]any{"operationId": op.id + "_listen", "tags": []string{"MCP"}, "parameters": mcpParameters(op.path),
		"summary":      "The session's own event stream (2025-06-18, 2025-11-25): what the upstream sends outside any request, for up to an hour",
		"externalDocs": o["externalDocs"],
		"responses": withResponses(refusals, map[string]any{
			"200": map[string]any{"description": "Server-sent events, each a JSON-RPC message (a notification, or a request of the upstream's, its id sealed by gw).",
				"content": map[string]any{"text/event-stream": map[string]any{"schema": map[string]any{"type": "string"}}}},
			"405": rpc("Nothing to stream: the upstream keeps no session to listen to, or a 2026-07-28 (stateless) caller."),
			"406": rpc("The request does not accept text/event-stream."),
		})}
	del := map[string]any{"operationId": op.id + "_end_session", "tags": []string{"MCP"}, "parameters": mcpParameters(op.path),
		"summary":      "End the session (2025-06-18, 2025-11-25); the upstream sessions gw keeps for the key are left to their own expiry",
		"externalDocs": o["externalDocs"],
		"responses": map[string]any{"204": map[string]any{"description": "The session is ended (sessions are sealed tokens: nothing is kept to forget); no body."},
			"401": refusals["401"], "503": refusals["503"]}}
	return map[string]any{op.method: o, "get": get, "delete": del}
}

// withResponses is base with more answers added (a copy: base is shared).
func withResponses(base, more map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(more))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// mcpParameters are the headers an MCP endpoint reads, and the server's
// name on /inf/v1/mcp/{server}.
func mcpParameters(path string) []any {
	ps := []any{
		map[string]any{"name": "Mcp-Session-Id", "in": "header", "required": false, "schema": map[string]any{"type": "string"},
			"description": "The session gw gave at initialize (2025-06-18, 2025-11-25): a sealed token any replica opens."},
		map[string]any{"name": "MCP-Protocol-Version", "in": "header", "required": false, "schema": map[string]any{"type": "string"},
			"description": "2025-06-18, 2025-11-25 or 2026-07-28 (stateless: version and client info in _meta)."},
		map[string]any{"name": "X-Gw-Tags", "in": "header", "required": false, "schema": map[string]any{"type": "string"},
			"description": "Cost-centre tags for the request's tool calls, as on the inference endpoints."},
	}
	if strings.Contains(path, "{server}") {
		ps = append(ps, map[string]any{"name": "server", "in": "path", "required": true, "schema": map[string]any{"type": "string"},
			"description": "The MCP server's name (a workspace's shadows an organization's of the same name)."})
	}
	return ps
}
