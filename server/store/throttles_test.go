package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// Throttle rows change under a lock: concurrent updates from several
// replicas all count, none is lost. Spent rows are swept.
func TestAuthThrottleUpdatesSerialize(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st := store.New(db)
		now := store.Now()
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- st.UpdateAuthThrottle(ctx, "sign_in.account", "a@example.com", now, func(r *store.AuthThrottle) bool {
					r.Failures++
					return false
				})
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		var got store.AuthThrottle
		if err := st.UpdateAuthThrottle(ctx, "sign_in.account", "a@example.com", now, func(r *store.AuthThrottle) bool { got = *r; return false }); err != nil {
			t.Fatal(err)
		}
		if got.Failures != 20 || !got.FirstAt.Equal(now) {
			t.Fatalf("after 20 concurrent failures: %+v", got)
		}
		// Another name or subject is another row; drop deletes.
		if err := st.UpdateAuthThrottle(ctx, "invitation.address", "a@example.com", now, func(r *store.AuthThrottle) bool {
			if r.Failures != 0 {
				t.Errorf("rows of another throttle share counts: %+v", r)
			}
			return true
		}); err != nil {
			t.Fatal(err)
		}
		locked := now.Add(time.Hour)
		old := now.Add(-time.Hour)
		for subject, lock := range map[string]*time.Time{"spent": nil, "locked": &locked} {
			if err := st.UpdateAuthThrottle(ctx, "sign_in.address", subject, old, func(r *store.AuthThrottle) bool {
				r.Failures, r.LockedUntil = 3, lock
				return false
			}); err != nil {
				t.Fatal(err)
			}
		}
		n, err := st.DeleteStaleAuthThrottles(ctx, now.Add(-15*time.Minute), now)
		if err != nil || n != 1 {
			t.Fatalf("swept %d rows, want 1 (the spent one): %v", n, err)
		}
		var rows []store.AuthThrottle
		if err := db.NewSelect().Model(&rows).OrderExpr("name, subject").Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2 || rows[0].Subject != "a@example.com" || rows[1].Subject != "locked" {
			t.Fatalf("rows left: %+v", rows)
		}
	})
}
