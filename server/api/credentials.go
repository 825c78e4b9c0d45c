package api

import (
	"context"
	"net/url"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/catalogdb"
	"github.com/gw-gateway/gw/server/reseal"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

func (s *Server) credentialRoutes() []*Route {
	type place struct{ tag, prefix string }
	places := []place{
		{"Instance Provider Credentials", "/api/v1/instance/provider-credentials"},
		{"Provider Credentials", "/api/v1/organizations/{org_id}/provider-credentials"},
		{"Workspace Provider Credentials", orgWS + "/{workspace_ref}/provider-credentials"},
	}
	read := []auth.Permission{auth.ProviderCredentialsRead}
	manage := []auth.Permission{auth.ProviderCredentialsManage}
	var routes []*Route
	for _, p := range places {
		routes = append(routes,
			&Route{Method: "POST", Path: p.prefix, Tag: p.tag, Summary: "Configure a provider credential (the secret is sealed and never returned)",
				Perms: manage, Body: wire.ProviderCredentialCreate{}, Result: wire.ProviderCredential{}, RefreshesBundles: true, Handle: s.createCredential},
			&Route{Method: "GET", Path: p.prefix, Tag: p.tag, Summary: "List provider credentials (complete set, metadata only)",
				Perms: read, Result: []wire.ProviderCredential{}, Handle: s.listCredentials},
			&Route{Method: "GET", Path: p.prefix + "/{credential_id}", Tag: p.tag, Summary: "Get a provider credential (metadata only)",
				Perms: read, Result: wire.ProviderCredential{}, Handle: s.getCredential},
			&Route{Method: "PATCH", Path: p.prefix + "/{credential_id}", Tag: p.tag, Summary: "Change a credential's label, secret, base URL or settings",
				Perms: manage, Body: wire.ProviderCredentialUpdate{}, Result: wire.ProviderCredential{}, RefreshesBundles: true, Handle: s.updateCredential},
			&Route{Method: "DELETE", Path: p.prefix + "/{credential_id}", Tag: p.tag, Summary: "Delete a provider credential",
				Perms: manage, Result: wire.Deleted{}, RefreshesBundles: true, Handle: s.deleteCredential},
		)
	}
	return routes
}

var (
	credentialLabelRule  = validate.StringRule{Min: 1, Max: 80, NoControl: true}
	credentialSecretRule = validate.StringRule{Min: 1, Max: 8192, Secret: true}
	baseURLRule          = validate.StringRule{Min: 1, Max: 2048, NoControl: true}
)

// credentialScope is the store scope the request's URL names.
func credentialScope(r *Request) store.CredentialScope {
	var sc store.CredentialScope
	if r.Org != nil {
		sc.OrgID = &r.Org.ID
	}
	if r.WS != nil {
		sc.WorkspaceID = &r.WS.ID
	}
	return sc
}

func toCredential(c *store.ProviderCredential) wire.ProviderCredential {
	sc := wire.CredentialScope{Level: wire.CredentialPlatform, OrgID: c.OrgID, WorkspaceID: c.WorkspaceID}
	switch {
	case c.WorkspaceID != nil:
		sc.Level = wire.CredentialWorkspace
	case c.OrgID != nil:
		sc.Level = wire.CredentialOrganization
	}
	return wire.ProviderCredential{ID: c.ID, Scope: sc, Provider: c.Provider, Label: c.Label, BaseURL: c.BaseURL,
		Settings: wireSettings(c), SecretHint: c.SecretHint, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}

func credentialAAD(id uuid.UUID) string { return reseal.CredentialAAD(id) }

// readBaseURL checks an upstream base URL: absolute http(s), no embedded
// credentials (they belong in the sealed secret), no query or fragment.
func readBaseURL(o *validate.Object) *string {
	s := optionalString(o, "base_url", baseURLRule)
	if s == nil {
		return nil
	}
	u, err := url.Parse(*s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		o.Errors().Add(o.Loc().With("base_url"), "url_parsing",
			"Input should be an absolute http(s) URL without credentials, query or fragment", *s, nil)
		return nil
	}
	return s
}

// activeProviders is the set of providers in force, for validating
// credentials.
func (s *Server) activeProviders(ctx context.Context) (map[string]catalog.Provider, error) {
	rows, err := catalogdb.LoadRows(ctx, s.store)
	if err != nil {
		return nil, err
	}
	out := map[string]catalog.Provider{}
	for _, p := range rows.Providers {
		if p.RetiredAt == nil {
			out[p.ID] = catalogdb.Provider(p)
		}
	}
	return out, nil
}

func (s *Server) createCredential(r *Request) (any, error) {
	providers, err := s.activeProviders(r.ctx)
	if err != nil {
		return nil, err
	}
	policy, err := s.egressPolicy(r.ctx)
	if err != nil {
		return nil, err
	}
	var provider, label, secret string
	var baseURL *string
	var settings credentialSettings
	if err := r.body(func(o *validate.Object) {
		provider = requiredString(o, "provider", validate.StringRule{Min: 1, Max: 255, NoControl: true})
		label = requiredString(o, "label", credentialLabelRule)
		secret = requiredString(o, "secret", credentialSecretRule)
		baseURL = readBaseURL(o)
		settings = readSettings(o)
		p, known := providers[provider]
		if known {
			checkCredential(o, p.Kind, &secret, settings.value)
		}
		switch {
		case provider != "" && !known:
			o.Errors().Add(o.Loc().With("provider"), "value_error",
				"Value error, unknown provider; it must be a provider of the model catalog", provider, nil)
		case known && p.BaseURL == "" && !o.Has("base_url"):
			// The catalog's URL is the default (Mistral, Groq, an imported
			// provider with one); only a provider without one, like the
			// generic openai-compatible, needs the credential to say where.
			o.Errors().Add(o.Loc().With("base_url"), "missing", backend.BaseURLRequired, nil, nil)
		}
		checkCredentialEgress(r.ctx, policy, o.Errors(), credentialURLs{baseURL: baseURL, tokenURL: &settings.value.TokenURL,
			s3Endpoint: &settings.value.BatchS3Endpoint, secret: &secret})
	}); err != nil {
		return nil, err
	}
	c, err := backend.CreateCredential(r.ctx, s.store, r.actor(), backend.CredentialCreate{Scope: credentialScope(r), Provider: provider,
		Label: label, Secret: secret, BaseURL: baseURL, Settings: settingsColumn(settings.value), Seal: s.sealCredential})
	if err != nil {
		return nil, err
	}
	return toCredential(c), nil
}

// sealCredential seals a provider secret bound to its credential.
func (s *Server) sealCredential(secret []byte, id uuid.UUID) (string, error) {
	return s.opts.Keyring.Seal(secret, credentialAAD(id))
}

func (s *Server) listCredentials(r *Request) (any, error) {
	cs, err := s.store.ListProviderCredentials(r.ctx, credentialScope(r))
	if err != nil {
		return nil, err
	}
	out := make([]wire.ProviderCredential, len(cs))
	for i := range cs {
		out[i] = toCredential(&cs[i])
	}
	return out, nil
}

func (s *Server) getCredential(r *Request) (any, error) {
	id, err := r.pathUUID("credential_id")
	if err != nil {
		return nil, err
	}
	c, err := backend.ScopedCredential(r.ctx, s.store, credentialScope(r), id)
	if err != nil {
		return nil, err
	}
	return toCredential(c), nil
}

func (s *Server) updateCredential(r *Request) (any, error) {
	policy, err := s.egressPolicy(r.ctx)
	if err != nil {
		return nil, err
	}
	var label, secret, baseURL *string
	var settings credentialSettings
	clearBaseURL := false
	if err := r.body(func(o *validate.Object) {
		label = optionalString(o, "label", credentialLabelRule)
		secret = optionalString(o, "secret", credentialSecretRule)
		settings = readSettings(o)
		if v, ok := o.Raw("base_url"); ok && v == nil {
			clearBaseURL = true
		} else {
			baseURL = readBaseURL(o)
		}
		// The secret goes wherever base_url points: changing the
		// destination without re-entering the secret would let anyone
		// who manages the credential send its secret to a host of theirs.
		if (baseURL != nil || clearBaseURL) && secret == nil && !o.Has("secret") {
			o.Errors().Add(o.Loc().With("secret"), "missing",
				"Field required: changing base_url needs the secret again, so it is never sent to a new host unasked", nil, nil)
		}
		checkCredentialEgress(r.ctx, policy, o.Errors(), credentialURLs{baseURL: baseURL, tokenURL: &settings.value.TokenURL,
			s3Endpoint: &settings.value.BatchS3Endpoint, secret: secret})
	}); err != nil {
		return nil, err
	}
	id, err := r.pathUUID("credential_id")
	if err != nil {
		return nil, err
	}
	in := backend.CredentialUpdate{Label: label, Secret: secret, BaseURL: baseURL, ClearBaseURL: clearBaseURL, Seal: s.sealCredential,
		Check: func(stored *store.ProviderCredential) error {
			return s.checkUpdatedCredential(r, stored, secret, settings)
		}}
	if settings.present {
		in.SettingsSet, in.Settings = true, settingsColumn(settings.value)
	}
	c, err := backend.UpdateCredential(r.ctx, s.store, r.actor(), credentialScope(r), id, in)
	if err != nil {
		return nil, err
	}
	return toCredential(c), nil
}

func (s *Server) deleteCredential(r *Request) (any, error) {
	now := store.Now()
	id, err := r.pathUUID("credential_id")
	if err != nil {
		return nil, err
	}
	if err := backend.DeleteCredential(r.ctx, s.store, r.actor(), credentialScope(r), id); err != nil {
		return nil, err
	}
	return wire.Deleted{ID: id, DeletedAt: now}, nil
}
