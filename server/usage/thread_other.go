//go:build !linux

package usage

// backgroundThread: the writer keeps Go's scheduling elsewhere (a thread's
// own nice value is Linux's).
func backgroundThread() {}
