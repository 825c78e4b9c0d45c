package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// CreateInferenceKey inserts an inference key.
func (s *Store) CreateInferenceKey(ctx context.Context, k *InferenceKey) error {
	_, err := s.db.NewInsert().Model(k).Exec(ctx)
	return mapErr(err)
}

// GetInferenceKey finds a workspace's inference key by id.
func (s *Store) GetInferenceKey(ctx context.Context, wsID, id uuid.UUID) (*InferenceKey, error) {
	k := new(InferenceKey)
	err := s.db.NewSelect().Model(k).Where("workspace_id = ?", wsID).Where("id = ?", id).Scan(ctx)
	return k, mapErr(err)
}

// ListInferenceKeys returns a workspace's inference keys, oldest first.
func (s *Store) ListInferenceKeys(ctx context.Context, wsID uuid.UUID) ([]InferenceKey, error) {
	out := []InferenceKey{}
	err := s.db.NewSelect().Model(&out).Where("workspace_id = ?", wsID).OrderExpr("created_at ASC, id ASC").Scan(ctx)
	return out, mapErr(err)
}

// UpdateInferenceKey writes a key's name, rate limits, tags and updated_at.
func (s *Store) UpdateInferenceKey(ctx context.Context, k *InferenceKey) error {
	res, err := s.db.NewUpdate().Model(k).Column("name", "rate_limit_rpm", "rate_limit_tpm", "tags", "updated_at").WherePK().Exec(ctx)
	return affectedOne(res, err)
}

// ActiveInferenceKeysForOrg returns the organization's unrevoked keys whose
// owners are active members (a removed or suspended member's keys stop)
// with an account that is not disabled. Disabling revokes an account's
// keys in the same transaction; this holds even for a key that escaped
// it.
func (s *Store) ActiveInferenceKeysForOrg(ctx context.Context, orgID uuid.UUID) ([]InferenceKey, error) {
	out := []InferenceKey{}
	active := s.db.NewSelect().Model((*Membership)(nil)).Column("user_id").Where("org_id = ?", orgID).Where("status = 'active'")
	disabled := s.db.NewSelect().Model((*User)(nil)).Column("id").Where("disabled_at IS NOT NULL")
	err := s.db.NewSelect().Model(&out).Where("org_id = ?", orgID).Where("revoked_at IS NULL").
		Where("user_id IN (?)", active).Where("user_id NOT IN (?)", disabled).OrderExpr("id ASC").Scan(ctx)
	return out, mapErr(err)
}

// BatchHoldingKeysForOrg are the organization's inference keys that are
// no longer active (revoked, or their owner no longer an active member or
// disabled) yet submitted a batch with a provider batch group sent or
// being sent (submitting, submitted): the provider runs and bills those
// lines whatever became of the key, so the data plane must still be able
// to record them as the key's (publish puts them in the bundle for that
// alone, without a token hash). A group still pending counts too: it may
// be moving to submitting as the key is revoked, and the data plane that
// finds such a key ends a pending group unsent.
func (s *Store) BatchHoldingKeysForOrg(ctx context.Context, orgID uuid.UUID) ([]InferenceKey, error) {
	out := []InferenceKey{}
	sent := s.db.NewSelect().TableExpr("batches AS b").Column("b.inference_key_id").
		Join("JOIN batch_upstreams AS u ON u.batch_id = b.id").
		Where("b.org_id = ?", orgID).Where("b.inference_key_id IS NOT NULL").
		Where("u.status IN (?)", bun.In([]string{UpstreamPending, UpstreamSubmitting, UpstreamSubmitted}))
	active := s.db.NewSelect().Model((*Membership)(nil)).Column("user_id").Where("org_id = ?", orgID).Where("status = 'active'")
	disabled := s.db.NewSelect().Model((*User)(nil)).Column("id").Where("disabled_at IS NOT NULL")
	err := s.db.NewSelect().Model(&out).Where("org_id = ?", orgID).Where("id IN (?)", sent).
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("revoked_at IS NOT NULL").WhereOr("user_id NOT IN (?)", active).WhereOr("user_id IN (?)", disabled)
		}).OrderExpr("id ASC").Scan(ctx)
	return out, mapErr(err)
}

// RevokeUserInferenceKeys revokes every unrevoked inference key a user
// owns or created, in every organization, and returns them as they were.
func (s *Store) RevokeUserInferenceKeys(ctx context.Context, userID uuid.UUID, at time.Time) ([]InferenceKey, error) {
	keys := []InferenceKey{}
	if err := s.db.NewSelect().Model(&keys).Where("revoked_at IS NULL").
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("user_id = ?", userID).WhereOr("created_by = ?", userID)
		}).OrderExpr("id ASC").Scan(ctx); err != nil {
		return nil, mapErr(err)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	ids := make([]uuid.UUID, len(keys))
	for i, k := range keys {
		ids[i] = k.ID
	}
	_, err := s.db.NewUpdate().Model((*InferenceKey)(nil)).Set("revoked_at = ?", at).Set("updated_at = ?", at).
		Where("id IN (?)", bun.List(ids)).Where("revoked_at IS NULL").Exec(ctx)
	return keys, mapErr(err)
}

// RevokeInferenceKey sets revoked_at once and reports whether this call
// did (idempotent; concurrent revokes agree on one time).
func (s *Store) RevokeInferenceKey(ctx context.Context, id uuid.UUID, at time.Time) (bool, error) {
	res, err := s.db.NewUpdate().Model((*InferenceKey)(nil)).Set("revoked_at = ?", at).Set("updated_at = ?", at).
		Where("id = ?", id).Where("revoked_at IS NULL").Exec(ctx)
	return rowsChanged(res, err)
}
