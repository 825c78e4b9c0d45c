package server

import (
	"net/http"
	"path"
	"strings"
)

// inferencePattern is the pattern the data plane is registered under on
// both muxes (controlRoutes, assembleDataPlane).
const inferencePattern = "/inf/v1/"

// inferenceFirst serves the data plane's requests without the mux's
// routing, and every other request through the mux. The mux's lookup
// (host stripping, path cleaning, the routing tree) was 3.5 µs of a model
// request's CPU under the harness's load (issue 33, fourteenth round), to
// find the handler that a path under /inf/v1/ always finds.
//
// Only a request the mux would hand to plane unchanged takes the short
// way: not CONNECT, its path already clean and not escaped (the mux
// redirects an unclean path, and matches an escaped one by its escaped
// form), under inferencePattern. r.Pattern is set as the mux sets it (the
// metrics and access log read it). TestInferenceFirstIsTheMux holds the
// two to the same handler for every path the short way takes, so a more
// specific pattern registered under /inf/v1/ later fails it rather than
// being skipped.
type inferenceFirst struct {
	mux   *http.ServeMux
	plane http.Handler
}

func (f inferenceFirst) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.plane != nil && takesPlane(r) {
		r.Pattern = inferencePattern
		f.plane.ServeHTTP(w, r)
		return
	}
	f.mux.ServeHTTP(w, r)
}

// takesPlane reports whether r goes to the data plane without the mux.
func takesPlane(r *http.Request) bool {
	p := r.URL.Path
	return r.Method != http.MethodConnect && r.URL.RawPath == "" && r.RequestURI != "*" &&
		strings.HasPrefix(p, inferencePattern) && isCleanPath(p)
}

// isCleanPath reports whether the mux would keep p as it is: path.Clean
// leaves it alone but for a trailing slash, which the mux keeps. (Clean
// allocates nothing for a path it does not change.)
func isCleanPath(p string) bool {
	c := path.Clean(p)
	return c == p || (len(p) == len(c)+1 && p[len(p)-1] == '/' && p[:len(c)] == c)
}
