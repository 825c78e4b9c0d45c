package spool

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/wire"
)

// BenchmarkSpoolShip: shipping a poll's events (1,000 a ship, group
// writes, as a data plane under load), from the lines kept in memory; the
// ship joins each batch as client.IngestUsageLines does. ns/op is a ship.
func BenchmarkSpoolShip(b *testing.B) {
	var body []byte
	s, err := Open(filepath.Join(b.TempDir(), "usage.spool"), func(_ context.Context, lines []json.RawMessage) error {
		body = body[:0]
		for _, l := range lines {
			body = append(append(body, l...), ',')
		}
		return nil
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	s.GroupWrites(func([]wire.UsageEventIn) {})
	reason := strings.Repeat("x", 200) // about the line of a real event
	e := wire.UsageEventIn{ID: uuid.New(), Model: "openai/gpt-4o", CostUSD: "0.001", Status: "ok", Reason: &reason}
	for b.Loop() {
		b.StopTimer()
		for range 1000 {
			s.Record(e)
		}
		b.StartTimer()
		if err := s.Ship(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
