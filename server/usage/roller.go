package usage

import (
	"context"
	"time"

	"github.com/gw-gateway/gw/server/store"
)

// RollInterval paces the roller every control plane runs: how long stored
// events may wait in the queue before they are rolled up (reports count
// them meanwhile, from the queue). Replicas take turns on the database.
const RollInterval = time.Second

// rollChunk is how many queued groups one transaction moves: large, since
// the rows a chunk upserts grow with the chunk only until it covers the
// dimensions' values in its span of time (events spread over weeks, as in
// a back-fill, cost 8 upserts each in chunks of 20,000 and under 2 in
// chunks of 200,000), yet bounded so that a back-log is rolled in
// transactions of seconds, not one of minutes.
const rollChunk = 200_000

// tidyAfter is the back-log after which the queue is tidied: a second of
// steady traffic is far less, and autovacuum keeps up with that.
const tidyAfter = 10_000

// Roll moves the whole queue into the rollups, chunk by chunk, and says
// how many groups it moved. After a back-log it tidies the queue, whose
// dead rows would slow every report's read of it.
func Roll(ctx context.Context, st *store.Store) (int, error) {
	total := 0
	for {
		n, err := st.RollUpUsage(ctx, rollChunk)
		total += n
		if err != nil {
			return total, err
		}
		// A store may move fewer than asked in one transaction (SQLite,
		// store.sqliteRollLimit): only an empty turn says the queue is
		// drained.
		if n == 0 {
			if total >= tidyAfter {
				return total, st.TidyUsageQueue(ctx)
			}
			return total, nil
		}
	}
}
