package backend_test

import (
	"context"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

func TestOrganizationRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		w := newWorld(t, db) // organizations acme and globex exist
		acme := "acme"
		var made *store.Organization
		tests := []struct {
			name   string
			op     func() error
			kind   backend.Kind
			action string
		}{
			{"create derives a free slug", func() error {
				org, err := backend.CreateOrganization(ctx, w.st, w.admin, backend.OrganizationCreate{Name: "Acme"})
				if err == nil && org.Slug != "acme-2" {
					t.Errorf("slug %q, want acme-2", org.Slug)
				}
				made = org
				return err
			}, 0, "organization.created"},
			{"create with a taken slug", func() error {
				_, err := backend.CreateOrganization(ctx, w.st, w.admin, backend.OrganizationCreate{Name: "X", Slug: &acme})
				return err
			}, backend.Conflict, ""},
			{"rename to a taken slug", func() error {
				_, err := backend.UpdateOrganization(ctx, w.st, w.admin, *made, backend.Rename{Slug: &acme})
				return err
			}, backend.Conflict, ""},
			{"delete", func() error { return backend.DeleteOrganization(ctx, w.st, w.admin, made) }, 0, "organization.deleted"},
		}
		for _, tt := range tests {
			err := tt.op()
			if got := kindOf(err); got != tt.kind {
				t.Fatalf("%s: %v (kind %d), want kind %d", tt.name, err, got, tt.kind)
			}
			if tt.action == "" {
				continue
			}
			events, _, err := w.st.ListAuditEvents(ctx, &made.ID, store.PageQuery{Limit: 1})
			if err != nil || len(events) != 1 || events[0].Action != tt.action || events[0].RequestID != w.admin.RequestID {
				t.Fatalf("%s: audit %+v %v", tt.name, events, err)
			}
		}
	})
}
