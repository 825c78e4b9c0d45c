package store

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
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
	return s.insertNewUsageEvents(ctx, events, func(ctx context.Context, db bun.IDB, stored []UsageEvent) error {
		if err := queueUsage(ctx, db, stored); err != nil {
			return err
		}
		return auditToolCalls(ctx, db, stored)
	})
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
	// Tags keeps the events whose tags include every pair.
	Tags []TagPair
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

// Dimensions are the columns f filters on, which a rollup grouping read
// for it must keep.
func (f UsageFilter) Dimensions() map[string]bool {
	out := map[string]bool{}
	for col, v := range map[string]bool{
		"workspace_id": f.WorkspaceID != nil, "owner_id": f.OwnerID != nil, "inference_key_id": f.InferenceKeyID != nil,
		"management_key_id": f.ManagementKeyID != nil, "provider_credential_id": f.ProviderCredentialID != nil,
		"model": f.Model != "", "requested_model": f.RequestedModel != "", "provider": f.Provider != "", "status": f.Status != "",
		"tag_set_id": len(f.Tags) > 0,
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
	return tagFilter(q, f.OrgID, f.Tags)
}

// UsageSums are summed counters.
type UsageSums struct {
	Requests         int64 `bun:"requests"`
	InputTokens      int64 `bun:"input_tokens"`
	OutputTokens     int64 `bun:"output_tokens"`
	CacheReadTokens  int64 `bun:"cache_read_tokens"`
	CacheWriteTokens int64 `bun:"cache_write_tokens"`
	CostNanoUSD      int64 `bun:"cost_nano_usd"`
	// CacheSavingNanoUSD is what the response cache's hits among the
	// events saved (the upstream calls they did not make).
	CacheSavingNanoUSD int64 `bun:"cache_saving_nano_usd"`
}

// Add accumulates o into s.
func (s *UsageSums) Add(o UsageSums) {
	s.Requests += o.Requests
	s.InputTokens += o.InputTokens
	s.OutputTokens += o.OutputTokens
	s.CacheReadTokens += o.CacheReadTokens
	s.CacheWriteTokens += o.CacheWriteTokens
	s.CostNanoUSD += o.CostNanoUSD
	s.CacheSavingNanoUSD += o.CacheSavingNanoUSD
}

// The sums of a group of events, and of a group of rollup rows.
const (
	eventSums = "COUNT(*) AS requests, " +
		"COALESCE(SUM(input_tokens), 0) AS input_tokens, COALESCE(SUM(output_tokens), 0) AS output_tokens, " +
		"COALESCE(SUM(cache_read_tokens), 0) AS cache_read_tokens, COALESCE(SUM(cache_write_tokens), 0) AS cache_write_tokens, " +
		"COALESCE(SUM(cost_nano_usd), 0) AS cost_nano_usd, COALESCE(SUM(cache_saving_nano_usd), 0) AS cache_saving_nano_usd"
	rollupSums = "COALESCE(SUM(requests), 0) AS requests, " +
		"COALESCE(SUM(input_tokens), 0) AS input_tokens, COALESCE(SUM(output_tokens), 0) AS output_tokens, " +
		"COALESCE(SUM(cache_read_tokens), 0) AS cache_read_tokens, COALESCE(SUM(cache_write_tokens), 0) AS cache_write_tokens, " +
		"COALESCE(SUM(cost_nano_usd), 0) AS cost_nano_usd, COALESCE(SUM(cache_saving_nano_usd), 0) AS cache_saving_nano_usd"
)

// UsageBucketSums are the sums of one bucket.
type UsageBucketSums struct {
	// Bucket is the 15-minute slot the summed span starts in; the span
	// may be a rollup hour or day, which a plan never lets straddle a cut.
	Bucket int64 `bun:"bucket"`
	UsageSums
}

// UsageSpanSums is one row of a planned sum: the sums of one span (named
// by the 15-minute slot it starts in, when grouped by bucket) and one
// value of the grouping column (when grouped by one).
type UsageSpanSums struct {
	Bucket int64   `bun:"bucket"`
	Key    *string `bun:"key"`
	UsageSums
}

// UsageSumQuery is a planned sum (server/usage plans it): the filter, the
// rollup grouping and the plan of which rows of it and which events to
// read, and how to group the sums.
type UsageSumQuery struct {
	Filter UsageFilter
	// Narrow adds conditions the filter has no member for (a budget's
	// target: owners, keys, models); its columns must be in Grouping.
	Narrow   UsageNarrowing
	Grouping string
	Plan     UsagePlan
	// ByBucket groups by starting slot; GroupColumn, when set, by that
	// column as key.
	ByBucket    bool
	GroupColumn string
}

// UsageNarrowing keeps the events whose owner, key and model are among
// the listed ones; a nil list sets no condition.
type UsageNarrowing struct {
	OwnerIDs, InferenceKeyIDs []uuid.UUID
	Models                    []string
	// Keyless keeps the events no inference key made (a user's
	// playground requests).
	Keyless bool
}

// Columns are the columns the narrowing sets conditions on.
func (n UsageNarrowing) Columns() []string {
	var out []string
	if n.OwnerIDs != nil {
		out = append(out, "owner_id")
	}
	if n.InferenceKeyIDs != nil || n.Keyless {
		out = append(out, "inference_key_id")
	}
	if n.Models != nil {
		out = append(out, "model")
	}
	return out
}

func (n UsageNarrowing) apply(q *bun.SelectQuery) *bun.SelectQuery {
	if n.OwnerIDs != nil {
		q = q.Where("owner_id IN (?)", bun.List(n.OwnerIDs))
	}
	if n.InferenceKeyIDs != nil {
		q = q.Where("inference_key_id IN (?)", bun.List(n.InferenceKeyIDs))
	}
	if n.Keyless {
		// Events keep no key as NULL; rollups and their queue as the
		// nil UUID.
		q = q.Where("(inference_key_id IS NULL OR inference_key_id = ?)", uuid.Nil)
	}
	if n.Models != nil {
		q = q.Where("model IN (?)", bun.List(n.Models))
	}
	return q
}

// SumUsagePlanned runs one grouped sum per source of q's plan (the events
// for its ragged ends, each rollup tier for the rest, and the queue of
// events not yet rolled up for the same spans) in one snapshot, so that a
// group the roller moves meanwhile is counted exactly once.
func (s *Store) SumUsagePlanned(ctx context.Context, q UsageSumQuery) ([]UsageSpanSums, error) {
	var out []UsageSpanSums
	err := s.inSnapshot(ctx, func(db bun.IDB) error {
		run := func(sel *bun.SelectQuery, bucketExpr string) error {
			rows, err := q.scan(ctx, sel, bucketExpr)
			out = append(out, rows...)
			return err
		}
		if len(q.Plan.Raw) > 0 {
			if err := run(db.NewSelect().Model((*UsageEvent)(nil)).ColumnExpr(eventSums).WhereGroup(" AND ", q.Plan.rawSpans), "bucket"); err != nil {
				return err
			}
		}
		var slots []BucketRange // the rolled-up spans, in 15-minute slots
		for _, w := range slices.Sorted(maps.Keys(q.Plan.Tiers)) {
			ranges := q.Plan.Tiers[w]
			if len(ranges) == 0 {
				continue
			}
			sel := db.NewSelect().Model((*UsageRollup)(nil)).ColumnExpr(rollupSums).
				Where("grouped_by = ?", q.Grouping).Where("tier = ?", w).Where(inRanges(ranges))
			if err := run(sel, fmt.Sprintf("bucket * %d", w)); err != nil {
				return err
			}
			for _, r := range ranges {
				slots = append(slots, BucketRange{r.Lo * w, r.Hi * w})
			}
		}
		if len(slots) > 0 {
			return run(db.NewSelect().Model((*usageQueued)(nil)).ColumnExpr(rollupSums).Where(inRanges(slots)), "bucket")
		}
		return nil
	})
	return out, err
}

// scan runs one source's sum with q's filter and grouping.
func (q UsageSumQuery) scan(ctx context.Context, sel *bun.SelectQuery, bucketExpr string) ([]UsageSpanSums, error) {
	sel = q.Narrow.apply(q.Filter.applyDimensions(sel))
	if q.ByBucket {
		sel = sel.ColumnExpr(bucketExpr + " AS bucket").GroupExpr(bucketExpr)
	}
	if q.GroupColumn != "" {
		sel = sel.ColumnExpr("? AS key", bun.Ident(q.GroupColumn)).GroupExpr("?", bun.Ident(q.GroupColumn))
	}
	var rows []UsageSpanSums
	if err := sel.Scan(ctx, &rows); err != nil {
		return nil, mapErr(err)
	}
	return rows, nil
}

// rawSpans is the condition on occurred_at: inside one of the plan's
// ranges read from the events.
func (p UsagePlan) rawSpans(q *bun.SelectQuery) *bun.SelectQuery {
	for _, r := range p.Raw {
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

// UsageDimensionNames are the breakdown dimensions, in the order shown.
var UsageDimensionNames = wire.UsageDimensions

// UsageDimensions are the columns a breakdown may group by.
var UsageDimensions = map[string]string{
	"model": "model", "requested_model": "requested_model", "provider": "provider", "owner": "owner_id",
	"inference_key": "inference_key_id", "workspace": "workspace_id",
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
	if err := withProvenances(ctx, s.db, f.OrgID, items); err != nil {
		return nil, nil, err
	}
	return items, next, nil
}

// RecordHeartbeat upserts a data plane's last heartbeat, in its turn at
// the write gate.
func (s *Store) RecordHeartbeat(ctx context.Context, d *DataPlane) error {
	return s.write(ctx, func(db bun.IDB) error {
		_, err := db.NewInsert().Model(d).On("CONFLICT (id) DO UPDATE").
			Set("version = EXCLUDED.version, bundle_versions = EXCLUDED.bundle_versions, spool_depth = EXCLUDED.spool_depth, last_seen_at = EXCLUDED.last_seen_at").
			Exec(ctx)
		return mapErr(err)
	})
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
