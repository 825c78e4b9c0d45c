//go:build !linux

package background

// Nice is the background threads' nice value on Linux; elsewhere the work
// keeps Go's scheduling (a thread's own nice value is Linux's).
const Nice = 0

func lowerThread() {}
