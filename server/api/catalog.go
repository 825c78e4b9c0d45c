package api

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/catalogdb"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

func (s *Server) catalogRoutes() []*Route {
	read := []auth.Permission{auth.CatalogRead}
	manage := []auth.Permission{auth.CatalogManage}
	const inst = "/api/v1/instance/catalog"
	return []*Route{
		{Method: "GET", Path: inst, Tag: "Instance Model Catalog", Summary: "The whole catalog, retired entries included",
			Perms: read, Result: wire.Catalog{}, Handle: s.getInstanceCatalog},
		{Method: "POST", Path: inst + "/import", Tag: "Instance Model Catalog",
			Summary: "Import a catalog document ({providers, models}); entries are added or replaced by id",
			Perms:   manage, Body: wire.CatalogDocument{}, Result: wire.CatalogImportResult{}, RefreshesBundles: true, Handle: s.importCatalog,
			Query: []QueryParam{confirmBaseURLQuery}},
		{Method: "POST", Path: inst + "/providers", Tag: "Instance Model Catalog", Summary: "Add or replace a provider",
			Perms: manage, Body: wire.CatalogProviderInput{}, Result: wire.CatalogProvider{}, RefreshesBundles: true, Handle: s.putCatalogProvider,
			Query: []QueryParam{confirmBaseURLQuery}},
		{Method: "DELETE", Path: inst + "/providers/{provider_id}", Tag: "Instance Model Catalog", Summary: "Retire a provider (and so its models)",
			Perms: manage, Result: wire.CatalogProvider{}, RefreshesBundles: true, Handle: s.retireCatalogProvider},
		{Method: "POST", Path: inst + "/models", Tag: "Instance Model Catalog", Summary: "Add or replace a model",
			Perms: manage, Body: wire.CatalogModelInput{}, Result: wire.CatalogModel{}, RefreshesBundles: true, Handle: s.putCatalogModel},
		{Method: "DELETE", Path: inst + "/models/{model_id...}", Tag: "Instance Model Catalog", Summary: "Retire a model",
			Perms: manage, Result: wire.CatalogModel{}, RefreshesBundles: true, Handle: s.retireCatalogModel},
		{Method: "GET", Path: "/api/v1/organizations/{org_id}/catalog", Tag: "Model Catalog",
			Summary: "The catalog in force, with whether a credential is configured where the organization can use it",
			Perms:   read, Result: wire.Catalog{}, Handle: s.getScopedCatalog},
		{Method: "GET", Path: orgWS + "/{workspace_ref}/catalog", Tag: "Workspace Model Catalog",
			Summary: "The catalog in force, with whether a credential is configured where the workspace can use it",
			Perms:   read, Result: wire.Catalog{}, Handle: s.getScopedCatalog},
	}
}

func toCatalogProvider(p store.CatalogProvider) wire.CatalogProvider {
	return wire.CatalogProvider{ID: p.ID, Name: p.Name, Kind: p.Kind, BaseURL: p.BaseURL, RetiredAt: p.RetiredAt}
}

func toCatalogModel(m store.CatalogModel) wire.CatalogModel {
	caps, mods := []string(m.Capabilities), []string(m.Modalities)
	if caps == nil {
		caps = []string{}
	}
	if mods == nil {
		mods = []string{}
	}
	cm := catalogdb.Model(m)
	out := wire.CatalogModel{ID: m.ID, Provider: m.Provider, Name: m.Name, ContextWindow: m.ContextWindow, MaxOutputTokens: m.MaxOutputTokens,
		Pricing:      toWirePricing(cm.Pricing),
		Capabilities: caps, Modalities: mods, Type: m.ModelType, Created: m.Released, RetiredAt: m.RetiredAt}
	if c := cm.Constraints; c != nil {
		out.Constraints = &wire.ModelConstraints{SamplingParams: c.SamplingParams, ForcedToolChoice: c.ForcedToolChoice,
			AnthropicVersion: c.AnthropicVersion}
	}
	return out
}

// toWirePricing is a catalog price list as the API shows it: the optional
// prices null when unset.
func toWirePricing(p catalog.Pricing) wire.Pricing {
	out := toWireTier(p)
	for name, t := range p.ServiceTiers {
		if out.ServiceTiers == nil {
			out.ServiceTiers = map[string]wire.ServiceTierPricing{}
		}
		w := toWireTier(catalog.Pricing{InputPerMTok: t.InputPerMTok, OutputPerMTok: t.OutputPerMTok, CacheReadPerMTok: t.CacheReadPerMTok,
			CacheWritePerMTok: t.CacheWritePerMTok, CacheWrite1hPerMTok: t.CacheWrite1hPerMTok, LongContext: t.LongContext})
		out.ServiceTiers[name] = wire.ServiceTierPricing{InputPerMTok: w.InputPerMTok, OutputPerMTok: w.OutputPerMTok,
			CacheReadPerMTok: w.CacheReadPerMTok, CacheWritePerMTok: w.CacheWritePerMTok, CacheWrite1hPerMTok: w.CacheWrite1hPerMTok,
			LongContext: w.LongContext}
	}
	if b := p.Batch; b != nil {
		out.Batch = &wire.BatchPricing{InputPerMTok: b.InputPerMTok, OutputPerMTok: b.OutputPerMTok, CacheReadPerMTok: b.CacheReadPerMTok}
	}
	return out
}

// toWireTier is one tier's prices as the API shows them.
func toWireTier(p catalog.Pricing) wire.Pricing {
	out := wire.Pricing{InputPerMTok: p.InputPerMTok, OutputPerMTok: p.OutputPerMTok, CacheReadPerMTok: p.CacheReadPerMTok,
		CacheWritePerMTok: p.CacheWritePerMTok}
	if p.CacheWrite1hPerMTok != "" {
		out.CacheWrite1hPerMTok = &p.CacheWrite1hPerMTok
	}
	if lc := p.LongContext; lc != nil {
		out.LongContext = &wire.LongContextPricing{AboveInputTokens: lc.AboveInputTokens, InputPerMTok: lc.InputPerMTok,
			OutputPerMTok: lc.OutputPerMTok, CacheReadPerMTok: lc.CacheReadPerMTok, CacheWritePerMTok: lc.CacheWritePerMTok}
		if lc.CacheWrite1hPerMTok != "" {
			out.LongContext.CacheWrite1hPerMTok = &lc.CacheWrite1hPerMTok
		}
	}
	return out
}

func (s *Server) getInstanceCatalog(r *Request) (any, error) {
	rows, err := catalogdb.LoadRows(r.ctx, s.store)
	if err != nil {
		return nil, err
	}
	out := wire.Catalog{Providers: make([]wire.CatalogProvider, len(rows.Providers)), Models: make([]wire.CatalogModel, len(rows.Models))}
	for i, p := range rows.Providers {
		out.Providers[i] = toCatalogProvider(p)
	}
	for i, m := range rows.Models {
		out.Models[i] = toCatalogModel(m)
	}
	return out, nil
}

// getScopedCatalog shows the catalog in force to an organization or a
// workspace, marking which models it could use: those whose provider has a
// credential at platform scope, at the organization, or (for a workspace)
// in that workspace.
func (s *Server) getScopedCatalog(r *Request) (any, error) {
	rows, err := catalogdb.LoadRows(r.ctx, s.store)
	if err != nil {
		return nil, err
	}
	creds, err := s.store.CredentialsForOrg(r.ctx, r.Org.ID)
	if err != nil {
		return nil, err
	}
	usable := map[string]bool{}
	for _, c := range creds {
		if c.WorkspaceID == nil || (r.WS != nil && *c.WorkspaceID == r.WS.ID) {
			usable[c.Provider] = true
		}
	}
	live := map[string]bool{}
	out := wire.Catalog{Providers: []wire.CatalogProvider{}, Models: []wire.CatalogModel{}}
	for _, p := range rows.Providers {
		if p.RetiredAt == nil {
			live[p.ID] = true
			out.Providers = append(out.Providers, toCatalogProvider(p))
		}
	}
	for _, m := range rows.Models {
		if m.RetiredAt == nil && live[m.Provider] {
			wm := toCatalogModel(m)
			available := usable[m.Provider]
			wm.Available = &available
			out.Models = append(out.Models, wm)
		}
	}
	return out, nil
}

// catalogError turns the catalog package's problems into validation items
// under body.
func catalogError(err error) error {
	var ve *catalog.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	var errs validate.Errors
	for _, p := range ve.Problems {
		loc := validate.Loc{"body"}.With(p.Loc...)
		typ := p.Type
		if typ == "" {
			typ = "value_error"
		}
		errs.Add(loc, typ, p.Msg, nil, nil)
	}
	return errs.Err()
}

func (s *Server) importCatalog(r *Request) (any, error) {
	data, err := r.readBody()
	if err != nil {
		return nil, err
	}
	c, err := catalog.Parse(data)
	if err != nil {
		return nil, catalogError(err)
	}
	if err := s.checkAgainstStored(r, c); err != nil {
		return nil, err
	}
	confirm, err := confirmedMoves(r)
	if err != nil {
		return nil, err
	}
	if err := backend.WriteCatalog(r.ctx, s.store, r.actor(), backend.CatalogWrite{Catalog: c, ConfirmMoves: confirm}); err != nil {
		return nil, catalogError(err)
	}
	return wire.CatalogImportResult{Providers: len(c.Providers), Models: len(c.Models)}, nil
}

// checkAgainstStored validates the result of merging c into the stored
// catalog, so a partial document cannot leave models without providers.
func (s *Server) checkAgainstStored(r *Request, c *catalog.Catalog) error {
	rows, err := catalogdb.LoadRows(r.ctx, s.store)
	if err != nil {
		return err
	}
	providers := map[string]catalog.Provider{}
	for _, p := range rows.Providers {
		providers[p.ID] = catalogdb.Provider(p)
	}
	for _, p := range c.Providers {
		providers[p.ID] = p
	}
	models := map[string]catalog.Model{}
	for _, m := range rows.Models {
		models[m.ID] = catalogdb.Model(m)
	}
	for _, m := range c.Models {
		models[m.ID] = m
	}
	if err := s.checkCatalogEgress(r, c); err != nil {
		return err
	}
	ps := make([]catalog.Provider, 0, len(providers))
	for _, p := range providers {
		ps = append(ps, p)
	}
	ms := make([]catalog.Model, 0, len(models))
	for _, m := range models {
		ms = append(ms, m)
	}
	_, err = catalog.New(ps, ms)
	return catalogError(err)
}

// putCatalogEntry validates one provider or model document (wrapped into a
// catalog document by wrap, so the catalog package checks it) merged into
// the stored catalog, then writes only that entry.
func (s *Server) putCatalogEntry(r *Request, wrap func(entry []byte, stored catalogdb.Rows) ([]byte, error),
	pick func(c *catalog.Catalog) *catalog.Catalog) (*catalog.Catalog, error) {
	data, err := r.readBody()
	if err != nil {
		return nil, err
	}
	if v, err := validate.ParseJSON(data, validate.Loc{"body"}); err != nil {
		return nil, err
	} else if err := validate.RefuseNUL(v, validate.Loc{"body"}); err != nil {
		return nil, err
	}
	rows, err := catalogdb.LoadRows(r.ctx, s.store)
	if err != nil {
		return nil, err
	}
	doc, err := wrap(data, rows)
	if err != nil {
		return nil, err
	}
	parsed, err := catalog.Parse(doc)
	if err != nil {
		return nil, unwrapEntryLoc(catalogError(err))
	}
	entry := pick(parsed)
	if err := s.checkAgainstStored(r, entry); err != nil {
		return nil, unwrapEntryLoc(err)
	}
	confirm, err := confirmedMoves(r)
	if err != nil {
		return nil, err
	}
	err = backend.WriteCatalog(r.ctx, s.store, r.actor(), backend.CatalogWrite{Catalog: entry, ConfirmMoves: confirm, Entry: true})
	return entry, unwrapEntryLoc(catalogError(err))
}

// unwrapEntryLoc drops the ["providers", i] / ["models", 0] of the wrapper
// document from validation locations.
func unwrapEntryLoc(err error) error {
	ve, ok := validate.AsError(err)
	if !ok {
		return err
	}
	for i, is := range ve.Issues {
		if len(is.Loc) >= 3 {
			ve.Issues[i].Loc = append([]any{"body"}, is.Loc[3:]...)
		}
	}
	return ve
}

func (s *Server) putCatalogProvider(r *Request) (any, error) {
	c, err := s.putCatalogEntry(r,
		func(d []byte, _ catalogdb.Rows) ([]byte, error) {
			return append(append([]byte(`{"providers":[`), d...), "]}"...), nil
		},
		func(c *catalog.Catalog) *catalog.Catalog { return c })
	if err != nil {
		return nil, err
	}
	p := c.Providers[0]
	return wire.CatalogProvider{ID: p.ID, Name: p.Name, Kind: string(p.Kind), BaseURL: p.BaseURL}, nil
}

// putCatalogModel checks the model inside a document that lists the stored
// providers (the catalog package resolves its provider there) and writes
// the model alone.
func (s *Server) putCatalogModel(r *Request) (any, error) {
	c, err := s.putCatalogEntry(r,
		func(d []byte, stored catalogdb.Rows) ([]byte, error) {
			ps := make([]catalog.Provider, len(stored.Providers))
			for i, p := range stored.Providers {
				ps[i] = catalogdb.Provider(p)
			}
			providers, err := json.Marshal(ps)
			if err != nil {
				return nil, err
			}
			return []byte(`{"providers":` + string(providers) + `,"models":[` + string(d) + `]}`), nil
		},
		func(c *catalog.Catalog) *catalog.Catalog { return &catalog.Catalog{Models: c.Models} })
	if err != nil {
		return nil, err
	}
	return toCatalogModel(catalogdb.ModelRow(c.Models[0], time.Time{})), nil
}

func (s *Server) retireCatalogProvider(r *Request) (any, error) {
	p, err := backend.RetireCatalogProvider(r.ctx, s.store, r.actor(), r.R.PathValue("provider_id"))
	if err != nil {
		return nil, err
	}
	return toCatalogProvider(*p), nil
}

func (s *Server) retireCatalogModel(r *Request) (any, error) {
	m, err := backend.RetireCatalogModel(r.ctx, s.store, r.actor(), r.R.PathValue("model_id"))
	if err != nil {
		return nil, err
	}
	return toCatalogModel(*m), nil
}
