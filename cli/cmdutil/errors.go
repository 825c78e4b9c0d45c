package cmdutil

import (
	"errors"

	"github.com/gw-gateway/gw/client"
)

// UsageError marks a mistake in how a command was called (exit 2).
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// IsCobraUsageError recognises the argument errors cobra makes itself.
func IsCobraUsageError(err error) bool {
	msg := err.Error()
	for _, prefix := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires at least", "invalid argument"} {
		if len(msg) >= len(prefix) && msg[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}

// Exit codes (documented in README.md and docs/cli.md).
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
	// ExitDiffers is a comparison's "there are differences" (gw policies
	// diff). diff(1) uses 1, which is taken here by errors, and scripts
	// must tell "out of sync" from "could not tell".
	ExitDiffers = 3
	ExitAuth    = 4
)

// ExitCode is the exit code of a command that failed with err: 4 when
// it needs a credential it does not have (or the server refused the one
// it had), 2 for a mistake in how it was called, else 1.
func ExitCode(err error) int {
	var ae *client.APIError
	var ue UsageError
	switch {
	case errors.Is(err, ErrNotLoggedIn), errors.As(err, &ae) && ae.Status == 401:
		return ExitAuth
	case errors.As(err, &ue) || IsCobraUsageError(err):
		return ExitUsage
	}
	return ExitError
}
