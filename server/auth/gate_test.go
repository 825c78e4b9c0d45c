package auth

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Issue 10, item 2: concurrent password hashing is bounded; callers past
// the waiting room, or who wait too long, get ErrPasswordBusy.
func TestPasswordGateBoundsConcurrency(t *testing.T) {
	g := NewPasswordGate(2, 3, 200*time.Millisecond)
	var running, peak atomic.Int64
	release := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- g.run(context.Background(), func() {
				n := running.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				<-release
				running.Add(-1)
			})
		}()
	}
	time.Sleep(400 * time.Millisecond) // waiters time out meanwhile
	close(release)
	wg.Wait()
	close(errs)
	busy := 0
	for err := range errs {
		if errors.Is(err, ErrPasswordBusy) {
			busy++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if peak.Load() != 2 || busy != 8 {
		t.Fatalf("peak %d concurrent (want 2), %d busy (want 8)", peak.Load(), busy)
	}
}
