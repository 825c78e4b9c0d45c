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
	"github.com/gw-gateway/gw/server/tags"
	"github.com/gw-gateway/gw/server/usage"
)

// BenchmarkReportTags times reports over a history with three tag keys
// against the same reports over the same history without tags, stored in
// the same database in the same run (issue 21): GW_BENCH_USAGE_EVENTS
// events (default 100,000) per history, spread over 35 days, 20 keys and
// 8 models as BenchmarkReport's. In the tagged history every event
// carries team (its key's, of 5), env (its key's, prod or staging) and
// feature (one of 4 per request): 40 tag sets.
//
//	GW_BENCH_USAGE_EVENTS=1000000 go test -run '^$' -bench ReportTags -benchtime 20x ./server/usage
//
// Pairs to compare, each "tagged/…" against "plain/…": report-30d (the
// unfiltered report), breakdown-30d (by tag:team, against by model) and
// filtered-30d (tag=team:t1, against model_id=openai/model-1).
func BenchmarkReportTags(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("GW_BENCH_USAGE_EVENTS")); err == nil && v > 0 {
		n = v
	}
	for _, d := range storetest.Dialects(b) {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			st := store.New(storetest.Open(b, d))
			plain, tagged := uuid.New(), uuid.New()
			now := time.Now().UTC()
			start := time.Now()
			fillHistory(b, st, plain, n, now)
			fillTaggedHistory(b, st, tagged, n, now)
			if _, err := usage.Roll(ctx, st); err != nil {
				b.Fatal(err)
			}
			// Statistics as autovacuum would have them after a load this
			// size, so both histories are planned as in steady state.
			if d == storetest.Postgres {
				if _, err := st.DB().ExecContext(ctx, "ANALYZE"); err != nil {
					b.Fatal(err)
				}
			}
			b.Logf("%s: stored 2 × %d events in %v", d, n, time.Since(start))
			w, err := usage.WindowFor("30d", time.UTC, now, usage.Custom{})
			if err != nil {
				b.Fatal(err)
			}
			report := func(f store.UsageFilter) func(b *testing.B) {
				return func(b *testing.B) {
					for b.Loop() {
						if _, err := usage.Report(ctx, st, usage.Query{Window: w, Filter: f}, now); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			breakdown := func(org uuid.UUID, by string) func(b *testing.B) {
				return func(b *testing.B) {
					for b.Loop() {
						bd, err := usage.Breakdown(ctx, st, usage.Query{Window: w, Filter: store.UsageFilter{OrgID: org}}, by)
						if err != nil || len(bd.Rows) == 0 {
							b.Fatal(err, len(bd.Rows))
						}
					}
				}
			}
			b.Run("plain/report-30d", report(store.UsageFilter{OrgID: plain}))
			b.Run("tagged/report-30d", report(store.UsageFilter{OrgID: tagged}))
			b.Run("plain/breakdown-30d", breakdown(plain, "model"))
			b.Run("tagged/breakdown-30d", breakdown(tagged, "tag:team"))
			b.Run("plain/filtered-30d", report(store.UsageFilter{OrgID: plain, Model: "openai/model-1"}))
			b.Run("tagged/filtered-30d", report(store.UsageFilter{OrgID: tagged, Tags: []store.TagPair{{Key: "team", Value: "t1"}}}))
		})
	}
}

// fillTaggedHistory is fillHistory with three tag keys on every event.
func fillTaggedHistory(b testing.TB, st *store.Store, org uuid.UUID, n int, now time.Time) {
	gen := newEventSource(35 * 24 * time.Hour)
	gen.org, gen.now = org, now
	keyTags := map[uuid.UUID][2]string{}
	for i, k := range gen.keys {
		keyTags[k] = [2]string{fmt.Sprintf("t%d", i%5), []string{"prod", "staging"}[i%2]}
	}
	for done := 0; done < n; done += 1000 {
		batch := gen.batch(min(1000, n-done))
		for i := range batch {
			kt := keyTags[*batch[i].InferenceKeyID]
			t := store.Tags{"team": kt[0], "env": kt[1], "feature": fmt.Sprintf("f%d", gen.r.IntN(4))}
			id := tags.SetID(org, t)
			batch[i].Tags, batch[i].TagSetID = t, &id
		}
		if _, err := st.InsertUsageEvents(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
}
