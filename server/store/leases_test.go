package store_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// A lease has one holder at a time: of replicas asking together exactly
// one gets it; the holder renews it, the others are refused until it
// expires or is released, and then one of them takes it.
func TestLeaseOneHolderAtATime(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		now := store.Now()
		const ttl = time.Hour
		var won atomic.Int32
		var winner atomic.Value
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				holder := fmt.Sprintf("replica-%d", i)
				ok, err := store.New(db).TakeLease(ctx, "archive-sweep", holder, ttl, now)
				if err != nil {
					t.Error(err)
				}
				if ok {
					won.Add(1)
					winner.Store(holder)
				}
			}()
		}
		wg.Wait()
		if won.Load() != 1 {
			t.Fatalf("%d replicas got the lease at once", won.Load())
		}
		st := store.New(db)
		holder := winner.Load().(string)
		other := "replica-other"
		check := func(who string, at time.Time, want bool) {
			t.Helper()
			ok, err := st.TakeLease(ctx, "archive-sweep", who, ttl, at)
			if err != nil || ok != want {
				t.Fatalf("%s at %s: %v, %v; want %v", who, at.Sub(now), ok, err, want)
			}
		}
		check(holder, now.Add(time.Minute), true)                     // a renewal
		check(other, now.Add(30*time.Minute), false)                  // held (renewed until 1h01)
		check(other, now.Add(ttl), false)                             // the renewal's hour is not over
		check(other, now.Add(ttl+time.Minute), true)                  // expired: taken over
		check(holder, now.Add(ttl+2*time.Minute), false)              // the old holder lost it
		ok, err := st.TakeLease(ctx, "another-job", holder, ttl, now) // leases are per name
		if err != nil || !ok {
			t.Fatalf("another lease: %v %v", ok, err)
		}
		if err := st.ReleaseLease(ctx, "archive-sweep", holder); err != nil { // not its own: no effect
			t.Fatal(err)
		}
		check(holder, now.Add(ttl+3*time.Minute), false)
		if err := st.ReleaseLease(ctx, "archive-sweep", other); err != nil {
			t.Fatal(err)
		}
		check(holder, now.Add(ttl+4*time.Minute), true) // released: free at once
	})
}
