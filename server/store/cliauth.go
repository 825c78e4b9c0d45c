package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// CLI authorization statuses as stored; "expired" is derived from
// expires_at, "slow_down" is an answer, not a state.
const (
	CLIPending  = "pending"
	CLIApproved = "approved"
	CLIDenied   = "denied"
	CLIConsumed = "consumed"
)

// CreateCLIAuthorization inserts a pending authorization; a user code
// collision is ErrConflict (the caller draws another).
func (s *Store) CreateCLIAuthorization(ctx context.Context, a *CLIAuthorization) error {
	_, err := s.db.NewInsert().Model(a).Exec(ctx)
	return mapErr(err)
}

// GetCLIAuthorizationByCode finds an authorization by its user code.
func (s *Store) GetCLIAuthorizationByCode(ctx context.Context, code string) (*CLIAuthorization, error) {
	a := new(CLIAuthorization)
	return a, mapErr(s.db.NewSelect().Model(a).Where("user_code = ?", code).Scan(ctx))
}

// GetCLIAuthorizationBySecret finds an authorization by its poll secret hash.
func (s *Store) GetCLIAuthorizationBySecret(ctx context.Context, hash string) (*CLIAuthorization, error) {
	a := new(CLIAuthorization)
	return a, mapErr(s.db.NewSelect().Model(a).Where("poll_secret_hash = ?", hash).Scan(ctx))
}

// DecideCLIAuthorization moves a pending, unexpired authorization to
// approved or denied. It reports false when it was no longer pending.
func (s *Store) DecideCLIAuthorization(ctx context.Context, a *CLIAuthorization, now time.Time) (bool, error) {
	res, err := s.db.NewUpdate().Model(a).
		Column("status", "user_id", "org_id", "workspace_id", "permissions", "decided_at").
		WherePK().Where("status = ?", CLIPending).Where("expires_at > ?", now).Exec(ctx)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// PassPollGate records a poll unless the previous one was less than
// minGap ago. Only one of many simultaneous polls passes: the gate is one
// conditional update.
func (s *Store) PassPollGate(ctx context.Context, id uuid.UUID, now time.Time, minGap time.Duration) (bool, error) {
	res, err := s.db.NewUpdate().Model((*CLIAuthorization)(nil)).Set("last_poll_at = ?", now).
		Where("id = ?", id).Where("last_poll_at IS NULL OR last_poll_at <= ?", now.Add(-minGap)).Exec(ctx)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// SlowDown lengthens an authorization's poll interval.
func (s *Store) SlowDown(ctx context.Context, id uuid.UUID, interval int) error {
	_, err := s.db.NewUpdate().Model((*CLIAuthorization)(nil)).Set("interval_seconds = ?", interval).Where("id = ?", id).Exec(ctx)
	return mapErr(err)
}

// ConsumeCLIAuthorization marks an approved authorization delivered with
// the key minted for it. Exactly one caller wins; it reports false to the
// others.
func (s *Store) ConsumeCLIAuthorization(ctx context.Context, id, keyID uuid.UUID) (bool, error) {
	res, err := s.db.NewUpdate().Model((*CLIAuthorization)(nil)).Set("status = ?", CLIConsumed).Set("key_id = ?", keyID).
		Where("id = ?", id).Where("status = ?", CLIApproved).Exec(ctx)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
