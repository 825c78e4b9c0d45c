package telemetry_test

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/gw-gateway/gw/server/telemetry"
)

// slowOut is an output that holds every write until the test lets it go,
// and records what it was given.
type slowOut struct {
	mu      sync.Mutex
	b       bytes.Buffer
	writes  int
	sizes   []int
	entered chan struct{} // a write has begun (with gate)
	gate    chan struct{}
}

func (s *slowOut) Write(p []byte) (int, error) {
	if s.gate != nil {
		select {
		case s.entered <- struct{}{}:
		default:
		}
		<-s.gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	s.sizes = append(s.sizes, len(p))
	return s.b.Write(p)
}

// TestLogWriterKeepsEveryLine: lines written concurrently all reach the
// output, whole and in each writer's order, by Close.
func TestLogWriterKeepsEveryLine(t *testing.T) {
	out := &slowOut{}
	w := telemetry.NewLogWriter(out, 4096)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				fmt.Fprintf(w, "writer=%d line=%d %s\n", g, i, strings.Repeat("x", i%50))
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	next := map[int]int{}
	lines := strings.Split(strings.TrimSuffix(out.b.String(), "\n"), "\n")
	if len(lines) != 8*2000 {
		t.Fatalf("%d lines, want %d", len(lines), 8*2000)
	}
	for _, l := range lines {
		var g, i int
		var pad string
		if _, err := fmt.Sscanf(l, "writer=%d line=%d %s", &g, &i, &pad); err != nil && i%50 != 0 {
			t.Fatalf("torn line %q: %v", l, err)
		}
		if i != next[g] || len(pad) != i%50 {
			t.Fatalf("writer %d: line %d after %d (%q)", g, i, next[g]-1, l)
		}
		next[g]++
	}
	// Lines gather while the output writes: far fewer writes than lines.
	if out.writes >= len(lines) {
		t.Errorf("%d writes for %d lines", out.writes, len(lines))
	}
	// After Close, writes go straight through.
	fmt.Fprintf(w, "late\n")
	if !strings.HasSuffix(out.b.String(), "late\n") {
		t.Error("a write after Close was not written through")
	}
}

// TestLogWriterBoundsItsBuffer: while the output is stuck, writers add
// lines up to the bound, then wait (nothing is dropped): the output is
// never handed more than the bound at once, and everything arrives.
func TestLogWriterBoundsItsBuffer(t *testing.T) {
	out := &slowOut{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	w := telemetry.NewLogWriter(out, 100)
	line := []byte(strings.Repeat("y", 39) + "\n") // 40 bytes
	if _, err := w.Write(line); err != nil {
		t.Fatal(err)
	}
	<-out.entered // the first line is with the stuck output
	for range 2 { // 80 of 100 bytes buffered
		if _, err := w.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() {
		_, _ = w.Write(line) // 120 > 100: waits for room
		close(done)
	}()
	close(out.gate)
	<-done
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := out.b.String(); got != strings.Repeat(string(line), 4) {
		t.Fatalf("output %d bytes, want %d", len(got), 4*len(line))
	}
	for _, n := range out.sizes {
		if n > 100 {
			t.Fatalf("the output was handed %d bytes at once (writes %v): the bound is 100", n, out.sizes)
		}
	}
}
