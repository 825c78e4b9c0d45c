package providers

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"

	"github.com/gw-gateway/gw/server/telemetry"
	"go.opentelemetry.io/otel/trace"
)

// upstreamPost is one request to an upstream (a POST but for a batch
// API's reads and deletes), as a kind describes it: where
// it goes, the body, what it accepts, the kind's own headers, how it is
// authorized and how the upstream's refusal reads. send does the rest the
// same way for every kind.
type upstreamPost struct {
	url  string
	body rope
	// method is POST when empty (a batch API's reads and deletes are
	// GETs and DELETEs, without a body); contentType the body's type,
	// JSON when empty (a batch API's file upload is multipart).
	method, contentType string
	// accept, when set, is the Accept header (an event stream or JSON).
	accept string
	// header, when set, adds the kind's headers (Anthropic's version and
	// beta flags).
	header func(http.Header)
	// authorize adds the credential last, once every header and the body
	// are final: a SigV4 signature covers both.
	authorize func(*http.Request, *Call, rope) error
	// refusal reads a non-2xx answer as an *Error of the kind's shape.
	// Both are plain functions of the call where they can be, so that a
	// request allocates no closures for them.
	refusal func(*http.Response, *Call) *Error
}

// send is the one upstream call: it forwards the headers gw forwards (the
// request id, a native call's anthropic-beta flags), puts gw's own trace
// context in place of the caller's, sets the content type, authorizes,
// sends, and maps a refusal to an *Error.
func send(ctx context.Context, client *http.Client, call *Call, p upstreamPost) (*http.Response, error) {
	req, err := newRequest(ctx, p.method, p.url, p.body)
	if err != nil {
		return nil, err
	}
	forwardHeader(req.Header, call.Header)
	if call.RequestID != "" {
		req.Header["X-Request-Id"] = []string{call.RequestID}
	}
	// The upstream's call is a child of gw's attempt span, never of the
	// caller's span: the forwarded trace context gives way to ctx's (the
	// caller's own only when gw does not trace, as ctx then carries it
	// unchanged; with none in ctx the forwarded headers stay).
	if trace.SpanContextFromContext(ctx).IsValid() {
		req.Header.Del("Traceparent")
		req.Header.Del("Tracestate")
		telemetry.InjectHeaders(ctx, req.Header)
	}
	// Shared value slices, which nothing writes into (Set replaces a
	// value, Add appends past their capacity): two allocations a call
	// fewer (issue 33).
	switch {
	case p.contentType != "":
		req.Header.Set("Content-Type", p.contentType)
	case len(p.body) > 0:
		req.Header["Content-Type"] = jsonValue
	}
	switch p.accept {
	case "":
	case "application/json":
		req.Header["Accept"] = jsonValue
	case "text/event-stream":
		req.Header["Accept"] = eventStreamValue
	default:
		req.Header.Set("Accept", p.accept)
	}
	if p.header != nil {
		p.header(req.Header)
	}
	if err := p.authorize(req, call, p.body); err != nil {
		return nil, err
	}
	resp, err := roundTrip(client, req)
	if err != nil {
		return nil, transportError(err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, p.refusal(resp, call)
	}
	return resp, nil
}

var (
	jsonValue        = []string{"application/json"}
	eventStreamValue = []string{"text/event-stream"}
)

// headerAuth authorizes with header set: a token fetched for the call.
func headerAuth(set func(http.Header)) func(*http.Request, *Call, rope) error {
	return func(r *http.Request, _ *Call, _ rope) error {
		set(r.Header)
		return nil
	}
}

// bearerKey authorizes with the call's secret as a bearer token (OpenAI).
func bearerKey(r *http.Request, call *Call, _ rope) error {
	r.Header.Set("Authorization", "Bearer "+call.Secret)
	return nil
}

// anthropicKey authorizes with the call's secret as Anthropic's API key.
func anthropicKey(r *http.Request, call *Call, _ rope) error {
	r.Header.Set("X-Api-Key", call.Secret)
	return nil
}

// googleKey authorizes with the call's secret as a Google API key.
func googleKey(r *http.Request, call *Call, _ rope) error {
	r.Header.Set("X-Goog-Api-Key", call.Secret)
	return nil
}

// openAIRefusal and anthropicRefusal read a refusal with the call's
// secret removed from its message.
func openAIRefusal(r *http.Response, call *Call) *Error { return openAIStatusError(r, call.Secret) }

func anthropicRefusal(r *http.Response, call *Call) *Error {
	return anthropicStatusError(r, call.Secret)
}

// acceptFor is the Accept header of a JSON or streamed answer.
func acceptFor(stream bool) string {
	if stream {
		return "text/event-stream"
	}
	return "application/json"
}

// answerOf is a sent request's whole answer (resp and err as send
// returns them): a transport failure reading it is an *Error.
func answerOf(resp *http.Response, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := readAnswer(resp.Body, resp.ContentLength)
	if err != nil {
		return nil, transportError(err)
	}
	return raw, nil
}

// refuseRedirects is the redirect policy of the clients adapters use
// (NewGuardedHTTPClient): an upstream's redirect is answered as it is.
func refuseRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

var refuseRedirectsPC = reflect.ValueOf(refuseRedirects).Pointer()

// roundTrip sends req as client.Do does. Through a client that follows
// no redirect, keeps no cookies and has no timeout (NewGuardedHTTPClient's,
// as long as nobody changed those), Do is its transport's RoundTrip, the
// error wrapped as Do wraps it: so that is what is called. http.Client's
// own work a call (a copy of the request's headers kept for redirects,
// its deadline and redirect loop) was 1.8 µs of a request's CPU (issue 33,
// thirteenth round); the pooled proxy gw is measured against calls its
// transport straight. Any other client, and a URL with user information
// (which Do would turn into a Basic authorization; credentials refuse such
// URLs anyway), goes through Do.
//
// Do differs in one answer only: a 3xx whose Location header does not
// parse is an error from Do, where here it is the upstream's answer, which
// send reads as a refusal; both fail the call as unavailable.
func roundTrip(client *http.Client, req *http.Request) (*http.Response, error) {
	if client.Jar != nil || client.Timeout != 0 || client.CheckRedirect == nil ||
		reflect.ValueOf(client.CheckRedirect).Pointer() != refuseRedirectsPC || req.URL.User != nil {
		return client.Do(req)
	}
	rt := client.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		// As Do words a plain HTTP answer to a TLS handshake.
		if tlsErr, ok := err.(tls.RecordHeaderError); ok && string(tlsErr.RecordHeader[:]) == "HTTP/" {
			err = http.ErrSchemeMismatch
		}
		return nil, &url.Error{Op: urlErrorOp(req.Method), URL: req.URL.String(), Err: err}
	}
	// What Do makes of a transport that breaks the contract (test fakes,
	// mostly): no answer, or one without a body.
	switch {
	case resp == nil:
		err = fmt.Errorf("http: RoundTripper implementation (%T) returned a nil *Response with a nil error", rt)
	case resp.Body == nil && resp.ContentLength > 0 && req.Method != http.MethodHead:
		err = fmt.Errorf("http: RoundTripper implementation (%T) returned a *Response with content length %d but a nil Body", rt, resp.ContentLength)
	case resp.Body == nil:
		resp.Body = io.NopCloser(strings.NewReader(""))
	}
	if err != nil {
		return nil, &url.Error{Op: urlErrorOp(req.Method), URL: req.URL.String(), Err: err}
	}
	return resp, nil
}

// urlErrorOp is how Do names a method in its errors ("Post").
func urlErrorOp(method string) string {
	if method == "" {
		return "Get"
	}
	for i := 0; i < len(method); i++ {
		if method[i] >= 0x80 {
			return method
		}
	}
	return method[:1] + strings.ToLower(method[1:])
}
