package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/gw-gateway/gw/wire"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// UsageBucketSeconds is the width of a usage bucket: 15 minutes, the
// granularity of every time zone's offset.
const UsageBucketSeconds = 900

// UsageBucket is the bucket t falls in.
func UsageBucket(t time.Time) int64 { return floorDiv(t.Unix(), UsageBucketSeconds) }

// InsertUsageEvents stores events, skipping ids already stored, and queues
// the ones it stored for the rollups in the same transaction; it returns
// how many it stored: shipping a batch twice counts it once.
func (s *Store) InsertUsageEvents(ctx context.Context, events []UsageEvent) (int, error) {
	return s.insertNewUsageEvents(ctx, events, queueUsage)
}

// UsageFilter selects the events of an organization in [From, To) with
// optional narrowing; zero fields do not filter (a zero From or To leaves
// that end open).
type UsageFilter struct {
	OrgID                uuid.UUID
	From, To             time.Time
	WorkspaceID          *uuid.UUID
	OwnerID              *uuid.UUID
	InferenceKeyID       *uuid.UUID
	ManagementKeyID      *uuid.UUID
	ProviderCredentialID *uuid.UUID
	// Model is the model that answered, RequestedModel the one asked for.
	Model          string
	RequestedModel string
	Provider       string
	Status         string
	// RequestID finds a request's events by the X-Request-Id it was
	// answered with. Only the events list takes it: rollups do not keep
	// request ids.
	RequestID string
}

func (f UsageFilter) apply(q *bun.SelectQuery) *bun.SelectQuery {
	q = f.applyDimensions(q)
	if f.RequestID != "" {
		q = q.Where("request_id = ?", f.RequestID)
	}
	if !f.From.IsZero() {
		q = q.Where("occurred_at >= ?", f.From)
	}
	if !f.To.IsZero() {
		q = q.Where("occurred_at < ?", f.To)
	}
	return q
}

// dimensions are the columns f filters on.
func (f UsageFilter) dimensions() map[string]bool {
	out := map[string]bool{}
	for col, v := range map[string]bool{
		"workspace_id": f.WorkspaceID != nil, "owner_id": f.OwnerID != nil, "inference_key_id": f.InferenceKeyID != nil,
		"management_key_id": f.ManagementKeyID != nil, "provider_credential_id": f.ProviderCredentialID != nil,
		"model": f.Model != "", "requested_model": f.RequestedModel != "", "provider": f.Provider != "", "status": f.Status != "",
	} {
		if v {
			out[col] = true
		}
	}
	return out
}

// applyDimensions filters on everything but time: the columns the events
// and the rollups share.
func (f UsageFilter) applyDimensions(q *bun.SelectQuery) *bun.SelectQuery {
	q = q.Where("org_id = ?", f.OrgID)
	for col, v := range map[string]*uuid.UUID{
		"workspace_id": f.WorkspaceID, "owner_id": f.OwnerID, "inference_key_id": f.InferenceKeyID,
		"management_key_id": f.ManagementKeyID, "provider_credential_id": f.ProviderCredentialID,
	} {
		if v != nil {
			q = q.Where("? = ?", bun.Ident(col), *v)
		}
	}
	if f.Model != "" {
		q = q.Where("model = ?", f.Model)
	}
	if f.RequestedModel != "" {
		q = q.Where("requested_model = ?", f.RequestedModel)
	}
	if f.Provider != "" {
		q = q.Where("provider = ?", f.Provider)
	}
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	return q
}

// UsageSums are summed counters.
type UsageSums struct {
	Requests         int64 `bun:"requests"`
	InputTokens      int64 `bun:"input_tokens"`
	OutputTokens     int64 `bun:"output_tokens"`
	CacheReadTokens  int64 `bun:"cache_read_tokens"`
	CacheWriteTokens int64 `bun:"cache_write_tokens"`
	CostNanoUSD      int64 `bun:"cost_nano_usd"`
}

// Add accumulates o into s.
func (s *UsageSums) Add(o UsageSums) {
	s.Requests += o.Requests
	s.InputTokens += o.InputTokens
	s.OutputTokens += o.OutputTokens
	s.CacheReadTokens += o.CacheReadTokens
	s.CacheWriteTokens += o.CacheWriteTokens
	s.CostNanoUSD += o.CostNanoUSD
}

// The sums of a group of events, and of a group of rollup rows.
const (
	eventSums = "COUNT(*) AS requests, " +
		"COALESCE(SUM(input_tokens), 0) AS input_tokens, COALESCE(SUM(output_tokens), 0) AS output_tokens, " +
		"COALESCE(SUM(cache_read_tokens), 0) AS cache_read_tokens, COALESCE(SUM(cache_write_tokens), 0) AS cache_write_tokens, " +
		"COALESCE(SUM(cost_nano_usd), 0) AS cost_nano_usd"
	rollupSums = "COALESCE(SUM(requests), 0) AS requests, " +
		"COALESCE(SUM(input_tokens), 0) AS input_tokens, COALESCE(SUM(output_tokens), 0) AS output_tokens, " +
		"COALESCE(SUM(cache_read_tokens), 0) AS cache_read_tokens, COALESCE(SUM(cache_write_tokens), 0) AS cache_write_tokens, " +
		"COALESCE(SUM(cost_nano_usd), 0) AS cost_nano_usd"
)

// UsageBucketSums are the sums of one bucket.
type UsageBucketSums struct {
	// Bucket is the 15-minute slot the summed span starts in; the span
	// may be a rollup hour or day, which a plan never lets straddle a cut.
	Bucket int64 `bun:"bucket"`
	UsageSums
}

// usageSpanSums is one row of a planned sum.
type usageSpanSums struct {
	Bucket int64   `bun:"bucket"`
	Key    *string `bun:"key"`
	UsageSums
}

// sumPlanned runs one grouped sum per source of the plan (the events for
// its ragged ends, each rollup tier for the rest, and the queue of events
// not yet rolled up for the same spans) in one snapshot, so that a group
// the roller moves meanwhile is counted exactly once. byBucket groups by
// starting slot; groupCol, when set, by that column as key; narrow adds
// filters the rollups can answer too.
func (s *Store) sumPlanned(ctx context.Context, f UsageFilter, cuts []time.Time, byBucket bool, groupCol string,
	narrow func(*bun.SelectQuery) *bun.SelectQuery, narrowCols ...string) ([]usageSpanSums, error) {
	need := f.dimensions()
	for _, c := range append(narrowCols, groupCol) {
		if c != "" {
			need[c] = true
		}
	}
	grouping := groupingFor(need)
	plan := PlanUsage(f.From, f.To, cuts, tiersOf(grouping))
	var out []usageSpanSums
	err := s.inSnapshot(ctx, func(db bun.IDB) error {
		run := func(q *bun.SelectQuery, bucketExpr string) error {
			q = f.applyDimensions(q)
			if narrow != nil {
				q = narrow(q)
			}
			if byBucket {
				q = q.ColumnExpr(bucketExpr + " AS bucket").GroupExpr(bucketExpr)
			}
			if groupCol != "" {
				q = q.ColumnExpr("? AS key", bun.Ident(groupCol)).GroupExpr("?", bun.Ident(groupCol))
			}
			var rows []usageSpanSums
			if err := q.Scan(ctx, &rows); err != nil {
				return mapErr(err)
			}
			out = append(out, rows...)
			return nil
		}
		if len(plan.Raw) > 0 {
			q := db.NewSelect().Model((*UsageEvent)(nil)).ColumnExpr(eventSums).WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
				for _, r := range plan.Raw {
					q = q.WhereGroup(" OR ", func(q *bun.SelectQuery) *bun.SelectQuery {
						if !r.From.IsZero() {
							q = q.Where("occurred_at >= ?", r.From.UTC())
						}
						if !r.To.IsZero() {
							q = q.Where("occurred_at < ?", r.To.UTC())
						}
						return q
					})
				}
				return q
			})
			if err := run(q, "bucket"); err != nil {
				return err
			}
		}
		var slots []BucketRange // the rolled-up spans, in 15-minute slots
		for _, w := range tiersOf(grouping) {
			ranges := plan.Tiers[w]
			if len(ranges) == 0 {
				continue
			}
			q := db.NewSelect().Model((*UsageRollup)(nil)).ColumnExpr(rollupSums).
				Where("grouped_by = ?", grouping).Where("tier = ?", w).Where(inRanges(ranges))
			if err := run(q, fmt.Sprintf("bucket * %d", w)); err != nil {
				return err
			}
			for _, r := range ranges {
				slots = append(slots, BucketRange{r.Lo * w, r.Hi * w})
			}
		}
		if len(slots) > 0 {
			q := db.NewSelect().Model((*usageQueued)(nil)).ColumnExpr(rollupSums).Where(inRanges(mergeRanges(slots)))
			if err := run(q, "bucket"); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// inRanges is a condition on bucket: inside one of ranges.
func inRanges(ranges []BucketRange) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, r := range ranges {
		if i > 0 {
			b.WriteString(" OR ")
		}
		fmt.Fprintf(&b, "(bucket >= %d AND bucket < %d)", r.Lo, r.Hi)
	}
	b.WriteByte(')')
	return b.String()
}

// inSnapshot runs reads that must agree with each other: in a read-only
// repeatable-read transaction on PostgreSQL, in a deferred read-only one on
// SQLite (whose readers see one snapshot of the WAL and, unlike the
// immediate transactions writers begin, take no write lock), or in the
// caller's.
func (s *Store) inSnapshot(ctx context.Context, fn func(db bun.IDB) error) error {
	if _, ok := s.db.(bun.Tx); ok {
		return fn(s.db)
	}
	opts := &sql.TxOptions{ReadOnly: true}
	if s.root.Dialect().Name() == dialect.PG {
		opts.Isolation = sql.LevelRepeatableRead
	}
	return s.root.RunInTx(ctx, opts, func(ctx context.Context, tx bun.Tx) error { return fn(tx) })
}

// SumUsageByBucket sums the filtered events of [f.From, f.To) per span
// that lies inside the intervals cuts divide it into, each span named by
// the 15-minute slot it starts in, for the caller to fold into local days.
func (s *Store) SumUsageByBucket(ctx context.Context, f UsageFilter, cuts []time.Time) ([]UsageBucketSums, error) {
	rows, err := s.sumPlanned(ctx, f, cuts, true, "", nil)
	if err != nil {
		return nil, err
	}
	out := make([]UsageBucketSums, len(rows))
	for i, r := range rows {
		out[i] = UsageBucketSums{Bucket: r.Bucket, UsageSums: r.UsageSums}
	}
	return out, nil
}

// SumUsage sums the filtered events.
func (s *Store) SumUsage(ctx context.Context, f UsageFilter) (UsageSums, error) {
	rows, err := s.sumPlanned(ctx, f, nil, false, "", nil)
	var out UsageSums
	for _, r := range rows {
		out.Add(r.UsageSums)
	}
	return out, err
}

// UsageGroupSums are the sums of one value of a breakdown dimension; Key
// is "" for events without one.
type UsageGroupSums struct {
	Key string
	UsageSums
}

// UsageDimensionNames are the breakdown dimensions, in the order shown.
var UsageDimensionNames = wire.UsageDimensions

// UsageDimensions are the columns a breakdown may group by.
var UsageDimensions = map[string]string{
	"model": "model", "requested_model": "requested_model", "provider": "provider", "owner": "owner_id",
	"inference_key": "inference_key_id", "workspace": "workspace_id",
}

// SumUsageBy sums the filtered events per value of a dimension (a key of
// UsageDimensions), largest cost first.
func (s *Store) SumUsageBy(ctx context.Context, f UsageFilter, dimension string) ([]UsageGroupSums, error) {
	rows, err := s.sumPlanned(ctx, f, nil, false, UsageDimensions[dimension], nil)
	if err != nil {
		return nil, err
	}
	index := map[string]int{}
	var out []UsageGroupSums
	for _, r := range rows {
		key := ""
		if r.Key != nil && *r.Key != uuid.Nil.String() {
			key = *r.Key
		}
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, UsageGroupSums{Key: key})
		}
		out[i].Add(r.UsageSums)
	}
	slices.SortFunc(out, func(a, b UsageGroupSums) int {
		return cmp.Or(cmp.Compare(b.CostNanoUSD, a.CostNanoUSD), cmp.Compare(b.Requests, a.Requests), strings.Compare(a.Key, b.Key))
	})
	return out, nil
}

// ListUsageEvents pages through the filtered events of an organization (or
// of a workspace, with f.WorkspaceID), newest first.
func (s *Store) ListUsageEvents(ctx context.Context, f UsageFilter, p PageQuery) ([]UsageEvent, *PageKey, error) {
	var out []UsageEvent
	q := f.apply(s.db.NewSelect().Model(&out))
	if err := paginateOn(q, "occurred_at", p, true).Scan(ctx); err != nil {
		return nil, nil, mapErr(err)
	}
	items, next := trimPage(out, p.Limit, func(e UsageEvent) PageKey { return PageKey{e.OccurredAt, e.ID} })
	return items, next, nil
}

// RecordHeartbeat upserts a data plane's last heartbeat.
func (s *Store) RecordHeartbeat(ctx context.Context, d *DataPlane) error {
	_, err := s.db.NewInsert().Model(d).On("CONFLICT (id) DO UPDATE").
		Set("version = EXCLUDED.version, bundle_versions = EXCLUDED.bundle_versions, spool_depth = EXCLUDED.spool_depth, last_seen_at = EXCLUDED.last_seen_at").
		Exec(ctx)
	return mapErr(err)
}

// ListDataPlanes returns every data plane that ever sent a heartbeat.
func (s *Store) ListDataPlanes(ctx context.Context) ([]DataPlane, error) {
	out := []DataPlane{}
	return out, mapErr(s.db.NewSelect().Model(&out).OrderExpr("id ASC").Scan(ctx))
}

// GetDataPlane reads one data plane's last heartbeat.
func (s *Store) GetDataPlane(ctx context.Context, id string) (*DataPlane, error) {
	d := new(DataPlane)
	return d, mapErr(s.db.NewSelect().Model(d).Where("id = ?", id).Scan(ctx))
}
