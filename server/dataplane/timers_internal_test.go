package dataplane

import (
	"runtime"
	"testing"
	"time"
)

// A stopped releasingTimer keeps nothing its callback reached, while the
// runtime still holds the timer itself; one not stopped calls back once.
func TestReleasingTimer(t *testing.T) {
	held := &struct{ buf []byte }{make([]byte, 1<<20)}
	freed := make(chan struct{})
	runtime.AddCleanup(held, func(ch chan struct{}) { close(ch) }, freed)
	rt := afterFuncReleasing(time.Hour, func() { _ = len(held.buf) })
	held = nil
	if !rt.Stop() {
		t.Fatal("a pending timer did not stop")
	}
	waitCollected(t, freed, "a stopped timer still holds what its callback reached")
	runtime.KeepAlive(rt)
	calls := make(chan struct{}, 2)
	afterFuncReleasing(time.Millisecond, func() { calls <- struct{}{} })
	select {
	case <-calls:
	case <-time.After(10 * time.Second):
		t.Fatal("the timer never called back")
	}
}

// waitCollected collects garbage until freed is closed (by a cleanup of
// the object watched), failing with what after ten seconds.
func waitCollected(t *testing.T, freed <-chan struct{}, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		runtime.GC()
		select {
		case <-freed:
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
