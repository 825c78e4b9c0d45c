package dataplane

import (
	"sync"
	"time"
)

// releasingTimer is time.AfterFunc for a callback that reaches much (a
// connection and what it holds): stopped, it lets go of the callback at
// once. The runtime keeps a stopped timer, and everything its callback
// reaches, in its heap until the time it was set for or until that heap is
// next cleaned — up to an hour for a WebSocket's connection limit, long
// after the connection and the history it kept have ended.
type releasingTimer struct {
	t  *time.Timer
	mu sync.Mutex
	f  func()
}

func afterFuncReleasing(d time.Duration, f func()) *releasingTimer {
	rt := &releasingTimer{f: f}
	rt.t = time.AfterFunc(d, rt.fire)
	return rt
}

func (rt *releasingTimer) fire() {
	rt.mu.Lock()
	f := rt.f
	rt.f = nil
	rt.mu.Unlock()
	if f != nil {
		f()
	}
}

// Stop stops the timer, as time.Timer's Stop, and drops the callback.
func (rt *releasingTimer) Stop() bool {
	stopped := rt.t.Stop()
	rt.mu.Lock()
	rt.f = nil
	rt.mu.Unlock()
	return stopped
}
