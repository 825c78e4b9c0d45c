// Package playground is what the management API and the data plane share
// about the Workspace Playground: the principal a playground request runs
// as, the data plane's side as the API calls it, and the one error the API
// turns into a status. It is small on purpose: the API links it, not the
// whole data plane.
package playground

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"
)

// Caller is the management principal a playground request runs as: the
// usage event is attributed to the management key (if the caller used
// one) and to the user, whom selected_users policy targets match.
type Caller struct {
	UserID          uuid.UUID
	ManagementKeyID *uuid.UUID
}

// Runner is the data plane running in the same process, as the playground
// routes use it once they have authenticated and authorized the caller:
// it lists the models the caller may try and runs a chat completion
// through the same admission as inference, as the caller.
type Runner interface {
	PlaygroundModels(orgID, workspaceID uuid.UUID, c Caller) ([]json.RawMessage, error)
	ServePlayground(w http.ResponseWriter, r *http.Request, orgID, workspaceID uuid.UUID, c Caller)
}

// ErrNotReady is PlaygroundModels' error for a workspace the data plane
// has no bundle for (yet).
var ErrNotReady = errors.New("the data plane has not loaded this workspace's configuration yet; retry shortly")

// A playground request has no inference key, so the data plane runs it on
// a key made up for the caller, whose id KeyID derives from the workspace
// and the user: rate limits and per_key budgets count a user's playground
// in a workspace under it, the same on every data plane and after a
// restart, and it never collides with an inference key's (random) id. The
// control plane, which grants those counters, tells such an id from a
// key's by deriving it for the users the counter may belong to.

// keyNamespace derives the ids playground callers count under.
var keyNamespace = uuid.MustParse("5b0e3c8e-9f57-4d63-a6a4-7d3f1f6c2a10")

// KeyID is the id a user's playground requests in a workspace are
// counted under by rate limits and per_key budgets.
func KeyID(workspaceID, userID uuid.UUID) uuid.UUID {
	return uuid.NewSHA1(keyNamespace, append(workspaceID[:], userID[:]...))
}

// ratePrefix starts the name of a playground rate-limit counter. A key's
// is rl/<key id>/<dimension>; a playground's names the workspace and the
// user instead, which the control plane needs to find the limit (the
// workspace's) and could not recover from the derived id.
const ratePrefix = "rl/playground/"

// RateCounter names the rate-limit counter of a user's playground in a
// workspace, of one dimension (requests or tokens).
func RateCounter(workspaceID, userID uuid.UUID, dimension string) string {
	return ratePrefix + workspaceID.String() + "/" + userID.String() + "/" + dimension
}

// ParseRateCounter reads RateCounter's name back; ok is false for any
// other name.
func ParseRateCounter(name string) (workspaceID, userID uuid.UUID, dimension string, ok bool) {
	rest, found := strings.CutPrefix(name, ratePrefix)
	parts := strings.Split(rest, "/")
	if !found || len(parts) != 3 {
		return uuid.Nil, uuid.Nil, "", false
	}
	ws, err1 := uuid.Parse(parts[0])
	user, err2 := uuid.Parse(parts[1])
	if err1 != nil || err2 != nil || parts[0] != ws.String() || parts[1] != user.String() {
		return uuid.Nil, uuid.Nil, "", false
	}
	return ws, user, parts[2], true
}
