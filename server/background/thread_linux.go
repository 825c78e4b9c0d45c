//go:build linux

package background

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// Nice is the background threads' nice value: the kernel weighs such a
// thread 110 against a request's 1,024 (nice 0) when both want a core.
const Nice = 10

func lowerThread() {
	// LockOSThread first: it starts Go's template thread, if it was not
	// started yet, from this thread at its priority still.
	runtime.LockOSThread()
	// A failure leaves the thread at its priority: slower tails, nothing
	// wrong, and nothing an operator could do about it.
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), Nice)
}
