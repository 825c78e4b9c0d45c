package serve

import (
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// LimitedGCPercent is gw serve's GOGC when it runs under a memory limit
// (a container's) and the environment sets neither GOGC nor GOMEMLIMIT.
// Go's default, 100, collects each time the heap doubles its live size;
// gw's live heap is small (bundles, caches, pools: tens of MB) and most of
// what a request allocates dies with it, so at 100 the collector runs
// many times a second under load, and a cycle that overlaps a request
// makes it help mark and adds to its latency. 400 runs it a quarter as
// often. It also lets garbage pile up to four times the live heap, which
// under a burst of password hashing took gw's peak RSS from 152 to 288 MB
// (e2e TestMemoryUnderUnauthenticatedBursts, bound 200 MB): so only where
// a memory limit is known, and with GOMEMLIMIT at 90 % of it, which makes
// the collector work harder near the limit instead of letting the heap
// reach it. Without a known limit gw keeps Go's 100. docs/performance.md
// has the measurement.
const LimitedGCPercent = 400

// cgroupMemoryMax is where a container's memory limit is read (cgroup v2).
var cgroupMemoryMax = "/sys/fs/cgroup/memory.max"

// gcSettings are the GC settings gw serve applies; -1 keeps the runtime's
// (the environment's, or Go's default).
type gcSettings struct {
	percent     int
	memoryLimit int64
}

// chooseGC: under a container's memory limit, GOMEMLIMIT at 90 % of it and
// GOGC 400, each unless the environment sets its own; an operator's
// GOMEMLIMIT also bounds the heap, so it too allows GOGC 400. Without a
// known limit, nothing changes.
func chooseGC(getenv func(string) string, readFile func(string) ([]byte, error)) gcSettings {
	s := gcSettings{percent: -1, memoryLimit: -1}
	limited := false
	if env := getenv("GOMEMLIMIT"); env != "" {
		limited = env != "off"
	} else if b, err := readFile(cgroupMemoryMax); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 {
			s.memoryLimit = n / 10 * 9
			limited = true
		}
	}
	if limited && getenv("GOGC") == "" {
		s.percent = LimitedGCPercent
	}
	return s
}

// applyGC sets gw serve's GC defaults and logs what it runs with.
func applyGC(log *slog.Logger) {
	s := chooseGC(os.Getenv, os.ReadFile)
	if s.percent >= 0 {
		debug.SetGCPercent(s.percent)
	}
	if s.memoryLimit >= 0 {
		debug.SetMemoryLimit(s.memoryLimit)
	}
	gogc := debug.SetGCPercent(-1)
	debug.SetGCPercent(gogc)
	limit := debug.SetMemoryLimit(-1)
	attrs := []any{"gogc", gogc}
	if limit < 1<<62 {
		attrs = append(attrs, "gomemlimit_bytes", limit)
	}
	log.Info("garbage collector", attrs...)
}
