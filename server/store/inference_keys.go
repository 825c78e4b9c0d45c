package store

import (
	"context"
	"time"

	"github.com/google/uuid"
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

// UpdateInferenceKey writes a key's name, rate limits and updated_at.
func (s *Store) UpdateInferenceKey(ctx context.Context, k *InferenceKey) error {
	res, err := s.db.NewUpdate().Model(k).Column("name", "rate_limit_rpm", "rate_limit_tpm", "updated_at").WherePK().Exec(ctx)
	return affectedOne(res, err)
}

// ActiveInferenceKeysForOrg returns the organization's unrevoked keys whose
// owners are active members (a removed or suspended member's keys stop).
func (s *Store) ActiveInferenceKeysForOrg(ctx context.Context, orgID uuid.UUID) ([]InferenceKey, error) {
	out := []InferenceKey{}
	active := s.db.NewSelect().Model((*Membership)(nil)).Column("user_id").Where("org_id = ?", orgID).Where("status = 'active'")
	err := s.db.NewSelect().Model(&out).Where("org_id = ?", orgID).Where("revoked_at IS NULL").
		Where("user_id IN (?)", active).OrderExpr("id ASC").Scan(ctx)
	return out, mapErr(err)
}

// RevokeInferenceKey sets revoked_at once and reports whether this call
// did (idempotent; concurrent revokes agree on one time).
func (s *Store) RevokeInferenceKey(ctx context.Context, id uuid.UUID, at time.Time) (bool, error) {
	res, err := s.db.NewUpdate().Model((*InferenceKey)(nil)).Set("revoked_at = ?", at).Set("updated_at = ?", at).
		Where("id = ?", id).Where("revoked_at IS NULL").Exec(ctx)
	return rowsChanged(res, err)
}
