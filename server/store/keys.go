package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
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

// RevokeIssuedKeys revokes, at the given time, every active key issued by
// one of parents or, in turn, by a key they issued (the parent_id tree),
// and returns the keys it revoked. Inside the transaction that revokes the
// parents, a key minted with a parent's rights cannot outlive it.
func (s *Store) RevokeIssuedKeys(ctx context.Context, parents []uuid.UUID, at time.Time) ([]ManagementKey, error) {
	var revoked []ManagementKey
	seen := map[uuid.UUID]bool{}
	frontier := parents
	for len(frontier) > 0 {
		for _, id := range frontier {
			seen[id] = true
		}
		var children []ManagementKey
		if err := s.db.NewSelect().Model(&children).Where("parent_id IN (?)", bun.List(frontier)).
			OrderExpr("created_at ASC, id ASC").Scan(ctx); err != nil {
			return nil, mapErr(err)
		}
		frontier = nil
		for _, c := range children {
			if seen[c.ID] {
				continue
			}
			frontier = append(frontier, c.ID)
			if c.RevokedAt != nil {
				// Revoked already; what it issued is still walked.
				continue
			}
			did, err := s.RevokeManagementKey(ctx, c.ID, at)
			if err != nil {
				return nil, err
			}
			if did {
				c.RevokedAt, c.UpdatedAt = &at, at
				revoked = append(revoked, c)
			}
		}
	}
	return revoked, nil
}

// ListUserSessions lists a user's unexpired sessions, newest first.
func (s *Store) ListUserSessions(ctx context.Context, userID uuid.UUID, now time.Time) ([]Session, error) {
	out := []Session{}
	err := s.db.NewSelect().Model(&out).Where("user_id = ?", userID).Where("expires_at > ?", now).
		OrderExpr("created_at DESC, id DESC").Scan(ctx)
	return out, mapErr(err)
}

// DeleteUserSession ends one of a user's sessions; ErrNotFound when the
// user has no such session.
func (s *Store) DeleteUserSession(ctx context.Context, userID, id uuid.UUID) error {
	res, err := s.db.NewDelete().Model((*Session)(nil)).Where("id = ?", id).Where("user_id = ?", userID).Exec(ctx)
	return affectedOne(res, err)
}

// DeleteUserSessions ends every session of a user except keep (when set)
// and reports how many ended.
func (s *Store) DeleteUserSessions(ctx context.Context, userID uuid.UUID, keep *uuid.UUID) (int, error) {
	q := s.db.NewDelete().Model((*Session)(nil)).Where("user_id = ?", userID)
	if keep != nil {
		q = q.Where("id <> ?", *keep)
	}
	res, err := q.Exec(ctx)
	if err != nil {
		return 0, mapErr(err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// UpdateUserPassword replaces a user's password hash.
func (s *Store) UpdateUserPassword(ctx context.Context, id uuid.UUID, hash string, at time.Time) error {
	res, err := s.db.NewUpdate().Model((*User)(nil)).Set("password_hash = ?", hash).Set("updated_at = ?", at).
		Where("id = ?", id).Exec(ctx)
	return affectedOne(res, err)
}

// SetUserDisabled disables (at set) or enables (at nil) an account.
func (s *Store) SetUserDisabled(ctx context.Context, id uuid.UUID, at *time.Time, now time.Time) error {
	res, err := s.db.NewUpdate().Model((*User)(nil)).Set("disabled_at = ?", at).Set("updated_at = ?", now).
		Where("id = ?", id).Exec(ctx)
	return affectedOne(res, err)
}

// RevokeUserKeys revokes every active management key of a user and
// returns their ids.
func (s *Store) RevokeUserKeys(ctx context.Context, userID uuid.UUID, at time.Time) ([]uuid.UUID, error) {
	var ids []uuid.UUID
	if err := s.db.NewSelect().Model((*ManagementKey)(nil)).Column("id").Where("user_id = ?", userID).
		Where("revoked_at IS NULL").Scan(ctx, &ids); err != nil {
		return nil, mapErr(err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	_, err := s.db.NewUpdate().Model((*ManagementKey)(nil)).Set("revoked_at = ?", at).Set("updated_at = ?", at).
		Where("id IN (?)", bun.List(ids)).Where("revoked_at IS NULL").Exec(ctx)
	return ids, mapErr(err)
}
