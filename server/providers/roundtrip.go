package providers

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
)

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
