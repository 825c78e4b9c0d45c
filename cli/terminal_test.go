package cli

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestMain lets tests run gw in a child process: the test binary started
// again with GW_TEST_MAIN=1 is gw, its arguments gw's.
func TestMain(m *testing.M) {
	if os.Getenv("GW_TEST_MAIN") == "1" {
		os.Exit(Main())
	}
	os.Exit(m.Run())
}

// gwCommand is gw with args as a child process.
func gwCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "GW_TEST_MAIN=1")
	return cmd
}

// A terminal that never answers colour or cursor queries must not slow
// down commands other than the dashboard: bubbletea's init used to ask,
// and waited termenv's 5 s timeout (see tui/internal/noprobe).
func TestVersionOnSilentTerminal(t *testing.T) {
	cmd := gwCommand("version")
	cmd.Env = nil
	for _, kv := range os.Environ() {
		// CI and some TERMs make termenv skip the query; the test needs
		// a terminal it would ask.
		if !strings.HasPrefix(kv, "CI=") && !strings.HasPrefix(kv, "TERM=") && !strings.HasPrefix(kv, "COLORFGBG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "GW_TEST_MAIN=1", "TERM=xterm-256color")

	start := time.Now()
	ptmx, err := pty.Start(cmd)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	// Read everything the child writes and never answer.
	var out bytes.Buffer
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(&out, ptmx) // ends with EIO once the child is gone
		close(copied)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	const limit = time.Second
	select {
	case err := <-exited:
		elapsed := time.Since(start)
		if err != nil {
			t.Fatalf("gw version: %v", err)
		}
		if elapsed > limit {
			t.Errorf("gw version took %v on a silent terminal, want under %v", elapsed, limit)
		}
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("gw version still running after %v on a silent terminal", limit)
	}
	select {
	case <-copied:
	case <-time.After(5 * time.Second):
		t.Fatal("terminal output did not end")
	}
	if got := out.String(); !strings.Contains(got, "gw ") || strings.Contains(got, "\x1b") {
		t.Errorf("output %q: want the version and no escape sequences", got)
	}
}
