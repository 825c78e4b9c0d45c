package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// Error is a control-plane error with a status and a sentence for the user.
type Error struct {
	Status int
	Detail string
	// RetryAfter, when set, is sent as Retry-After (429, 503).
	RetryAfter time.Duration
}

func (e *Error) Error() string { return fmt.Sprintf("%d: %s", e.Status, e.Detail) }

func errorf(status int, format string, args ...any) *Error {
	return &Error{Status: status, Detail: fmt.Sprintf(format, args...)}
}

var (
	errUnauthenticated = &Error{Status: http.StatusUnauthorized, Detail: "authentication required"}
	errInvalidCursor   = &Error{Status: http.StatusUnprocessableEntity, Detail: "invalid cursor"}
)

// writeError is the one place that turns an error into the spec's error
// bodies: un-enveloped, {"detail": "..."} or pydantic-style items.
func writeError(w http.ResponseWriter, log *slog.Logger, requestID string, err error) {
	if ve, ok := validate.AsError(err); ok {
		items := make([]wire.ValidationIssue, len(ve.Issues))
		for i, is := range ve.Issues {
			items[i] = wire.ValidationIssue(is)
		}
		writeJSON(w, http.StatusUnprocessableEntity, wire.ValidationError{Detail: items})
		return
	}
	var ae *Error
	var be *backend.Error
	switch {
	case errors.As(err, &be):
		writeJSON(w, domainStatus[be.Kind], wire.ErrorDetail{Detail: be.Detail})
	case errors.As(err, &ae):
		if ae.Status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gw"`)
		}
		if ae.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(ae.RetryAfter.Seconds()))))
		}
		writeJSON(w, ae.Status, wire.ErrorDetail{Detail: ae.Detail})
	case errors.Is(err, auth.ErrPasswordBusy):
		w.Header().Set("Retry-After", "2")
		writeJSON(w, http.StatusServiceUnavailable, wire.ErrorDetail{Detail: auth.ErrPasswordBusy.Error()})
	case errors.Is(err, store.ErrNotFound):
		writeJSON(w, http.StatusNotFound, wire.ErrorDetail{Detail: "not found"})
	case errors.Is(err, store.ErrConflict):
		writeJSON(w, http.StatusConflict, wire.ErrorDetail{Detail: "conflict with an existing resource"})
	default:
		log.Error("request failed", "request_id", requestID, "error", err)
		writeJSON(w, http.StatusInternalServerError, wire.ErrorDetail{Detail: "internal server error (request id " + requestID + ")"})
	}
}

// domainStatus is the status of each kind of refusal the service layer
// (server/backend) returns.
var domainStatus = map[backend.Kind]int{
	backend.NotFound:   http.StatusNotFound,
	backend.Conflict:   http.StatusConflict,
	backend.Forbidden:  http.StatusForbidden,
	backend.Unreadable: http.StatusUnprocessableEntity,
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
