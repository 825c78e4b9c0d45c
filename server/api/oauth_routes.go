package api

import (
	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/oauth"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// The administration of gw's OAuth authorization server (issue 31, part
// 3): the clients an administrator registers (instance scope, audited)
// and the grants people gave (a workspace's, like its inference keys).

const oauthClientsPath = "/api/v1/instance/oauth-clients"

func (s *Server) oauthRoutes() []*Route {
	grants := orgWS + "/{workspace_ref}/oauth-grants"
	return []*Route{
		{Method: "POST", Path: oauthClientsPath, Tag: "Instance OAuth Clients", Summary: "Register an OAuth client (a confidential one's secret is shown once)",
			Perms: []auth.Permission{auth.PrincipalsManage}, Body: wire.OAuthClientCreate{}, Result: wire.OAuthClient{}, Handle: s.createOAuthClient},
		{Method: "GET", Path: oauthClientsPath, Tag: "Instance OAuth Clients", Summary: "List the registered OAuth clients (complete set)",
			Perms: []auth.Permission{auth.PrincipalsRead}, Result: []wire.OAuthClient{}, Handle: s.listOAuthClients},
		{Method: "DELETE", Path: oauthClientsPath + "/{client_id}", Tag: "Instance OAuth Clients", Summary: "Delete a registered OAuth client, revoking its grants",
			Perms: []auth.Permission{auth.PrincipalsManage}, Result: wire.OAuthClient{}, RefreshesBundles: true, Handle: s.deleteOAuthClient},
		{Method: "GET", Path: grants, Tag: "Workspace OAuth Grants", Summary: "List the workspace's OAuth grants (complete set, newest first)",
			Perms: []auth.Permission{auth.InferenceKeysRead}, Result: []wire.OAuthGrant{}, Handle: s.listOAuthGrants},
		{Method: "POST", Path: grants + "/{grant_id}/revoke", Tag: "Workspace OAuth Grants", Summary: "Revoke an OAuth grant and every token issued under it (idempotent)",
			Perms: []auth.Permission{auth.InferenceKeysManage}, Result: wire.OAuthGrant{}, RefreshesBundles: true, Handle: s.revokeOAuthGrant},
	}
}

var redirectURIRule = validate.StringRule{Min: 1, Max: 2048, NoControl: true}

func toOAuthClient(c *store.OAuthClient) wire.OAuthClient {
	uris := []string(c.RedirectURIs)
	if uris == nil {
		uris = []string{}
	}
	return wire.OAuthClient{ClientID: c.ClientID, Name: c.Name, RedirectURIs: uris, Confidential: c.SecretHash != nil, CreatedAt: c.CreatedAt}
}

func (s *Server) createOAuthClient(r *Request) (any, error) {
	var in backend.OAuthClientInput
	if err := r.body(func(o *validate.Object) {
		in.Name = requiredString(o, "name", validate.StringRule{Min: 1, Max: 200, NoControl: true})
		if v, ok := o.Require("redirect_uris"); ok {
			validate.List(v, o.Loc().With("redirect_uris"), validate.ListRule{Min: 1, Max: 20}, o.Errors(), func(v any, loc validate.Loc) {
				u, ok := validate.String(v, loc, redirectURIRule, o.Errors())
				if !ok {
					return
				}
				if !oauth.RedirectURIOK(u) {
					o.Errors().Add(loc, "value_error", "Value error, a redirect URI must be https, http on a loopback address, or a private-use scheme (com.example.app:/cb), without a fragment", u, nil)
					return
				}
				in.RedirectURIs = append(in.RedirectURIs, u)
			})
		}
		if b := optionalBool(o, "confidential"); b != nil {
			in.Confidential = *b
		}
	}); err != nil {
		return nil, err
	}
	c, secret, err := backend.RegisterOAuthClient(r.ctx, s.store, r.actor(), in)
	if err != nil {
		return nil, err
	}
	out := toOAuthClient(c)
	out.ClientSecret = secret
	return out, nil
}

func (s *Server) listOAuthClients(r *Request) (any, error) {
	cs, err := s.store.ListOAuthClients(r.ctx)
	if err != nil {
		return nil, err
	}
	out := make([]wire.OAuthClient, len(cs))
	for i := range cs {
		out[i] = toOAuthClient(&cs[i])
	}
	return out, nil
}

func (s *Server) deleteOAuthClient(r *Request) (any, error) {
	c, err := backend.DeleteOAuthClient(r.ctx, s.store, r.actor(), r.R.PathValue("client_id"))
	if err != nil {
		return nil, err
	}
	return toOAuthClient(c), nil
}

func toOAuthGrant(g *store.OAuthGrant) wire.OAuthGrant {
	status := wire.OAuthGrantActive
	if g.RevokedAt != nil {
		status = wire.OAuthGrantRevoked
	}
	return wire.OAuthGrant{ID: g.ID, OrgID: g.OrgID, WorkspaceID: g.WorkspaceID, UserID: g.UserID, ClientID: g.ClientID, ClientName: g.ClientName,
		Resource: g.Resource, Scope: g.Scope, Status: status, CreatedAt: g.CreatedAt, LastUsedAt: g.LastUsedAt, RevokedAt: g.RevokedAt,
		RevokedReason: g.RevokedReason}
}

func (s *Server) listOAuthGrants(r *Request) (any, error) {
	gs, err := s.store.ListOAuthGrants(r.ctx, r.WS.ID)
	if err != nil {
		return nil, err
	}
	out := make([]wire.OAuthGrant, len(gs))
	for i := range gs {
		out[i] = toOAuthGrant(&gs[i])
	}
	return out, nil
}

func (s *Server) revokeOAuthGrant(r *Request) (any, error) {
	id, err := r.pathUUID("grant_id")
	if err != nil {
		return nil, err
	}
	g, err := backend.RevokeOAuthGrant(r.ctx, s.store, r.actor(), r.WS, id)
	if err != nil {
		return nil, err
	}
	return toOAuthGrant(g), nil
}
