//go:build !unix

package usage_test

import "time"

// processCPU is 0 where there is no getrusage(2): the benchmarks' CPU
// figures are then 0, their timings still measured.
func processCPU() time.Duration { return 0 }
