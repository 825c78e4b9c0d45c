package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// UsageRollup is the sums of the events of one bucket of one tier that
// share the dimensions its grouping keeps. A missing or unkept dimension
// is the nil UUID or "".
type UsageRollup struct {
	bun.BaseModel `bun:"table:usage_rollups"`

	OrgID     uuid.UUID `bun:"org_id,pk,type:uuid"`
	GroupedBy string    `bun:"grouped_by,pk"`
	Tier      int64     `bun:"tier,pk"`
	Bucket    int64     `bun:"bucket,pk"`
	usageDimensions
	UsageSums
}

// usageDimensions are what a report filters or breaks down by, as the
// rollups and their queue keep them (nil UUID or "" for none).
type usageDimensions struct {
	WorkspaceID          uuid.UUID `bun:"workspace_id,type:uuid"`
	InferenceKeyID       uuid.UUID `bun:"inference_key_id,type:uuid"`
	ManagementKeyID      uuid.UUID `bun:"management_key_id,type:uuid"`
	OwnerID              uuid.UUID `bun:"owner_id,type:uuid"`
	ProviderCredentialID uuid.UUID `bun:"provider_credential_id,type:uuid"`
	Model                string    `bun:"model"`
	RequestedModel       string    `bun:"requested_model"`
	Provider             string    `bun:"provider"`
	Status               string    `bun:"status"`
	// TagSetID is the event's tag set as the rollups keep it: its id when
	// registered (usage_tag_sets), the overflow id past the bound.
	TagSetID uuid.UUID `bun:"tag_set_id,type:uuid"`
}

// dimensionsOf are e's dimensions as the rollups keep them.
func dimensionsOf(e *UsageEvent) usageDimensions {
	return usageDimensions{WorkspaceID: e.WorkspaceID, InferenceKeyID: orNil(e.InferenceKeyID),
		ManagementKeyID: orNil(e.ManagementKeyID), OwnerID: orNil(e.OwnerID), ProviderCredentialID: orNil(e.ProviderCredentialID),
		Model: e.Model, RequestedModel: e.RequestedModel, Provider: e.Provider, Status: e.Status, TagSetID: orNil(e.TagSetID)}
}

// usageQueued is a group of newly stored events that share a 15-minute
// slot and every dimension, waiting for the roller.
type usageQueued struct {
	bun.BaseModel `bun:"table:usage_rollup_queue"`

	OrgID  uuid.UUID `bun:"org_id,type:uuid"`
	Bucket int64     `bun:"bucket"`
	usageDimensions
	UsageSums
}

// queueKey is what a queued group shares.
type queueKey struct {
	org    uuid.UUID
	bucket int64
	usageDimensions
}

func orNil(id *uuid.UUID) uuid.UUID {
	if id == nil {
		return uuid.Nil
	}
	return *id
}

// groupForQueue sums events per slot and dimensions: a batch from a busy
// data plane is a handful of groups.
func groupForQueue(events []UsageEvent) []usageQueued {
	index := make(map[queueKey]int, len(events))
	var rows []usageQueued
	for i := range events {
		e := &events[i]
		k := queueKey{org: e.OrgID, bucket: e.Bucket, usageDimensions: dimensionsOf(e)}
		j, ok := index[k]
		if !ok {
			j = len(rows)
			index[k] = j
			rows = append(rows, usageQueued{OrgID: k.org, Bucket: k.bucket, usageDimensions: k.usageDimensions})
		}
		rows[j].UsageSums.Add(UsageSums{Requests: 1, InputTokens: e.InputTokens, OutputTokens: e.OutputTokens,
			CacheReadTokens: e.CacheReadTokens, CacheWriteTokens: e.CacheWriteTokens, CostNanoUSD: e.CostNanoUSD,
			CacheSavingNanoUSD: e.CacheSavingNanoUSD})
	}
	return rows
}

// queueUsage queues newly stored events for the rollups, inside the
// transaction that stored them, registering their tag sets first: a set
// past the organization's bound is queued as the overflow set.
func queueUsage(ctx context.Context, db bun.IDB, events []UsageEvent) error {
	tracked, err := registerTagSets(ctx, db, events)
	if err != nil {
		return err
	}
	rows := groupForQueue(events)
	for i := range rows {
		if id := rows[i].TagSetID; id != uuid.Nil && !tracked[id] {
			rows[i].TagSetID = OverflowTagSet
		}
	}
	rows = regroupQueued(rows)
	const perStatement = 1000
	for start := 0; start < len(rows); start += perStatement {
		part := rows[start:min(start+perStatement, len(rows))]
		if _, err := db.NewInsert().Model(&part).Returning("NULL").Exec(ctx); err != nil {
			return fmt.Errorf("queue usage for rollups: %w", mapErr(err))
		}
	}
	return nil
}

// usageDimensionColumns are the columns a report may filter or group by.
var usageDimensionColumns = []string{"workspace_id", "inference_key_id", "management_key_id", "owner_id",
	"provider_credential_id", "model", "requested_model", "provider", "status", "tag_set_id"}

// Groupings: every dimension kept, none, or one (named by its column).
const (
	groupedByAll = "all"
	groupedByOrg = "org"
)

// groupings are the rollup groupings and the dimension columns each keeps.
func groupings() map[string][]string {
	out := map[string][]string{groupedByAll: usageDimensionColumns, groupedByOrg: nil}
	for _, c := range usageDimensionColumns {
		out[c] = []string{c}
	}
	return out
}

// UsageGroupingFor is the smallest rollup grouping that keeps every
// column in need.
func UsageGroupingFor(need map[string]bool) string {
	switch len(need) {
	case 0:
		return groupedByOrg
	case 1:
		for c := range need {
			return c
		}
	}
	return groupedByAll
}

// UsageTiersOf are the tiers a grouping is kept in, finest first.
func UsageTiersOf(grouping string) []int64 {
	if grouping == groupedByOrg {
		return UsageTiers
	}
	return coarseTiers
}

// rollupFrom is the upsert of every grouping's and tier's sums of the
// queued groups in source (a table expression named src).
func rollupFrom(source string, pg bool) string {
	nilUUID := "'00000000-0000-0000-0000-000000000000'"
	if pg {
		nilUUID += "::uuid"
	}
	sums := "SUM(requests), SUM(input_tokens), SUM(output_tokens), SUM(cache_read_tokens), " +
		"SUM(cache_write_tokens), SUM(cost_nano_usd), SUM(cache_saving_nano_usd)"
	var selects []string
	gs := groupings()
	names := slices.Sorted(maps.Keys(gs))
	for _, g := range names {
		kept := gs[g]
		var cols []string
		for _, c := range usageDimensionColumns {
			switch {
			case slices.Contains(kept, c):
				cols = append(cols, c)
			case strings.HasSuffix(c, "_id"):
				cols = append(cols, nilUUID)
			default:
				cols = append(cols, "''")
			}
		}
		for _, w := range UsageTiersOf(g) {
			// Floor division, should an event predate 1970.
			b := fmt.Sprintf("CASE WHEN bucket >= 0 THEN bucket / %d ELSE (bucket - %d) / %d END", w, w-1, w)
			group := append([]string{"org_id", b}, kept...)
			selects = append(selects, fmt.Sprintf("SELECT org_id, '%s', %d, %s, %s, %s FROM %s GROUP BY %s",
				g, w, b, strings.Join(cols, ", "), sums, source, strings.Join(group, ", ")))
		}
	}
	var set []string
	for _, c := range []string{"requests", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_nano_usd", "cache_saving_nano_usd"} {
		set = append(set, fmt.Sprintf("%s = usage_rollups.%s + excluded.%s", c, c, c))
	}
	key := "org_id, grouped_by, tier, bucket, " + strings.Join(usageDimensionColumns, ", ")
	// WHERE true keeps SQLite from reading ON CONFLICT as a join's ON.
	return "INSERT INTO usage_rollups (" + key + ", requests, input_tokens, output_tokens, cache_read_tokens, " +
		"cache_write_tokens, cost_nano_usd, cache_saving_nano_usd) SELECT * FROM (" + strings.Join(selects, " UNION ALL ") +
		") AS sums WHERE true ON CONFLICT (" + key + ") DO UPDATE SET " + strings.Join(set, ", ")
}

// sqliteRollLimit bounds a roll on SQLite, whose one writer holds the
// database's write lock for the whole transaction while every other writer
// of the process waits its turn (Store's write gate): a fraction of a
// second for 5,000 groups, tag sets included (issue 27, row 7, where a
// roll of 20,000 groups of new tag sets held the lock 5 to 19 s before
// sqliteSetMembers), and a back-log rolls in more turns with other
// writers between them.
const sqliteRollLimit = 5_000

// RollUpUsage moves up to limit queued groups (fewer on SQLite) into the
// rollups and says how many it moved. Concurrent callers (control-plane
// replicas) take turns; one that finds another rolling moves nothing.
func (s *Store) RollUpUsage(ctx context.Context, limit int) (int, error) {
	moved := 0
	err := s.InTx(ctx, func(tx *Store) error {
		var err error
		if tx.root.Dialect().Name() == dialect.PG {
			moved, err = rollUpPG(ctx, tx.db, limit)
		} else {
			moved, err = rollUpSQLite(ctx, tx.db, min(limit, sqliteRollLimit))
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("roll up usage: %w", mapErr(err))
	}
	return moved, nil
}

// TidyUsageQueue reclaims the space of rolled-up queue rows at once on
// PostgreSQL, where a drained back-log would otherwise leave every report's
// scan of the (nearly empty) queue reading dead rows until autovacuum
// comes by. SQLite reuses the pages of deleted rows by itself.
func (s *Store) TidyUsageQueue(ctx context.Context) error {
	if s.root.Dialect().Name() != dialect.PG {
		return nil
	}
	if _, err := s.root.ExecContext(ctx, "VACUUM (SKIP_LOCKED) usage_rollup_queue"); err != nil {
		return fmt.Errorf("vacuum usage queue: %w", err)
	}
	return nil
}

// rollUpPG deletes the groups it rolls in the statement that rolls them,
// so a group queued meanwhile is left for the next turn, never lost or
// counted twice.
func rollUpPG(ctx context.Context, db bun.IDB, limit int) (int, error) {
	var mine bool
	if err := db.NewRaw("SELECT pg_try_advisory_xact_lock(hashtext(current_schema() || '.gw.usage_rollups'))").Scan(ctx, &mine); err != nil || !mine {
		return 0, err
	}
	var n int
	q := "WITH src AS (DELETE FROM usage_rollup_queue WHERE ctid IN (SELECT ctid FROM usage_rollup_queue LIMIT ?) RETURNING *), " +
		"rolled AS (" + rollupFrom("src", true) + "), tagged AS (" + tagRollupFrom("src", "usage_tag_set_members AS m") + ") SELECT COUNT(*) FROM src"
	err := db.NewRaw(q, limit).Scan(ctx, &n)
	return n, err
}

// sqliteSetMembers is the set members a roll joins, by set (a set id
// names its organization too): left to itself SQLite reads them by the
// covering primary key, whose organization prefix is all the join gives
// it, and so reads every pair of the organization for each group rolled,
// which took seconds per thousand groups of new tag sets (issue 27, row 7).
const sqliteSetMembers = "usage_tag_set_members AS m INDEXED BY usage_tag_set_members_set"

// rollUpSQLite relies on SQLite's one writer: nothing is queued between
// the transaction's statements.
func rollUpSQLite(ctx context.Context, db bun.IDB, limit int) (int, error) {
	var last []int64
	if err := db.NewRaw("SELECT rowid FROM usage_rollup_queue ORDER BY rowid LIMIT ?", limit).Scan(ctx, &last); err != nil || len(last) == 0 {
		return 0, err
	}
	upTo := last[len(last)-1]
	if _, err := db.ExecContext(ctx, rollupFrom(fmt.Sprintf("(SELECT * FROM usage_rollup_queue WHERE rowid <= %d) AS src", upTo), false)); err != nil {
		return 0, err
	}
	if _, err := db.ExecContext(ctx, tagRollupFrom(fmt.Sprintf("(SELECT * FROM usage_rollup_queue WHERE rowid <= %d) AS src", upTo), sqliteSetMembers)); err != nil {
		return 0, err
	}
	_, err := db.ExecContext(ctx, "DELETE FROM usage_rollup_queue WHERE rowid <= ?", upTo)
	return len(last), err
}
