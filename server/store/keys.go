package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// CreateManagementKey inserts a key record.
func (s *Store) CreateManagementKey(ctx context.Context, k *ManagementKey) error {
	_, err := s.db.NewInsert().Model(k).Exec(ctx)
	return mapErr(err)
}

// GetManagementKeyByHash finds a key by its token hash.
func (s *Store) GetManagementKeyByHash(ctx context.Context, hash string) (*ManagementKey, error) {
	k := new(ManagementKey)
	return k, mapErr(s.db.NewSelect().Model(k).Where("token_hash = ?", hash).Scan(ctx))
}

// GetManagementKey finds a key by id.
func (s *Store) GetManagementKey(ctx context.Context, id uuid.UUID) (*ManagementKey, error) {
	k := new(ManagementKey)
	return k, mapErr(s.db.NewSelect().Model(k).Where("id = ?", id).Scan(ctx))
}

// KeyFilter narrows ListManagementKeys. Zero fields do not filter.
type KeyFilter struct {
	UserID *uuid.UUID
	// OrgID keeps keys of the organization and of its workspaces.
	OrgID *uuid.UUID
	// WorkspaceID keeps keys of exactly that workspace.
	WorkspaceID *uuid.UUID
}

// ListManagementKeys returns keys, oldest first.
func (s *Store) ListManagementKeys(ctx context.Context, f KeyFilter) ([]ManagementKey, error) {
	out := []ManagementKey{}
	q := s.db.NewSelect().Model(&out)
	if f.UserID != nil {
		q = q.Where("user_id = ?", *f.UserID)
	}
	if f.OrgID != nil {
		q = q.Where("org_id = ?", *f.OrgID)
	}
	if f.WorkspaceID != nil {
		q = q.Where("workspace_id = ?", *f.WorkspaceID)
	}
	err := q.OrderExpr("created_at ASC, id ASC").Scan(ctx)
	return out, mapErr(err)
}

// RevokeManagementKey sets revoked_at once and reports whether this call
// did; revoking again keeps the first time, so the operation is idempotent
// and concurrent revokes agree on one time.
func (s *Store) RevokeManagementKey(ctx context.Context, id uuid.UUID, at time.Time) (bool, error) {
	res, err := s.db.NewUpdate().Model((*ManagementKey)(nil)).Set("revoked_at = ?", at).Set("updated_at = ?", at).
		Where("id = ?", id).Where("revoked_at IS NULL").Exec(ctx)
	return rowsChanged(res, err)
}

func rowsChanged(res interface{ RowsAffected() (int64, error) }, err error) (bool, error) {
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// CreateSession inserts a browser session.
func (s *Store) CreateSession(ctx context.Context, se *Session) error {
	_, err := s.db.NewInsert().Model(se).Exec(ctx)
	return mapErr(err)
}

// GetSessionByHash finds a session by its token hash.
func (s *Store) GetSessionByHash(ctx context.Context, hash string) (*Session, error) {
	se := new(Session)
	return se, mapErr(s.db.NewSelect().Model(se).Where("token_hash = ?", hash).Scan(ctx))
}

// DeleteSession ends a session.
func (s *Store) DeleteSession(ctx context.Context, id uuid.UUID) error {
	_, err := s.db.NewDelete().Model((*Session)(nil)).Where("id = ?", id).Exec(ctx)
	return mapErr(err)
}
