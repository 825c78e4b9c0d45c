package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/gw-gateway/gw/wire"
	"github.com/uptrace/bun"
)

// UsageBucketSeconds is the width of a usage bucket: 15 minutes, the
// granularity of every time zone's offset.
const UsageBucketSeconds = 900

// UsageBucket is the bucket t falls in.
func UsageBucket(t time.Time) int64 { return t.Unix() / UsageBucketSeconds }

// InsertUsageEvents stores events, skipping ids already stored, and returns
// how many it stored: shipping a batch twice counts it once.
func (s *Store) InsertUsageEvents(ctx context.Context, events []UsageEvent) (int, error) {
	return s.insertNewUsageEvents(ctx, events, func(context.Context, bun.IDB, []UsageEvent) error { return nil })
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
}

func (f UsageFilter) apply(q *bun.SelectQuery) *bun.SelectQuery {
	q = q.Where("org_id = ?", f.OrgID)
	if !f.From.IsZero() {
		q = q.Where("occurred_at >= ?", f.From)
	}
	if !f.To.IsZero() {
		q = q.Where("occurred_at < ?", f.To)
	}
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

const sumColumns = "COUNT(*) AS requests, " +
	"COALESCE(SUM(input_tokens), 0) AS input_tokens, COALESCE(SUM(output_tokens), 0) AS output_tokens, " +
	"COALESCE(SUM(cache_read_tokens), 0) AS cache_read_tokens, COALESCE(SUM(cache_write_tokens), 0) AS cache_write_tokens, " +
	"COALESCE(SUM(cost_nano_usd), 0) AS cost_nano_usd"

// UsageBucketSums are the sums of one bucket.
type UsageBucketSums struct {
	Bucket int64 `bun:"bucket"`
	UsageSums
}

// SumUsageByBucket sums the filtered events per 15-minute bucket, for the
// caller to fold into local days.
func (s *Store) SumUsageByBucket(ctx context.Context, f UsageFilter) ([]UsageBucketSums, error) {
	var out []UsageBucketSums
	q := s.db.NewSelect().Model((*UsageEvent)(nil)).ColumnExpr("bucket").ColumnExpr(sumColumns)
	err := f.apply(q).Group("bucket").OrderExpr("bucket ASC").Scan(ctx, &out)
	return out, mapErr(err)
}

// SumUsage sums the filtered events.
func (s *Store) SumUsage(ctx context.Context, f UsageFilter) (UsageSums, error) {
	var out UsageSums
	q := s.db.NewSelect().Model((*UsageEvent)(nil)).ColumnExpr(sumColumns)
	err := f.apply(q).Scan(ctx, &out)
	return out, mapErr(err)
}

// UsageGroupSums are the sums of one value of a breakdown dimension.
type UsageGroupSums struct {
	Key *string `bun:"key"`
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
	col := UsageDimensions[dimension]
	var out []UsageGroupSums
	q := s.db.NewSelect().Model((*UsageEvent)(nil)).ColumnExpr("? AS key", bun.Ident(col)).ColumnExpr(sumColumns)
	err := f.apply(q).GroupExpr("?", bun.Ident(col)).OrderExpr("cost_nano_usd DESC, requests DESC").Scan(ctx, &out)
	return out, mapErr(err)
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
