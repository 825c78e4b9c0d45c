package server

import "net/http"

// InferenceRoutes is the mux and the data plane handler behind a server's
// handler, and TakesPlane the short way's test (inferencefirst.go).
func InferenceRoutes(h http.Handler) (*http.ServeMux, http.Handler) {
	f := h.(inferenceFirst)
	return f.mux, f.plane
}

var TakesPlane = takesPlane
