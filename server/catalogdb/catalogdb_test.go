package catalogdb

import (
	"context"
	"reflect"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

func TestSeedLoadRoundTrip(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st := store.New(db)
		if err := Seed(ctx, st); err != nil {
			t.Fatal(err)
		}
		rows, err := LoadRows(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		got, err := rows.Active()
		if err != nil {
			t.Fatal(err)
		}
		want, _ := catalog.Default()
		if len(got.Models) != len(want.Models) || len(got.Providers) != len(want.Providers) {
			t.Fatalf("round trip: %d/%d models, %d/%d providers", len(got.Models), len(want.Models), len(got.Providers), len(want.Providers))
		}
		for i := range want.Models {
			w, g := want.Models[i], got.Models[i]
			if w.ID != g.ID || !reflect.DeepEqual(w.Pricing, g.Pricing) || len(w.Capabilities) != len(g.Capabilities) || w.Created != g.Created {
				t.Fatalf("model %s differs: %+v vs %+v", w.ID, w, g)
			}
		}
		// Seeding again changes nothing; a retired provider hides its models.
		rows.Providers[0].RetiredAt = new(store.Now())
		if err := st.UpsertCatalogProvider(ctx, &rows.Providers[0]); err != nil {
			t.Fatal(err)
		}
		if err := Seed(ctx, st); err != nil {
			t.Fatal(err)
		}
		rows, _ = LoadRows(ctx, st)
		active, err := rows.Active()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range active.Models {
			if m.Provider == rows.Providers[0].ID {
				t.Fatalf("model %s of a retired provider is active", m.ID)
			}
		}
	})
}

// A catalog seeded by an earlier gw gains the providers a newer default
// ships, with their models; the providers it has, retired or not, and
// their models' prices stay as the operator left them.
func TestSeedAddsTheDefaultsNewProviders(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st := store.New(db)
		if err := Seed(ctx, st); err != nil {
			t.Fatal(err)
		}
		// As an earlier gw left it: no bedrock, a changed price, vertex
		// retired.
		for _, q := range []string{
			"DELETE FROM catalog_models WHERE provider = 'bedrock'", "DELETE FROM catalog_providers WHERE id = 'bedrock'",
			"UPDATE catalog_models SET input_per_mtok = '9' WHERE id = 'openai/gpt-4o'",
			"UPDATE catalog_providers SET retired_at = created_at WHERE id = 'vertex'",
		} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		if err := Seed(ctx, st); err != nil {
			t.Fatal(err)
		}
		rows, err := LoadRows(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		def, _ := catalog.Default()
		got := map[string]store.CatalogModel{}
		for _, m := range rows.Models {
			got[m.ID] = m
		}
		for _, m := range def.ModelsByProvider("bedrock") {
			if got[m.ID].InputPerMTok != m.Pricing.InputPerMTok {
				t.Fatalf("bedrock model %s not added back: %+v", m.ID, got[m.ID])
			}
		}
		if got["openai/gpt-4o"].InputPerMTok != "9" {
			t.Fatal("an operator's price was replaced")
		}
		for _, p := range rows.Providers {
			if p.ID == "vertex" && p.RetiredAt == nil {
				t.Fatal("a retired provider was brought back")
			}
		}
	})
}
