//go:build unix

package usage_test

import (
	"syscall"
	"time"
)

// processCPU is this process's CPU time so far, user and system, for the
// benchmarks' CPU figures (cputime_other_test.go where there is no
// getrusage(2)).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
