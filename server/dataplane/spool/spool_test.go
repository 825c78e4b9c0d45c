package spool

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

func TestSpoolLosesNothingAndShipsOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.spool")
	up := true
	shipped := map[uuid.UUID]int{}
	ship := func(_ context.Context, evs []wire.UsageEventIn) error {
		if !up {
			return errors.New("control plane unreachable")
		}
		for _, e := range evs {
			shipped[e.ID]++
		}
		return nil
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := Open(path, decoding(ship), log)
	if err != nil {
		t.Fatal(err)
	}
	var ids []uuid.UUID
	record := func(n int) {
		for i := 0; i < n; i++ {
			id := uuid.New()
			ids = append(ids, id)
			s.Record(wire.UsageEventIn{ID: id, Model: "openai/gpt-4o", CostUSD: "0.001", Status: "ok"})
		}
	}
	record(3)
	up = false
	if err := s.Ship(context.Background()); err == nil || s.Depth() != 3 {
		t.Fatalf("ship while down: %v, depth %d", err, s.Depth())
	}
	record(1200) // more than one batch, written while the snapshot waits

	// A restart keeps everything.
	s, err = Open(path, decoding(ship), log)
	if err != nil || s.Depth() != 1203 {
		t.Fatalf("reopen: %v, depth %d", err, s.Depth())
	}
	up = true
	for s.Depth() > 0 {
		if err := s.Ship(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		if shipped[id] != 1 {
			t.Fatalf("event shipped %d times", shipped[id])
		}
	}
	if len(shipped) != 1203 {
		t.Fatalf("%d events shipped", len(shipped))
	}
	// A crash mid-write leaves a torn line: after the restart it is
	// skipped and the events around it are shipped.
	record(1)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
	_, _ = f.WriteString(`{"id":"broken`)
	f.Close()
	if s, err = Open(path, decoding(ship), log); err != nil {
		t.Fatal(err)
	}
	record(1)
	if err := s.Ship(context.Background()); err != nil || len(shipped) != 1205 || s.Depth() != 0 {
		t.Fatalf("after a torn line: %v, %d shipped", err, len(shipped))
	}
}

// A permanently refused event is set aside; the rest keeps flowing.
func TestSpoolSetsAsideRefusedEvents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.spool")
	var shipped []string
	ship := func(_ context.Context, evs []wire.UsageEventIn) error {
		for _, e := range evs {
			if e.Status == "poison" {
				return &client.APIError{Status: 422, Detail: "validation failed"}
			}
		}
		for _, e := range evs {
			shipped = append(shipped, e.Status)
		}
		return nil
	}
	s, err := Open(path, decoding(ship), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	s.Record(wire.UsageEventIn{ID: uuid.New(), Status: "ok"})
	s.Record(wire.UsageEventIn{ID: uuid.New(), Status: "poison"})
	s.Record(wire.UsageEventIn{ID: uuid.New(), Status: "ok"})
	if err := s.Ship(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.Record(wire.UsageEventIn{ID: uuid.New(), Status: "ok"})
	if err := s.Ship(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(shipped) != 3 || s.Depth() != 0 {
		t.Fatalf("shipped %v, depth %d", shipped, s.Depth())
	}
	if raw, err := os.ReadFile(path + ".rejected"); err != nil || !strings.Contains(string(raw), "poison") {
		t.Fatalf("rejected file: %q %v", raw, err)
	}
}

// The spool keeps every member of an event, the attempt chain included,
// across a restart: what is shipped is what was recorded.
func TestSpoolCarriesAttribution(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.spool")
	var shipped []wire.UsageEventIn
	ship := func(_ context.Context, evs []wire.UsageEventIn) error {
		shipped = append(shipped, evs...)
		return nil
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := Open(path, decoding(ship), log)
	if err != nil {
		t.Fatal(err)
	}
	requestID, endpoint, reason, failure, tier := "3b1f", "chat.completions", "stream_truncated", "rate_limited", "priority"
	batch := "batch_0190a1b2c3d4"
	in := wire.UsageEventIn{ID: uuid.New(), Model: "anthropic/claude-haiku-4-5", Provider: "anthropic", CostUSD: "0.001", Status: "error",
		RequestID: &requestID, Endpoint: &endpoint, Reason: &reason, RequestedModel: "openai/gpt-4o", ServiceTier: &tier, BatchID: &batch,
		Provenance: &wire.UsageProvenance{Prices: &wire.UsagePrices{InputPerMTok: "2.50", OutputPerMTok: "20", CacheReadPerMTok: "0.25",
			CacheWritePerMTok: "2.50", CacheWrite1hPerMTok: "2.50", ServiceTier: tier, PriceClass: wire.PriceClassBatch}},
		Attempts: []wire.UsageAttempt{
			{Model: "openai/gpt-4o", Provider: "openai", Failure: &failure, LatencyMS: 12},
			{Model: "anthropic/claude-haiku-4-5", Provider: "anthropic", LatencyMS: 340},
		}}
	s.Record(in)
	if s, err = Open(path, decoding(ship), log); err != nil {
		t.Fatal(err)
	}
	if err := s.Ship(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(shipped) != 1 {
		t.Fatalf("shipped %d events", len(shipped))
	}
	got := shipped[0]
	if *got.RequestID != requestID || *got.Endpoint != endpoint || *got.Reason != reason || got.RequestedModel != in.RequestedModel ||
		len(got.Attempts) != 2 || *got.Attempts[0].Failure != failure || got.Attempts[1].Failure != nil || got.Attempts[1].LatencyMS != 340 ||
		got.ServiceTier == nil || *got.ServiceTier != tier || got.Provenance.Prices.ServiceTier != tier ||
		got.BatchID == nil || *got.BatchID != batch || got.Provenance.Prices.PriceClass != wire.PriceClassBatch {
		t.Fatalf("shipped %+v", got)
	}
}

// TestSpoolLineIsTheEventsJSON: Record writes each event as json.Marshal
// encodes it and a newline, whole, in the order recorded, with its
// pooled buffers (an event with characters json.Marshal escapes included).
func TestSpoolLineIsTheEventsJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.spool")
	s, err := Open(path, func(context.Context, []json.RawMessage) error { return nil }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i, model := range []string{"openai/gpt-4o", "<b>&\u2028", strings.Repeat("long ", 2000), "short"} {
		reason := "r" + strings.Repeat("&", i)
		e := wire.UsageEventIn{ID: uuid.New(), Model: model, Provider: "openai", CostUSD: "0.1", Status: "ok", Reason: &reason, InputTokens: int64(i)}
		s.Record(e)
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		want.Write(append(b, '\n'))
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want.String() {
		t.Fatalf("spool:\n%.300s\nwant:\n%.300s", got, want.String())
	}
}

// TestSpoolCreatesItsDirectory: a data plane whose state dir nothing else
// created yet (key, id and signing key all from the environment) still
// spools.
func TestSpoolCreatesItsDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "dataplane", "usage.spool")
	var shipped []wire.UsageEventIn
	s, err := Open(path, decoding(func(_ context.Context, evs []wire.UsageEventIn) error {
		shipped = append(shipped, evs...)
		return nil
	}), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.New()
	s.Record(wire.UsageEventIn{ID: id, Model: "m", Provider: "openai", CostUSD: "0", Status: "ok"})
	if s.Depth() != 1 {
		t.Fatalf("spooled %d events, want 1 written before Record returned", s.Depth())
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(shipped) != 1 || shipped[0].ID != id {
		t.Fatalf("shipped %+v, want the one event", shipped)
	}
}

// decoding is a Ship over ship, which takes the events decoded. Each line
// shipped must be an event's whole JSON: one that does not decode fails
// the ship, as the control plane refuses it.
func decoding(ship func(context.Context, []wire.UsageEventIn) error) Ship {
	return func(ctx context.Context, lines []json.RawMessage) error {
		evs := make([]wire.UsageEventIn, len(lines))
		for i, l := range lines {
			if err := json.Unmarshal(l, &evs[i]); err != nil {
				return &client.APIError{Status: 422, Detail: err.Error()}
			}
		}
		return ship(ctx, evs)
	}
}

// TestSpoolShipsTheLinesAsWritten: a batch is the spooled lines' own
// bytes, in order, across batches of spoolBatch (whose buffers are
// reused), with a torn line and a line that is not an object left out
// when the file is read back.
func TestSpoolShipsTheLinesAsWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.spool")
	var shipped []string
	var sizes []int
	s, err := Open(path, func(_ context.Context, lines []json.RawMessage) error {
		sizes = append(sizes, len(lines))
		for _, l := range lines {
			shipped = append(shipped, string(l)) // copied: the lines are reused
		}
		return nil
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	want := recordN(t, s, 1500) // recordN: memory_test.go
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
	_, _ = f.WriteString("{\"id\":\"torn\n[1,2]\n")
	f.Close()
	// Reopened, as after a crash: the file is read back, not the lines
	// kept in memory.
	if s, err = Open(path, s.ship, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	want = append(want, recordN(t, s, 700)...)
	if err := s.Ship(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sizes, []int{1000, 1000, 200}) || !slices.Equal(shipped, want) || s.Depth() != 0 {
		t.Fatalf("shipped batches of %v; the lines equal what was written: %v; depth %d", sizes, slices.Equal(shipped, want), s.Depth())
	}
}
