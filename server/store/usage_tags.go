package store

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// MaxUsageTagSets bounds the distinct tag sets (combinations of tag pairs)
// an organization's rollups keep. Events with a set first seen past the
// bound keep their tags, but are rolled up under OverflowTagSet: no tag
// filter matches them and a tag breakdown reports them in a row of their
// own (docs/metering.md). A variable only so tests can lower it.
var MaxUsageTagSets = 10_000

// OverflowTagSet is the tag set id usage is rolled up under once an
// organization has MaxUsageTagSets distinct sets: its events keep their
// tags, but reports cannot split or filter them by tag.
var OverflowTagSet = uuid.Max

// usageTagSet is a registered tag set.
type usageTagSet struct {
	bun.BaseModel `bun:"table:usage_tag_sets"`

	ID        uuid.UUID `bun:"id,pk,type:uuid"`
	OrgID     uuid.UUID `bun:"org_id,type:uuid"`
	Tags      Tags      `bun:"tags,type:text"`
	CreatedAt time.Time `bun:"created_at"`
}

// usageTagSetMember is one pair of a registered set: what tag filters and
// breakdowns join on.
type usageTagSetMember struct {
	bun.BaseModel `bun:"table:usage_tag_set_members"`

	OrgID uuid.UUID `bun:"org_id,pk,type:uuid"`
	Key   string    `bun:"key,pk"`
	Value string    `bun:"value,pk"`
	SetID uuid.UUID `bun:"set_id,pk,type:uuid"`
}

// TagPair is one key=value a report filters on.
type TagPair struct{ Key, Value string }

// registerTagSets registers the tag sets of events not yet registered,
// while their organization is under MaxUsageTagSets, and returns which of
// the events' sets are registered. Sets are inserted in id order, members
// in key order, so concurrent batches wait for each other rather than
// deadlock; concurrent batches may together pass the bound by a few sets.
func registerTagSets(ctx context.Context, db bun.IDB, events []UsageEvent) (map[uuid.UUID]bool, error) {
	sets, ids := tagSetsOf(events)
	tracked := make(map[uuid.UUID]bool, len(sets))
	if len(sets) == 0 {
		return tracked, nil
	}
	var known []uuid.UUID
	if err := db.NewSelect().Model((*usageTagSet)(nil)).Column("id").Where("id IN (?)", bun.List(ids)).Scan(ctx, &known); err != nil {
		return nil, fmt.Errorf("read usage tag sets: %w", mapErr(err))
	}
	for _, id := range known {
		tracked[id] = true
	}
	newSets, members, err := admitTagSets(ctx, db, sets, ids, tracked)
	if err != nil {
		return nil, err
	}
	if len(newSets) == 0 {
		return tracked, nil
	}
	if err := insertTagSets(ctx, db, newSets, members); err != nil {
		return nil, err
	}
	return tracked, nil
}

// tagSetsOf is the distinct tag sets of events (the first event carrying
// each), and their ids in order.
func tagSetsOf(events []UsageEvent) (map[uuid.UUID]*UsageEvent, []uuid.UUID) {
	sets := map[uuid.UUID]*UsageEvent{}
	for i := range events {
		if id := events[i].TagSetID; id != nil && *id != uuid.Nil {
			if _, ok := sets[*id]; !ok {
				sets[*id] = &events[i]
			}
		}
	}
	ids := slices.SortedFunc(maps.Keys(sets), func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	return sets, ids
}

// admitTagSets takes the sets not yet registered while their organization
// has room under MaxUsageTagSets, marking them tracked; it returns the
// rows to insert.
func admitTagSets(ctx context.Context, db bun.IDB, sets map[uuid.UUID]*UsageEvent, ids []uuid.UUID, tracked map[uuid.UUID]bool) ([]usageTagSet, []usageTagSetMember, error) {
	room := map[uuid.UUID]int{}
	var newSets []usageTagSet
	var members []usageTagSetMember
	now := Now()
	for _, id := range ids {
		if tracked[id] {
			continue
		}
		e := sets[id]
		left, ok := room[e.OrgID]
		if !ok {
			n, err := db.NewSelect().Model((*usageTagSet)(nil)).Where("org_id = ?", e.OrgID).Count(ctx)
			if err != nil {
				return nil, nil, fmt.Errorf("count usage tag sets: %w", mapErr(err))
			}
			left = max(0, MaxUsageTagSets-int(n))
		}
		if left == 0 {
			room[e.OrgID] = 0
			continue
		}
		room[e.OrgID] = left - 1
		tracked[id] = true
		newSets = append(newSets, usageTagSet{ID: id, OrgID: e.OrgID, Tags: e.Tags, CreatedAt: now})
		for _, k := range slices.Sorted(maps.Keys(e.Tags)) {
			members = append(members, usageTagSetMember{OrgID: e.OrgID, Key: k, Value: e.Tags[k], SetID: id})
		}
	}
	return newSets, members, nil
}

// insertTagSets stores new sets and their members, the members in key
// order (so concurrent registrations take locks in the same order).
func insertTagSets(ctx context.Context, db bun.IDB, newSets []usageTagSet, members []usageTagSetMember) error {
	if _, err := db.NewInsert().Model(&newSets).On("CONFLICT (id) DO NOTHING").Returning("NULL").Exec(ctx); err != nil {
		return fmt.Errorf("register usage tag sets: %w", mapErr(err))
	}
	slices.SortFunc(members, func(a, b usageTagSetMember) int {
		if c := bytes.Compare(a.OrgID[:], b.OrgID[:]); c != 0 {
			return c
		}
		if a.Key != b.Key {
			return cmpString(a.Key, b.Key)
		}
		if a.Value != b.Value {
			return cmpString(a.Value, b.Value)
		}
		return bytes.Compare(a.SetID[:], b.SetID[:])
	})
	const perStatement = 1000
	for start := 0; start < len(members); start += perStatement {
		part := members[start:min(start+perStatement, len(members))]
		if _, err := db.NewInsert().Model(&part).On("CONFLICT DO NOTHING").Returning("NULL").Exec(ctx); err != nil {
			return fmt.Errorf("register usage tag set members: %w", mapErr(err))
		}
	}
	return nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// regroupQueued merges queued groups that became equal when sets were
// mapped to the overflow set.
func regroupQueued(rows []usageQueued) []usageQueued {
	index := make(map[queueKey]int, len(rows))
	out := rows[:0]
	for _, r := range rows {
		k := queueKey{org: r.OrgID, bucket: r.Bucket, usageDimensions: r.usageDimensions}
		if j, ok := index[k]; ok {
			out[j].UsageSums.Add(r.UsageSums)
			continue
		}
		index[k] = len(out)
		out = append(out, r)
	}
	return out
}

// tagFilter is the condition that the row's tag set carries every pair.
func tagFilter(q *bun.SelectQuery, org uuid.UUID, pairs []TagPair) *bun.SelectQuery {
	for _, p := range pairs {
		sub := q.NewSelect().Model((*usageTagSetMember)(nil)).Column("set_id").
			Where("org_id = ?", org).Where("key = ?", p.Key).Where("value = ?", p.Value)
		q = q.Where("tag_set_id IN (?)", sub)
	}
	return q
}

// TagSetValues says, for the organization's sets in ids, which are
// registered and the value each registered one has for key (absent: the
// set lacks the key).
func (s *Store) TagSetValues(ctx context.Context, org uuid.UUID, key string, ids []uuid.UUID) (values map[uuid.UUID]string, registered map[uuid.UUID]bool, err error) {
	values, registered = map[uuid.UUID]string{}, map[uuid.UUID]bool{}
	const per = 500
	for start := 0; start < len(ids); start += per {
		part := ids[start:min(start+per, len(ids))]
		var reg []uuid.UUID
		if err := s.db.NewSelect().Model((*usageTagSet)(nil)).Column("id").Where("org_id = ?", org).
			Where("id IN (?)", bun.List(part)).Scan(ctx, &reg); err != nil {
			return nil, nil, fmt.Errorf("read usage tag sets: %w", mapErr(err))
		}
		for _, id := range reg {
			registered[id] = true
		}
		var ms []usageTagSetMember
		if err := s.db.NewSelect().Model(&ms).Where("org_id = ?", org).Where("key = ?", key).
			Where("set_id IN (?)", bun.List(part)).Scan(ctx); err != nil {
			return nil, nil, fmt.Errorf("read usage tag values: %w", mapErr(err))
		}
		for _, m := range ms {
			values[m.SetID] = m.Value
		}
	}
	return values, registered, nil
}

// UsageTagSetsFull says whether the organization has as many tag sets as
// the rollups keep, so reports by tag can say some usage is past it.
func (s *Store) UsageTagSetsFull(ctx context.Context, org uuid.UUID) (bool, error) {
	n, err := s.db.NewSelect().Model((*usageTagSet)(nil)).Where("org_id = ?", org).Count(ctx)
	if err != nil {
		return false, fmt.Errorf("count usage tag sets: %w", mapErr(err))
	}
	return int(n) >= MaxUsageTagSets, nil
}

// usageTagRollup is the sums of one tag pair's events of one bucket of one
// tier and workspace (usage_tag_rollups).
type usageTagRollup struct {
	bun.BaseModel `bun:"table:usage_tag_rollups"`
}

// tagRollupFrom is the upsert of the tag pair rollups of the queued groups
// in source (a table expression named src), in the coarse tiers: each
// group adds to a row per pair of its (registered) tag set, read from
// members (the set members' table named m, sqliteSetMembers on SQLite).
func tagRollupFrom(source, members string) string {
	var selects []string
	for _, w := range coarseTiers {
		b := fmt.Sprintf("CASE WHEN src.bucket >= 0 THEN src.bucket / %d ELSE (src.bucket - %d) / %d END", w, w-1, w)
		selects = append(selects, fmt.Sprintf("SELECT src.org_id, src.workspace_id, %d, %s, m.key, m.value, "+
			"SUM(src.requests), SUM(src.input_tokens), SUM(src.output_tokens), SUM(src.cache_read_tokens), "+
			"SUM(src.cache_write_tokens), SUM(src.cost_nano_usd), SUM(src.cache_saving_nano_usd) "+
			"FROM %s JOIN %s ON m.set_id = src.tag_set_id AND m.org_id = src.org_id "+
			"GROUP BY src.org_id, src.workspace_id, %s, m.key, m.value", w, b, source, members, b))
	}
	var set []string
	for _, c := range []string{"requests", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_nano_usd", "cache_saving_nano_usd"} {
		set = append(set, fmt.Sprintf("%s = usage_tag_rollups.%s + excluded.%s", c, c, c))
	}
	return "INSERT INTO usage_tag_rollups (org_id, workspace_id, tier, bucket, tag_key, tag_value, requests, input_tokens, " +
		"output_tokens, cache_read_tokens, cache_write_tokens, cost_nano_usd, cache_saving_nano_usd) SELECT * FROM (" + strings.Join(selects, " UNION ALL ") +
		") AS sums WHERE true ON CONFLICT (org_id, tag_key, tier, bucket, tag_value, workspace_id) DO UPDATE SET " + strings.Join(set, ", ")
}

// UsageTagTiers are the tiers the tag pair rollups are kept in.
var UsageTagTiers = coarseTiers

// UsageTagSumQuery is a planned sum over one tag key's pairs: per value,
// or of one value (Value set); at the organization's or one workspace's
// scope. Plan's tiers must be UsageTagTiers.
type UsageTagSumQuery struct {
	OrgID       uuid.UUID
	WorkspaceID *uuid.UUID
	Key         string
	Value       *string
	Plan        UsagePlan
	ByBucket    bool
}

// SumUsageByTag runs a tag pair sum from the events (the plan's ragged
// ends), the tag pair rollups and the queue, in one snapshot as
// SumUsagePlanned does; each row's Key is the tag's value. Only events
// whose set is registered count: callers use it while the organization is
// under MaxUsageTagSets, when every set is.
func (s *Store) SumUsageByTag(ctx context.Context, q UsageTagSumQuery) ([]UsageSpanSums, error) {
	var out []UsageSpanSums
	err := s.inSnapshot(ctx, func(db bun.IDB) error {
		run := func(sel *bun.SelectQuery, bucketExpr, valueCol string) error {
			if q.ByBucket {
				sel = sel.ColumnExpr(bucketExpr + " AS bucket").GroupExpr(bucketExpr)
			}
			sel = sel.ColumnExpr(valueCol + " AS key").GroupExpr(valueCol)
			var rows []UsageSpanSums
			if err := sel.Scan(ctx, &rows); err != nil {
				return mapErr(err)
			}
			out = append(out, rows...)
			return nil
		}
		// The events and the queue are read by their own indexes and
		// time ranges, each row's value looked up by its set: a join would
		// let SQLite drive from the pairs and scan the events per set.
		pairs := db.NewSelect().Model((*usageTagSetMember)(nil)).Column("set_id").Where("org_id = ?", q.OrgID).Where("key = ?", q.Key)
		if q.Value != nil {
			pairs = pairs.Where("value = ?", *q.Value)
		}
		valueOf := func(alias string) string {
			return db.NewSelect().Model((*usageTagSetMember)(nil)).Column("value").
				Where("set_id = "+alias+".tag_set_id").Where("key = ?", q.Key).Limit(1).String()
		}
		tagged := func(sel *bun.SelectQuery, alias string) *bun.SelectQuery {
			sel = sel.Where(alias+".org_id = ?", q.OrgID).Where(alias+".tag_set_id IN (?)", pairs)
			if q.WorkspaceID != nil {
				sel = sel.Where(alias+".workspace_id = ?", *q.WorkspaceID)
			}
			return sel
		}
		if len(q.Plan.Raw) > 0 {
			sel := tagged(db.NewSelect().TableExpr("usage_events AS e").ColumnExpr(eventSums), "e").WhereGroup(" AND ", q.Plan.rawSpans)
			if err := run(sel, "e.bucket", "("+valueOf("e")+")"); err != nil {
				return err
			}
		}
		var slots []BucketRange
		for _, w := range slices.Sorted(maps.Keys(q.Plan.Tiers)) {
			ranges := q.Plan.Tiers[w]
			if len(ranges) == 0 {
				continue
			}
			sel := db.NewSelect().Model((*usageTagRollup)(nil)).ColumnExpr(rollupSums).Where("org_id = ?", q.OrgID).
				Where("tier = ?", w).Where("tag_key = ?", q.Key).Where(inRanges(ranges))
			if q.Value != nil {
				sel = sel.Where("tag_value = ?", *q.Value)
			}
			if q.WorkspaceID != nil {
				sel = sel.Where("workspace_id = ?", *q.WorkspaceID)
			}
			if err := run(sel, fmt.Sprintf("bucket * %d", w), "tag_value"); err != nil {
				return err
			}
			for _, r := range ranges {
				slots = append(slots, BucketRange{r.Lo * w, r.Hi * w})
			}
		}
		if len(slots) > 0 {
			sel := tagged(db.NewSelect().TableExpr("usage_rollup_queue AS q").ColumnExpr(rollupSums), "q").Where(inRanges(slots))
			return run(sel, "q.bucket", "("+valueOf("q")+")")
		}
		return nil
	})
	return out, err
}
