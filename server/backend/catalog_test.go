package backend_test

import (
	"context"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/catalogdb"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

func TestCatalogRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		if err := catalogdb.Seed(ctx, w.st); err != nil {
			t.Fatal(err)
		}
		// A credential without a base_url of its own follows the catalog's.
		if _, err := backend.CreateCredential(ctx, w.st, w.admin, backend.CredentialCreate{Scope: store.CredentialScope{OrgID: &w.org.ID},
			Provider: "openai", Label: "main", Secret: "sk-test", Seal: fakeSeal}); err != nil {
			t.Fatal(err)
		}
		def, err := catalog.Default()
		if err != nil {
			t.Fatal(err)
		}
		p, _ := def.Provider("openai")
		p.BaseURL = "https://proxy.example.test/v1"
		moved := &catalog.Catalog{Providers: []catalog.Provider{p}}
		m, _ := def.Model("openai/gpt-4o-mini")
		model := &catalog.Catalog{Models: []catalog.Model{m}}
		catalogAdmin := backend.User(w.alice, false, nil, "req-catalog")
		catalogAdmin.Rights = auth.SetOf([]string{string(auth.CatalogManage)})
		credentialAdmin := backend.User(w.alice, false, nil, "req-both")
		credentialAdmin.Rights = auth.SetOf([]string{string(auth.CatalogManage), string(auth.ProviderCredentialsManage)})
		// The catalog is the instance's: its audit events name no
		// organization, so the rows check kinds and read the instance log.
		for _, r := range []struct {
			name string
			op   func() error
			kind backend.Kind
		}{
			{"a move of followed credentials, unconfirmed", func() error {
				return backend.WriteCatalog(ctx, w.st, credentialAdmin, backend.CatalogWrite{Catalog: moved})
			}, backend.Conflict},
			{"confirmed without provider-credentials.manage", func() error {
				return backend.WriteCatalog(ctx, w.st, catalogAdmin, backend.CatalogWrite{Catalog: moved, ConfirmMoves: true})
			}, backend.Forbidden},
			{"confirmed by who manages credentials", func() error {
				return backend.WriteCatalog(ctx, w.st, credentialAdmin, backend.CatalogWrite{Catalog: moved, ConfirmMoves: true, Entry: true})
			}, 0},
			{"a model that moves nothing", func() error {
				return backend.WriteCatalog(ctx, w.st, catalogAdmin, backend.CatalogWrite{Catalog: model, Entry: true})
			}, 0},
			{"retire a model", func() error {
				_, err := backend.RetireCatalogModel(ctx, w.st, catalogAdmin, "openai/gpt-4o-mini")
				return err
			}, 0},
			{"retire an unknown model", func() error {
				_, err := backend.RetireCatalogModel(ctx, w.st, catalogAdmin, "openai/nope")
				return err
			}, backend.NotFound},
			{"retire an unknown provider", func() error {
				_, err := backend.RetireCatalogProvider(ctx, w.st, catalogAdmin, "nope")
				return err
			}, backend.NotFound},
		} {
			if got := kindOf(r.op()); got != r.kind {
				t.Fatalf("%s: kind %d, want %d", r.name, got, r.kind)
			}
		}
		events, _, err := w.st.ListAuditEvents(ctx, nil, store.PageQuery{Limit: 3})
		if err != nil || len(events) != 3 || events[0].Action != "catalog.model_retired" || events[1].Action != "catalog.entry_saved" ||
			events[2].Action != "catalog.entry_saved" || events[2].Details["base_url_changes"] == nil {
			t.Fatalf("audit %+v %v", events, err)
		}
		rows, err := catalogdb.LoadRows(ctx, w.st)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range rows.Providers {
			if p.ID == "openai" && p.BaseURL != "https://proxy.example.test/v1" {
				t.Fatalf("the confirmed move did not land: %q", p.BaseURL)
			}
		}
	})
}
