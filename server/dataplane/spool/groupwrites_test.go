package spool

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/wire"
)

// With group writes, every event recorded from many goroutines is told
// stored exactly once, only once its line is in the file, and shipped
// exactly once; Depth counts the events not yet written.
func TestSpoolGroupWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.spool")
	var mu sync.Mutex
	shipped := map[uuid.UUID]int{}
	s, err := Open(path, decoding(func(_ context.Context, evs []wire.UsageEventIn) error {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range evs {
			shipped[e.ID]++
		}
		return nil
	}), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	stored := map[uuid.UUID]int{}
	s.GroupWrites(func(evs []wire.UsageEventIn) {
		file, err := os.ReadFile(path)
		if err != nil {
			t.Error(err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, e := range evs {
			stored[e.ID]++
			// Nothing ships before Close, which writes (and tells) first.
			if !strings.Contains(string(file), e.ID.String()) {
				t.Errorf("event %s told stored before its line is in the file", e.ID)
			}
		}
	})
	var ids sync.Map
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 300 {
				id := uuid.New()
				ids.Store(id, true)
				// Some long lines, so that groupBytes is reached too.
				model := "openai/gpt-4o"
				if i%50 == 0 {
					model = strings.Repeat("m", 20_000+g)
				}
				s.Record(wire.UsageEventIn{ID: id, Model: model, CostUSD: "0.001", Status: "ok"})
			}
		})
	}
	wg.Wait()
	if d := s.Depth(); d != 2400 {
		t.Fatalf("depth %d after 2,400 events, written or not", d)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(stored)
		mu.Unlock()
		if n == 2400 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	n := 0
	ids.Range(func(k, _ any) bool {
		n++
		id := k.(uuid.UUID)
		if stored[id] != 1 || shipped[id] != 1 {
			t.Fatalf("event %s: told stored %d times, shipped %d times", id, stored[id], shipped[id])
		}
		return true
	})
	if n != 2400 || len(stored) != 2400 {
		t.Fatalf("%d events recorded, %d told stored", n, len(stored))
	}
}

// A write that fails tells nothing stored: the request journal keeps
// those requests and records them again at the next start.
func TestSpoolGroupWriteFails(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "usage.spool"), decoding(nil), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var stored []wire.UsageEventIn
	s.GroupWrites(func(evs []wire.UsageEventIn) { stored = append(stored, evs...) })
	s.f.Close() // the next write fails
	s.Record(wire.UsageEventIn{ID: uuid.New(), Model: "m", CostUSD: "0", Status: "ok"})
	s.writeWaiting()
	if len(stored) != 0 || s.Depth() != 0 {
		t.Fatalf("after a failed write: %d told stored, depth %d", len(stored), s.Depth())
	}
}

// An event recorded while Close ships is written by Close, and told
// stored: it ships at the next start.
func TestSpoolGroupWritesAtClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.spool")
	var s *Spool
	late := uuid.New()
	s, err := Open(path, decoding(func(context.Context, []wire.UsageEventIn) error {
		if late != uuid.Nil { // a request ending while the last ship is on its way
			s.Record(wire.UsageEventIn{ID: late, Model: "m", CostUSD: "0", Status: "ok"})
			late = uuid.Nil
		}
		return nil
	}), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var stored []wire.UsageEventIn
	s.GroupWrites(func(evs []wire.UsageEventIn) { stored = append(stored, evs...) })
	s.Record(wire.UsageEventIn{ID: uuid.New(), Model: "m", CostUSD: "0", Status: "ok"})
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(stored) != 2 {
		t.Fatalf("%d events told stored by Close, want 2", len(stored))
	}
	if s, err = Open(path, decoding(nil), slog.New(slog.DiscardHandler)); err != nil || s.Depth() != 1 {
		t.Fatalf("after Close: %v, depth %d, want the late event spooled", err, s.Depth())
	}
}
