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
	"github.com/gw-gateway/gw/wire"
)

// BenchmarkGuardrailReport times the guardrail report (read from the
// events, grouped by identical record) over GW_BENCH_USAGE_EVENTS events
// (default 100,000) spread over 35 days, every one with two guardrails'
// records in one of a few outcome combinations, beside the same period's
// usage breakdown by model (from the rollups) in the same run:
//
//	go test -run '^$' -bench GuardrailReport -benchtime 20x ./server/usage
func BenchmarkGuardrailReport(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("GW_BENCH_USAGE_EVENTS")); err == nil && v > 0 {
		n = v
	}
	outcomes := []string{"passed", "passed", "passed", "passed", "redacted", "blocked", "flagged", "errored", "skipped"}
	for _, d := range storetest.Dialects(b) {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			st := store.New(storetest.Open(b, d))
			org := uuid.New()
			now := time.Now().UTC()
			gen := newEventSource(35 * 24 * time.Hour)
			gen.org, gen.now = org, now
			for done := 0; done < n; done += 1000 {
				batch := gen.batch(min(1000, n-done))
				for i := range batch {
					o := outcomes[(done+i)%len(outcomes)]
					batch[i].Guardrails = store.UsageGuardrails{
						{ID: "g-secrets", Name: "no-secrets", Stage: "input", Outcome: o, Detectors: []string{}},
						{ID: "g-pii", Name: "pii", Stage: "output", Outcome: outcomes[(done+i)%4], Detectors: []string{}},
					}
				}
				if _, err := st.InsertUsageEvents(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := usage.Roll(ctx, st); err != nil {
				b.Fatal(err)
			}
			w, err := usage.WindowFor("30d", time.UTC, now, usage.Custom{})
			if err != nil {
				b.Fatal(err)
			}
			q := usage.Query{Window: w, Filter: store.UsageFilter{OrgID: org}}
			b.Run("guardrails-30d", func(b *testing.B) {
				var r wire.GuardrailReport
				for b.Loop() {
					if r, err = usage.GuardrailReport(ctx, st, q, now); err != nil {
						b.Fatal(err)
					}
				}
				if len(r.Rows) != 2 {
					b.Fatalf("rows: %+v", r.Rows)
				}
			})
			b.Run("breakdown-model-30d", func(b *testing.B) {
				for b.Loop() {
					if _, err := usage.Breakdown(ctx, st, q, "model"); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
