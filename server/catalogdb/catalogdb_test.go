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
