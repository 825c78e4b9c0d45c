//go:build unix

package cputest_test

import (
	"testing"
	"time"

	"github.com/gw-gateway/gw/server/cputest"
)

// Work on this goroutine shows in the process's CPU time: spinning, it
// reaches 10 ms of CPU well within 10 s of wall time, however loaded the
// machine.
func TestProcessCountsWork(t *testing.T) {
	before := cputest.Process()
	for deadline := time.Now().Add(10 * time.Second); cputest.Process()-before < 10*time.Millisecond; {
		if time.Now().After(deadline) {
			t.Fatalf("10 s of spinning read as %v of CPU time", cputest.Process()-before)
		}
	}
}
