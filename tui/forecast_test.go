package tui

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/gw-gateway/gw/wire"
)

func TestRunOut(t *testing.T) {
	now := time.Date(2026, 11, 20, 14, 0, 0, 0, time.UTC)
	monthEnd := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	midnight := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	week := 7 * 24 * time.Hour
	d := decimal.RequireFromString
	cases := []struct {
		name        string
		left, spent string
		window      time.Duration
		now, end    time.Time
		want        Outcome
		at          time.Time
		rate        string
	}{
		// 70 USD a week is 10 a day: 70 left lasts exactly 7 days.
		{"runs out", "70", "70", week, now, monthEnd, OutcomeRunsOut, now.AddDate(0, 0, 7), "10"},
		{"lasts the period", "200", "70", week, now, monthEnd, OutcomeLastsPeriod, time.Time{}, "10"},
		// 10 a day with 100 left, 10 days before the period's end: out at
		// the end exactly, which is lasting it.
		{"runs out at the end: lasts", "100", "70", week, midnight, monthEnd, OutcomeLastsPeriod, time.Time{}, "10"},
		{"one nano-dollar less runs out", "99.999999999", "70", week, midnight, monthEnd, OutcomeRunsOut,
			time.Date(2026, 11, 30, 23, 59, 0, 0, time.UTC), "10"},
		{"no spend", "5", "0", week, now, monthEnd, OutcomeNoSpend, time.Time{}, "0"},
		{"exhausted", "0", "70", week, now, monthEnd, OutcomeExhausted, time.Time{}, "10"},
		{"overspent", "-0.01", "0", week, now, monthEnd, OutcomeExhausted, time.Time{}, "0"},
		// 6.5 days measured: the rate is over what was measured.
		{"partial window", "1.3", "6.5", week - 12*time.Hour, now, monthEnd, OutcomeRunsOut, now.Add(31*time.Hour + 12*time.Minute), "1"},
		// Cut to the minute, earlier: 1 USD at 1 USD a week is 7 days;
		// 0.000001 less is 0.6048 s earlier, so 13:59.
		{"truncated to the minute", "0.999999", "1", week, now, monthEnd, OutcomeRunsOut, now.AddDate(0, 0, 7).Add(-time.Minute), "0.142857143"},
		{"sub-cent spend", "0.50", "0.000000007", week, now, monthEnd, OutcomeLastsPeriod, time.Time{}, "0.000000001"},
		{"period already over", "5", "70", week, monthEnd.Add(time.Hour), monthEnd, OutcomeLastsPeriod, time.Time{}, "10"},
		{"daily budget", "1", "70", week, now, time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC), OutcomeRunsOut, now.Add(144 * time.Minute), "10"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := RunOut(d(c.left), d(c.spent), c.window, c.now, c.end)
			if f.Outcome != c.want || !f.At.Equal(c.at) {
				t.Fatalf("RunOut = %s at %s, want %s at %s", f.Outcome, f.At, c.want, c.at)
			}
			if !f.RatePerDay.Equal(d(c.rate)) {
				t.Errorf("rate %s, want %s", f.RatePerDay, c.rate)
			}
		})
	}
}

func TestForecastString(t *testing.T) {
	at := time.Date(2026, 11, 27, 14, 0, 0, 0, time.FixedZone("CET", 3600))
	for f, want := range map[Forecast]string{
		{Outcome: OutcomeRunsOut, At: at}: "runs out on 2026-11-27 13:00 UTC",
		{Outcome: OutcomeLastsPeriod}:     "lasts the period",
		{Outcome: OutcomeNoSpend}:         "—",
		{Outcome: OutcomeExhausted}:       "exhausted",
		{Outcome: OutcomeUnknown}:         "?",
	} {
		if got := f.String(); got != want {
			t.Errorf("%+v: %q, want %q", f, got, want)
		}
	}
}

func TestForecastBudget(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	end := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	k1, k2 := uuid.New(), uuid.New()
	spend := &RecentSpend{Window: 7 * 24 * time.Hour, Workspace: decimal.NewFromInt(70),
		Keys: map[string]decimal.Decimal{k1.String(): decimal.NewFromInt(7), k2.String(): decimal.NewFromInt(14)}}
	row := func(agg string, key *uuid.UUID, amount, spent string) wire.BudgetState {
		return wire.BudgetState{Aggregation: agg, InferenceKeyID: key, AmountUSD: amount, SpentUSD: spent,
			ReservedUSD: "3", RemainingUSD: "0", PeriodEnd: end}
	}
	cases := []struct {
		name  string
		b     wire.BudgetState
		spend *RecentSpend
		want  string
	}{
		// 10 a day, 20 left (the reserved 3 does not count): 2 days.
		{"shared at the workspace's rate", row("shared", nil, "50", "30"), spend, "runs out on 2026-11-22 12:00 UTC"},
		{"per key at its key's rate", row("per_key", &k1, "50", "30"), spend, "lasts the period"},
		{"per key, the other key", row("per_key", &k2, "30", "26"), spend, "runs out on 2026-11-22 12:00 UTC"},
		{"per key before any key: the busiest", row("per_key", nil, "4", "0"), spend, "runs out on 2026-11-22 12:00 UTC"},
		{"per key, a key without spend", row("per_key", ptr(uuid.New()), "4", "0"), spend, "—"},
		{"spend unreadable", row("shared", nil, "50", "30"), nil, "?"},
		{"spend unreadable, exhausted all the same", row("shared", nil, "50", "50"), nil, "exhausted"},
		{"malformed amount", row("shared", nil, "lots", "30"), spend, "?"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ForecastBudget(c.b, c.spend, now).String(); got != c.want {
				t.Fatalf("%q, want %q", got, c.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
