package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
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

// secretHint keeps the last four characters of a long secret, enough to
// tell two keys apart and far too little to use.
func secretHint(secret string) string {
	r := []rune(secret)
	if len(r) < 16 {
		return ""
	}
	return "…" + string(r[len(r)-4:])
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

const baseURLRequired = "Field required: the provider has no base URL in the model catalog, so the credential must give one"

// catalogBaseURL is the URL the catalog gives provider, retired or not
// (its credentials keep working until the bundle drops them); "" when it
// gives none.
func catalogBaseURL(ctx context.Context, st *store.Store, provider string) (string, error) {
	rows, err := catalogdb.LoadRows(ctx, st)
	if err != nil {
		return "", err
	}
	for _, p := range rows.Providers {
		if p.ID == provider {
			return catalogdb.Provider(p).BaseURL, nil
		}
	}
	return "", nil
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
			o.Errors().Add(o.Loc().With("base_url"), "missing", baseURLRequired, nil, nil)
		}
	}); err != nil {
		return nil, err
	}
	now := store.Now()
	sc := credentialScope(r)
	c := &store.ProviderCredential{ID: uuid.New(), OrgID: sc.OrgID, WorkspaceID: sc.WorkspaceID, Provider: provider, Label: label,
		BaseURL: baseURL, Settings: settingsColumn(settings.value), SecretHint: secretHint(secret), CreatedAt: now, UpdatedAt: now}
	if c.SecretSealed, err = s.opts.Keyring.Seal([]byte(secret), credentialAAD(c.ID)); err != nil {
		return nil, err
	}
	err = s.store.InTx(r.ctx, func(tx *store.Store) error {
		if err := tx.CreateProviderCredential(r.ctx, c); err != nil {
			return err
		}
		return r.audit(tx, auditEntry{Action: "provider_credential.created", TargetType: "provider_credential", TargetID: c.ID.String(),
			Details: map[string]any{"provider": provider, "label": label, "base_url": baseURL, "settings": wireSettings(c)}})
	})
	if err != nil {
		return nil, err
	}
	return toCredential(c), nil
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

// scopedCredential loads the path's credential if it belongs to exactly the
// URL's scope; any other is reported as not found.
func (s *Server) scopedCredential(tx *store.Store, r *Request) (*store.ProviderCredential, error) {
	id, err := r.pathUUID("credential_id")
	if err != nil {
		return nil, err
	}
	c, err := tx.GetProviderCredential(r.ctx, id)
	notFound := errorf(http.StatusNotFound, "provider credential %s not found", id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	sc := credentialScope(r)
	if !sameUUID(c.OrgID, sc.OrgID) || !sameUUID(c.WorkspaceID, sc.WorkspaceID) {
		return nil, notFound
	}
	return c, nil
}

func sameUUID(a, b *uuid.UUID) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func (s *Server) getCredential(r *Request) (any, error) {
	c, err := s.scopedCredential(s.store, r)
	if err != nil {
		return nil, err
	}
	return toCredential(c), nil
}

func (s *Server) updateCredential(r *Request) (any, error) {
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
	}); err != nil {
		return nil, err
	}
	var out wire.ProviderCredential
	err := s.store.InTx(r.ctx, func(tx *store.Store) error {
		c, err := s.scopedCredential(tx, r)
		if err != nil {
			return err
		}
		if err := s.checkUpdatedCredential(r, tx, c, secret, settings); err != nil {
			return err
		}
		details := map[string]any{"provider": c.Provider}
		changed := []string{}
		if settings.present {
			details["old_settings"] = wireSettings(c)
			c.Settings = settingsColumn(settings.value)
			details["new_settings"] = wireSettings(c)
			changed = append(changed, "settings")
		}
		if label != nil {
			c.Label = *label
			changed = append(changed, "label")
		}
		if secret != nil {
			if c.SecretSealed, err = s.opts.Keyring.Seal([]byte(*secret), credentialAAD(c.ID)); err != nil {
				return err
			}
			c.SecretHint = secretHint(*secret)
			changed = append(changed, "secret")
		}
		if clearBaseURL && c.BaseURL != nil {
			// Cleared, the credential falls back to the catalog's URL;
			// without one it could reach nothing.
			fallback, err := catalogBaseURL(r.ctx, tx, c.Provider)
			if err != nil {
				return err
			}
			if fallback == "" {
				var errs validate.Errors
				errs.Add(validate.Loc{"body", "base_url"}, "missing", baseURLRequired, nil, nil)
				return errs.Err()
			}
		}
		if baseURL != nil || clearBaseURL {
			// Where the secret goes is recorded, old → new (null: the
			// catalog's URL); the secret itself never is.
			details["old_base_url"], details["new_base_url"] = c.BaseURL, baseURL
			c.BaseURL = baseURL
			changed = append(changed, "base_url")
		}
		details["changed"] = changed
		c.UpdatedAt = store.Now()
		if err := tx.UpdateProviderCredential(r.ctx, c); err != nil {
			return err
		}
		out = toCredential(c)
		return r.audit(tx, auditEntry{Action: "provider_credential.updated", TargetType: "provider_credential", TargetID: c.ID.String(),
			Details: details})
	})
	return out, err
}

func (s *Server) deleteCredential(r *Request) (any, error) {
	now := store.Now()
	var id uuid.UUID
	err := s.store.InTx(r.ctx, func(tx *store.Store) error {
		c, err := s.scopedCredential(tx, r)
		if err != nil {
			return err
		}
		id = c.ID
		if err := tx.DeleteProviderCredential(r.ctx, c.ID); err != nil {
			return err
		}
		return r.audit(tx, auditEntry{Action: "provider_credential.deleted", TargetType: "provider_credential", TargetID: c.ID.String(),
			Details: map[string]any{"provider": c.Provider, "label": c.Label}})
	})
	if err != nil {
		return nil, err
	}
	return wire.Deleted{ID: id, DeletedAt: now}, nil
}
