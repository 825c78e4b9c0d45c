// Package usage computes usage reports: the period windows of spec 4.6 in a
// time zone, and the folding of stored 15-minute sums into local days. It
// is pure (the clock is passed in).
package usage

import (
	"errors"
	"fmt"
	"time"

	"github.com/gw-gateway/gw/server/store"
)

// Periods are the report periods of spec 4.6.
var Periods = []string{"today", "7d", "30d", "month_to_date", "custom"}

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
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	w := Window{End: now, Location: loc}
	switch period {
	case "today":
		w.Start = midnight
		w.PrevStart, w.PrevEnd = midnight.AddDate(0, 0, -1), now.AddDate(0, 0, -1)
	case "7d", "30d":
		days := 7
		if period == "30d" {
			days = 30
		}
		w.Start = midnight.AddDate(0, 0, -(days - 1))
		w.PrevStart, w.PrevEnd = w.Start.AddDate(0, 0, -days), w.End.AddDate(0, 0, -days)
	case "month_to_date":
		w.Start = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, loc)
		w.PrevStart = w.Start.AddDate(0, -1, 0)
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
		s, err1 := time.ParseInLocation(time.DateOnly, c.StartDate, loc)
		e, err2 := time.ParseInLocation(time.DateOnly, c.EndDate, loc)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("%w: dates must be YYYY-MM-DD", ErrCustomRange)
		}
		w.Start, w.End = s, e.AddDate(0, 0, 1)
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
// day from the window's first day to its last, empty days included. A
// 15-minute bucket lies wholly inside one local day in every time zone.
func Days(w Window, buckets []store.UsageBucketSums) []Day {
	var days []Day
	index := map[string]int{}
	for d := dayOf(w.Start, w.Location); d.Before(w.End); d = d.AddDate(0, 0, 1) {
		index[d.Format(time.DateOnly)] = len(days)
		days = append(days, Day{Date: d})
	}
	for _, b := range buckets {
		t := time.Unix(b.Bucket*store.UsageBucketSeconds, 0).In(w.Location)
		if i, ok := index[t.Format(time.DateOnly)]; ok {
			days[i].Sums.Add(b.UsageSums)
		}
	}
	return days
}

func dayOf(t time.Time, loc *time.Location) time.Time {
	t = t.In(loc)
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
}
