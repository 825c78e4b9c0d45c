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
	{method: "post", path: messagesPath, id: "create_message", summary: "Messages, as Anthropic's (also x-api-key authentication)", stream: true,
		dialect: "Anthropic Messages", reference: "https://docs.anthropic.com/en/api/messages", anthropic: true,
		body: messageRequest{}, answer: messageObject{}},
	{method: "post", path: countTokensPath, id: "count_message_tokens", summary: "Count a Messages request's input tokens, as Anthropic's",
		dialect: "Anthropic Messages token counting", reference: "https://docs.anthropic.com/en/api/messages-count-tokens", anthropic: true,
		body: countTokensRequest{}, answer: tokenCount{}},
	{method: "post", path: embeddingsPath, id: "create_embedding", summary: "Embeddings, as OpenAI's (embedding models only)",
		dialect: "OpenAI Embeddings", reference: "https://platform.openai.com/docs/api-reference/embeddings/create",
		body: embeddingRequest{}, answer: embeddingList{}},
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
		errResp := func(desc string) map[string]any {
			return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{"schema": errRef}}}
		}
		o := map[string]any{"operationId": op.id, "summary": op.summary, "tags": []string{"Inference"}}
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
				"schema": map[string]any{"type": "string"}}}
			responses["400"] = errResp("A body the endpoint cannot take, parameters a strict_parameters policy refuses, " +
				"a malformed X-Gw-Tags (invalid_tags), a tag the header may not set (tag_not_allowed), or a tag the workspace " +
				"requires missing (missing_required_tags).")
			responses["403"] = errResp("Denied by a workspace policy.")
			responses["404"] = errResp("Unknown model, or hidden from this key.")
			responses["408"] = errResp("The body did not arrive in time.")
			responses["413"] = errResp("The body is larger than the data plane takes.")
			responses["429"] = errResp("A rate limit of the key or the workspace, a budget spent for the period, or the provider's rate limit; retry after Retry-After if given.")
			responses["4XX"] = errResp("The provider refused the request: its status and words, passed on.")
			responses["500"] = errResp("An error of gw's.")
			responses["501"] = errResp("The model's provider speaks an API this gateway cannot call.")
			responses["502"] = errResp("Every upstream attempt failed.")
			responses["504"] = errResp("The provider did not answer in time.")
			if op.anthropic {
				responses["402"] = errResp("A budget spent for the period (billing_error, which the Anthropic SDKs do not retry).")
				responses["529"] = errResp("The provider is overloaded (overloaded_error), as Anthropic's own.")
			}
		}
		o["responses"] = responses
		paths[op.path] = map[string]any{op.method: o}
	}
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
		"tags":    []any{map[string]any{"name": "Discovery"}, map[string]any{"name": "Inference"}},
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
