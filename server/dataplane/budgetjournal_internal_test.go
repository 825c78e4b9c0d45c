package dataplane

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/spend"
)

// A journal line names its counter as spend.Counter.String does
// (AppendName, held to String in package spend), which parseJournalLine
// reads back, without an allocation.
func TestJournalLineReadsBack(t *testing.T) {
	ids := []uuid.UUID{uuid.Nil, uuid.Max, uuid.MustParse("0193a5f0-7c1d-7e2b-9f00-abcdefABCDEF"), uuid.New(), uuid.New()}
	s := spend.CounterState{Counter: spend.Counter{PolicyID: ids[3], Period: spend.Month, Aggregation: "per_key", KeyID: ids[4]},
		Start: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), Granted: 5, Used: 4, Reserved: 3, Returned: 2, Acked: 1, Reported: -1}
	line := appendJournalLine(nil, s)
	back, err := parseJournalLine(string(line[:len(line)-1]))
	if err != nil || back != s {
		t.Fatalf("%q read back as %+v, %v", line, back, err)
	}
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { buf = appendJournalLine(buf[:0], s) }); n != 0 {
		t.Fatalf("a journal line allocates %v times", n)
	}
}
