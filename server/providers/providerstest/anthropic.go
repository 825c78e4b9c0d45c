package providerstest

import (
	"fmt"
	"net/http"
	"testing"
)

// Anthropic is a fake Messages API: POST /v1/messages (base URL
// URL+"/v1"), x-api-key and anthropic-version headers, JSON or SSE
// answers in the event sequence the real API sends.
type Anthropic struct {
	*fake
}

// NewAnthropic starts a fake that accepts the secret key.
func NewAnthropic(t testing.TB, key string) *Anthropic {
	return &Anthropic{newFake(t, key, func(f *fake) http.Handler { return anthropicHandler{f} })}
}

// BaseURL is the API root to configure, as for https://api.anthropic.com/v1.
func (a *Anthropic) BaseURL() string { return a.URL + "/v1" }

type anthropicHandler struct{ f *fake }

func (h anthropicHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.f.serveBatchAPI(w, r, true, r.Header.Get("X-Api-Key") == h.f.Key, h) {
		return
	}
	if r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens" && r.Header.Get("X-Api-Key") == h.f.Key {
		req, reply, err := h.f.receive(r)
		if err != nil || req.Body["model"] == nil {
			anthropicError(w, http.StatusBadRequest, "invalid_request_error", "model: Field required")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": reply.Usage.Input})
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		anthropicError(w, http.StatusNotFound, "not_found_error", "Not found")
		return
	}
	if r.Header.Get("X-Api-Key") != h.f.Key {
		anthropicError(w, http.StatusUnauthorized, "authentication_error", "invalid x-api-key "+r.Header.Get("X-Api-Key"))
		return
	}
	if r.Header.Get("Anthropic-Version") == "" {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")
		return
	}
	req, reply, err := h.f.receive(r)
	if err != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "There was an issue with the request body: not JSON")
		return
	}
	model, _ := req.Body["model"].(string)
	maxTokens, _ := req.Body["max_tokens"].(float64)
	msgs, _ := req.Body["messages"].([]any)
	switch {
	case model == "":
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "model: Field required")
		return
	case maxTokens < 1:
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "max_tokens: Field required")
		return
	case len(msgs) == 0:
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "messages: at least one message is required")
		return
	}
	if !wait(r, reply.Delay) {
		return
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		if reply.RetryAfter != "" {
			w.Header().Set("Retry-After", reply.RetryAfter)
		}
		anthropicError(w, reply.Status, anthropicErrorType(reply.Status), reply.Message)
		return
	}
	if stream, _ := req.Body["stream"].(bool); stream {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		anthropicStream(r, model, reply, func(event string, v any) { sse(w, event, v) }, func(raw string) { _, _ = w.Write([]byte(raw)) })
		return
	}
	writeAnswer(w, reply, anthropicAnswer(model, reply))
}

// anthropicAnswer is a Messages answer.
func anthropicAnswer(model string, reply Reply) map[string]any {
	stop := anthropicStop(reply)
	var content []any
	if reply.Thinking != "" {
		content = append(content, map[string]any{"type": "thinking", "thinking": reply.Thinking, "signature": "sig-fake"})
	}
	if reply.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": reply.Text})
	}
	for _, tc := range reply.ToolCalls {
		content = append(content, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": rawJSON(tc.Arguments)})
	}
	answer := map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": content,
		"stop_reason": stop, "stop_sequence": nil, "usage": anthropicUsage(reply, reply.Usage.Output),
	}
	if reply.NoUsage {
		delete(answer, "usage")
	}
	return answer
}

func anthropicStop(reply Reply) string {
	return map[string]string{"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}[finish(reply)]
}

// anthropicStream sends a Messages answer's events through emit (as
// server-sent events, or in Bedrock's event-stream chunks); garble writes
// an event that does not parse.
func anthropicStream(r *http.Request, model string, reply Reply, emit func(event string, v any), garble func(raw string)) {
	stop := anthropicStop(reply)
	start := map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": anthropicUsage(reply, 1),
	}
	if reply.NoUsage {
		delete(start, "usage")
	}
	emit("message_start", map[string]any{"type": "message_start", "message": start})
	index := 0
	if reply.Thinking != "" {
		emit("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "thinking", "thinking": ""}})
		for _, p := range pieces(reply.Thinking, reply.ChunkSize) {
			emit("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "thinking_delta", "thinking": p}})
		}
		emit("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "signature_delta", "signature": "sig-fake"}})
		emit("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	if reply.Text != "" {
		emit("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		emit("ping", map[string]any{"type": "ping"})
		for i, p := range pieces(reply.Text, reply.ChunkSize) {
			emit("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": p}})
			if i == 0 && reply.BreakStream {
				emit("error", map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": "Overloaded"}})
				return
			}
			if i == 0 && reply.TruncateStream {
				return
			}
			if i == 0 && reply.GarbleStream {
				garble("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\n\n")
				return
			}
			if i == 0 && !hold(r, reply.Hold) {
				return
			}
		}
		for _, ev := range reply.ExtraEvents {
			emit(ev["type"].(string), ev)
		}
		emit("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for _, tc := range reply.ToolCalls {
		emit("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": map[string]any{}}})
		for _, p := range pieces(tc.Arguments, 8) {
			emit("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
		}
		emit("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	delta := map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": reply.Usage.Output}}
	switch {
	case reply.NoUsage:
		delete(delta, "usage")
	case reply.GarbleUsage:
		delta["usage"] = garbledUsage
	}
	emit("message_delta", delta)
	emit("message_stop", map[string]any{"type": "message_stop"})
}

func anthropicUsage(reply Reply, output int64) map[string]any {
	if reply.GarbleUsage {
		return garbledUsage
	}
	u := reply.Usage
	return map[string]any{"input_tokens": u.Input, "output_tokens": output,
		"cache_creation_input_tokens": u.CacheWrite, "cache_read_input_tokens": u.CacheRead,
		"cache_creation": map[string]any{"ephemeral_5m_input_tokens": u.CacheWrite - u.CacheWrite1h, "ephemeral_1h_input_tokens": u.CacheWrite1h}}
}

func anthropicError(w http.ResponseWriter, status int, typ, message string) {
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": message}})
}

func anthropicErrorType(status int) string {
	switch status {
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	case http.StatusBadRequest:
		return "invalid_request_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return fmt.Sprintf("error_%d", status)
}

// rawJSON decodes tool arguments for a tool_use block's input.
func rawJSON(s string) any {
	var v any
	if err := jsonUnmarshal(s, &v); err != nil {
		return map[string]any{}
	}
	return v
}
