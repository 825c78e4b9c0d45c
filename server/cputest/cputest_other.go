//go:build !unix

package cputest

import "time"

// process is 0 without getrusage(2): the benchmarks' CPU figures are then
// 0, their timings still measured.
func process() time.Duration { return 0 }
