package usage

import (
	"errors"
	"testing"
	"time"

	"github.com/gw-gateway/gw/server/store"
)

func mustLoc(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestWindowFor(t *testing.T) {
	paris := mustLoc(t, "Europe/Paris")
	now := time.Date(2026, 3, 31, 15, 30, 0, 0, paris) // DST began on March 29
	cases := []struct {
		period                 string
		start, end, prevS, prE string
	}{
		{"today", "2026-03-31T00:00:00+02:00", "2026-03-31T15:30:00+02:00", "2026-03-30T00:00:00+02:00", "2026-03-30T15:30:00+02:00"},
		{"7d", "2026-03-25T00:00:00+01:00", "2026-03-31T15:30:00+02:00", "2026-03-18T00:00:00+01:00", "2026-03-24T15:30:00+01:00"},
		{"30d", "2026-03-02T00:00:00+01:00", "2026-03-31T15:30:00+02:00", "2026-01-31T00:00:00+01:00", "2026-03-01T15:30:00+01:00"},
		// 30 days and 15.5 hours into March; February has only 28 days, so
		// the comparison stops at its end.
		{"month_to_date", "2026-03-01T00:00:00+01:00", "2026-03-31T15:30:00+02:00", "2026-02-01T00:00:00+01:00", "2026-03-01T00:00:00+01:00"},
	}
	for _, c := range cases {
		w, err := WindowFor(c.period, paris, now, Custom{})
		if err != nil {
			t.Fatal(err)
		}
		got := []string{w.Start.Format(time.RFC3339), w.End.Format(time.RFC3339), w.PrevStart.Format(time.RFC3339), w.PrevEnd.Format(time.RFC3339)}
		want := []string{c.start, c.end, c.prevS, c.prE}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: field %d = %s, want %s", c.period, i, got[i], want[i])
			}
		}
	}
	mid := time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC)
	w, _ := WindowFor("month_to_date", time.UTC, mid, Custom{})
	if w.PrevStart.Format(time.DateTime) != "2026-04-01 00:00:00" || w.PrevEnd.Format(time.DateTime) != "2026-04-10 12:00:00" {
		t.Fatalf("month_to_date comparison: %v %v", w.PrevStart, w.PrevEnd)
	}
}

func TestCustomWindow(t *testing.T) {
	now := time.Now()
	w, err := WindowFor("custom", time.UTC, now, Custom{StartDate: "2026-01-01", EndDate: "2026-01-31"})
	if err != nil || w.End.Format(time.DateOnly) != "2026-02-01" || w.PrevStart.Format(time.DateOnly) != "2025-12-01" {
		t.Fatalf("dates: %+v %v", w, err)
	}
	s, e := time.Date(2026, 1, 1, 6, 0, 0, 0, time.UTC), time.Date(2026, 1, 1, 18, 0, 0, 0, time.UTC)
	if w, err := WindowFor("custom", time.UTC, now, Custom{StartAt: &s, EndAt: &e}); err != nil || !w.PrevStart.Equal(s.Add(-12*time.Hour)) {
		t.Fatalf("instants: %+v %v", w, err)
	}
	bad := []Custom{
		{}, {StartDate: "2026-01-01"}, {StartDate: "2026-02-01", EndDate: "2026-01-01"}, {StartDate: "01/01/2026", EndDate: "2026-01-02"},
		{StartDate: "2024-01-01", EndDate: "2026-01-01"}, {StartAt: &s}, {StartAt: &e, EndAt: &s},
	}
	for i, c := range bad {
		if _, err := WindowFor("custom", time.UTC, now, c); !errors.Is(err, ErrCustomRange) {
			t.Errorf("case %d accepted: %v", i, err)
		}
	}
	if _, err := WindowFor("fortnight", time.UTC, now, Custom{}); err == nil {
		t.Fatal("unknown period accepted")
	}
}

func TestDaysFoldBucketsInLocalTime(t *testing.T) {
	kolkata := mustLoc(t, "Asia/Kolkata") // +05:30: days start at 18:30 UTC
	now := time.Date(2026, 6, 3, 10, 0, 0, 0, kolkata)
	w, _ := WindowFor("7d", kolkata, now, Custom{})
	at := func(s string) int64 { tm, _ := time.Parse(time.RFC3339, s); return store.UsageBucket(tm) }
	buckets := []store.UsageBucketSums{
		{Bucket: at("2026-06-02T18:15:00Z"), UsageSums: store.UsageSums{Requests: 1, CostNanoUSD: 5}}, // June 2, 23:45 local
		{Bucket: at("2026-06-02T18:30:00Z"), UsageSums: store.UsageSums{Requests: 2, CostNanoUSD: 7}}, // June 3, 00:00 local
		{Bucket: at("2026-05-01T00:00:00Z"), UsageSums: store.UsageSums{Requests: 9}},                 // outside
	}
	days := Days(w, buckets)
	if len(days) != 7 || days[0].Date.Format(time.DateOnly) != "2026-05-28" {
		t.Fatalf("days: %d from %v", len(days), days[0].Date)
	}
	if days[5].Sums.Requests != 1 || days[6].Sums.Requests != 2 || days[6].Sums.CostNanoUSD != 7 {
		t.Fatalf("folding: %+v %+v", days[5].Sums, days[6].Sums)
	}
}
