package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/gw-gateway/gw/wire"
)

// sessionCookie is the browser session cookie the spec names (§5).
const sessionCookie = "svc_session"

// CLIStart begins a device-style CLI sign-in. label names this device on
// the approval page and becomes the delivered key's label; empty lets the
// server choose.
func (c *Client) CLIStart(ctx context.Context, label string) (wire.CLIStarted, error) {
	return getData[wire.CLIStarted](ctx, c, http.MethodPost, "/api/v1/auth/cli/start", nil, wire.CLIStart{Label: label})
}

// CLIPoll asks how a CLI sign-in stands. currentKey, when not empty, is the
// CLI's present management key: it travels as this one request's
// Authorization header (never the client's), so that the server revokes it
// when the delivered key replaces it. With currentKey empty the client's
// own token, if it has one, is sent; gw login polls with a token-less
// client.
func (c *Client) CLIPoll(ctx context.Context, pollSecret, currentKey string) (wire.CLIPollResult, error) {
	const path = "/api/v1/auth/cli/poll"
	var env wire.Envelope[wire.CLIPollResult]
	req := c.r.R().SetContext(ctx).SetHeader("Content-Type", "application/json").SetBody(wire.CLIPoll{PollSecret: pollSecret})
	if currentKey != "" {
		req.SetAuthToken(currentKey)
	}
	resp, err := req.Post(path)
	if err != nil {
		return env.Data, c.transportError("POST", path, err)
	}
	if resp.IsError() {
		return env.Data, decodeError(resp)
	}
	if err := json.Unmarshal(resp.Body(), &env); err != nil {
		return env.Data, fmt.Errorf("POST %s: decoding response: %w", path, err)
	}
	return env.Data, nil
}

// CLIAuthorization describes a pending CLI sign-in by its user code (for
// a signed-in approver).
func (c *Client) CLIAuthorization(ctx context.Context, userCode string) (wire.CLIAuthorization, error) {
	return getData[wire.CLIAuthorization](ctx, c, http.MethodGet, "/api/v1/auth/cli/authorizations/"+esc(userCode), nil, nil)
}

// CLIApprove approves a CLI sign-in for an organization (UUID or slug) and
// optionally one of its workspaces.
func (c *Client) CLIApprove(ctx context.Context, in wire.CLIApprove) (wire.CLIAuthorization, error) {
	return getData[wire.CLIAuthorization](ctx, c, http.MethodPost, "/api/v1/auth/cli/approve", nil, in)
}

// CLIDeny refuses a CLI sign-in.
func (c *Client) CLIDeny(ctx context.Context, userCode string) (wire.CLIAuthorization, error) {
	return getData[wire.CLIAuthorization](ctx, c, http.MethodPost, "/api/v1/auth/cli/deny", nil, wire.CLIDeny{UserCode: userCode})
}

// EnrollmentChoices lists the organizations, with their workspaces, where
// the caller may approve a CLI sign-in.
func (c *Client) EnrollmentChoices(ctx context.Context) ([]wire.EnrollmentChoice, error) {
	return getData[[]wire.EnrollmentChoice](ctx, c, http.MethodGet, "/api/v1/enrollment/choices", nil, nil)
}

// Login signs in with email and password and turns c into a browser-session
// client: the session cookie and the X-Requested-With header the server
// demands of cookie-authenticated calls are sent on every later request.
// It changes c, so call it before sharing c between goroutines. Programs
// act with management keys; this exists for tools and tests that stand in
// for the browser (approving a CLI sign-in, say).
func (c *Client) Login(ctx context.Context, in wire.Credentials) (wire.SessionResult, error) {
	const path = "/api/v1/auth/login"
	var env wire.Envelope[wire.SessionResult]
	resp, err := c.r.R().SetContext(ctx).SetHeader("Content-Type", "application/json").SetBody(in).Post(path)
	if err != nil {
		return env.Data, c.transportError("POST", path, err)
	}
	if resp.IsError() {
		return env.Data, decodeError(resp)
	}
	if err := json.Unmarshal(resp.Body(), &env); err != nil {
		return env.Data, fmt.Errorf("POST %s: decoding response: %w", path, err)
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == sessionCookie && ck.Value != "" {
			// Only name and value: the cookie goes back to this one server.
			c.r.SetCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
			c.r.SetHeader("X-Requested-With", "XMLHttpRequest")
			return env.Data, nil
		}
	}
	return env.Data, errors.New("POST " + path + ": the server set no session cookie")
}

// Logout ends the browser session of a client made one by Login. (A
// management key is retired with RevokeManagementKey instead; the server refuses
// logout for one.)
func (c *Client) Logout(ctx context.Context) (wire.LoggedOut, error) {
	return getData[wire.LoggedOut](ctx, c, http.MethodPost, "/api/v1/auth/logout", nil, nil)
}

// ScopeOfKey is the Scope whose endpoints manage a key: the key's own
// scope, which is where a key holding only that scope may act.
func ScopeOfKey(scope wire.KeyScope) (Scope, error) {
	switch scope.Level {
	case wire.ScopeInstance:
		return InstanceScope(), nil
	case wire.ScopeOrganization:
		if scope.OrgID == nil {
			return Scope{}, errors.New("organization scope without org_id")
		}
		return OrgScope(scope.OrgID.String()), nil
	case wire.ScopeWorkspace:
		if scope.OrgID == nil || scope.WorkspaceID == nil {
			return Scope{}, errors.New("workspace scope without org_id and workspace_id")
		}
		return WorkspaceScope(scope.OrgID.String(), scope.WorkspaceID.String()), nil
	}
	return Scope{}, fmt.Errorf("unknown scope level %q", scope.Level)
}
