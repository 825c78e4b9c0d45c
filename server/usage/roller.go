package usage

import (
	"context"
	"log/slog"
	"time"

	"github.com/gw-gateway/gw/server/store"
)

// RollInterval paces the roller: how long stored events may wait in the
// queue before they are rolled up (reports count them meanwhile, from the
// queue).
const RollInterval = time.Second

// rollChunk is how many queued groups one transaction moves: large enough
// that a busy second's events become few rollup rows, small enough that a
// back-log never makes one long transaction.
const rollChunk = 20_000

// Roll moves the whole queue into the rollups, chunk by chunk, and says
// how many groups it moved.
func Roll(ctx context.Context, st *store.Store) (int, error) {
	total := 0
	for {
		n, err := st.RollUpUsage(ctx, rollChunk)
		total += n
		if err != nil || n < rollChunk {
			return total, err
		}
	}
}

// RunRoller rolls the queue up every RollInterval until ctx ends. Every
// control-plane replica runs one; they take turns on the database.
func RunRoller(ctx context.Context, st *store.Store, log *slog.Logger) {
	t := time.NewTicker(RollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := Roll(ctx, st); err != nil && ctx.Err() == nil {
				log.Warn("rolling up usage", "error", err)
			}
		}
	}
}
