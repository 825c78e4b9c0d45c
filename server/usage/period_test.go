package usage

import (
	"errors"
	"strings"
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

// In Santiago, DST begins at midnight on 2025-09-07: that day starts at
// 01:00, and the days around it must not shift or merge.
func TestDaysAcrossAMidnightDSTGap(t *testing.T) {
	santiago := mustLoc(t, "America/Santiago")
	now := time.Date(2025, 9, 10, 12, 0, 0, 0, santiago)
	w, err := WindowFor("7d", santiago, now, Custom{})
	if err != nil {
		t.Fatal(err)
	}
	bucket := store.UsageBucket(time.Date(2025, 9, 10, 10, 0, 0, 0, santiago))
	days := Days(w, []store.UsageBucketSums{{Bucket: bucket, UsageSums: store.UsageSums{Requests: 1}}})
	var dates []string
	for _, d := range days {
		dates = append(dates, d.Date.Format("01-02T15:04"))
	}
	want := []string{"09-04T00:00", "09-05T00:00", "09-06T00:00", "09-07T01:00", "09-08T00:00", "09-09T00:00", "09-10T00:00"}
	if strings.Join(dates, " ") != strings.Join(want, " ") {
		t.Fatalf("days %v, want %v", dates, want)
	}
	if days[6].Sums.Requests != 1 {
		t.Fatalf("the last day lost its usage: %+v", days[6])
	}
	c, err := WindowFor("custom", santiago, now, Custom{StartDate: "2025-09-07", EndDate: "2025-09-07"})
	if err != nil || c.Start.Format("01-02T15:04") != "09-07T01:00" || c.End.Format("01-02T15:04") != "09-08T00:00" {
		t.Fatalf("custom day across the gap: %v – %v (%v)", c.Start, c.End, err)
	}
}
