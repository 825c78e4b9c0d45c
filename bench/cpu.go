package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// clockTick is the unit of utime and stime in /proc/<pid>/stat: USER_HZ,
// which Linux fixes at 100 for every architecture it reports to user space.
const clockTick = 10 * time.Millisecond

// proc is one process whose CPU time a system's runs are charged: the
// system itself, and for a remote data plane its control plane too.
type proc struct {
	label string
	pid   int
	// pprof is the address serving the process's /debug/pprof, when it is
	// profiled (-cpu-profiles).
	pprof string
}

// cpuTime is a process's CPU time so far, every thread's user and system
// time (utime + stime of /proc/<pid>/stat), at 10 ms resolution: a run of
// seconds at thousands of requests a second spends hundreds of ticks.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

// parseStatCPU reads utime and stime (fields 14 and 15) from a
// /proc/<pid>/stat line. The command name (field 2) is in parentheses and
// may hold spaces or parentheses itself, so fields are counted from the
// last ')'.
func parseStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc stat line without a command: %q", b)
	}
	fields := bytes.Fields(b[i+1:]) // fields[0] is field 3 (state)
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc stat line too short: %q", b)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat CPU field %q: %w", f, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// cpuOf reads every process's CPU time; a process that cannot be read
// (gone, or not Linux) is left out, and the report shows no figure for it.
func cpuOf(procs []proc) map[string]time.Duration {
	out := make(map[string]time.Duration, len(procs))
	for _, p := range procs {
		if t, err := cpuTime(p.pid); err == nil {
			out[p.label] = t
		}
	}
	return out
}

// cpuSpent is what each process spent between two readings.
func cpuSpent(before, after map[string]time.Duration) map[string]time.Duration {
	out := make(map[string]time.Duration, len(after))
	for label, t := range after {
		if b, ok := before[label]; ok {
			out[label] = t - b
		}
	}
	return out
}

// cpuPerRequest is a process's CPU µs per request served in s (answered or
// failed: a failure costs work too), 0 when unknown.
func (s *sample) cpuPerRequest(label string) float64 {
	n := s.ok + s.failed
	t, ok := s.cpu[label]
	if n == 0 || !ok {
		return 0
	}
	return float64(t) / 1e3 / float64(n)
}

// cpuTotalPerRequest is every process of the system together.
func (s *sample) cpuTotalPerRequest(procs []proc) float64 {
	total := 0.0
	for _, p := range procs {
		total += s.cpuPerRequest(p.label)
	}
	return total
}
