package providerstest

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// OpenAI is a fake Chat Completions server: POST /v1/chat/completions
// (base URL URL+"/v1"), Bearer authentication, JSON or SSE answers.
type OpenAI struct {
	*fake
}

// NewOpenAI starts a fake that accepts the secret key.
func NewOpenAI(t testing.TB, key string) *OpenAI {
	return &OpenAI{newFake(t, key, func(f *fake) http.Handler { return openAIHandler{f} })}
}

// BaseURL is the API root to configure, as for https://api.openai.com/v1.
func (o *OpenAI) BaseURL() string { return o.URL + "/v1" }

type openAIHandler struct{ f *fake }

func (h openAIHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.f.serveBatchAPI(w, r, false, r.Header.Get("Authorization") == "Bearer "+h.f.Key, h) {
		return
	}
	if r.Method == http.MethodPost && (r.URL.Path == "/v1/embeddings" || r.URL.Path == "/v1/responses" || r.URL.Path == "/v1/responses/compact") {
		h.other(w, r)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		openAIError(w, http.StatusNotFound, "Unknown request URL: "+r.Method+" "+r.URL.Path, "invalid_request_error", "unknown_url")
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+h.f.Key {
		// Like OpenAI, echo the key that was refused; gw must not pass
		// it on.
		openAIError(w, http.StatusUnauthorized, "Incorrect API key provided: "+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+".", "invalid_request_error", "invalid_api_key")
		return
	}
	req, reply, err := h.f.receive(r)
	if err != nil {
		openAIError(w, http.StatusBadRequest, "We could not parse the JSON body of your request.", "invalid_request_error", "")
		return
	}
	model, _ := req.Body["model"].(string)
	if model == "" || req.Body["messages"] == nil {
		openAIError(w, http.StatusBadRequest, "you must provide a model and messages", "invalid_request_error", "")
		return
	}
	if !wait(r, reply.Delay) {
		return
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		if reply.RetryAfter != "" {
			w.Header().Set("Retry-After", reply.RetryAfter)
		}
		openAIError(w, reply.Status, reply.Message, openAIErrorType(reply.Status), "")
		return
	}
	if _, ok := req.Body["stream_options"]; ok && h.f.refuses(model) {
		// The refused request does not use up the reply: the one sent
		// again without stream_options gets it.
		h.f.unreceive(reply)
		openAIError(w, http.StatusBadRequest, "Unrecognized request argument supplied: stream_options", "invalid_request_error", "")
		return
	}
	if stream, _ := req.Body["stream"].(bool); stream {
		opts, _ := req.Body["stream_options"].(map[string]any)
		includeUsage, _ := opts["include_usage"].(bool)
		h.stream(w, r, model, reply, includeUsage)
		return
	}
	msg := map[string]any{"role": "assistant", "content": reply.Text, "refusal": nil}
	if len(reply.ToolCalls) > 0 {
		var calls []map[string]any
		for _, tc := range reply.ToolCalls {
			calls = append(calls, map[string]any{"id": tc.ID, "type": "function",
				"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}})
		}
		msg["tool_calls"] = calls
		if reply.Text == "" {
			msg["content"] = nil
		}
	}
	answer := map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices":            []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish(reply), "logprobs": nil}},
		"usage":              openAIUsage(reply),
		"system_fingerprint": "fp_fake",
	}
	if reply.NoUsage {
		delete(answer, "usage")
	}
	if reply.ServiceTier != "" {
		answer["service_tier"] = reply.ServiceTier
	}
	writeAnswer(w, reply, answer)
}

func (h openAIHandler) stream(w http.ResponseWriter, r *http.Request, model string, reply Reply, includeUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	created := time.Now().Unix()
	chunk := func(delta map[string]any, finishReason any) map[string]any {
		c := map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finishReason, "logprobs": nil}}}
		if includeUsage {
			// OpenAI sends usage: null on every chunk but the last.
			c["usage"] = nil
		}
		if reply.ServiceTier != "" {
			c["service_tier"] = reply.ServiceTier
		}
		return c
	}
	sse(w, "", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for i, p := range pieces(reply.Text, reply.ChunkSize) {
		sse(w, "", chunk(map[string]any{"content": p}, nil))
		if i == 0 && reply.BreakStream {
			sse(w, "", map[string]any{"error": map[string]any{"message": "The server had an error while processing your request.", "type": "server_error"}})
			return
		}
		if i == 0 && reply.TruncateStream {
			return
		}
		if i == 0 && reply.GarbleStream {
			_, _ = io.WriteString(w, "data: {\"id\":\"chatcmpl-fake\",\"choices\":[{\"delta\n\n")
			return
		}
		if i == 0 && !hold(r, reply.Hold) {
			return
		}
	}
	for i, tc := range reply.ToolCalls {
		sse(w, "", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""}}}}, nil))
		for _, p := range pieces(tc.Arguments, 8) {
			sse(w, "", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": p}}}}, nil))
		}
	}
	for _, ev := range reply.ExtraEvents {
		sse(w, "", ev)
	}
	sse(w, "", chunk(map[string]any{}, finish(reply)))
	if includeUsage && !reply.NoUsage {
		sse(w, "", map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{}, "usage": openAIUsage(reply)})
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
}

func openAIUsage(reply Reply) map[string]any {
	if reply.GarbleUsage {
		return garbledUsage
	}
	u := reply.Usage
	prompt := u.Input + u.CacheRead + u.CacheWrite
	details := map[string]any{"cached_tokens": u.CacheRead, "audio_tokens": 0}
	if u.CacheWrite > 0 {
		// GPT-5.6's explicit cache writes, part of prompt_tokens.
		details["cache_write_tokens"] = u.CacheWrite
	}
	return map[string]any{
		"prompt_tokens": prompt, "completion_tokens": u.Output, "total_tokens": prompt + u.Output,
		"prompt_tokens_details":     details,
		"completion_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning, "audio_tokens": 0},
	}
}

func openAIError(w http.ResponseWriter, status int, message, typ, code string) {
	var c any
	if code != "" {
		c = code
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": c}})
}

func openAIErrorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "requests"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}
