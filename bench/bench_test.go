package main

import (
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMain lets the test binary play the upstream and the proxy, as the
// harness binary does when it re-executes itself.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "-role" {
		os.Exit(childMain(os.Args[1:]))
	}
	code := m.Run()
	if gwBuild.dir != "" {
		os.RemoveAll(gwBuild.dir)
	}
	os.Exit(code)
}

// gwBuild is the gw binary the harness tests share: built once, by the
// first that needs it.
var gwBuild struct {
	once     sync.Once
	dir, bin string
	err      error
}

func testGW(t *testing.T) string {
	t.Helper()
	gwBuild.once.Do(func() {
		if gwBuild.dir, gwBuild.err = os.MkdirTemp("", "gw-bench-test-"); gwBuild.err == nil {
			gwBuild.bin, gwBuild.err = buildGW(gwBuild.dir)
		}
	})
	if gwBuild.err != nil {
		t.Fatalf("build gw: %v", gwBuild.err)
	}
	return gwBuild.bin
}

// TestHarnessSmoke runs every scenario for a moment with tiny counts: the
// harness starts its processes, configures gw, measures, reports, and
// finds every request in gw's usage report. It proves the harness works,
// not how fast anything is.
func TestHarnessSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts gw")
	}
	var out strings.Builder
	traces := t.TempDir()
	err := run(config{Duration: 200 * time.Millisecond, Rounds: 2, Conns: 2, Rate: 20, PacedMS: 1, Chunks: 3,
		MaxRequests: 40, Scenarios: []string{"nonstream", "stream", "latency", "open", "sweep", "usage", "mcp"}, Out: &out,
		Systems: []string{"gw", "dataplane"}, SweepConns: []int{1, 2}, SweepMS: 2, TraceDir: traces, GWBinary: testGW(t),
		Usage: usageConfig{Events: 3000, Checkpoint: []int{1000, 3000}, Conns: 2, Batch: 500, Reps: 2, Spread: 35 * 24 * time.Hour}})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"CPU per request", "| nonstream | proxy |", "| stream | dataplane |", "control plane", "gw / proxy req/s", "dataplane / proxy req/s", "gw adds over direct", "gw adds over proxy", "| gw |",
		"| dataplane |", "latency sweep: added over direct", "| 2 | dataplane |", "usage: gw's report counts",
		"the 30-day report counts all", "over the median at 1000", "### MCP tools/call (2026-07-28, stateless), closed loop, 2 connection(s)",
		"| direct |", "gw: adds p50", "dataplane: adds p50", "the upstream's own"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
	// The traces of the 1-connection runs are there, and attributable.
	var attr strings.Builder
	if err := attributeDir(&attr, traces); err != nil {
		t.Fatalf("attribute: %v", err)
	}
	for _, want := range []string{"gw-round1.trace", "dataplane-round2.trace", "GC cycles", "| requests above p99 | cause |"} {
		if !strings.Contains(attr.String(), want) {
			t.Errorf("the attribution lacks %q:\n%s", want, attr.String())
		}
	}
}

// TestParseStatCPU reads utime and stime past a command name that holds
// spaces and parentheses.
func TestParseStatCPU(t *testing.T) {
	line := "4242 (gw (x) y) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 12 0 100 0\n"
	got, err := parseStatCPU([]byte(line))
	if err != nil || got != 3250*time.Millisecond {
		t.Fatalf("parseStatCPU = %v, %v; want 3.25s", got, err)
	}
	for _, bad := range []string{"", "1 (gw) S 1 2", "1 (gw) S 1 2 3 4 5 6 7 8 9 10 x 2"} {
		if _, err := parseStatCPU([]byte(bad)); err == nil {
			t.Errorf("parseStatCPU(%q) took it", bad)
		}
	}
	// This process can read its own.
	if _, err := cpuTime(os.Getpid()); err != nil {
		t.Fatalf("own CPU time: %v", err)
	}
}

// TestUniquePrompt: -prompt-bytes gives every request a chat body of its
// own, valid JSON, its user message about the size asked for.
func TestUniquePrompt(t *testing.T) {
	u := newUniquePrompt("openai/gpt-4o-mini", true, 4000)
	seen := map[string]bool{}
	for range 1001 {
		b := u.next()
		var body struct {
			Stream   bool `json:"stream"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatalf("%v: %.80s", err, b)
		}
		user := body.Messages[1].Content
		if !body.Stream || len(user) < 3000 || len(user) > 5000 {
			t.Fatalf("stream %v, user message of %d bytes", body.Stream, len(user))
		}
		if seen[user] {
			t.Fatalf("a user message repeated: %.40s", user)
		}
		seen[user] = true
	}
}
