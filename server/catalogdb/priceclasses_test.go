package catalogdb

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// The price-classes migration brings a catalog seeded from an earlier
// default (no service tiers) exactly the default's tiers, for the models
// whose standard prices are the shipped ones, and leaves an operator's
// prices alone.
func TestPriceClassesMigrationBringsTheDefaultsTiers(t *testing.T) {
	sql, err := os.ReadFile("../../migrations/20261129800001_price_classes.sql")
	if err != nil {
		t.Fatal(err)
	}
	var updates []string
	for _, stmt := range strings.Split(string(sql), ";") {
		if i := strings.Index(stmt, "UPDATE catalog_models"); i >= 0 {
			updates = append(updates, stmt[i:])
		}
	}
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st := store.New(db)
		if err := Seed(ctx, st); err != nil {
			t.Fatal(err)
		}
		// As seeded by an earlier gw; one model's prices an operator's.
		if _, err := db.ExecContext(ctx, "UPDATE catalog_models SET service_tiers = NULL"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "UPDATE catalog_models SET input_per_mtok = '1.00' WHERE id = 'openai/gpt-5-mini'"); err != nil {
			t.Fatal(err)
		}
		for _, u := range updates {
			if _, err := db.ExecContext(ctx, u); err != nil {
				t.Fatalf("%s: %v", u, err)
			}
		}
		rows, err := LoadRows(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		def, _ := catalog.Default()
		n := 0
		for _, r := range rows.Models {
			got := ServiceTiers(r.ServiceTiers)
			want, _ := def.Model(r.ID)
			switch {
			case r.ID == "openai/gpt-5-mini":
				if got != nil {
					t.Errorf("an operator's prices gained tiers: %+v", got)
				}
			case r.ID == "openai/gpt-5.4":
				// Seeded with the default; not an earlier one's model.
			case !reflect.DeepEqual(got, want.Pricing.ServiceTiers):
				t.Errorf("%s: tiers %+v, want %+v", r.ID, got, want.Pricing.ServiceTiers)
			case got != nil:
				n++
			}
		}
		if n < 10 {
			t.Errorf("%d models gained tiers", n)
		}
	})
}
