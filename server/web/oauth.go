package web

import (
	"log/slog"
	"net/http"
)

// OAuthConsent is the consent page of gw's OAuth authorization server
// (issue 31, part 3): who asks, for what, as whom, and the workspaces the
// person may grant. Params are the authorization request's parameters,
// posted back with the decision; Guard is the form's CSRF token.
type OAuthConsent struct {
	ClientName, ClientID, RedirectURI, Resource, Email, Guard string
	Params                                                    map[string]string
	Workspaces                                                []OAuthWorkspace
}

// OAuthWorkspace is a workspace the consent page offers.
type OAuthWorkspace struct{ ID, Label string }

// RenderOAuthConsent renders the consent page (server/api checks the
// request and the session before, and the posted decision after).
func RenderOAuthConsent(w http.ResponseWriter, log *slog.Logger, c OAuthConsent) {
	render(w, log, "oauth", map[string]any{"Title": "Authorize " + c.ClientName, "Consent": c})
}

// RenderOAuthError renders an authorization request gw refuses without
// sending the person back to the client (an unknown client, a redirect
// URI it did not register).
func RenderOAuthError(w http.ResponseWriter, log *slog.Logger, status int, code, description string) {
	renderStatus(w, log, status, "oauth", map[string]any{"Title": "Authorization refused", "Error": code, "Description": description})
}
