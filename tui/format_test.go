package tui

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

func TestFormatNumbers(t *testing.T) {
	ints := []struct {
		n             int64
		full, compact string
	}{
		{0, "0", "0"},
		{999, "999", "999"},
		{1000, "1,000", "1,000"},
		{99_999, "99,999", "99,999"},
		{123_456, "123,456", "123.5k"},
		{12_345_678, "12,345,678", "12.35M"},
		{4_560_000_000, "4,560,000,000", "4.56B"},
		{-1_234, "-1,234", "-1,234"},
	}
	for _, c := range ints {
		if got := formatInt(c.n); got != c.full {
			t.Errorf("formatInt(%d) = %q, want %q", c.n, got, c.full)
		}
		if got := formatCompact(c.n); got != c.compact {
			t.Errorf("formatCompact(%d) = %q, want %q", c.n, got, c.compact)
		}
	}
	costs := []struct{ in, want string }{
		{"0", "$0.00"},
		{"125.5", "$125.50"},
		{"1234567.891", "$1,234,567.89"},
		{"0.0042", "$0.0042"},
		// Under the column's decimals, two significant digits (issue 26,
		// row 12): never "$0.0000" for a cost that has a share.
		{"0.00042", "$0.00042"},
		{"0.000042", "$0.000042"},
		{"0.000420000", "$0.00042"},
		{"0.000000001", "$0.000000001"},
		{"-0.00042", "-$0.00042"},
		{"1", "$1.00"},
		{"-2.5", "-$2.50"},
		{"not a number", "$0.00"},
	}
	for _, c := range costs {
		if got := formatCost(parseCost(c.in)); got != c.want {
			t.Errorf("formatCost(%s) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestChange(t *testing.T) {
	cases := []struct {
		cur, prev string
		want      string
		trend     trend
	}{
		{"125.50", "100.40", "+25.0%", trendUp},
		{"75", "100", "-25.0%", trendDown},
		{"100", "100", "0.0%", trendFlat},
		{"100.00001", "100", "0.0%", trendFlat},
		{"5", "0", "new", trendNew},
		{"0", "0", "—", trendNone},
		{"0", "40", "-100.0%", trendDown},
		{"1", "3", "-66.7%", trendDown},
	}
	for _, c := range cases {
		got, tr := change(decimal.RequireFromString(c.cur), decimal.RequireFromString(c.prev))
		if got != c.want || tr != c.trend {
			t.Errorf("change(%s, %s) = %q %v, want %q %v", c.cur, c.prev, got, tr, c.want, c.trend)
		}
	}
	if ChangeInt(30, 24) != "+25.0%" || ChangeCost("0.5", "1.0") != "-50.0%" {
		t.Error("exported helpers disagree with change")
	}
}

func TestDateRange(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no time zone data:", err)
	}
	d := func(y int, m time.Month, day int, loc *time.Location) time.Time {
		return time.Date(y, m, day, 0, 0, 0, 0, loc)
	}
	cases := []struct {
		start, end time.Time
		tz, want   string
	}{
		{d(2026, 4, 5, time.UTC), d(2026, 5, 5, time.UTC), "UTC", "Apr 5 – May 4, 2026"},
		{d(2026, 5, 4, time.UTC), d(2026, 5, 5, time.UTC), "", "May 4, 2026"},
		// Paris midnight, given as UTC instants: still the local days.
		{d(2026, 5, 1, paris).UTC(), d(2026, 5, 8, paris).UTC(), "Europe/Paris", "May 1 – May 7, 2026"},
		// An open end (now) is that day.
		{d(2026, 5, 1, time.UTC), time.Date(2026, 5, 4, 13, 7, 0, 0, time.UTC), "UTC", "May 1 – May 4, 2026"},
		{d(2025, 12, 20, time.UTC), d(2026, 1, 3, time.UTC), "UTC", "Dec 20, 2025 – Jan 2, 2026"},
	}
	for _, c := range cases {
		if got := DateRange(c.start, c.end, c.tz); got != c.want {
			t.Errorf("DateRange(%v, %v, %q) = %q, want %q", c.start, c.end, c.tz, got, c.want)
		}
	}
}
