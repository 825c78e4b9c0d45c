package store

import (
	"cmp"
	"slices"
	"time"
)

// UsageTiers are the widths of the usage rollups, in 15-minute slots:
// a quarter hour, a UTC hour and a UTC day.
var UsageTiers = []int64{1, 4, 96}

// coarseTiers are the tiers of every grouping but the one by no
// dimension: their quarter-hour rows would be nearly one per event (or
// per event and value) when events spread over weeks, so the quarters a
// report needs from them (where a local midnight falls inside a UTC hour,
// as in Kolkata) are read from the events.
var coarseTiers = []int64{4, 96}

// BucketRange is the half-open range [Lo, Hi) of bucket indexes of one
// tier.
type BucketRange struct{ Lo, Hi int64 }

// TimeRange is the half-open range of instants [From, To); a zero end is
// open.
type TimeRange struct{ From, To time.Time }

// UsagePlan says where the sums of a span of time are read: each part from
// the coarsest rollup tier whose buckets fit it, and only the ragged ends
// that no 15-minute slot covers wholly from the events themselves.
type UsagePlan struct {
	Raw   []TimeRange
	Tiers map[int64][]BucketRange // by tier; ranges sorted and disjoint
	tiers []int64
}

// PlanUsage plans the sums of [from, to) from the given tiers (finest
// first) such that no rollup bucket read straddles one of cuts (a report's
// local midnights), so that every row read belongs wholly to one side of
// each cut. Without both ends the whole span is read from the events.
func PlanUsage(from, to time.Time, cuts []time.Time, tiers []int64) UsagePlan {
	p := UsagePlan{Tiers: map[int64][]BucketRange{}, tiers: tiers}
	if from.IsZero() || to.IsZero() {
		p.Raw = []TimeRange{{From: from, To: to}}
		return p
	}
	if !to.After(from) {
		return p
	}
	start := from
	for _, c := range append(slices.Clone(cuts), to) {
		if !c.After(start) || c.After(to) {
			continue
		}
		p.segment(start, c)
		start = c
	}
	for t, rs := range p.Tiers {
		p.Tiers[t] = mergeRanges(rs)
	}
	p.Raw = mergeTimes(p.Raw)
	return p
}

// segment plans [a, b), which no cut divides.
func (p *UsagePlan) segment(a, b time.Time) {
	lo := ceilDiv(a.Unix()+boolInt(a.Nanosecond() > 0), UsageBucketSeconds)
	hi := floorDiv(b.Unix(), UsageBucketSeconds)
	if lo >= hi {
		p.Raw = append(p.Raw, TimeRange{a, b})
		return
	}
	if s := time.Unix(lo*UsageBucketSeconds, 0); a.Before(s) {
		p.Raw = append(p.Raw, TimeRange{a, s})
	}
	p.cover(lo, hi, len(p.tiers)-1)
	if e := time.Unix(hi*UsageBucketSeconds, 0); e.Before(b) {
		p.Raw = append(p.Raw, TimeRange{e, b})
	}
}

// cover plans the 15-minute slots [lo, hi) with tiers up to p.tiers[tier]:
// the coarsest buckets that fit in the middle, finer ones at the ends,
// and the events for what no tier fits.
func (p *UsagePlan) cover(lo, hi int64, tier int) {
	if lo >= hi {
		return
	}
	if tier < 0 {
		p.Raw = append(p.Raw, TimeRange{time.Unix(lo*UsageBucketSeconds, 0), time.Unix(hi*UsageBucketSeconds, 0)})
		return
	}
	w := p.tiers[tier]
	if w == 1 {
		p.Tiers[w] = append(p.Tiers[w], BucketRange{lo, hi})
		return
	}
	clo, chi := ceilDiv(lo, w), floorDiv(hi, w)
	if clo >= chi {
		p.cover(lo, hi, tier-1)
		return
	}
	p.cover(lo, clo*w, tier-1)
	p.Tiers[w] = append(p.Tiers[w], BucketRange{clo, chi})
	p.cover(chi*w, hi, tier-1)
}

func mergeRanges(rs []BucketRange) []BucketRange {
	slices.SortFunc(rs, func(a, b BucketRange) int { return cmp.Compare(a.Lo, b.Lo) })
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && out[n-1].Hi >= r.Lo {
			out[n-1].Hi = max(out[n-1].Hi, r.Hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

func mergeTimes(rs []TimeRange) []TimeRange {
	slices.SortFunc(rs, func(a, b TimeRange) int { return a.From.Compare(b.From) })
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && !out[n-1].To.Before(r.From) {
			if r.To.After(out[n-1].To) {
				out[n-1].To = r.To
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// floorDiv and ceilDiv round toward minus and plus infinity, so buckets
// before 1970 are as wide as any other (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
