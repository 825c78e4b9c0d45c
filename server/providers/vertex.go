package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Vertex calls Google Vertex AI: Gemini models through generateContent
// and streamGenerateContent (SSE), Claude models through Anthropic's
// rawPredict and streamRawPredict, each with an OAuth token of the
// credential's service account.
type Vertex struct {
	Client *http.Client
	tokens oauthTokens
}

// vertexAnthropicVersion is the Messages API version Vertex AI takes in
// the body, where Anthropic's API takes a header.
const vertexAnthropicVersion = "vertex-2023-10-16"

// isClaude tells Anthropic's models on Vertex AI (claude-sonnet-4-5@…)
// from Google's.
func isClaude(model string) bool { return strings.HasPrefix(model, "claude-") }

// Check checks the request as the model's family takes it.
func (a *Vertex) Check(call *Call, strict bool) error {
	if isClaude(call.UpstreamModel) {
		return (&Anthropic{}).Check(call, strict)
	}
	return checkGemini(call, strict)
}

// Complete implements Adapter.
func (a *Vertex) Complete(ctx context.Context, call *Call) (*Completion, error) {
	resp, err := a.send(ctx, call, false)
	if err != nil {
		return nil, err
	}
	if isClaude(call.UpstreamModel) {
		return anthropicCompletion(resp, call)
	}
	return geminiCompletion(resp, call)
}

// Stream implements Adapter.
func (a *Vertex) Stream(ctx context.Context, call *Call) (ChunkStream, error) {
	resp, err := a.send(ctx, call, true)
	if err != nil {
		return nil, err
	}
	if isClaude(call.UpstreamModel) {
		return newAnthropicStream(resp.Body, newSSEReader(resp.Body), call), nil
	}
	return newGeminiStream(resp.Body, call), nil
}

func (a *Vertex) send(ctx context.Context, call *Call, stream bool) (*http.Response, error) {
	src, err := a.tokens.google(a.Client, call)
	if err != nil {
		return nil, err
	}
	token, err := bearer(ctx, src.tokens, call)
	if err != nil {
		return nil, err
	}
	auth := func(h http.Header) { h.Set("Authorization", "Bearer "+token) }
	if !isClaude(call.UpstreamModel) {
		return sendGemini(ctx, a.Client, vertexModelURL(call, src.project, "google")+geminiMethod(stream), call, headerAuth(auth))
	}
	req, beta, kept, err := preparedAnthropic(call, stream)
	if err != nil {
		return nil, err
	}
	body, err := encodeOnce(call, kept, vertexAnthropicRequest{anthropicRequest: req, AnthropicVersion: vertexAnthropicVersion})
	if err != nil {
		return nil, invalid("", "invalid_json", "The request could not be translated for an Anthropic model.")
	}
	return postVertexClaude(ctx, a.Client, call, src.project, rope{body}, stream, beta, auth)
}

// vertexAnthropicRequest is a Messages request as Vertex AI takes it: the
// model is in the URL, the version in the body.
type vertexAnthropicRequest struct {
	*anthropicRequest
	// Model shadows the embedded request's, so it is left out.
	Model            string `json:"model,omitempty"`
	AnthropicVersion string `json:"anthropic_version"`
}

// vertexModelURL is the model's resource URL under the credential's
// project and location. The catalog's global host becomes the location's
// regional one ({location}-aiplatform.googleapis.com); a credential's own
// base URL is taken as it is.
func vertexModelURL(call *Call, project, publisher string) string {
	return vertexLocationURL(call, project) + "/publishers/" + publisher + "/models/" + url.PathEscape(call.UpstreamModel)
}

// vertexBase is the API root of the credential's location: the catalog's
// global host becomes the location's regional one.
func vertexBase(call *Call) string {
	base := trimBase(call.BaseURL)
	if loc := call.Settings.Location; loc != "" && loc != "global" {
		base = strings.Replace(base, "://aiplatform.googleapis.com", "://"+loc+"-aiplatform.googleapis.com", 1)
	}
	return base
}

// vertexLocationURL is the resource URL of the credential's project (the
// setting, else the service account's) and location.
func vertexLocationURL(call *Call, project string) string {
	if call.Settings.Project != "" {
		project = call.Settings.Project
	}
	return vertexBase(call) + "/projects/" + url.PathEscape(project) + "/locations/" + url.PathEscape(call.Settings.Location)
}

// postVertexClaude posts a Messages body to rawPredict or streamRawPredict.
func postVertexClaude(ctx context.Context, client *http.Client, call *Call, project string, body rope, stream, beta bool,
	auth func(http.Header)) (*http.Response, error) {
	method := ":rawPredict"
	if stream {
		method = ":streamRawPredict"
	}
	return send(ctx, client, call, upstreamPost{url: vertexModelURL(call, project, "anthropic") + method, body: body,
		header: func(h http.Header) {
			if beta {
				h.Set("Anthropic-Beta", structuredOutputsBeta)
			}
		},
		authorize: headerAuth(auth),
		refusal:   vertexStatusError})
}

// vertexStatusError reads an error of Vertex AI (Google's shape: quota,
// authentication) or of the Anthropic model behind it (Anthropic's shape:
// overloaded, invalid request).
func vertexStatusError(resp *http.Response, call *Call) *Error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var anthropicShape struct {
		Type  string               `json:"type"`
		Error anthropicErrorObject `json:"error"`
	}
	if json.Unmarshal(raw, &anthropicShape) == nil && anthropicShape.Type == "error" {
		e := &Error{Kind: statusKind(resp.StatusCode), Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After")}
		anthropicShape.Error.fill(e, call.Secret)
		return e
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	return googleStatusError(resp, call)
}

// VertexMessages forwards Messages requests to Claude on Vertex AI as
// sent (cache_control, thinking, documents and all), with the model in
// the URL and Vertex's version in the body.
type VertexMessages struct {
	Vertex *Vertex
}

// Check accepts every request: the upstream speaks the client's dialect.
func (a *VertexMessages) Check(*Call, bool) error { return nil }

func (a *VertexMessages) send(ctx context.Context, call *Call, stream bool) (*http.Response, error) {
	src, err := a.Vertex.tokens.google(a.Vertex.Client, call)
	if err != nil {
		return nil, err
	}
	token, err := bearer(ctx, src.tokens, call)
	if err != nil {
		return nil, err
	}
	body, err := anthropicPlatformBody(call, stream, vertexAnthropicVersion)
	if err != nil {
		return nil, err
	}
	return postVertexClaude(ctx, a.Vertex.Client, call, src.project, body, stream, false,
		func(h http.Header) { h.Set("Authorization", "Bearer "+token) })
}

// anthropicPlatformBody is a Messages request as a cloud platform takes
// it: the client's members with the output limit applied, no model (it is
// in the URL) and the platform's anthropic_version.
func anthropicPlatformBody(call *Call, stream bool, version string, extra ...Edit) (rope, error) {
	extra = append(extra, messagesInjection(call)...)
	return nativeBody(call, "max_tokens", &stream, append([]Edit{removed("model"), setTo("anthropic_version", jsonString(version))}, extra...)...)
}

// Complete implements Adapter; the body is a Messages answer.
func (a *VertexMessages) Complete(ctx context.Context, call *Call) (*Completion, error) {
	resp, err := a.send(ctx, call, false)
	if err != nil {
		return nil, err
	}
	return anthropicNativeCompletion(resp, call)
}

// Stream implements Adapter; each item is a Messages event's data.
func (a *VertexMessages) Stream(ctx context.Context, call *Call) (ChunkStream, error) {
	resp, err := a.send(ctx, call, true)
	if err != nil {
		return nil, err
	}
	return &anthropicNativeStream{body: resp.Body, sse: newSSEReader(resp.Body), call: call}, nil
}
