package store_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

func TestBundleChangeNotification(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			url, err := storetest.URL(t, d)
			if err != nil {
				t.Fatal(err)
			}
			db, err := store.Open(ctx, url, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			st := store.New(db)
			org := uuid.New()
			if d == storetest.SQLite {
				// One process: nothing to tell, and nothing fails.
				if err := st.NotifyBundleChanged(ctx, org); err != nil {
					t.Fatal(err)
				}
				return
			}
			got := make(chan uuid.UUID, 1)
			go store.ListenBundleChanges(ctx, url, slog.New(slog.NewTextHandler(io.Discard, nil)), func(id uuid.UUID) { got <- id })
			deadline := time.After(10 * time.Second)
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			// The listener may not be listening yet: announce until heard.
			for {
				if err := st.NotifyBundleChanged(ctx, org); err != nil {
					t.Fatal(err)
				}
				select {
				case id := <-got:
					// Other packages' tests share the database and its
					// channel: their organizations' notices are not ours.
					if id == org {
						return
					}
				case <-tick.C:
				case <-deadline:
					t.Fatal("the notification was never heard")
				}
			}
		})
	}
}
