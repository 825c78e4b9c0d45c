package store

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// UsageRollup is the sums of the events of one bucket of one tier that
// share every report dimension. A missing dimension is the nil UUID or "".
type UsageRollup struct {
	bun.BaseModel `bun:"table:usage_rollups"`

	OrgID                uuid.UUID `bun:"org_id,pk,type:uuid"`
	Tier                 int64     `bun:"tier,pk"`
	Bucket               int64     `bun:"bucket,pk"`
	WorkspaceID          uuid.UUID `bun:"workspace_id,pk,type:uuid"`
	InferenceKeyID       uuid.UUID `bun:"inference_key_id,pk,type:uuid"`
	ManagementKeyID      uuid.UUID `bun:"management_key_id,pk,type:uuid"`
	OwnerID              uuid.UUID `bun:"owner_id,pk,type:uuid"`
	ProviderCredentialID uuid.UUID `bun:"provider_credential_id,pk,type:uuid"`
	Model                string    `bun:"model,pk"`
	RequestedModel       string    `bun:"requested_model,pk"`
	Provider             string    `bun:"provider,pk"`
	Status               string    `bun:"status,pk"`
	UsageSums
}

// rollupKey is a rollup row's primary key.
type rollupKey struct {
	org, ws, key, mkey, owner, cred uuid.UUID
	tier, bucket                    int64
	model, requested, provider, st  string
}

func orNil(id *uuid.UUID) uuid.UUID {
	if id == nil {
		return uuid.Nil
	}
	return *id
}

// rollUp sums events into the rows of every tier, ordered by primary key
// so that concurrent writers lock shared rows in the same order.
func rollUp(events []UsageEvent) []UsageRollup {
	index := make(map[rollupKey]int, len(events))
	var rows []UsageRollup
	for i := range events {
		e := &events[i]
		for _, w := range UsageTiers {
			k := rollupKey{org: e.OrgID, ws: e.WorkspaceID, key: orNil(e.InferenceKeyID), mkey: orNil(e.ManagementKeyID),
				owner: orNil(e.OwnerID), cred: orNil(e.ProviderCredentialID), tier: w, bucket: floorDiv(e.Bucket, w),
				model: e.Model, requested: e.RequestedModel, provider: e.Provider, st: e.Status}
			j, ok := index[k]
			if !ok {
				j = len(rows)
				index[k] = j
				rows = append(rows, UsageRollup{OrgID: k.org, Tier: w, Bucket: k.bucket, WorkspaceID: k.ws,
					InferenceKeyID: k.key, ManagementKeyID: k.mkey, OwnerID: k.owner, ProviderCredentialID: k.cred,
					Model: k.model, RequestedModel: k.requested, Provider: k.provider, Status: k.st})
			}
			rows[j].UsageSums.Add(UsageSums{Requests: 1, InputTokens: e.InputTokens, OutputTokens: e.OutputTokens,
				CacheReadTokens: e.CacheReadTokens, CacheWriteTokens: e.CacheWriteTokens, CostNanoUSD: e.CostNanoUSD})
		}
	}
	slices.SortFunc(rows, compareRollupKeys)
	return rows
}

func compareRollupKeys(a, b UsageRollup) int {
	return cmp.Or(
		bytes.Compare(a.OrgID[:], b.OrgID[:]), cmp.Compare(a.Tier, b.Tier), cmp.Compare(a.Bucket, b.Bucket),
		bytes.Compare(a.WorkspaceID[:], b.WorkspaceID[:]),
		bytes.Compare(a.InferenceKeyID[:], b.InferenceKeyID[:]),
		bytes.Compare(a.ManagementKeyID[:], b.ManagementKeyID[:]),
		bytes.Compare(a.OwnerID[:], b.OwnerID[:]),
		bytes.Compare(a.ProviderCredentialID[:], b.ProviderCredentialID[:]),
		strings.Compare(a.Model, b.Model), strings.Compare(a.RequestedModel, b.RequestedModel),
		strings.Compare(a.Provider, b.Provider), strings.Compare(a.Status, b.Status))
}

const rollupConflict = "CONFLICT (org_id, tier, bucket, workspace_id, inference_key_id, management_key_id, owner_id, " +
	"provider_credential_id, model, requested_model, provider, status) DO UPDATE"

const rollupAdd = "requests = ?TableAlias.requests + EXCLUDED.requests, " +
	"input_tokens = ?TableAlias.input_tokens + EXCLUDED.input_tokens, " +
	"output_tokens = ?TableAlias.output_tokens + EXCLUDED.output_tokens, " +
	"cache_read_tokens = ?TableAlias.cache_read_tokens + EXCLUDED.cache_read_tokens, " +
	"cache_write_tokens = ?TableAlias.cache_write_tokens + EXCLUDED.cache_write_tokens, " +
	"cost_nano_usd = ?TableAlias.cost_nano_usd + EXCLUDED.cost_nano_usd"

// addUsageRollups adds newly stored events to the rollups, inside the
// transaction that stored them.
func addUsageRollups(ctx context.Context, db bun.IDB, events []UsageEvent) error {
	rows := rollUp(events)
	// Bounded statements: each row is one upsert's worth of work.
	const perStatement = 1000
	for start := 0; start < len(rows); start += perStatement {
		part := rows[start:min(start+perStatement, len(rows))]
		if _, err := db.NewInsert().Model(&part).On(rollupConflict).Set(rollupAdd).Returning("NULL").Exec(ctx); err != nil {
			return fmt.Errorf("add usage rollups: %w", mapErr(err))
		}
	}
	return nil
}
