package cli

import (
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// DefaultGCPercent is gw serve's GOGC when the environment sets none. Go's
// default, 100, collects each time the heap doubles its live size; gw's
// live heap is small (bundles, caches, pools: tens of MB) and most of what
// a request allocates dies with it, so at 100 the collector runs many
// times a second under load, and a cycle that starts during a request
// makes it help mark (assist) and adds to its latency. 400 runs it a fifth
// as often for a few tens of MB more heap: docs/performance.md has the
// measurement.
const DefaultGCPercent = 400

// cgroupMemoryMax is where a container's memory limit is read (cgroup v2).
var cgroupMemoryMax = "/sys/fs/cgroup/memory.max"

// gcSettings are the GC settings gw serve applies: a GOGC and, when the
// process runs under a memory limit, a GOMEMLIMIT of 90 % of it, so that a
// larger GOGC never takes the heap past the container's limit (the
// collector works harder near the limit instead). An operator's GOGC or
// GOMEMLIMIT wins; off or 0 limit is nothing.
type gcSettings struct {
	percent     int   // -1: keep the runtime's (the environment's)
	memoryLimit int64 // -1: keep the runtime's
}

func chooseGC(getenv func(string) string, readFile func(string) ([]byte, error)) gcSettings {
	s := gcSettings{percent: -1, memoryLimit: -1}
	if getenv("GOGC") == "" {
		s.percent = DefaultGCPercent
	}
	if getenv("GOMEMLIMIT") == "" {
		if b, err := readFile(cgroupMemoryMax); err == nil {
			if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 {
				s.memoryLimit = n / 10 * 9
			}
		}
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
