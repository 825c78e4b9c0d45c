package api

import (
	"strings"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// An organization's SCIM tokens (issue 31, part 2; docs/identity.md).

func (s *Server) scimTokenRoutes() []*Route {
	const tag, base = "Members", "/api/v1/organizations/{org_id}/scim-tokens"
	manage := []auth.Permission{auth.MembersManage}
	return []*Route{
		{Method: "POST", Path: base, Tag: tag, Summary: "Create a SCIM token for the organization's provisioning client (the secret is shown once, as token)",
			Perms: manage, Body: wire.SCIMTokenCreate{}, Result: wire.SCIMToken{}, Handle: s.createSCIMToken},
		{Method: "GET", Path: base, Tag: tag, Summary: "List the organization's SCIM tokens (never their secrets)",
			Perms: manage, Result: []wire.SCIMToken{}, Handle: s.listSCIMTokens},
		{Method: "DELETE", Path: base + "/{scim_token_id}", Tag: tag, Summary: "Delete a SCIM token: its provisioning client is refused from then on",
			Perms: manage, Result: wire.Deleted{}, Handle: s.deleteSCIMToken},
	}
}

// scimBase is the base URL of /scim/v2 for a provisioning client.
func (s *Server) scimBase(host string, tls bool) string {
	if s.opts.PublicURL != "" {
		return strings.TrimSuffix(s.opts.PublicURL, "/") + scimPrefix
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	return scheme + "://" + host + scimPrefix
}

func (s *Server) toSCIMToken(r *Request, t *store.SCIMToken) wire.SCIMToken {
	return wire.SCIMToken{ID: t.ID, OrgID: t.OrgID, Label: t.Label, Prefix: t.Prefix, CreatedBy: t.CreatedBy, CreatedAt: t.CreatedAt,
		LastUsedAt: t.LastUsedAt, SCIMURL: s.scimBase(r.R.Host, r.R.TLS != nil)}
}

func (s *Server) createSCIMToken(r *Request) (any, error) {
	var label string
	if err := r.body(func(o *validate.Object) { label = requiredString(o, "label", labelRule) }); err != nil {
		return nil, err
	}
	t, token, err := backend.CreateSCIMToken(r.ctx, s.store, r.actor(), r.Org.ID, label)
	if err != nil {
		return nil, err
	}
	out := s.toSCIMToken(r, t)
	out.Token = token
	return out, nil
}

func (s *Server) listSCIMTokens(r *Request) (any, error) {
	tokens, err := s.store.ListSCIMTokens(r.ctx, r.Org.ID)
	if err != nil {
		return nil, err
	}
	out := make([]wire.SCIMToken, len(tokens))
	for i := range tokens {
		out[i] = s.toSCIMToken(r, &tokens[i])
	}
	return out, nil
}

func (s *Server) deleteSCIMToken(r *Request) (any, error) {
	id, err := r.pathUUID("scim_token_id")
	if err != nil {
		return nil, err
	}
	t, err := backend.DeleteSCIMToken(r.ctx, s.store, r.actor(), r.Org.ID, id)
	if err != nil {
		return nil, err
	}
	return wire.Deleted{ID: t.ID, DeletedAt: store.Now()}, nil
}
