package usage_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/server/usage"
)

// BenchmarkReport times reports over a stored history of
// GW_BENCH_USAGE_EVENTS events (default 100,000) spread over 35 days, 20
// keys, 8 models and three statuses, on each available database:
//
//	GW_BENCH_USAGE_EVENTS=1000000 go test -run '^$' -bench Report -benchtime 20x ./server/usage
//
// "events" is the same 30-day UTC report summed from the raw events, as
// reports were made before the rollups: the baseline of the same run.
func BenchmarkReport(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("GW_BENCH_USAGE_EVENTS")); err == nil && v > 0 {
		n = v
	}
	for _, d := range storetest.Dialects(b) {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			st := store.New(storetest.Open(b, d))
			org := uuid.New()
			now := time.Now().UTC()
			start := time.Now()
			fillHistory(b, st, org, n, now)
			if _, err := usage.Roll(ctx, st); err != nil {
				b.Fatal(err)
			}
			b.Logf("%s: stored %d events in %v (%.0f events/s)", d, n, time.Since(start), float64(n)/time.Since(start).Seconds())
			kolkata, _ := time.LoadLocation("Asia/Kolkata")
			report := func(loc *time.Location, period string) func(b *testing.B) {
				return func(b *testing.B) {
					w, err := usage.WindowFor(period, loc, now, usage.Custom{})
					if err != nil {
						b.Fatal(err)
					}
					for b.Loop() {
						if _, err := usage.Report(ctx, st, usage.Query{Window: w, Filter: store.UsageFilter{OrgID: org}}, now); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			b.Run("30d-UTC", report(time.UTC, "30d"))
			b.Run("30d-Kolkata", report(kolkata, "30d"))
			b.Run("7d-UTC", report(time.UTC, "7d"))
			b.Run("breakdown-model-30d", func(b *testing.B) {
				w, _ := usage.WindowFor("30d", time.UTC, now, usage.Custom{})
				for b.Loop() {
					if _, err := usage.Breakdown(ctx, st, usage.Query{Window: w, Filter: store.UsageFilter{OrgID: org}}, "model"); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("events-30d-UTC", func(b *testing.B) {
				w, _ := usage.WindowFor("30d", time.UTC, now, usage.Custom{})
				for b.Loop() {
					var rows []store.UsageBucketSums
					err := st.DB().NewSelect().Model((*store.UsageEvent)(nil)).ColumnExpr("bucket").
						ColumnExpr("COUNT(*) AS requests, SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens, "+
							"SUM(cache_read_tokens) AS cache_read_tokens, SUM(cache_write_tokens) AS cache_write_tokens, SUM(cost_nano_usd) AS cost_nano_usd").
						Where("org_id = ?", org).Where("occurred_at >= ?", w.Start).Where("occurred_at < ?", w.End).
						Group("bucket").Scan(ctx, &rows)
					if err != nil {
						b.Fatal(err)
					}
					var prev store.UsageSums
					err = st.DB().NewSelect().Model((*store.UsageEvent)(nil)).
						ColumnExpr("COUNT(*) AS requests, COALESCE(SUM(cost_nano_usd), 0) AS cost_nano_usd").
						Where("org_id = ?", org).Where("occurred_at >= ?", w.PrevStart).Where("occurred_at < ?", w.PrevEnd).Scan(ctx, &prev)
					if err != nil {
						b.Fatal(err)
					}
					_ = usage.Days(w, rows)
				}
			})
		})
	}
}

// fillHistory stores n events spread over 35 days in batches of 1,000,
// as data planes ship them.
func fillHistory(b testing.TB, st *store.Store, org uuid.UUID, n int, now time.Time) {
	gen := newEventSource(35 * 24 * time.Hour)
	gen.org, gen.now = org, now
	for done := 0; done < n; done += 1000 {
		if _, err := st.InsertUsageEvents(context.Background(), gen.batch(min(1000, n-done))); err != nil {
			b.Fatal(err)
		}
	}
}
