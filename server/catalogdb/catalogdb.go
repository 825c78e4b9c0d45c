// Package catalogdb keeps the model catalog in the database: it seeds an
// empty instance from the embedded default, loads what is in force, and
// imports a whole catalog file. The catalog package stays pure; this is the
// bridge to the store.
package catalogdb

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/store"
)

// Seed loads the embedded default catalog into an empty catalog table.
// Once the catalog has providers it adds only the default's providers it
// has never had (those a newer gw ships, such as bedrock or vertex on an
// upgrade), with their models: every provider it has, retired or not, and
// every model of those, stays as the operator left it.
func Seed(ctx context.Context, st *store.Store) error {
	return st.InTx(ctx, func(tx *store.Store) error {
		def, err := catalog.Default()
		if err != nil {
			return fmt.Errorf("embedded catalog: %w", err)
		}
		rows, err := LoadRows(ctx, tx)
		if err != nil {
			return err
		}
		known := make(map[string]bool, len(rows.Providers))
		for _, p := range rows.Providers {
			known[p.ID] = true
		}
		added := &catalog.Catalog{}
		for _, p := range def.Providers {
			if !known[p.ID] {
				added.Providers = append(added.Providers, p)
				added.Models = append(added.Models, def.ModelsByProvider(p.ID)...)
			}
		}
		if len(added.Providers) == 0 {
			return nil
		}
		return Import(ctx, tx, added, store.Now())
	})
}

// Import writes every provider and model of c (inserting or replacing by
// id). Entries absent from c are left as they are; retiring is explicit.
func Import(ctx context.Context, st *store.Store, c *catalog.Catalog, now time.Time) error {
	return st.InTx(ctx, func(tx *store.Store) error {
		for _, p := range c.Providers {
			row := ProviderRow(p, now)
			if err := tx.UpsertCatalogProvider(ctx, &row); err != nil {
				return fmt.Errorf("provider %s: %w", p.ID, err)
			}
		}
		for _, m := range c.Models {
			row := ModelRow(m, now)
			if err := tx.UpsertCatalogModel(ctx, &row); err != nil {
				return fmt.Errorf("model %s: %w", m.ID, err)
			}
		}
		return nil
	})
}

// Rows are the stored catalog, retired entries included.
type Rows struct {
	Providers []store.CatalogProvider
	Models    []store.CatalogModel
}

// LoadRows reads the stored catalog.
func LoadRows(ctx context.Context, st *store.Store) (Rows, error) {
	ps, err := st.ListCatalogProviders(ctx)
	if err != nil {
		return Rows{}, fmt.Errorf("list providers: %w", err)
	}
	ms, err := st.ListCatalogModels(ctx)
	if err != nil {
		return Rows{}, fmt.Errorf("list models: %w", err)
	}
	return Rows{Providers: ps, Models: ms}, nil
}

// Active builds the catalog in force: providers and models not retired (a
// retired provider retires its models).
func (r Rows) Active() (*catalog.Catalog, error) {
	live := map[string]bool{}
	var providers []catalog.Provider
	for _, p := range r.Providers {
		if p.RetiredAt == nil {
			live[p.ID] = true
			providers = append(providers, Provider(p))
		}
	}
	var models []catalog.Model
	for _, m := range r.Models {
		if m.RetiredAt == nil && live[m.Provider] {
			models = append(models, Model(m))
		}
	}
	c, err := catalog.New(providers, models)
	if err != nil {
		return nil, fmt.Errorf("stored catalog is inconsistent: %w", err)
	}
	return c, nil
}

// Provider converts a stored provider.
func Provider(p store.CatalogProvider) catalog.Provider {
	return catalog.Provider{ID: p.ID, Name: p.Name, Kind: catalog.Kind(p.Kind), BaseURL: p.BaseURL}
}

// Model converts a stored model.
func Model(m store.CatalogModel) catalog.Model {
	caps := make([]catalog.Capability, len(m.Capabilities))
	for i, c := range m.Capabilities {
		caps[i] = catalog.Capability(c)
	}
	mods := make([]catalog.Modality, len(m.Modalities))
	for i, md := range m.Modalities {
		mods[i] = catalog.Modality(md)
	}
	return catalog.Model{
		ID: m.ID, Provider: m.Provider, Name: m.Name, ContextWindow: m.ContextWindow, MaxOutputTokens: m.MaxOutputTokens,
		Pricing: catalog.Pricing{InputPerMTok: m.InputPerMTok, OutputPerMTok: m.OutputPerMTok,
			CacheReadPerMTok: m.CacheReadPerMTok, CacheWritePerMTok: m.CacheWritePerMTok,
			CacheWrite1hPerMTok: m.CacheWrite1hPerMTok, LongContext: LongContext(m.LongContext), ServiceTiers: ServiceTiers(m.ServiceTiers),
			Batch: BatchPrices(m.Batch)},
		Capabilities: caps, Modalities: mods, Created: m.Released, Type: catalog.ModelType(m.ModelType),
		Constraints: Constraints(m.Constraints),
	}
}

// Constraints reads stored request constraints; text that does not decode
// (a damaged row) reads as none.
func Constraints(col *string) *catalog.Constraints {
	if col == nil || *col == "" {
		return nil
	}
	c := new(catalog.Constraints)
	if err := json.Unmarshal([]byte(*col), c); err != nil {
		return nil
	}
	return c
}

// ConstraintsColumn is the stored form of a model's request constraints.
func ConstraintsColumn(c *catalog.Constraints) *string {
	if c == nil {
		return nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		// Booleans and a string always encode.
		panic("catalogdb: encoding constraints: " + err.Error())
	}
	s := string(b)
	return &s
}

// LongContext reads a stored long-context tier. The column holds what
// LongContextColumn wrote from a validated catalog; text that does not
// decode (a damaged row) reads as no tier, and the row's standard prices
// apply.
func LongContext(col *string) *catalog.LongContextPricing {
	if col == nil || *col == "" {
		return nil
	}
	lc := new(catalog.LongContextPricing)
	if err := json.Unmarshal([]byte(*col), lc); err != nil {
		return nil
	}
	return lc
}

// LongContextColumn is the stored form of a long-context tier.
func LongContextColumn(lc *catalog.LongContextPricing) *string {
	if lc == nil {
		return nil
	}
	b, err := json.Marshal(lc)
	if err != nil {
		// A struct of strings and an integer always encodes.
		panic("catalogdb: encoding a long-context tier: " + err.Error())
	}
	s := string(b)
	return &s
}

// ServiceTiers reads stored service tiers; text that does not decode (a
// damaged row) reads as none, and the base prices apply.
func ServiceTiers(col *string) map[string]catalog.ServiceTierPricing {
	if col == nil || *col == "" {
		return nil
	}
	var tiers map[string]catalog.ServiceTierPricing
	if err := json.Unmarshal([]byte(*col), &tiers); err != nil || len(tiers) == 0 {
		return nil
	}
	return tiers
}

// ServiceTiersColumn is the stored form of a model's service tiers.
func ServiceTiersColumn(tiers map[string]catalog.ServiceTierPricing) *string {
	if len(tiers) == 0 {
		return nil
	}
	b, err := json.Marshal(tiers)
	if err != nil {
		// Strings, integers and a map with string keys always encode.
		panic("catalogdb: encoding service tiers: " + err.Error())
	}
	s := string(b)
	return &s
}

// BatchPrices reads a model's stored batch prices; text that does not
// decode (a damaged row) reads as none, and the provider's published
// discount applies.
func BatchPrices(col *string) *catalog.BatchPricing {
	if col == nil || *col == "" {
		return nil
	}
	b := new(catalog.BatchPricing)
	if err := json.Unmarshal([]byte(*col), b); err != nil {
		return nil
	}
	return b
}

// BatchPricesColumn is the stored form of a model's batch prices.
func BatchPricesColumn(b *catalog.BatchPricing) *string {
	if b == nil {
		return nil
	}
	out, err := json.Marshal(b)
	if err != nil {
		// A struct of strings always encodes.
		panic("catalogdb: encoding batch prices: " + err.Error())
	}
	s := string(out)
	return &s
}

// ProviderRow converts a catalog provider for storage.
func ProviderRow(p catalog.Provider, now time.Time) store.CatalogProvider {
	return store.CatalogProvider{ID: p.ID, Name: p.Name, Kind: string(p.Kind), BaseURL: p.BaseURL, CreatedAt: now, UpdatedAt: now}
}

// ModelRow converts a catalog model for storage.
func ModelRow(m catalog.Model, now time.Time) store.CatalogModel {
	caps := make(store.Strings, len(m.Capabilities))
	for i, c := range m.Capabilities {
		caps[i] = string(c)
	}
	mods := make(store.Strings, len(m.Modalities))
	for i, md := range m.Modalities {
		mods[i] = string(md)
	}
	return store.CatalogModel{
		ID: m.ID, Provider: m.Provider, Name: m.Name, ContextWindow: m.ContextWindow, MaxOutputTokens: m.MaxOutputTokens,
		InputPerMTok: m.Pricing.InputPerMTok, OutputPerMTok: m.Pricing.OutputPerMTok,
		CacheReadPerMTok: m.Pricing.CacheReadPerMTok, CacheWritePerMTok: m.Pricing.CacheWritePerMTok,
		CacheWrite1hPerMTok: m.Pricing.CacheWrite1hPerMTok, LongContext: LongContextColumn(m.Pricing.LongContext),
		ServiceTiers: ServiceTiersColumn(m.Pricing.ServiceTiers), Constraints: ConstraintsColumn(m.Constraints),
		Batch:        BatchPricesColumn(m.Pricing.Batch),
		Capabilities: caps, Modalities: mods, Released: m.Created, CreatedAt: now, UpdatedAt: now,
		ModelType: string(m.Type),
	}
}
