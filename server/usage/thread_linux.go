//go:build linux

package usage

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// backgroundNice is the nice value of the usage writer's thread: it gives a
// request's threads the cores first (weight 110 against 1,024 for nice 0),
// and still runs whenever a core is free. Only raising a thread's nice value
// needs no privilege; it is never lowered again.
const backgroundNice = 10

// backgroundThread runs the calling goroutine, for the rest of its life, on
// a thread of its own at nice backgroundNice. The goroutine never unlocks
// it, so no other goroutine ever runs there: when it returns, Go ends the
// thread with it.
//
// Why: the in-process usage writer (a batch of up to 1,000 SQLite inserts,
// some 30 ms of one core) ran at a request's priority, and on a small host
// a request that came while it wrote waited for a core; the slow requests of
// the 1-connection run overlapped it more than anything else (issue 33,
// eleventh round, in docs/performance.md).
func backgroundThread() {
	runtime.LockOSThread()
	// A failure leaves the thread at its priority: slower tails, nothing
	// wrong, and nothing the operator could do about it.
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), backgroundNice)
}
