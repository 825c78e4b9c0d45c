// Package client is gw's typed API client. It configures resty once (base
// URL, credential, user agent, timeouts) and turns every non-2xx answer into
// an *APIError carrying the status and the server's detail.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/gw-gateway/gw/wire"
)

// APIError is a non-2xx answer from gw.
type APIError struct {
	Status int
	// Detail is the server's sentence ({"detail": "…"}), or a summary of the
	// validation items.
	Detail string
	// Issues are the validation items of a 422, if any.
	Issues []wire.ValidationIssue
}

func (e *APIError) Error() string {
	if len(e.Issues) == 0 {
		return fmt.Sprintf("gw: %d %s", e.Status, e.Detail)
	}
	parts := make([]string, len(e.Issues))
	for i, is := range e.Issues {
		parts[i] = formatLoc(is.Loc) + ": " + is.Msg
	}
	return fmt.Sprintf("gw: %d validation failed: %s", e.Status, strings.Join(parts, "; "))
}

func formatLoc(loc []any) string {
	var b strings.Builder
	for i, p := range loc {
		switch v := p.(type) {
		case float64:
			fmt.Fprintf(&b, "[%d]", int(v))
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, v)
		}
	}
	return b.String()
}

// UnreachableError is a request that got no answer at all: nothing
// listens at the server's address, the name does not resolve, or the
// connection timed out.
type UnreachableError struct {
	Server string
	// Cause is the short reason: connection refused, no such host, …
	Cause string
	Err   error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach %s: is `gw serve` running? (%s)", e.Server, e.Cause)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// unreachable recognises a failed connection in a transport error and
// says it once, with the server and the cause, instead of Go's "Get
// "…": dial tcp …: connect: …" that names the URL twice.
func unreachable(server string, err error) error {
	var oe *net.OpError
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns):
		return &UnreachableError{Server: server, Cause: "no such host " + dns.Name, Err: err}
	case errors.As(err, &oe) && oe.Op == "dial":
		cause := oe.Err.Error()
		var se *os.SyscallError
		if errors.As(oe.Err, &se) {
			cause = se.Err.Error()
		}
		return &UnreachableError{Server: server, Cause: cause, Err: err}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &UnreachableError{Server: server, Cause: "no answer in time", Err: err}
	}
	return nil
}

// transportError is a request that got no HTTP answer.
func (c *Client) transportError(method, path string, err error) error {
	if u := unreachable(c.server, err); u != nil {
		return u
	}
	return fmt.Errorf("%s %s: %w", method, path, err)
}

// IsStatus reports whether err is an APIError with the given status.
func IsStatus(err error, status int) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == status
}

// Client talks to one gw server with one credential.
type Client struct {
	r      *resty.Client
	server string
}

// Options configure a Client.
type Options struct {
	// Server is the base URL, e.g. http://127.0.0.1:8080.
	Server string
	// Token is a management key; empty for unauthenticated calls.
	Token string
	// Version goes into the user agent as gw/<version>.
	Version string
	// HTTPClient replaces the default transport (tests).
	HTTPClient *http.Client
}

// New builds a client.
func New(opts Options) (*Client, error) {
	u, err := url.Parse(opts.Server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("invalid server URL %q: want http(s)://host[:port]", opts.Server)
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	r := resty.NewWithClient(hc).
		// Failures come back as errors for the caller to report; resty's own
		// log lines would only duplicate them on stderr (and draw across a
		// full-screen dashboard).
		SetLogger(silentLogger{}).
		SetBaseURL(strings.TrimRight(opts.Server, "/")).
		SetHeader("User-Agent", "gw/"+version).
		SetHeader("Accept", "application/json").
		SetRetryCount(2).
		SetRetryWaitTime(200 * time.Millisecond).
		// Only idempotent requests are retried, and only when the
		// connection failed: a POST that may have reached the server is
		// never sent twice.
		AddRetryCondition(func(resp *resty.Response, err error) bool {
			if err == nil || resp == nil || resp.Request == nil {
				return false
			}
			switch resp.Request.Method {
			case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete:
			default:
				return false
			}
			var ne net.Error
			var oe *net.OpError
			return errors.As(err, &oe) || (errors.As(err, &ne) && ne.Timeout())
		})
	if opts.Token != "" {
		r.SetAuthToken(opts.Token)
	}
	return &Client{r: r, server: strings.TrimRight(opts.Server, "/")}, nil
}

// Server is the base URL the client talks to.
func (c *Client) Server() string { return c.server }

type silentLogger struct{}

func (silentLogger) Errorf(string, ...any) {}
func (silentLogger) Warnf(string, ...any)  {}
func (silentLogger) Debugf(string, ...any) {}

// do sends a request and decodes the {data} envelope into out (if non-nil).
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	req := c.r.R().SetContext(ctx)
	if query != nil {
		req.SetQueryParamsFromValues(query)
	}
	if body != nil {
		req.SetHeader("Content-Type", "application/json").SetBody(body)
	}
	resp, err := req.Execute(method, path)
	if err != nil {
		return c.transportError(method, path, err)
	}
	if resp.IsError() {
		return decodeError(resp)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(resp.Body(), out); err != nil {
		return fmt.Errorf("%s %s: decoding response: %w", method, path, err)
	}
	return nil
}

func decodeError(resp *resty.Response) error {
	return decodeErrorBody(resp.StatusCode(), resp.Body())
}

// decodeErrorBody is decodeError of an answer read apart (a streamed one).
func decodeErrorBody(status int, body []byte) error {
	ae := &APIError{Status: status}
	var detail struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &detail) == nil && len(detail.Detail) > 0 {
		if json.Unmarshal(detail.Detail, &ae.Detail) != nil {
			_ = json.Unmarshal(detail.Detail, &ae.Issues)
			ae.Detail = "validation failed"
		}
	} else {
		ae.Detail = strings.TrimSpace(http.StatusText(status))
	}
	return ae
}

func getData[T any](ctx context.Context, c *Client, method, path string, query url.Values, body any) (T, error) {
	var env wire.Envelope[T]
	err := c.do(ctx, method, path, query, body, &env)
	return env.Data, err
}

func esc(s string) string { return url.PathEscape(s) }
