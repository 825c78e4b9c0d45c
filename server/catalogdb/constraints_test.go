package catalogdb

import (
	"context"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// A model's request constraints survive the store (the column the
// migration adds), and a model without them reads back without them.
func TestConstraintsRoundTrip(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st := store.New(db)
		if err := Seed(ctx, st); err != nil {
			t.Fatal(err)
		}
		def, _ := catalog.Default()
		m := def.Models[0]
		no := false
		m.Constraints = &catalog.Constraints{SamplingParams: &no, AnthropicVersion: "2026-10-21"}
		row := ModelRow(m, store.Now())
		if err := st.UpsertCatalogModel(ctx, &row); err != nil {
			t.Fatal(err)
		}
		rows, err := LoadRows(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		c, err := rows.Active()
		if err != nil {
			t.Fatal(err)
		}
		got, _ := c.Model(m.ID)
		if !got.RefusesSampling() || got.RefusesForcedToolChoice() || got.AnthropicVersion() != "2026-10-21" ||
			got.Constraints.ForcedToolChoice != nil {
			t.Fatalf("constraints read back as %+v", got.Constraints)
		}
		if other, _ := c.Model(def.Models[1].ID); other.Constraints != nil {
			t.Fatalf("a model without constraints reads back with %+v", other.Constraints)
		}
	})
}
