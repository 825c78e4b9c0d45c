// Package openapitest holds gw's OpenAPI documents to what the servers
// really answer: a test server records every exchange, and Check
// validates each recorded answer (status, content type, body) against the
// document with an OpenAPI validator (libopenapi-validator), so a document
// that says less, or other, than the server sends fails the tests of the
// package that serves it. Tests only.
package openapitest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
)

// maxBody bounds the body kept of one answer; a longer one is not
// validated (bodies that large are bulk exports, checked by their tests).
const maxBody = 4 << 20

// Exchange is one request and its answer, as recorded.
type Exchange struct {
	// Method and Path are those of the documented operation the request
	// reached: Path is its path template as the document writes it
	// (/api/v1/organizations/{org_id}), or the request's path.
	Method, Path, Query string
	RequestHeader       http.Header
	Status              int
	Header              http.Header
	Body                []byte
	Truncated           bool
}

// Recorder records the exchanges of the handlers it wraps. It is safe for
// concurrent use.
type Recorder struct {
	// Path maps a served request to the path template its operation is
	// documented under ("" skips the exchange: it reached no documented
	// operation). It runs after the handler, so it may read what routing
	// set on the request (r.Pattern). Nil keeps the request's path.
	Path func(r *http.Request) string

	mu        sync.Mutex
	exchanges []Exchange
}

// Wrap returns next, recording each exchange it serves.
func (rec *Recorder) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &captureWriter{ResponseWriter: w}
		header := r.Header.Clone()
		next.ServeHTTP(cw, r)
		path := r.URL.Path
		if rec.Path != nil {
			path = rec.Path(r)
		}
		if path == "" {
			return
		}
		status := cw.status
		if status == 0 && r.Context().Err() != nil {
			// The caller left before the handler answered anything: no
			// answer went out to check.
			return
		}
		if status == 0 {
			status = http.StatusOK
		}
		x := Exchange{Method: r.Method, Path: path, Query: r.URL.RawQuery, RequestHeader: header, Status: status,
			Header: w.Header().Clone(), Body: cw.body.Bytes(), Truncated: cw.truncated}
		rec.mu.Lock()
		rec.exchanges = append(rec.exchanges, x)
		rec.mu.Unlock()
	})
}

// Exchanges returns what was recorded so far.
func (rec *Recorder) Exchanges() []Exchange {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]Exchange(nil), rec.exchanges...)
}

type captureWriter struct {
	http.ResponseWriter
	status    int
	body      bytes.Buffer
	truncated bool
}

func (w *captureWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *captureWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if room := maxBody - w.body.Len(); room < len(b) {
		w.truncated = true
		w.body.Write(b[:max(room, 0)])
	} else {
		w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

func (w *captureWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *captureWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Check validates every recorded answer against the OpenAPI document doc:
// its status must be documented for its operation, its content type too,
// and its body must match the schema. It returns the problems, one line
// per operation, status and problem, with how many answers had it and one
// of their bodies.
func Check(doc []byte, exchanges []Exchange) ([]string, error) {
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		return nil, fmt.Errorf("read the document: %w", err)
	}
	v, errs := validator.NewValidator(d, config.WithFormatAssertions())
	if len(errs) > 0 {
		return nil, fmt.Errorf("build the validator: %v", errs)
	}
	type finding struct {
		n       int
		example string
	}
	found := map[string]*finding{}
	for _, x := range exchanges {
		if x.Truncated || x.Method == http.MethodHead || x.Method == http.MethodOptions {
			continue
		}
		req, err := http.NewRequest(x.Method, "http://gw.test"+(&url.URL{Path: x.Path}).EscapedPath()+queryOf(x.Query), nil)
		if err != nil {
			return nil, err
		}
		req.Header = x.RequestHeader.Clone()
		resp := &http.Response{StatusCode: x.Status, Header: x.Header, Body: io.NopCloser(bytes.NewReader(x.Body)), Request: req}
		if ok, verrs := v.ValidateHttpResponse(req, resp); !ok {
			for _, ve := range verrs {
				msg := ve.Message
				if len(ve.SchemaValidationErrors) > 0 {
					var reasons []string
					for _, se := range ve.SchemaValidationErrors {
						reasons = append(reasons, se.FieldPath+": "+se.Reason)
					}
					sort.Strings(reasons)
					msg += " (" + strings.Join(reasons, "; ") + ")"
				} else if ve.Reason != "" {
					msg += " (" + ve.Reason + ")"
				}
				key := fmt.Sprintf("%s %s → %d: %s", x.Method, x.Path, x.Status, msg)
				f := found[key]
				if f == nil {
					body := string(x.Body)
					if len(body) > 400 {
						body = body[:400] + "…"
					}
					f = &finding{example: body}
					found[key] = f
				}
				f.n++
			}
		}
	}
	out := make([]string, 0, len(found))
	for key, f := range found {
		out = append(out, fmt.Sprintf("%s [%d answers; e.g. %s]", key, f.n, f.example))
	}
	sort.Strings(out)
	return out, nil
}

func queryOf(q string) string {
	if q == "" {
		return ""
	}
	return "?" + q
}

// Uncovered lists the operations of doc ("METHOD /path") that no recorded
// exchange answered with a 2xx status (or a redirect, 302 or 303: a
// single sign-on's start and callback answer nothing else): answers
// nothing has checked.
func Uncovered(operations []string, exchanges []Exchange) []string {
	answered := map[string]bool{}
	for _, x := range exchanges {
		// A WebSocket upgrade (101) is the answer its GET exists for.
		if (x.Status >= 200 && x.Status < 300) || x.Status == http.StatusFound || x.Status == http.StatusSeeOther || x.Status == http.StatusSwitchingProtocols {
			answered[x.Method+" "+x.Path] = true
		}
	}
	var out []string
	for _, op := range operations {
		if !answered[op] {
			out = append(out, op)
		}
	}
	return out
}
