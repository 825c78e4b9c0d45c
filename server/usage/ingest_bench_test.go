package usage_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/server/usage"
	"github.com/gw-gateway/gw/wire"
)

// BenchmarkIngest stores batches of 1,000 events with their rollups, as
// the ingest endpoint does, on fresh databases, against the bare insert
// of the events alone ("events-only") in the same run. "spread" events
// fall anywhere in the last 35 days (a back-fill: most land in rollup
// rows of their own), "live" ones in the last minute (a data plane's
// shipment: a few rows per batch).
//
//	go test -run '^$' -bench Ingest -benchtime 30x ./server/usage
func BenchmarkIngest(b *testing.B) {
	for _, d := range storetest.Dialects(b) {
		for _, spread := range []time.Duration{35 * 24 * time.Hour, time.Minute} {
			name := map[bool]string{true: "spread", false: "live"}[spread > time.Hour]
			gen := newEventSource(spread)
			b.Run(fmt.Sprintf("%s/%s/events-only", d, name), func(b *testing.B) {
				db := storetest.Open(b, d)
				for b.Loop() {
					batch := gen.batch(1000)
					if _, err := db.NewInsert().Model(&batch).On("CONFLICT (id) DO NOTHING").Returning("NULL").Exec(context.Background()); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "events/s")
			})
			b.Run(fmt.Sprintf("%s/%s/InsertUsageEvents", d, name), func(b *testing.B) {
				st := store.New(storetest.Open(b, d))
				for b.Loop() {
					if _, err := st.InsertUsageEvents(context.Background(), gen.batch(1000)); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "events/s")
			})
			// What the ingest endpoint does before the insert: every event
			// checked, and the ids the batch names looked up, one query
			// per kind (the reach check).
			b.Run(fmt.Sprintf("%s/%s/Ingest", d, name), func(b *testing.B) {
				st := store.New(storetest.Open(b, d))
				for b.Loop() {
					if _, err := usage.Ingest(context.Background(), st, usage.Reach{Everywhere: true}, gen.events(1000)); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "events/s")
			})
			// Ingest and the roller's work together: the queue rolled up
			// every usage.RollInterval, as the roller does, and at the end.
			b.Run(fmt.Sprintf("%s/%s/InsertUsageEvents+roll", d, name), func(b *testing.B) {
				st := store.New(storetest.Open(b, d))
				ctx := context.Background()
				last := time.Now()
				for b.Loop() {
					if _, err := st.InsertUsageEvents(ctx, gen.batch(1000)); err != nil {
						b.Fatal(err)
					}
					if time.Since(last) >= usage.RollInterval {
						if _, err := usage.Roll(ctx, st); err != nil {
							b.Fatal(err)
						}
						last = time.Now()
					}
				}
				if _, err := usage.Roll(ctx, st); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}

// eventSource makes events shaped like a busy organization's: 20 keys,
// 8 models, three statuses.
type eventSource struct {
	r             *rand.Rand
	org, ws, cred uuid.UUID
	keys          []uuid.UUID
	spread        time.Duration
	now           time.Time
}

func newEventSource(spread time.Duration) *eventSource {
	s := &eventSource{r: rand.New(rand.NewPCG(1, 2)), org: uuid.New(), ws: uuid.New(), cred: uuid.New(), spread: spread, now: time.Now().UTC()}
	for range 20 {
		s.keys = append(s.keys, uuid.New())
	}
	return s
}

// events is a batch as a data plane ships it.
func (s *eventSource) events(n int) []wire.UsageEventIn {
	rows := s.batch(n)
	out := make([]wire.UsageEventIn, n)
	for i, r := range rows {
		out[i] = wire.UsageEventIn{ID: r.ID, OrgID: r.OrgID, WorkspaceID: r.WorkspaceID, InferenceKeyID: r.InferenceKeyID, OwnerID: r.OwnerID,
			Model: r.Model, Provider: r.Provider, ProviderCredentialID: r.ProviderCredentialID, InputTokens: r.InputTokens,
			OutputTokens: r.OutputTokens, CostUSD: catalog.FormatNanoUSD(r.CostNanoUSD), Status: r.Status, LatencyMS: r.LatencyMS,
			OccurredAt: r.OccurredAt, RequestedModel: r.RequestedModel}
	}
	return out
}

func (s *eventSource) batch(n int) []store.UsageEvent {
	out := make([]store.UsageEvent, n)
	for i := range out {
		at := s.now.Add(-time.Duration(s.r.Int64N(int64(s.spread)))).Truncate(time.Microsecond)
		key := &s.keys[s.r.IntN(len(s.keys))]
		model := fmt.Sprintf("openai/model-%d", s.r.IntN(8))
		out[i] = store.UsageEvent{ID: uuid.New(), OrgID: s.org, WorkspaceID: s.ws, InferenceKeyID: key, OwnerID: key,
			Model: model, Provider: "openai", ProviderCredentialID: &s.cred, InputTokens: s.r.Int64N(4000), OutputTokens: s.r.Int64N(800),
			CostNanoUSD: s.r.Int64N(20_000_000), Status: wire.UsageStatuses[s.r.IntN(3)], LatencyMS: s.r.Int64N(2000),
			OccurredAt: at, Bucket: store.UsageBucket(at), ReceivedAt: s.now, RequestedModel: model}
	}
	return out
}
