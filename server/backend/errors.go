package backend

import (
	"fmt"
	"strings"

	"github.com/gw-gateway/gw/server/auth"
)

// Kind is what went wrong with an operation, in the domain's words. The
// API turns each kind into one status, in one place (api.writeError):
// operations say what is wrong, never which HTTP status it is.
type Kind int

const (
	// NotFound: what the operation acts on does not exist (or is not the
	// actor's to see).
	NotFound Kind = iota + 1
	// Conflict: the operation contradicts the state (a taken name, a
	// membership that exists, an invitation already accepted).
	Conflict
	// Forbidden: the actor may not do this (a role it cannot grant, an
	// invitation for someone else).
	Forbidden
	// Unreadable: the input refers to something that is not there in a
	// way no single field can say (an organization named in a list).
	Unreadable
)

// A problem with one field of the input is a validate.Errors, which the
// API reports as validation items (422) like the ones it finds itself.

// Error is an operation's refusal, with a sentence for the person who
// asked. It never holds a secret.
type Error struct {
	Kind   Kind
	Detail string
}

func (e *Error) Error() string { return e.Detail }

func errorf(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Detail: fmt.Sprintf(format, args...)}
}

// MayGrant refuses a role (or any set of rights) holding permissions the
// actor lacks where it acts: nobody hands out more than they hold. An
// operator command (a system actor) is not limited.
func (a Actor) MayGrant(role auth.Set) error {
	if a.Type == "system" {
		return nil
	}
	if missing := a.Rights.Missing(role.Sorted()); len(missing) > 0 {
		return errorf(Forbidden, "cannot grant or change a role holding permissions the caller lacks here: %s", strings.Join(missing, ", "))
	}
	return nil
}
