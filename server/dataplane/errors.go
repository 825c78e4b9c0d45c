package dataplane

import (
	"net/http"
)

// apiError is the OpenAI error object. The official SDKs read message, type
// and code from it, so gw answers in the same shape (DESIGN §5); param and
// code are null when they do not apply.
type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// OpenAI's error types.
const (
	typeInvalidRequest = "invalid_request_error"
	typeServer         = "server_error"
)

func ref(s string) *string { return &s }

func errorResponse(status int, e apiError, extra ...headerField) *response {
	r := newResponse(status, mustJSON(struct {
		Error apiError `json:"error"`
	}{e}), extra...)
	if e.Code != nil {
		r.code = *e.Code
	}
	return r
}

// The constant errors, encoded once.
var (
	// RFC 9110 §11.6.1: a 401 names the scheme it wants.
	wwwAuthenticate = headerField{"Www-Authenticate", []string{`Bearer realm="gw"`}}

	errMissingKey = errorResponse(http.StatusUnauthorized, apiError{
		Message: "Missing inference key. Send a workspace inference key as 'Authorization: Bearer sk-gw-...'.",
		Type:    typeInvalidRequest, Code: ref("invalid_api_key"),
	}, wwwAuthenticate)
	errInvalidKey = errorResponse(http.StatusUnauthorized, apiError{
		Message: "Invalid inference key.",
		Type:    typeInvalidRequest, Code: ref("invalid_api_key"),
	}, wwwAuthenticate)
	errExpiredKey = errorResponse(http.StatusUnauthorized, apiError{
		Message: "The inference key has expired.",
		Type:    typeInvalidRequest, Code: ref("invalid_api_key"),
	}, wwwAuthenticate)
	errManagementKey = errorResponse(http.StatusUnauthorized, apiError{
		Message: "Management keys (sk-cp-...) are not accepted here; use a workspace inference key (sk-gw-...).",
		Type:    typeInvalidRequest, Code: ref("invalid_api_key"),
	}, wwwAuthenticate)
	errNotReady = errorResponse(http.StatusServiceUnavailable, apiError{
		Message: "The gateway has not loaded its configuration yet; retry shortly.",
		Type:    typeServer, Code: ref("bundle_not_ready"),
	}, headerField{"Retry-After", []string{"1"}})
	errMethodNotAllowed = errorResponse(http.StatusMethodNotAllowed, apiError{
		Message: "Method not allowed; this endpoint answers GET.",
		Type:    typeInvalidRequest, Code: ref("method_not_allowed"),
	}, headerField{"Allow", []string{http.MethodGet}})
)

// errModelNotFound is the one answer for a model that does not exist and
// for one the key may not see, on discovery and inference alike. The two
// must be indistinguishable (spec 4.9 rule 6), so it is the same bytes for
// every id: echoing the id would vary the body and its length with it.
var errModelNotFound = errorResponse(http.StatusNotFound, apiError{
	Message: "The model does not exist or you do not have access to it.",
	Type:    typeInvalidRequest, Param: ref("model"), Code: ref("model_not_found"),
})

func unknownURL(r *http.Request) *response {
	return errorResponse(http.StatusNotFound, apiError{
		Message: "Unknown request URL: " + r.Method + " " + r.URL.Path + ".",
		Type:    typeInvalidRequest, Code: ref("unknown_url"),
	})
}
