package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkInferenceFirst: a chat completion's dispatch to the data
// plane through the mux as controlRoutes registers it, and the short way.
func BenchmarkInferenceFirst(b *testing.B) {
	plane := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	mux := http.NewServeMux()
	for _, p := range []string{"/api/v1/", "/scim/v2/", inferencePattern, "/.well-known/oauth-protected-resource/inf/v1/mcp",
		"/oauth/", "/oauth/token", "/oauth/revoke", "/.well-known/oauth-authorization-server", "/", "GET /healthz", "GET /readyz"} {
		mux.Handle(p, plane)
	}
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/inf/v1/chat/completions", nil)
	w := httptest.NewRecorder()
	for _, c := range []struct {
		name string
		h    http.Handler
	}{{"mux", mux}, {"inferenceFirst", inferenceFirst{mux: mux, plane: plane}}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.h.ServeHTTP(w, r)
			}
		})
	}
}
