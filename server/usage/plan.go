package usage

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/store"
)

// A report's sums are planned here and only run by the store: which rollup
// grouping holds every dimension the report filters or breaks down by,
// which of its tiers (15 minutes, an hour, a day) read each part of the
// window, and which ragged ends only the events themselves can answer. A
// plan never lets a rollup bucket straddle a cut (a report's local
// midnight), so every row read belongs wholly to one side of each cut.

// planSpan plans the sums of [from, to) from the given tiers (finest
// first) such that no rollup bucket read straddles one of cuts. Without
// both ends the whole span is read from the events.
func planSpan(from, to time.Time, cuts []time.Time, tiers []int64) store.UsagePlan {
	p := planner{plan: store.UsagePlan{Tiers: map[int64][]store.BucketRange{}}, tiers: tiers}
	if from.IsZero() || to.IsZero() {
		p.plan.Raw = []store.TimeRange{{From: from, To: to}}
		return p.plan
	}
	if !to.After(from) {
		return p.plan
	}
	start := from
	for _, c := range append(slices.Clone(cuts), to) {
		if !c.After(start) || c.After(to) {
			continue
		}
		p.segment(start, c)
		start = c
	}
	for t, rs := range p.plan.Tiers {
		p.plan.Tiers[t] = mergeRanges(rs)
	}
	p.plan.Raw = mergeTimes(p.plan.Raw)
	return p.plan
}

// planner builds one plan from the tiers it may read, finest first.
type planner struct {
	plan  store.UsagePlan
	tiers []int64
}

// segment plans [a, b), which no cut divides.
func (p *planner) segment(a, b time.Time) {
	lo := ceilDiv(a.Unix()+boolInt(a.Nanosecond() > 0), store.UsageBucketSeconds)
	hi := floorDiv(b.Unix(), store.UsageBucketSeconds)
	if lo >= hi {
		p.plan.Raw = append(p.plan.Raw, store.TimeRange{From: a, To: b})
		return
	}
	if s := time.Unix(lo*store.UsageBucketSeconds, 0); a.Before(s) {
		p.plan.Raw = append(p.plan.Raw, store.TimeRange{From: a, To: s})
	}
	p.cover(lo, hi, len(p.tiers)-1)
	if e := time.Unix(hi*store.UsageBucketSeconds, 0); e.Before(b) {
		p.plan.Raw = append(p.plan.Raw, store.TimeRange{From: e, To: b})
	}
}

// cover plans the 15-minute slots [lo, hi) with tiers up to p.tiers[tier]:
// the coarsest buckets that fit in the middle, finer ones at the ends,
// and the events for what no tier fits.
func (p *planner) cover(lo, hi int64, tier int) {
	if lo >= hi {
		return
	}
	if tier < 0 {
		p.plan.Raw = append(p.plan.Raw, store.TimeRange{From: time.Unix(lo*store.UsageBucketSeconds, 0), To: time.Unix(hi*store.UsageBucketSeconds, 0)})
		return
	}
	w := p.tiers[tier]
	if w == 1 {
		p.plan.Tiers[w] = append(p.plan.Tiers[w], store.BucketRange{Lo: lo, Hi: hi})
		return
	}
	clo, chi := ceilDiv(lo, w), floorDiv(hi, w)
	if clo >= chi {
		p.cover(lo, hi, tier-1)
		return
	}
	p.cover(lo, clo*w, tier-1)
	p.plan.Tiers[w] = append(p.plan.Tiers[w], store.BucketRange{Lo: clo, Hi: chi})
	p.cover(chi*w, hi, tier-1)
}

func mergeRanges(rs []store.BucketRange) []store.BucketRange {
	slices.SortFunc(rs, func(a, b store.BucketRange) int { return cmp.Compare(a.Lo, b.Lo) })
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

func mergeTimes(rs []store.TimeRange) []store.TimeRange {
	slices.SortFunc(rs, func(a, b store.TimeRange) int { return a.From.Compare(b.From) })
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

// planSums is the store query that sums the filtered events of [f.From,
// f.To): from the smallest rollup grouping that keeps every dimension f
// filters on and groupCol (when set) groups by, in spans that cuts do not
// divide; byBucket groups the sums by the 15-minute slot each span starts
// in.
func planSums(f store.UsageFilter, narrow store.UsageNarrowing, cuts []time.Time, byBucket bool, groupCol string) store.UsageSumQuery {
	need := f.Dimensions()
	for _, c := range append(narrow.Columns(), groupCol) {
		if c != "" {
			need[c] = true
		}
	}
	grouping := store.UsageGroupingFor(need)
	return store.UsageSumQuery{Filter: f, Narrow: narrow, Grouping: grouping, Plan: planSpan(f.From, f.To, cuts, store.UsageTiersOf(grouping)),
		ByBucket: byBucket, GroupColumn: groupCol}
}

// SumCost is the cost of the events f selects, narrowed to those of the
// owners, keys and models listed (a nil list: any): a budget counter's
// seed, the usage already recorded in its period.
func SumCost(ctx context.Context, st *store.Store, f store.UsageFilter, narrow store.UsageNarrowing) (int64, error) {
	if (narrow.OwnerIDs != nil && len(narrow.OwnerIDs) == 0) || (narrow.InferenceKeyIDs != nil && len(narrow.InferenceKeyIDs) == 0) {
		return 0, nil // a target naming nobody covers no event
	}
	if narrow.Models != nil && len(narrow.Models) == 0 {
		narrow.Models = nil // no model condition
	}
	rows, err := st.SumUsagePlanned(ctx, planSums(f, narrow, nil, false, ""))
	var cost int64
	for _, r := range rows {
		cost += r.CostNanoUSD
	}
	return cost, err
}

// sumByBucket sums the filtered events of [f.From, f.To) per span that
// lies inside the intervals cuts divide it into, each span named by the
// 15-minute slot it starts in, for Days to fold into local days.
func sumByBucket(ctx context.Context, st *store.Store, f store.UsageFilter, cuts []time.Time) ([]store.UsageBucketSums, error) {
	rows, err := sumRows(ctx, st, f, cuts, true)
	if err != nil {
		return nil, err
	}
	out := make([]store.UsageBucketSums, len(rows))
	for i, r := range rows {
		out[i] = store.UsageBucketSums{Bucket: r.Bucket, UsageSums: r.UsageSums}
	}
	return out, nil
}

// sum sums the filtered events.
func sum(ctx context.Context, st *store.Store, f store.UsageFilter) (store.UsageSums, error) {
	rows, err := sumRows(ctx, st, f, nil, false)
	var out store.UsageSums
	for _, r := range rows {
		out.Add(r.UsageSums)
	}
	return out, err
}

// sumRows runs a report's sum: from the tag pair rollups when f filters
// by one tag (and at most a workspace) while every tag set is registered,
// else from the rollup grouping f needs.
func sumRows(ctx context.Context, st *store.Store, f store.UsageFilter, cuts []time.Time, byBucket bool) ([]store.UsageSpanSums, error) {
	if len(f.Tags) == 1 && onlyWorkspaceAnd(f, "tag_set_id") {
		full, err := st.UsageTagSetsFull(ctx, f.OrgID)
		if err != nil {
			return nil, err
		}
		if !full {
			v := f.Tags[0].Value
			return st.SumUsageByTag(ctx, store.UsageTagSumQuery{OrgID: f.OrgID, WorkspaceID: f.WorkspaceID, Key: f.Tags[0].Key, Value: &v,
				Plan: planSpan(f.From, f.To, cuts, store.UsageTagTiers), ByBucket: byBucket})
		}
	}
	return st.SumUsagePlanned(ctx, planSums(f, store.UsageNarrowing{}, cuts, byBucket, ""))
}

// onlyWorkspaceAnd says f filters on nothing but the workspace and the
// columns named.
func onlyWorkspaceAnd(f store.UsageFilter, cols ...string) bool {
	for c := range f.Dimensions() {
		if c != "workspace_id" && !slices.Contains(cols, c) {
			return false
		}
	}
	return true
}

// SumCostByKey is SumCost per inference key, for the per_key budgets no
// counter exists for yet; events without a key (the playground's) count
// against no key's budget.
func SumCostByKey(ctx context.Context, st *store.Store, f store.UsageFilter, narrow store.UsageNarrowing) (map[uuid.UUID]int64, error) {
	out := map[uuid.UUID]int64{}
	if (narrow.OwnerIDs != nil && len(narrow.OwnerIDs) == 0) || (narrow.InferenceKeyIDs != nil && len(narrow.InferenceKeyIDs) == 0) {
		return out, nil
	}
	if narrow.Models != nil && len(narrow.Models) == 0 {
		narrow.Models = nil
	}
	rows, err := st.SumUsagePlanned(ctx, planSums(f, narrow, nil, false, "inference_key_id"))
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if r.Key == nil {
			continue
		}
		if id, err := uuid.Parse(*r.Key); err == nil && id != uuid.Nil {
			out[id] += r.CostNanoUSD
		}
	}
	return out, nil
}

// groupSums are the sums of one value of a breakdown dimension; Key is ""
// for events without one. In a breakdown by tag, noValue marks the
// events without the tag and over those past the tag set bound.
type groupSums struct {
	Key           string
	noValue, over bool
	store.UsageSums
}

// sumByTagPairs is sumByTag from the tag pair rollups, for a report
// filtered by nothing but a workspace while every tag set is registered:
// one row per value, and the rest of the total (the events without the
// tag) in the row without a value.
func sumByTagPairs(ctx context.Context, st *store.Store, f store.UsageFilter, key string) ([]groupSums, error) {
	rows, err := st.SumUsageByTag(ctx, store.UsageTagSumQuery{OrgID: f.OrgID, WorkspaceID: f.WorkspaceID, Key: key,
		Plan: planSpan(f.From, f.To, nil, store.UsageTagTiers)})
	if err != nil {
		return nil, err
	}
	total, err := sum(ctx, st, f)
	if err != nil {
		return nil, err
	}
	index := map[string]int{}
	var out []groupSums
	var tagged store.UsageSums
	for _, r := range rows {
		v := ""
		if r.Key != nil {
			v = *r.Key
		}
		i, ok := index[v]
		if !ok {
			i = len(out)
			index[v] = i
			out = append(out, groupSums{Key: v})
		}
		out[i].Add(r.UsageSums)
		tagged.Add(r.UsageSums)
	}
	rest := total
	rest.Add(store.UsageSums{Requests: -tagged.Requests, InputTokens: -tagged.InputTokens, OutputTokens: -tagged.OutputTokens,
		CacheReadTokens: -tagged.CacheReadTokens, CacheWriteTokens: -tagged.CacheWriteTokens, CostNanoUSD: -tagged.CostNanoUSD,
		CacheSavingNanoUSD: -tagged.CacheSavingNanoUSD})
	if rest.Requests != 0 {
		out = append(out, groupSums{noValue: true, UsageSums: rest})
	}
	slices.SortFunc(out, func(a, b groupSums) int {
		return cmp.Or(cmp.Compare(b.CostNanoUSD, a.CostNanoUSD), cmp.Compare(b.Requests, a.Requests), strings.Compare(a.Key, b.Key))
	})
	return out, nil
}

// sumByTag sums the filtered events per value of the tag key: per tag set
// from the rollups (the grouping that keeps tag sets), each set then
// named by its value for key. Sets without the key, and events without
// tags, make the row without a value; sets not registered (past the
// bound, or the overflow set itself) the over_tag_limit row.
func sumByTag(ctx context.Context, st *store.Store, f store.UsageFilter, key string) ([]groupSums, error) {
	if onlyWorkspaceAnd(f) {
		full, err := st.UsageTagSetsFull(ctx, f.OrgID)
		if err != nil {
			return nil, err
		}
		if !full {
			return sumByTagPairs(ctx, st, f, key)
		}
	}
	rows, err := st.SumUsagePlanned(ctx, planSums(f, store.UsageNarrowing{}, nil, false, "tag_set_id"))
	if err != nil {
		return nil, err
	}
	perSet := map[uuid.UUID]store.UsageSums{}
	for _, r := range rows {
		id := uuid.Nil
		if r.Key != nil {
			if id, err = uuid.Parse(*r.Key); err != nil {
				return nil, fmt.Errorf("tag set id %q: %w", *r.Key, err)
			}
		}
		s := perSet[id]
		s.Add(r.UsageSums)
		perSet[id] = s
	}
	ids := make([]uuid.UUID, 0, len(perSet))
	for id := range perSet {
		if id != uuid.Nil && id != store.OverflowTagSet {
			ids = append(ids, id)
		}
	}
	values, registered, err := st.TagSetValues(ctx, f.OrgID, key, ids)
	if err != nil {
		return nil, err
	}
	type rowKey struct {
		value         string
		noValue, over bool
	}
	index := map[rowKey]int{}
	var out []groupSums
	for id, s := range perSet {
		var k rowKey
		switch v, ok := values[id]; {
		case id == uuid.Nil:
			k.noValue = true
		case id == store.OverflowTagSet || !registered[id]:
			k.over = true
		case !ok:
			k.noValue = true
		default:
			k.value = v
		}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, groupSums{Key: k.value, noValue: k.noValue, over: k.over})
		}
		out[i].Add(s)
	}
	slices.SortFunc(out, func(a, b groupSums) int {
		return cmp.Or(cmp.Compare(b.CostNanoUSD, a.CostNanoUSD), cmp.Compare(b.Requests, a.Requests), strings.Compare(a.Key, b.Key),
			cmp.Compare(boolInt(a.over), boolInt(b.over)))
	})
	return out, nil
}

// sumBy sums the filtered events per value of a dimension (a key of
// store.UsageDimensions), largest cost first.
func sumBy(ctx context.Context, st *store.Store, f store.UsageFilter, dimension string) ([]groupSums, error) {
	rows, err := st.SumUsagePlanned(ctx, planSums(f, store.UsageNarrowing{}, nil, false, store.UsageDimensions[dimension]))
	if err != nil {
		return nil, err
	}
	index := map[string]int{}
	var out []groupSums
	for _, r := range rows {
		key := ""
		if r.Key != nil && *r.Key != uuid.Nil.String() {
			key = *r.Key
		}
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, groupSums{Key: key})
		}
		out[i].Add(r.UsageSums)
	}
	slices.SortFunc(out, func(a, b groupSums) int {
		return cmp.Or(cmp.Compare(b.CostNanoUSD, a.CostNanoUSD), cmp.Compare(b.Requests, a.Requests), strings.Compare(a.Key, b.Key))
	})
	return out, nil
}
