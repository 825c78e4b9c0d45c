package api

import (
	"errors"
	"net/http"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/playground"
	"github.com/gw-gateway/gw/wire"
)

// errNoPlayground answers the playground routes of a server without a data
// plane in process (role control-plane): the requests would have to be
// sent to a remote data plane, which takes inference keys only.
var errNoPlayground = errorf(http.StatusServiceUnavailable,
	"the playground needs the data plane in the same process (gw serve --role all); this server runs the control plane only")

func (s *Server) playgroundRoutes() []*Route {
	const tag = "Workspace Playground"
	const base = "/api/v1/organizations/{org_id}/workspaces/{workspace_ref}/playground"
	perms := []auth.Permission{auth.PlaygroundExecute}
	return []*Route{
		{Method: "GET", Path: base + "/models", Tag: tag, Perms: perms, DataPlane: true,
			Summary: "List the chat models the caller may try in the workspace (a complete set)",
			Result:  []wire.PlaygroundModel{}, Handle: s.listPlaygroundModels},
		{Method: "POST", Path: base + "/chat/completions", Tag: tag, Perms: perms, DataPlane: true, Raw: true,
			Summary: "Run a chat completion as the caller, through the same admission as inference; the answer is the data plane's, not enveloped",
			Body:    wire.PlaygroundChatRequest{}, Result: wire.PlaygroundChatCompletion{}, Handle: s.playgroundChat},
	}
}

// caller is the principal a playground request runs as: its usage event
// is attributed to the management key (none for a browser session) and
// its user, whom selected_users policy targets match.
func playgroundCaller(r *Request) playground.Caller {
	c := playground.Caller{UserID: r.P.User.ID}
	if k := r.P.Key; k != nil {
		id := k.ID
		c.ManagementKeyID = &id
	}
	return c
}

func (s *Server) listPlaygroundModels(r *Request) (any, error) {
	if s.opts.Playground == nil {
		return nil, errNoPlayground
	}
	models, err := s.opts.Playground.PlaygroundModels(r.Org.ID, r.WS.ID, playgroundCaller(r))
	if errors.Is(err, playground.ErrNotReady) {
		return nil, errorf(http.StatusServiceUnavailable, "%v", err)
	}
	if err != nil {
		return nil, err
	}
	return models, nil
}

func (s *Server) playgroundChat(r *Request) (any, error) {
	if s.opts.Playground == nil {
		return nil, errNoPlayground
	}
	s.opts.Playground.ServePlayground(r.W, r.R, r.Org.ID, r.WS.ID, playgroundCaller(r))
	return answered{}, nil
}

// answered is the result of a handler that has written its answer itself.
type answered struct{}
