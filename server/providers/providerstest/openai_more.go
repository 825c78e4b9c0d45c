package providerstest

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"net/http"
	"strings"
	"time"
)

// other answers POST /v1/embeddings and /v1/responses as OpenAI does.
func (h openAIHandler) other(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+h.f.Key {
		openAIError(w, http.StatusUnauthorized, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
		return
	}
	req, reply, err := h.f.receive(r)
	if err != nil {
		openAIError(w, http.StatusBadRequest, "We could not parse the JSON body of your request.", "invalid_request_error", "")
		return
	}
	model, _ := req.Body["model"].(string)
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
	if strings.HasSuffix(r.URL.Path, "/embeddings") {
		h.embeddings(w, req, model, reply)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/responses/compact") {
		// OpenAI's compaction: one opaque item standing for the input.
		o := responseObject(model, reply, "completed", true)
		writeAnswer(w, reply, map[string]any{"id": "resp_compact_fake", "object": "response.compaction", "created_at": o["created_at"],
			"output": []any{map[string]any{"id": "cmp_fake", "type": "compaction", "encrypted_content": "enc:" + reply.Text}},
			"usage":  o["usage"]})
		return
	}
	if stream, _ := req.Body["stream"].(bool); stream {
		h.responsesStream(w, r, model, reply)
		return
	}
	writeAnswer(w, reply, responseObject(model, reply, "completed", true))
}

func (h openAIHandler) embeddings(w http.ResponseWriter, req Request, model string, reply Reply) {
	var inputs []any
	switch in := req.Body["input"].(type) {
	case string:
		inputs = []any{in}
	case []any:
		inputs = in
	}
	dims := 3
	if d, ok := req.Body["dimensions"].(float64); ok {
		dims = int(d)
	}
	format, _ := req.Body["encoding_format"].(string)
	var data []any
	for i := range inputs {
		vec := make([]float32, dims)
		for j := range vec {
			vec[j] = float32(i+1) / float32(j+2)
		}
		var emb any = vec
		if format == "base64" {
			buf := make([]byte, 4*len(vec))
			for j, v := range vec {
				binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(v))
			}
			emb = base64.StdEncoding.EncodeToString(buf)
		}
		data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": emb})
	}
	answer := map[string]any{"object": "list", "data": data, "model": model,
		"usage": map[string]any{"prompt_tokens": reply.Usage.Input, "total_tokens": reply.Usage.Input}}
	switch {
	case reply.NoUsage:
		delete(answer, "usage")
	case reply.GarbleUsage:
		answer["usage"] = garbledUsage
	}
	writeJSON(w, http.StatusOK, answer)
}

func responseOutput(reply Reply) []any {
	var out []any
	if reply.Text != "" {
		out = append(out, map[string]any{"id": "msg_fake", "type": "message", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": reply.Text, "annotations": []any{}}}})
	}
	for _, tc := range reply.ToolCalls {
		out = append(out, map[string]any{"id": "fc_" + tc.ID, "type": "function_call", "status": "completed",
			"call_id": tc.ID, "name": tc.Name, "arguments": tc.Arguments})
	}
	if out == nil {
		out = []any{}
	}
	return out
}

func responseObject(model string, reply Reply, status string, withOutput bool) map[string]any {
	o := map[string]any{"id": "resp_fake", "object": "response", "created_at": time.Now().Unix(), "status": status,
		"model": model, "output": []any{}, "usage": nil, "error": nil, "incomplete_details": nil}
	if reply.ServiceTier != "" {
		o["service_tier"] = reply.ServiceTier
	}
	if reply.ResponseID != "" {
		o["id"] = reply.ResponseID
	}
	if withOutput {
		o["output"] = responseOutput(reply)
		in := reply.Usage.Input + reply.Usage.CacheRead + reply.Usage.CacheWrite
		details := map[string]any{"cached_tokens": reply.Usage.CacheRead}
		if reply.Usage.CacheWrite > 0 {
			details["cache_write_tokens"] = reply.Usage.CacheWrite
		}
		o["usage"] = map[string]any{"input_tokens": in, "input_tokens_details": details,
			"output_tokens": reply.Usage.Output, "output_tokens_details": map[string]any{"reasoning_tokens": reply.Usage.Reasoning}, "total_tokens": in + reply.Usage.Output}
		switch {
		case reply.NoUsage:
			o["usage"] = nil
		case reply.GarbleUsage:
			o["usage"] = garbledUsage
		}
	}
	return o
}

// responsesStream sends the Responses event sequence, named events with
// sequence numbers.
func (h openAIHandler) responsesStream(w http.ResponseWriter, r *http.Request, model string, reply Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	seq := 0
	send := func(typ string, v map[string]any) {
		v["type"], v["sequence_number"] = typ, seq
		seq++
		sse(w, typ, v)
	}
	send("response.created", map[string]any{"response": responseObject(model, reply, "in_progress", false)})
	idx := 0
	if reply.Text != "" {
		send("response.output_item.added", map[string]any{"output_index": idx, "item": map[string]any{"id": "msg_fake", "type": "message",
			"status": "in_progress", "role": "assistant", "content": []any{}}})
		for i, p := range pieces(reply.Text, reply.ChunkSize) {
			send("response.output_text.delta", map[string]any{"item_id": "msg_fake", "output_index": idx, "content_index": 0, "delta": p})
			if i == 0 && reply.TruncateStream {
				return
			}
			if i == 0 && reply.BreakStream {
				send("error", map[string]any{"code": "server_error", "message": "The server had an error while processing your request.", "param": nil})
				return
			}
			if i == 0 && reply.GarbleStream {
				_, _ = w.Write([]byte("event: response.output_text.delta\ndata: {\"type\":\"response.output\n\n"))
				return
			}
			if i == 0 && !hold(r, reply.Hold) {
				return
			}
		}
		send("response.output_text.done", map[string]any{"item_id": "msg_fake", "output_index": idx, "content_index": 0, "text": reply.Text})
		send("response.output_item.done", map[string]any{"output_index": idx, "item": responseOutput(Reply{Text: reply.Text})[0]})
		idx++
	}
	for _, tc := range reply.ToolCalls {
		item := map[string]any{"id": "fc_" + tc.ID, "type": "function_call", "status": "in_progress", "call_id": tc.ID, "name": tc.Name, "arguments": ""}
		send("response.output_item.added", map[string]any{"output_index": idx, "item": item})
		send("response.function_call_arguments.delta", map[string]any{"item_id": "fc_" + tc.ID, "output_index": idx, "delta": tc.Arguments})
		send("response.function_call_arguments.done", map[string]any{"item_id": "fc_" + tc.ID, "output_index": idx, "arguments": tc.Arguments})
		idx++
	}
	for _, ev := range reply.ExtraEvents {
		send(ev["type"].(string), ev)
	}
	send("response.completed", map[string]any{"response": responseObject(model, reply, "completed", true)})
}
