package store

import (
	"context"
)

// ListCatalogProviders returns every provider, by id.
func (s *Store) ListCatalogProviders(ctx context.Context) ([]CatalogProvider, error) {
	out := []CatalogProvider{}
	return out, mapErr(s.db.NewSelect().Model(&out).OrderExpr("id ASC").Scan(ctx))
}

// ListCatalogModels returns every model, by id.
func (s *Store) ListCatalogModels(ctx context.Context) ([]CatalogModel, error) {
	out := []CatalogModel{}
	return out, mapErr(s.db.NewSelect().Model(&out).OrderExpr("id ASC").Scan(ctx))
}

// UpsertCatalogProvider inserts or replaces a provider.
func (s *Store) UpsertCatalogProvider(ctx context.Context, p *CatalogProvider) error {
	_, err := s.db.NewInsert().Model(p).
		On("CONFLICT (id) DO UPDATE").
		Set("name = EXCLUDED.name, kind = EXCLUDED.kind, base_url = EXCLUDED.base_url, retired_at = EXCLUDED.retired_at, updated_at = EXCLUDED.updated_at").
		Exec(ctx)
	return mapErr(err)
}

// UpsertCatalogModel inserts or replaces a model.
func (s *Store) UpsertCatalogModel(ctx context.Context, m *CatalogModel) error {
	_, err := s.db.NewInsert().Model(m).
		On("CONFLICT (id) DO UPDATE").
		Set("provider = EXCLUDED.provider, name = EXCLUDED.name, context_window = EXCLUDED.context_window, " +
			"max_output_tokens = EXCLUDED.max_output_tokens, input_per_mtok = EXCLUDED.input_per_mtok, " +
			"output_per_mtok = EXCLUDED.output_per_mtok, cache_read_per_mtok = EXCLUDED.cache_read_per_mtok, " +
			"cache_write_per_mtok = EXCLUDED.cache_write_per_mtok, capabilities = EXCLUDED.capabilities, " +
			"modalities = EXCLUDED.modalities, model_type = EXCLUDED.model_type, released = EXCLUDED.released, retired_at = EXCLUDED.retired_at, " +
			// Every member of the model is replaced, the optional prices
			// and the request constraints too: a re-import that changes
			// them must not leave the old ones in force.
			"cache_write_1h_per_mtok = EXCLUDED.cache_write_1h_per_mtok, long_context = EXCLUDED.long_context, " +
			"service_tiers = EXCLUDED.service_tiers, constraints = EXCLUDED.constraints, " +
			"updated_at = EXCLUDED.updated_at").
		Exec(ctx)
	return mapErr(err)
}

// CountCatalogProviders counts providers (to seed an empty catalog).
func (s *Store) CountCatalogProviders(ctx context.Context) (int, error) {
	n, err := s.db.NewSelect().Model((*CatalogProvider)(nil)).Count(ctx)
	return int(n), mapErr(err)
}
