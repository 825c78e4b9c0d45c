//go:build linux

package usage

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"github.com/gw-gateway/gw/server/background"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/wire"
)

// A flush's database work runs in the background (server/background), and
// the rest, Stored above all (the request journal's lock, which requests
// take), at the flushing goroutine's own priority.
func TestStoreSinkInsertsInTheBackground(t *testing.T) {
	var insertedAt, storedAt []int
	sink := NewStoreSink(nil, StoreSinkOptions{
		FlushInterval: 1 << 62,
		Stored:        func([]wire.UsageEventIn) { storedAt = append(storedAt, threadNice(t)) },
	})
	defer sink.Close(context.Background())
	sink.insert = func(_ context.Context, rows []store.UsageEvent) (int, error) {
		insertedAt = append(insertedAt, threadNice(t))
		return len(rows), nil
	}
	sink.Record(wire.UsageEventIn{ID: uuid.Must(uuid.NewV7()), OrgID: uuid.New(), WorkspaceID: uuid.New(),
		Model: "openai/gpt-4o-mini", Provider: "openai", CostUSD: "0", Status: "ok", OccurredAt: time.Now().UTC(),
		RequestedModel: "openai/gpt-4o-mini"})
	if err := sink.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(insertedAt) != 1 || insertedAt[0] != background.Nice {
		t.Errorf("inserted at nice %v, want [%d]", insertedAt, background.Nice)
	}
	if len(storedAt) != 1 || storedAt[0] != 0 {
		t.Errorf("Stored called at nice %v, want [0]", storedAt)
	}
}

// threadNice is the calling thread's nice value (Linux's system call
// answers 20 - nice, for the calling thread).
func threadNice(t *testing.T) int {
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
	if err != nil {
		t.Error(err)
	}
	return 20 - prio
}
