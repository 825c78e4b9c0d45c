package providers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// ErrorKind classifies an upstream failure by what the data plane does
// about it: the first three are the fallback triggers of spec 2.3.
type ErrorKind int

const (
	// RateLimited: the upstream answered 429.
	RateLimited ErrorKind = iota + 1
	// Unavailable: a 5xx answer (Anthropic's 529 overload included), a
	// connection that failed, or a stream that broke off.
	Unavailable
	// Timeout: the call's deadline passed, or the upstream answered 408 or
	// 504.
	Timeout
	// Rejected: the upstream refused the request itself (a 4xx other than
	// 401, 403, 408 and 429). Its message is the caller's to read.
	Rejected
	// Unauthorized: the upstream refused gw's credential (401, 403). That
	// is the operator's problem, not the caller's, so its message is not
	// passed on.
	Unauthorized
	// Canceled: the caller went away.
	Canceled
)

func (k ErrorKind) String() string {
	switch k {
	case RateLimited:
		return "rate_limited"
	case Unavailable:
		return "upstream_unavailable"
	case Timeout:
		return "timeout"
	case Rejected:
		return "rejected"
	case Unauthorized:
		return "unauthorized"
	case Canceled:
		return "canceled"
	}
	return "unknown"
}

// ErrStreamTruncated is the Cause of a stream that ended without the
// protocol's terminal event: the upstream died mid-answer, so what was
// relayed is not the whole answer and must not be passed off as one.
var ErrStreamTruncated = errors.New("the upstream stream ended before its terminal event")

// Error is an upstream call that failed.
type Error struct {
	Kind ErrorKind
	// Status is the upstream's HTTP status; 0 when there was no answer.
	Status int
	// Message is the upstream's error message, if it sent one, with the
	// call's secret removed. Only a Rejected error's is shown to callers.
	Message string
	// Type, Param and Code are the upstream's error fields in OpenAI's
	// vocabulary, when it sent them.
	Type, Param, Code string
	// RetryAfter is the upstream's Retry-After header on a 429 or 503.
	RetryAfter string
	// Cause is the transport error, if any.
	Cause error
	// Credential names the credential an Unauthorized call used (its id),
	// so the answer can say which one an administrator must fix.
	Credential string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("upstream ")
	b.WriteString(e.Kind.String())
	if e.Status != 0 {
		b.WriteString(" (HTTP " + strconv.Itoa(e.Status) + ")")
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Cause != nil {
		b.WriteString(": " + e.Cause.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Cause }

// InvalidRequestError is a request the data plane must refuse before any
// upstream sees it: malformed, or asking for what the upstream cannot do.
type InvalidRequestError struct {
	// Param names the offending member ("messages[2].content[0]"); empty
	// when the request as a whole is at fault.
	Param   string
	Message string
	// Code is OpenAI-style: "invalid_value", "unsupported_parameter", …
	Code string
}

func (e *InvalidRequestError) Error() string { return e.Message }

func invalid(param, code, format string, args ...any) *InvalidRequestError {
	return &InvalidRequestError{Param: param, Code: code, Message: fmt.Sprintf(format, args...)}
}

// transportError classifies a failure to get an answer at all.
func transportError(err error) *Error {
	kind := Unavailable
	var netErr net.Error
	switch {
	case errors.Is(err, context.Canceled):
		kind = Canceled
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		kind = Timeout
	}
	return &Error{Kind: kind, Cause: err}
}

// statusKind classifies an upstream's non-2xx status.
func statusKind(status int) ErrorKind {
	switch {
	case status == http.StatusTooManyRequests:
		return RateLimited
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		return Timeout
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return Unauthorized
	case status >= 400 && status < 500:
		return Rejected
	}
	return Unavailable
}

// redact removes a secret from text an upstream wrote: providers echo keys
// back, partly masked or not, when they refuse one.
func redact(text, secret string) string {
	if secret == "" || text == "" {
		return text
	}
	return strings.ReplaceAll(text, secret, "[redacted]")
}

// maxErrorBody bounds how much of an upstream's error answer is read.
const maxErrorBody = 1 << 20
