//go:build linux || darwin

package tui

import (
	"bytes"
	"io"
	"os"
	"testing"
	"time"

	"github.com/creack/pty"
)

func openPTY(t *testing.T) (ptmx, tty *os.File) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { ptmx.Close(); tty.Close() })
	return ptmx, tty
}

// A terminal that never answers the colour query holds the dashboard for
// the query's short bound, not termenv's seconds (issue 22, row 11).
func TestColourQueryOfASilentTerminalIsBounded(t *testing.T) {
	ptmx, tty := openPTY(t)
	go func() { _, _ = io.Copy(io.Discard, ptmx) }() // reads the query, never answers
	start := time.Now()
	if _, ok := askBackground(tty, "xterm-256color", colourQueryTimeout); ok {
		t.Fatal("a silent terminal said its background")
	}
	// termenv waited 5 s a read; a loaded machine may add a little to ours.
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("the query took %s, its bound is %s", took, colourQueryTimeout)
	}
}

// A terminal that answers is read: a white background is light, a black
// one dark, and the answers do not linger as input.
func TestColourQueryReadsTheAnswer(t *testing.T) {
	for _, c := range []struct {
		answer string
		dark   bool
	}{
		{"\x1b]11;rgb:ffff/ffff/ffff\x1b\\\x1b[12;1R", false},
		{"\x1b]11;rgb:0000/0000/0000\x07\x1b[3;7R", true},
	} {
		ptmx, tty := openPTY(t)
		go func() {
			buf := make([]byte, 64)
			var seen []byte
			for !bytes.Contains(seen, []byte("\x1b[6n")) {
				n, err := ptmx.Read(buf)
				if err != nil {
					return
				}
				seen = append(seen, buf[:n]...)
			}
			_, _ = ptmx.WriteString(c.answer)
		}()
		dark, ok := askBackground(tty, "xterm-256color", 2*time.Second)
		if !ok || dark != c.dark {
			t.Errorf("answer %q: dark %v ok %v, want dark %v", c.answer, dark, ok, c.dark)
		}
	}
	if _, ok := askBackground(nil, "tmux-256color", time.Second); ok {
		t.Error("asked a multiplexer")
	}
}
