package store

import "time"

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

// UsagePlan says where the sums of a span of time are read (server/usage
// plans it): each part from the coarsest rollup tier whose buckets fit it,
// and only the ragged ends that no 15-minute slot covers wholly from the
// events themselves.
type UsagePlan struct {
	Raw   []TimeRange
	Tiers map[int64][]BucketRange // by tier; ranges sorted and disjoint
}

// floorDiv rounds toward minus infinity, so buckets before 1970 are as
// wide as any other (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
