// Package usage computes usage reports: the period windows of spec 4.6 in a
// time zone, and the folding of stored 15-minute sums into local days. It
// is pure (the clock is passed in).
package usage

import (
	"errors"
	"fmt"
	"time"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/wire"
)

// Periods are the report periods of spec 4.6.
var Periods = wire.UsagePeriods

// DefaultPeriod is used when the query names none.
const DefaultPeriod = "30d"

// MaxCustomDays bounds a custom period, so one report cannot scan years.
const MaxCustomDays = 366

// Window is a report's period and the one it is compared with, each
// half-open [start, end).
type Window struct {
	Start, End         time.Time
	PrevStart, PrevEnd time.Time
	Location           *time.Location
}

// Custom is a custom period: whole local days [StartDate, EndDate]
// (YYYY-MM-DD, inclusive) or instants [StartAt, EndAt).
type Custom struct {
	StartDate, EndDate string
	StartAt, EndAt     *time.Time
}

// ErrCustomRange explains a custom period that cannot be used.
var ErrCustomRange = errors.New("invalid custom period")

// WindowFor computes the window of a period ending now in loc.
//
// today, 7d and 30d run from the local midnight that starts the first day
// (today, six days ago, 29 days ago) to now; month_to_date from the first of
// the month. Each is compared with the span of equal length just before it,
// except month_to_date, which is compared with the same days of the
// previous month (clipped to its end). A custom period is compared with the
// span of equal length before it.
func WindowFor(period string, loc *time.Location, now time.Time, c Custom) (Window, error) {
	now = now.In(loc)
	y, m, d := now.Date()
	w := Window{End: now, Location: loc}
	switch period {
	case "today":
		w.Start = LocalMidnight(y, m, d, loc)
		w.PrevStart, w.PrevEnd = LocalMidnight(y, m, d-1, loc), now.AddDate(0, 0, -1)
	case "7d", "30d":
		days := 7
		if period == "30d" {
			days = 30
		}
		w.Start = LocalMidnight(y, m, d-(days-1), loc)
		w.PrevStart, w.PrevEnd = LocalMidnight(y, m, d-(2*days-1), loc), w.End.AddDate(0, 0, -days)
	case "month_to_date":
		w.Start = LocalMidnight(y, m, 1, loc)
		w.PrevStart = LocalMidnight(y, m-1, 1, loc)
		w.PrevEnd = w.PrevStart.Add(now.Sub(w.Start))
		if w.PrevEnd.After(w.Start) {
			w.PrevEnd = w.Start
		}
	case "custom":
		if err := customWindow(&w, c, loc); err != nil {
			return Window{}, err
		}
	default:
		return Window{}, fmt.Errorf("unknown period %q", period)
	}
	return w, nil
}

func customWindow(w *Window, c Custom, loc *time.Location) error {
	switch {
	case c.StartDate != "" || c.EndDate != "":
		if c.StartDate == "" || c.EndDate == "" {
			return fmt.Errorf("%w: start_date and end_date go together", ErrCustomRange)
		}
		s, err1 := time.Parse(time.DateOnly, c.StartDate)
		e, err2 := time.Parse(time.DateOnly, c.EndDate)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("%w: dates must be YYYY-MM-DD", ErrCustomRange)
		}
		w.Start = LocalMidnight(s.Year(), s.Month(), s.Day(), loc)
		w.End = LocalMidnight(e.Year(), e.Month(), e.Day()+1, loc)
	case c.StartAt != nil || c.EndAt != nil:
		if c.StartAt == nil || c.EndAt == nil {
			return fmt.Errorf("%w: start_at and end_at go together", ErrCustomRange)
		}
		w.Start, w.End = c.StartAt.In(loc), c.EndAt.In(loc)
	default:
		return fmt.Errorf("%w: give start_date and end_date, or start_at and end_at", ErrCustomRange)
	}
	if !w.End.After(w.Start) {
		return fmt.Errorf("%w: the end must come after the start", ErrCustomRange)
	}
	if w.End.Sub(w.Start) > MaxCustomDays*24*time.Hour+time.Hour {
		return fmt.Errorf("%w: at most %d days", ErrCustomRange, MaxCustomDays)
	}
	span := w.End.Sub(w.Start)
	w.PrevStart, w.PrevEnd = w.Start.Add(-span), w.Start
	return nil
}

// Day is one local day of a report and its sums.
type Day struct {
	Date time.Time // local midnight
	Sums store.UsageSums
}

// Days folds bucket sums into the local days of the window, one entry per
// day from the window's first day to its last, empty days included. Each
// sum must lie inside one local day (a 15-minute slot always does; a
// rollup hour or day does when planned with Midnights' cuts) and is
// counted in the day its first slot falls in.
func Days(w Window, buckets []store.UsageBucketSums) []Day {
	var days []Day
	index := map[string]int{}
	for _, day := range localDays(w) {
		index[day.Format(time.DateOnly)] = len(days)
		days = append(days, Day{Date: day})
	}
	for _, b := range buckets {
		t := time.Unix(b.Bucket*store.UsageBucketSeconds, 0).In(w.Location)
		if t.Before(w.Start) {
			t = w.Start // the slot of a window starting between slots
		}
		if i, ok := index[t.Format(time.DateOnly)]; ok {
			days[i].Sums.Add(b.UsageSums)
		}
	}
	return days
}

// Midnights are the local midnights inside the window: the instants no
// summed span may straddle for Days to place it.
func Midnights(w Window) []time.Time {
	days := localDays(w)
	var out []time.Time
	for _, d := range days {
		if d.After(w.Start) {
			out = append(out, d)
		}
	}
	return out
}

// localDays are the local midnights starting each day of the window.
func localDays(w Window) []time.Time {
	var out []time.Time
	y, m, d := w.Start.In(w.Location).Date()
	for i := 0; ; i++ {
		day := LocalMidnight(y, m, d+i, w.Location)
		if !day.Before(w.End) {
			return out
		}
		out = append(out, day)
	}
}

// LocalMidnight is the first instant of the calendar day y-m-d in loc
// (out-of-range days normalise, as time.Date's do). Where a day begins with
// a daylight-saving gap (clocks jump from 23:59:59 to 01:00, as in Santiago
// or Beirut), midnight does not exist and time.Date would give 23:00 of the
// day before; the day then starts at the end of the gap.
func LocalMidnight(y int, m time.Month, d int, loc *time.Location) time.Time {
	want := time.Date(y, m, d, 12, 0, 0, 0, loc) // noon always exists
	t := time.Date(y, m, d, 0, 0, 0, 0, loc)
	for i := 0; i < 8 && t.Day() != want.Day(); i++ {
		t = t.Add(15 * time.Minute)
		t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), 0, 0, loc)
	}
	return t
}
