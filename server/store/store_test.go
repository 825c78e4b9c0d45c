package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

func TestMigrateIsIdempotent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		applied, err := store.Migrate(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		if len(applied) != 0 {
			t.Fatalf("second migrate applied %v", applied)
		}
		st, err := store.Status(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range st {
			if !m.Applied {
				t.Errorf("migration %s not applied", m.Name)
			}
		}
	})
}

func TestOrganizationSlugConflictAndPaging(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		s := store.New(db)
		for i := 0; i < 5; i++ {
			now := store.Now()
			o := &store.Organization{ID: uuid.New(), Name: "o", Slug: "org-" + string(rune('a'+i)), CreatedAt: now, UpdatedAt: now}
			if err := s.CreateOrganization(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		now := store.Now()
		dup := &store.Organization{ID: uuid.New(), Name: "dup", Slug: "org-a", CreatedAt: now, UpdatedAt: now}
		if err := s.CreateOrganization(ctx, dup); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("duplicate slug: got %v, want ErrConflict", err)
		}
		var seen []string
		p := store.PageQuery{Limit: 2}
		for {
			items, next, err := s.ListOrganizations(ctx, nil, p)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range items {
				seen = append(seen, o.Slug)
			}
			if next == nil {
				break
			}
			// Deleting the boundary item must not break traversal.
			if err := s.DeleteOrganization(ctx, next.ID); err != nil {
				t.Fatal(err)
			}
			p.After = next
		}
		want := []string{"org-a", "org-b", "org-c", "org-d", "org-e"}
		if len(seen) != len(want) {
			t.Fatalf("seen %v, want %v", seen, want)
		}
		for i := range want {
			if seen[i] != want[i] {
				t.Fatalf("seen %v, want %v", seen, want)
			}
		}
	})
}

func TestTimesRoundTrip(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		s := store.New(db)
		now := store.Now()
		o := &store.Organization{ID: uuid.New(), Name: "o", Slug: "o", CreatedAt: now, UpdatedAt: now}
		if err := s.CreateOrganization(ctx, o); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetOrganizationByRef(ctx, "o")
		if err != nil {
			t.Fatal(err)
		}
		if !got.CreatedAt.Equal(now) || got.ID != o.ID {
			t.Fatalf("round trip: got %v %v, want %v %v", got.CreatedAt, got.ID, now, o.ID)
		}
	})
}

// TestStatusIsARead: the status of a database never migrated lists every
// migration as pending and creates nothing, not even bun's bookkeeping
// table.
func TestStatusIsARead(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			url, err := storetest.URL(t, d)
			if err != nil {
				t.Fatal(err)
			}
			db, err := store.Open(ctx, url, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			st, err := store.Status(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			if len(st) == 0 || st[0].Applied {
				t.Fatalf("status %+v", st)
			}
			var tables int
			q := "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
			if d != storetest.SQLite {
				q = "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()"
			}
			if err := db.NewRaw(q).Scan(ctx, &tables); err != nil || tables != 0 {
				t.Fatalf("status created %d tables (%v)", tables, err)
			}
		})
	}
}
