package dataplane

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers"
)

// statusOverloaded is Anthropic's "overloaded" status.
const statusOverloaded = 529

// codeUpstreamOverloaded is the error code of an upstream's 529.
const codeUpstreamOverloaded = "upstream_overloaded"

// OpenAI's error types beyond those discovery uses.
const (
	typeRateLimit = "rate_limit_error"
	typeNotImpl   = "not_implemented_error"
)

var (
	errPostOnly = errorResponse(http.StatusMethodNotAllowed, apiError{
		Message: "Method not allowed; this endpoint answers POST.",
		Type:    typeInvalidRequest, Code: ref("method_not_allowed"),
	}, headerField{"Allow", []string{http.MethodPost}})
	errInferenceNotConfigured = errorResponse(http.StatusServiceUnavailable, apiError{
		Message: "This gateway serves model discovery only; inference is not configured.",
		Type:    typeServer, Code: ref("inference_not_configured"),
	})
)

func errBodyTooLarge(limit int64) *response {
	return errorResponse(http.StatusRequestEntityTooLarge, apiError{
		Message: "The request body exceeds " + strconv.FormatInt(limit, 10) + " bytes.",
		Type:    typeInvalidRequest, Code: ref("request_too_large"),
	})
}

// invalidRequest is a 400; param may be empty.
func invalidRequest(param, code, message string) *response {
	e := apiError{Message: message, Type: typeInvalidRequest, Code: ref(code)}
	if param != "" {
		e.Param = ref(param)
	}
	return errorResponse(http.StatusBadRequest, e)
}

// invalidResponse answers a request the parser or an adapter refused.
func invalidResponse(err error) *response {
	var inv *providers.InvalidRequestError
	if errors.As(err, &inv) {
		return invalidRequest(inv.Param, inv.Code, inv.Message)
	}
	return invalidRequest("", "invalid_request", "The request is not valid.")
}

// policyDenied carries a deny rule's message verbatim (DESIGN §6).
func policyDenied(message string) *response {
	return errorResponse(http.StatusForbidden, apiError{
		Message: message, Type: typeInvalidRequest, Code: ref("policy_denied"),
	})
}

func errProviderKind(provider string, kind catalog.Kind) *response {
	return errorResponse(http.StatusNotImplemented, apiError{
		Message: "Provider '" + provider + "' speaks the " + string(kind) + " API, which this gateway cannot call.",
		Type:    typeNotImpl, Code: ref("provider_not_supported"),
	})
}

// errCredentialUnavailable is a sealed secret this data plane cannot
// open: its secret key differs from the control plane's. The caller learns
// that much and no more.
func errCredentialUnavailable(model string) *response {
	return errorResponse(http.StatusServiceUnavailable, apiError{
		Message: "The gateway cannot use its credential for model '" + model + "'; an administrator must check the gateway's secret key.",
		Type:    typeServer, Code: ref("credential_unavailable"),
	})
}

// upstreamError is the OpenAI error object for an upstream failure, and
// the status to answer it with. Only a request the upstream rejected
// carries the upstream's own words (with the secret already removed by
// the adapter); the other kinds are described by gw, so nothing an
// upstream says about its credential reaches the caller.
func upstreamError(model string, f *providers.Error) (int, apiError) {
	if errors.Is(f, errShuttingDown) {
		return http.StatusServiceUnavailable, apiError{Type: typeServer, Code: ref("gateway_shutting_down"),
			Message: "The gateway is shutting down; retry the request."}
	}
	switch {
	case f.Kind == providers.Unavailable && f.Status == statusOverloaded:
		// Anthropic's 529: a Messages caller gets it back as such
		// (anthropicError), every other dialect a 503.
		return http.StatusServiceUnavailable, apiError{Type: typeServer, Code: ref(codeUpstreamOverloaded),
			Message: "The provider of model '" + model + "' is overloaded; retry later."}
	case f.Kind == providers.Unavailable && errors.Is(f, errCoolingDown):
		return http.StatusServiceUnavailable, apiError{Type: typeServer, Code: ref("upstream_unavailable"),
			Message: "The provider of model '" + model + "' is failing; gw is holding requests back from it for a while."}
	}
	switch f.Kind {
	case providers.RateLimited:
		return http.StatusTooManyRequests, apiError{Type: typeRateLimit, Code: ref("upstream_rate_limited"),
			Message: "The provider of model '" + model + "' is rate limiting requests; retry later."}
	case providers.Timeout:
		return http.StatusGatewayTimeout, apiError{Type: typeServer, Code: ref("upstream_timeout"),
			Message: "The provider of model '" + model + "' did not answer in time."}
	case providers.Unauthorized:
		credential := "the gateway's credential"
		if f.Credential != "" {
			credential = "the gateway's credential " + f.Credential
		}
		return http.StatusBadGateway, apiError{Type: typeServer, Code: ref("upstream_auth_failed"),
			Message: "The provider of model '" + model + "' refused " + credential + "; an administrator must update it."}
	case providers.Rejected:
		e := apiError{Type: typeInvalidRequest, Message: f.Message}
		if f.Type != "" {
			e.Type = f.Type
		}
		if e.Message == "" {
			e.Message = "The provider of model '" + model + "' rejected the request (HTTP " + strconv.Itoa(f.Status) + ")."
		}
		if f.Param != "" {
			e.Param = ref(f.Param)
		}
		if f.Code != "" {
			e.Code = ref(f.Code)
		}
		status := f.Status
		if status < 400 || status > 499 {
			status = http.StatusBadRequest
		}
		return status, e
	}
	return http.StatusBadGateway, apiError{Type: typeServer, Code: ref("upstream_unavailable"),
		Message: "The provider of model '" + model + "' is unavailable."}
}

func upstreamFailure(model string, f *providers.Error) *response {
	status, e := upstreamError(model, f)
	var extra []headerField
	// An unavailable upstream's Retry-After (a 503 there) is as useful on
	// our 502 as a rate limit's is on our 429.
	switch {
	case f.RetryAfter != "" && (status == http.StatusTooManyRequests || status == http.StatusBadGateway || status == http.StatusServiceUnavailable):
		extra = append(extra, headerField{"Retry-After", []string{f.RetryAfter}})
	case errors.Is(f, errShuttingDown):
		// Another replica, or this one restarted, can take it at once.
		extra = append(extra, headerField{"Retry-After", []string{"1"}})
	}
	return errorResponse(status, e, extra...)
}

// streamErrorData is the error event of a stream that broke off: the
// OpenAI SDKs end the stream with an error when an event carries an error
// member.
func streamErrorData(model string, f *providers.Error) []byte {
	_, e := upstreamError(model, f)
	return mustJSON(struct {
		Error apiError `json:"error"`
	}{e})
}

// DefaultBodyReadTimeout bounds how long an inference body may take to
// arrive (32 MiB at ~1 MiB/s): a caller that trickles bytes holds a
// connection no longer than that, where the server's own read timeout is
// minutes.
const DefaultBodyReadTimeout = 30 * time.Second

var errBodyTimeout = errorResponse(http.StatusRequestTimeout, apiError{
	Message: "The request body did not arrive in time.", Type: typeInvalidRequest, Code: ref("request_timeout"),
})

// limitBodyTime gives the request's body its read deadline, from the
// start: a request refused before its body is read (a bad key, a rate
// limit) still has its body drained by net/http before the answer, and
// that drain must not outlast the deadline either. Not every writer
// reaches a connection (tests' recorders): then the server's read timeout
// is the bound.
func (p *Plane) limitBodyTime(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(p.inference.bodyRead))
}
