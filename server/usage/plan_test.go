package usage

import (
	"testing"
	"time"

	"github.com/gw-gateway/gw/server/store"
)

// covered is one span a plan reads, as instants.
type covered struct {
	from, to time.Time
	tier     int64 // 0 for the events
}

func spans(p store.UsagePlan) []covered {
	var out []covered
	for _, r := range p.Raw {
		out = append(out, covered{r.From, r.To, 0})
	}
	for w, rs := range p.Tiers {
		for _, r := range rs {
			for b := r.Lo; b < r.Hi; b++ {
				out = append(out, covered{time.Unix(b*w*store.UsageBucketSeconds, 0), time.Unix((b+1)*w*store.UsageBucketSeconds, 0), w})
			}
		}
	}
	return out
}

// checkPlan holds a plan to its promises: its spans tile [from, to)
// exactly, and no rollup bucket straddles a cut.
func checkPlan(t *testing.T, from, to time.Time, cuts []time.Time, p store.UsagePlan) {
	t.Helper()
	ss := spans(p)
	total := time.Duration(0)
	for i, s := range ss {
		if s.from.Before(from) || s.to.After(to) || !s.to.After(s.from) {
			t.Fatalf("span %v–%v (tier %d) outside [%v, %v)", s.from, s.to, s.tier, from, to)
		}
		total += s.to.Sub(s.from)
		for _, o := range ss[i+1:] {
			if s.from.Before(o.to) && o.from.Before(s.to) {
				t.Fatalf("spans overlap: %v–%v and %v–%v", s.from, s.to, o.from, o.to)
			}
		}
		if s.tier == 0 {
			continue
		}
		for _, c := range cuts {
			if s.from.Before(c) && c.Before(s.to) {
				t.Fatalf("tier %d bucket %v–%v straddles cut %v", s.tier, s.from, s.to, c)
			}
		}
	}
	if total != to.Sub(from) {
		t.Fatalf("spans cover %v of %v", total, to.Sub(from))
	}
}

func TestPlanSpan(t *testing.T) {
	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	kolkata := time.FixedZone("IST", 5*3600+1800)
	cases := []struct {
		name     string
		from, to time.Time
		cuts     []time.Time
		raw      int
		tiers    map[int64]int // ranges per tier
		rawSpan  time.Duration
	}{
		{name: "30 UTC days", from: day, to: day.AddDate(0, 0, 30), tiers: map[int64]int{96: 1}},
		{name: "UTC days with their midnights", from: day, to: day.AddDate(0, 0, 3),
			cuts: []time.Time{day.AddDate(0, 0, 1), day.AddDate(0, 0, 2)}, tiers: map[int64]int{96: 1}},
		{name: "whole-hour zone", from: day.Add(5 * time.Hour), to: day.Add(77 * time.Hour),
			cuts: []time.Time{day.Add(29 * time.Hour), day.Add(53 * time.Hour)}, tiers: map[int64]int{4: 1}},
		{name: "half-hour zone", from: time.Date(2026, 11, 1, 0, 0, 0, 0, kolkata), to: time.Date(2026, 11, 3, 0, 0, 0, 0, kolkata),
			cuts: []time.Time{time.Date(2026, 11, 2, 0, 0, 0, 0, kolkata)}, tiers: map[int64]int{1: 3, 4: 2}},
		{name: "ends between slots", from: day.Add(7 * time.Second), to: day.Add(2*time.Hour + 20*time.Minute + 500*time.Millisecond),
			raw: 2, tiers: map[int64]int{1: 2, 4: 1}, rawSpan: 15*time.Minute - 7*time.Second + 5*time.Minute + 500*time.Millisecond},
		{name: "inside one slot", from: day.Add(time.Minute), to: day.Add(2 * time.Minute), raw: 1, rawSpan: time.Minute},
		{name: "empty", from: day, to: day},
		{name: "open end", from: day, raw: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := planSpan(c.from, c.to, c.cuts, store.UsageTiers)
			if len(p.Raw) != c.raw {
				t.Fatalf("raw ranges %v, want %d", p.Raw, c.raw)
			}
			for w, rs := range p.Tiers {
				if len(rs) != c.tiers[w] {
					t.Fatalf("tier %d ranges %v, want %d", w, rs, c.tiers[w])
				}
			}
			for w, n := range c.tiers {
				if len(p.Tiers[w]) != n {
					t.Fatalf("tier %d ranges %v, want %d", w, p.Tiers[w], n)
				}
			}
			if c.to.IsZero() {
				return
			}
			checkPlan(t, c.from, c.to, c.cuts, p)
			var raw time.Duration
			for _, r := range p.Raw {
				raw += r.To.Sub(r.From)
			}
			if raw != c.rawSpan {
				t.Fatalf("raw covers %v, want %v", raw, c.rawSpan)
			}
		})
	}
}

// The grouping by every dimension has no quarter hours: where a local
// midnight falls inside a UTC hour, its quarters come from the events.
func TestPlanUsageWithoutQuarters(t *testing.T) {
	kolkata := time.FixedZone("IST", 5*3600+1800)
	from, to := time.Date(2026, 11, 1, 0, 0, 0, 0, kolkata), time.Date(2026, 11, 3, 0, 0, 0, 0, kolkata)
	cuts := []time.Time{time.Date(2026, 11, 2, 0, 0, 0, 0, kolkata)}
	p := planSpan(from, to, cuts, coarse)
	checkPlan(t, from, to, cuts, p)
	if len(p.Tiers[1]) != 0 || len(p.Tiers[4]) != 2 || len(p.Raw) != 3 {
		t.Fatalf("plan %+v: want two hour ranges and three raw ranges", p)
	}
	var raw time.Duration
	for _, r := range p.Raw {
		raw += r.To.Sub(r.From)
	}
	if raw != 2*time.Hour {
		t.Fatalf("raw covers %v, want the two split hours", raw)
	}
}

func FuzzPlanSpan(f *testing.F) {
	f.Add(int64(1_790_000_000), int64(86_400*30), int64(19_800), uint8(30))
	f.Add(int64(1_790_000_123), int64(3_601), int64(-12_600), uint8(2))
	f.Add(int64(-5_000), int64(90_000), int64(0), uint8(1))
	f.Fuzz(func(t *testing.T, start, span, offset int64, ncuts uint8) {
		if span < 0 || span > 400*86_400 || start < -1e10 || start > 1e10 || offset < -14*3600 || offset > 14*3600 {
			t.Skip()
		}
		from := time.Unix(start, 0)
		to := from.Add(time.Duration(span) * time.Second)
		// Cuts at local midnights of a zone whose offset is a multiple of
		// 15 minutes, as every real zone's is.
		loc := time.FixedZone("z", int(offset/900*900))
		var cuts []time.Time
		y, m, d := from.In(loc).Date()
		for i := 1; i <= int(ncuts%40); i++ {
			c := time.Date(y, m, d+i, 0, 0, 0, 0, loc)
			if c.Before(to) {
				cuts = append(cuts, c)
			}
		}
		checkPlan(t, from, to, cuts, planSpan(from, to, cuts, store.UsageTiers))
		checkPlan(t, from, to, cuts, planSpan(from, to, cuts, coarse))
	})
}

// coarse are the tiers of every grouping but the one by no dimension.
var coarse = store.UsageTiersOf(store.UsageGroupingFor(map[string]bool{"model": true}))
