package providerstest

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// Gemini is a fake Gemini API: POST /v1beta/models/{model}:generateContent
// and :streamGenerateContent?alt=sse (base URL URL+"/v1beta"), the API key
// in x-goog-api-key, answers and errors in Google's shapes.
type Gemini struct {
	*fake
}

// NewGemini starts a fake that accepts the API key.
func NewGemini(t testing.TB, key string) *Gemini {
	g := &Gemini{}
	g.fake = newFake(t, key, func(f *fake) http.Handler { return http.HandlerFunc(g.serve) })
	return g
}

// BaseURL is the API root to configure, as for
// https://generativelanguage.googleapis.com/v1beta.
func (g *Gemini) BaseURL() string { return g.URL + "/v1beta" }

func (g *Gemini) serve(w http.ResponseWriter, r *http.Request) {
	model, method, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1beta/models/"), ":")
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1beta/models/") || !ok {
		googleError(w, http.StatusNotFound, "NOT_FOUND", "", "Not found: "+r.URL.Path)
		return
	}
	if r.Header.Get("X-Goog-Api-Key") != g.Key {
		// The real API answers a bad key 400 with reason API_KEY_INVALID.
		googleError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "API_KEY_INVALID", "API key not valid. Please pass a valid API key.")
		return
	}
	serveGenerateContent(g.fake, w, r, model, method)
}

// serveGenerateContent answers a generateContent or streamGenerateContent
// call for model (the Gemini API's and Vertex AI's alike).
func serveGenerateContent(f *fake, w http.ResponseWriter, r *http.Request, model, method string) {
	req, reply, err := f.receive(r)
	if err != nil {
		googleError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "", "Invalid JSON payload received.")
		return
	}
	if contents, _ := req.Body["contents"].([]any); method != "batchEmbedContents" && (len(contents) == 0 || req.Body["model"] != nil) {
		googleError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "", "* GenerateContentRequest.contents: contents is not specified")
		return
	}
	if !wait(r, reply.Delay) {
		return
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		if reply.RetryAfter != "" {
			w.Header().Set("Retry-After", reply.RetryAfter)
		}
		googleError(w, reply.Status, googleStatus(reply.Status), "", reply.Message)
		return
	}
	switch {
	case method == "batchEmbedContents":
		geminiEmbeddings(w, req)
	case method == "generateContent":
		writeAnswer(w, reply, geminiAnswer(model, reply, textParts(reply.Text), true))
	case method == "streamGenerateContent" && r.URL.Query().Get("alt") == "sse":
		geminiStream(w, r, model, reply)
	default:
		googleError(w, http.StatusNotFound, "NOT_FOUND", "", "Unknown method "+method)
	}
}

func textParts(text string) []any {
	if text == "" {
		return nil
	}
	return []any{map[string]any{"text": text}}
}

// geminiAnswer is a GenerateContentResponse with parts; last adds the
// function calls, the finish reason and the whole usage.
func geminiAnswer(model string, reply Reply, parts []any, last bool) map[string]any {
	candidate := map[string]any{"index": 0}
	if last {
		for _, tc := range reply.ToolCalls {
			parts = append(parts, map[string]any{"functionCall": map[string]any{"name": tc.Name, "args": rawJSON(tc.Arguments)}})
		}
		candidate["finishReason"] = map[string]string{"stop": "STOP", "length": "MAX_TOKENS", "tool_calls": "STOP",
			"content_filter": "SAFETY"}[finish(reply)]
	}
	candidate["content"] = map[string]any{"role": "model", "parts": parts}
	out := map[string]any{"candidates": []any{candidate}, "modelVersion": model, "responseId": "fake-response"}
	if !reply.NoUsage {
		out["usageMetadata"] = geminiUsage(reply, last)
	}
	return out
}

// geminiUsage is usageMetadata: the prompt includes the cached tokens, the
// thoughts are apart from the candidates. Before the last event only the
// prompt is known.
func geminiUsage(reply Reply, last bool) any {
	if reply.GarbleUsage {
		return map[string]any{"promptTokenCount": "many", "candidatesTokenCount": "some"}
	}
	u := reply.Usage
	m := map[string]any{"promptTokenCount": u.Input + u.CacheRead, "cachedContentTokenCount": u.CacheRead,
		"totalTokenCount": u.Input + u.CacheRead}
	if last {
		m["candidatesTokenCount"] = u.Output - u.Reasoning
		m["thoughtsTokenCount"] = u.Reasoning
		m["totalTokenCount"] = u.Input + u.CacheRead + u.Output
	}
	return m
}

func geminiStream(w http.ResponseWriter, r *http.Request, model string, reply Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	ps := pieces(reply.Text, reply.ChunkSize)
	for i, p := range ps {
		sse(w, "", geminiAnswer(model, reply, textParts(p), false))
		if i == 0 && reply.BreakStream {
			sse(w, "", map[string]any{"error": map[string]any{"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}})
			return
		}
		if i == 0 && reply.TruncateStream {
			return
		}
		if i == 0 && reply.GarbleStream {
			_, _ = io.WriteString(w, "data: {\"candidates\": [{\"content\n\n")
			return
		}
		if i == 0 && !hold(r, reply.Hold) {
			return
		}
	}
	sse(w, "", geminiAnswer(model, reply, nil, true))
}

// googleError writes Google's error shape; reason, when set, is an
// ErrorInfo detail's.
func googleError(w http.ResponseWriter, code int, status, reason, message string) {
	e := map[string]any{"code": code, "message": message, "status": status}
	if reason != "" {
		e["details"] = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason}}
	}
	writeJSON(w, code, map[string]any{"error": e})
}

func googleStatus(code int) string {
	switch {
	case code == http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case code == http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case code == http.StatusForbidden:
		return "PERMISSION_DENIED"
	case code >= 500:
		return "UNAVAILABLE"
	}
	return "INVALID_ARGUMENT"
}

// geminiEmbeddings answers batchEmbedContents: a vector per request, of
// its outputDimensionality (3 when not set); the API reports no tokens.
func geminiEmbeddings(w http.ResponseWriter, req Request) {
	requests, _ := req.Body["requests"].([]any)
	var out []any
	for i, r := range requests {
		m, _ := r.(map[string]any)
		dims := 3
		if d, ok := m["outputDimensionality"].(float64); ok {
			dims = int(d)
		}
		vec := make([]float64, dims)
		for j := range vec {
			vec[j] = float64(i+1) / float64(j+2)
		}
		out = append(out, map[string]any{"values": vec})
	}
	writeJSON(w, http.StatusOK, map[string]any{"embeddings": out})
}
