// Package cputest reads this process's CPU time, for the benchmarks that
// report CPU per operation beside wall time (on a shared machine, CPU time
// holds still where elapsed time does not). Only tests link it
// (server/boundaries_test.go).
package cputest

import "time"

// Process is this process's CPU time so far, every thread's user and
// system time; 0 where the system does not say (cputest_other.go).
func Process() time.Duration { return process() }
