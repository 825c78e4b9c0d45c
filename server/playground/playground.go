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
