package usage_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/server/usage"
	"github.com/gw-gateway/gw/wire"
)

// BenchmarkFocus times a 30-day FOCUS 1.3 export over a history of
// GW_BENCH_USAGE_EVENTS priced events (default 20,000, over 35 days, 4
// workspaces, 8 models, 3 tag sets, every class), beside the 30-day usage report of the same run, the
// baseline:
//
//	GW_BENCH_USAGE_EVENTS=20000 go test -run '^$' -bench Focus -benchtime 5x ./server/usage
func BenchmarkFocus(b *testing.B) {
	n := 20_000
	if v, err := strconv.Atoi(os.Getenv("GW_BENCH_USAGE_EVENTS")); err == nil && v > 0 {
		n = v
	}
	for _, d := range storetest.Dialects(b) {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			st := store.New(storetest.Open(b, d))
			org := uuid.New()
			now := time.Now().UTC()
			fillPricedHistory(b, st, org, n, now)
			if _, err := usage.Roll(ctx, st); err != nil {
				b.Fatal(err)
			}
			w, err := usage.WindowFor("custom", time.UTC, now, usage.Custom{
				StartDate: now.AddDate(0, 0, -29).Format(time.DateOnly), EndDate: now.Format(time.DateOnly)})
			if err != nil {
				b.Fatal(err)
			}
			b.Run("focus-30d", func(b *testing.B) {
				for b.Loop() {
					_, rows, err := usage.Focus(ctx, st, usage.FocusQuery{OrgID: org, OrgName: "bench", Window: w, Version: "1.3"})
					if err != nil || len(rows) == 0 {
						b.Fatal(err, len(rows))
					}
				}
			})
			b.Run("report-30d", func(b *testing.B) {
				for b.Loop() {
					if _, err := usage.Report(ctx, st, usage.Query{Window: w, Filter: store.UsageFilter{OrgID: org}}, now); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// fillPricedHistory stores n events with their prices and tags, every
// token class in use, spread over 35 days, in batches of 1,000.
func fillPricedHistory(b testing.TB, st *store.Store, org uuid.UUID, n int, now time.Time) {
	wss := []uuid.UUID{uuid.New(), uuid.New(), uuid.New(), uuid.New()}
	tagSets := []store.Tags{nil, {"team": "search"}, {"team": "ads", "env": "prod"}}
	prices := &wire.UsagePrices{InputPerMTok: "2.5", OutputPerMTok: "10", CacheReadPerMTok: "1.25", CacheWritePerMTok: "3.125", CacheWrite1hPerMTok: "5"}
	span := 35 * 24 * time.Hour
	var batch []store.UsageEvent
	for i := range n {
		at := now.Add(-span * time.Duration(i) / time.Duration(n))
		batch = append(batch, store.UsageEvent{ID: uuid.New(), OrgID: org, WorkspaceID: wss[i%4], Model: fmt.Sprintf("openai/m%d", i%8),
			Provider: "openai", RequestedModel: "openai/m", Status: "ok", OccurredAt: at, ReceivedAt: at, Bucket: store.UsageBucket(at),
			InputTokens: 1000, OutputTokens: 300, ReasoningTokens: 100, CacheReadTokens: 500, CacheWriteTokens: 200, CacheWrite1hTokens: 50,
			CostNanoUSD: 6_843_750, Tags: tagSets[i%3], Provenance: &store.UsageProvenance{Prices: prices}})
		if len(batch) == 1000 || i == n-1 {
			if _, err := st.InsertUsageEvents(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}
