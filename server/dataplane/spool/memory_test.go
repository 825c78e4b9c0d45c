package spool

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/wire"
)

// shipLog is a Ship that keeps the lines it is sent and whether the
// snapshot they came from was in memory; fail, while set, refuses.
type shipLog struct {
	s         *Spool
	lines     []string
	fromMem   []bool
	fail      bool
	failCount int
}

func (l *shipLog) ship(_ context.Context, lines []json.RawMessage) error {
	if l.fail {
		l.failCount++
		return errors.New("control plane unreachable")
	}
	for _, line := range lines {
		l.lines = append(l.lines, string(line)) // copied: the lines are reused
	}
	l.fromMem = append(l.fromMem, l.s.asideLines != nil)
	return nil
}

func openLogged(t *testing.T, path string) (*Spool, *shipLog) {
	t.Helper()
	l := &shipLog{}
	s, err := Open(path, l.ship, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	l.s = s
	return s, l
}

// recordN records n events of varied lengths and returns their lines.
func recordN(t *testing.T, s *Spool, n int) []string {
	t.Helper()
	lines := make([]string, n)
	for i := range n {
		reason := strings.Repeat("é\n<&>", i%7)
		e := wire.UsageEventIn{ID: uuid.New(), Model: "openai/gpt-4o", CostUSD: "0.001", Status: "ok", Reason: &reason, InputTokens: int64(i)}
		s.Record(e)
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = string(b)
	}
	return lines
}

// shipAll ships until nothing is left and says whether every batch came
// from memory (true), from the file (false) or both (a mix is a failure).
func shipAll(t *testing.T, s *Spool, l *shipLog) bool {
	t.Helper()
	l.fromMem = l.fromMem[:0]
	for i := 0; s.Depth() > 0; i++ {
		if i == 10 {
			t.Fatalf("%d events left after ten ships", s.Depth())
		}
		if err := s.Ship(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range l.fromMem {
		if m != l.fromMem[0] {
			t.Fatalf("one ship's batches came from memory and from the file: %v", l.fromMem)
		}
	}
	return len(l.fromMem) > 0 && l.fromMem[0]
}

// A file begun empty ships from the lines kept in memory, byte for byte
// the file's, in batches, without reading the file back; a refused ship
// keeps its snapshot in memory for the next; the buffer is reused.
func TestSpoolShipsFromMemory(t *testing.T) {
	for _, grouped := range []bool{false, true} {
		t.Run(map[bool]string{false: "each-write", true: "group-writes"}[grouped], func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "usage.spool")
			s, l := openLogged(t, path)
			if grouped {
				s.GroupWrites(func([]wire.UsageEventIn) {})
			}
			want := recordN(t, s, 2300)
			s.writeWaiting()
			file, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(want, "\n") + "\n"; string(file) != got {
				t.Fatalf("the file is not the events' lines")
			}

			l.fail = true
			if err := s.Ship(context.Background()); err == nil || l.failCount != 1 {
				t.Fatalf("a refused ship: %v after %d tries", err, l.failCount)
			}
			if string(s.asideLines) != string(file) {
				t.Fatalf("the snapshot in memory (%d bytes) is not its file (%d)", len(s.asideLines), len(file))
			}
			// The snapshot's file is not read: what it holds now ships
			// nowhere, the memory's lines do.
			if err := os.WriteFile(s.aside(), []byte("{}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			more := recordN(t, s, 700) // into the fresh file, kept apart
			l.fail = false
			if !shipAll(t, s, l) {
				t.Fatalf("shipped from the file, want from memory")
			}
			if want = append(want, more...); strings.Join(l.lines, "\n") != strings.Join(want, "\n") {
				t.Fatalf("shipped %d lines, not the %d recorded in order", len(l.lines), len(want))
			}
			if _, err := os.Stat(s.aside()); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the snapshot's file stays: %v", err)
			}

			// The next file's lines go into the shipped snapshot's buffer.
			l.lines = nil
			spare := s.spare
			if cap(spare) == 0 {
				t.Fatal("no buffer kept for the next file")
			}
			want = recordN(t, s, 10)
			s.writeWaiting()
			if err := s.Ship(context.Background()); err != nil {
				t.Fatal(err)
			}
			if &s.lines[:1][0] != &spare[:1][0] || strings.Join(l.lines, "\n") != strings.Join(want, "\n") {
				t.Fatalf("the buffer is not reused, or %d lines shipped of %d", len(l.lines), len(want))
			}
		})
	}
}

// The memory's lines are trusted only while they are the whole file: a
// file an earlier process began, a failed write and a file past memLines
// are read back, and the next file (begun empty by the rotation) ships
// from memory again. Nothing is lost or shipped twice either way.
func TestSpoolShipsFromTheFileWhenMemoryIsNotWhole(t *testing.T) {
	t.Run("begun-by-an-earlier-process", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "usage.spool")
		s, _ := openLogged(t, path)
		want := recordN(t, s, 5)
		s, l := openLogged(t, path) // a restart
		want = append(want, recordN(t, s, 5)...)
		if shipAll(t, s, l) || strings.Join(l.lines, "\n") != strings.Join(want, "\n") {
			t.Fatalf("from memory, or %d lines shipped of %d", len(l.lines), len(want))
		}
		l.lines = nil
		want = recordN(t, s, 5)
		if !shipAll(t, s, l) || strings.Join(l.lines, "\n") != strings.Join(want, "\n") {
			t.Fatalf("the fresh file not from memory, or %d lines shipped of %d", len(l.lines), len(want))
		}
	})
	t.Run("a-failed-write", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "usage.spool")
		s, l := openLogged(t, path)
		want := recordN(t, s, 5)
		live := s.f
		ro, err := os.Open(path) // writes to it fail
		if err != nil {
			t.Fatal(err)
		}
		s.f = ro
		recordN(t, s, 1) // not written, logged; its request was served
		ro.Close()
		s.f = live
		want = append(want, recordN(t, s, 5)...)
		if shipAll(t, s, l) || strings.Join(l.lines, "\n") != strings.Join(want, "\n") {
			t.Fatalf("from memory, or %d lines shipped of %d", len(l.lines), len(want))
		}
	})
	t.Run("past-memLines", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "usage.spool")
		s, l := openLogged(t, path)
		s.GroupWrites(func([]wire.UsageEventIn) {})
		var want []string
		for len(strings.Join(want, "\n")) <= memLines {
			want = append(want, recordN(t, s, 2000)...)
		}
		if shipAll(t, s, l) || strings.Join(l.lines, "\n") != strings.Join(want, "\n") {
			t.Fatalf("from memory, or %d lines shipped of %d", len(l.lines), len(want))
		}
		if len(s.lines) != 0 || cap(s.lines) > 2*memLines {
			t.Fatalf("%d bytes of lines kept (capacity %d) after the file grew past memLines", len(s.lines), cap(s.lines))
		}
	})
}

// Run ships as soon as shipEvents are written, without waiting for its
// interval, so a busy plane's lines stay within memLines; after a failed
// ship, events written meanwhile send the control plane no retries until
// the interval comes.
func TestSpoolShipsWithoutWaitingForTheInterval(t *testing.T) {
	tries := make(chan int, 16)
	s, err := Open(filepath.Join(t.TempDir(), "usage.spool"), func(_ context.Context, lines []json.RawMessage) error {
		tries <- len(lines)
		return errors.New("control plane unreachable")
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s.GroupWrites(func([]wire.UsageEventIn) {})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx, time.Hour); close(done) }()
	defer func() { cancel(); <-done }()

	recordN(t, s, shipEvents-1)
	s.writeWaiting()
	select {
	case <-tries:
		t.Fatal("shipped before shipEvents were written")
	case <-time.After(50 * time.Millisecond):
	}
	recordN(t, s, 1)
	select {
	case got := <-tries:
		if got != spoolBatch {
			t.Fatalf("shipped %d events, want a batch of %d", got, spoolBatch)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the events written were not shipped before the interval")
	}
	// The ship failed: as many again written do not try again.
	recordN(t, s, shipEvents)
	s.writeWaiting()
	select {
	case got := <-tries:
		t.Fatalf("events written after a failed ship were tried at once (%d events)", got)
	case <-time.After(100 * time.Millisecond):
	}
}
