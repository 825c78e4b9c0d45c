package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// BudgetCounter is one budget's counter in one period.
type BudgetCounter struct {
	bun.BaseModel `bun:"table:budget_counters"`

	Counter        string     `bun:"counter,pk"`
	PeriodStart    time.Time  `bun:"period_start,pk"`
	OrgID          uuid.UUID  `bun:"org_id,type:uuid"`
	PolicyID       uuid.UUID  `bun:"policy_id,type:uuid"`
	PolicyName     string     `bun:"policy_name"`
	InferenceKeyID *uuid.UUID `bun:"inference_key_id,type:uuid"`
	PeriodEnd      time.Time  `bun:"period_end"`
	LimitNanoUSD   int64      `bun:"limit_nano_usd"`
	SeededNanoUSD  int64      `bun:"seeded_nano_usd"`
	CreatedAt      time.Time  `bun:"created_at"`
	UpdatedAt      time.Time  `bun:"updated_at"`
}

// BudgetLease is what one holder (a data plane) was granted of a counter
// in its period, and what it reported using.
type BudgetLease struct {
	bun.BaseModel `bun:"table:budget_leases"`

	Counter        string    `bun:"counter,pk"`
	PeriodStart    time.Time `bun:"period_start,pk"`
	Holder         string    `bun:"holder,pk"`
	GrantedNanoUSD int64     `bun:"granted_nano_usd"`
	UsedNanoUSD    int64     `bun:"used_nano_usd"`
	// ReturnedNanoUSD is all the holder gave back: asks carry it
	// cumulative, so one received twice gives back once.
	ReturnedNanoUSD int64     `bun:"returned_nano_usd"`
	UpdatedAt       time.Time `bun:"updated_at"`
}

// LockBudgetCounter reads a counter for update: on PostgreSQL the row is
// locked until the transaction ends; SQLite transactions are serialized
// already (_txlock=immediate). ErrNotFound when it does not exist.
func (s *Store) LockBudgetCounter(ctx context.Context, counter string, start time.Time) (*BudgetCounter, error) {
	c := new(BudgetCounter)
	q := s.db.NewSelect().Model(c).Where("counter = ?", counter).Where("period_start = ?", start.UTC())
	if s.db.Dialect().Name() == dialect.PG {
		q = q.For("UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		return nil, mapErr(err)
	}
	return c, nil
}

// CreateBudgetCounter inserts a counter; one that exists already is
// ErrConflict (another replica made it first).
func (s *Store) CreateBudgetCounter(ctx context.Context, c *BudgetCounter) error {
	_, err := s.db.NewInsert().Model(c).Exec(ctx)
	return mapErr(err)
}

// UpdateBudgetCounter writes a counter's limit and name (a policy edited
// mid-period keeps its spend, not its old amount).
func (s *Store) UpdateBudgetCounter(ctx context.Context, c *BudgetCounter) error {
	_, err := s.db.NewUpdate().Model(c).Column("limit_nano_usd", "policy_name", "updated_at").WherePK().Exec(ctx)
	return mapErr(err)
}

// ListBudgetLeases returns every holder's lease of a counter's period.
func (s *Store) ListBudgetLeases(ctx context.Context, counter string, start time.Time) ([]BudgetLease, error) {
	var out []BudgetLease
	err := s.db.NewSelect().Model(&out).Where("counter = ?", counter).Where("period_start = ?", start.UTC()).OrderExpr("holder").Scan(ctx)
	return out, mapErr(err)
}

// SaveBudgetLease inserts or replaces a holder's lease.
func (s *Store) SaveBudgetLease(ctx context.Context, l *BudgetLease) error {
	_, err := s.db.NewInsert().Model(l).
		On("CONFLICT (counter, period_start, holder) DO UPDATE").
		Set("granted_nano_usd = EXCLUDED.granted_nano_usd").Set("used_nano_usd = EXCLUDED.used_nano_usd").
		Set("returned_nano_usd = EXCLUDED.returned_nano_usd").
		Set("updated_at = EXCLUDED.updated_at").Exec(ctx)
	return mapErr(err)
}

// GetBudgetCounter reads a counter without locking it; ErrNotFound when
// it does not exist.
func (s *Store) GetBudgetCounter(ctx context.Context, counter string, start time.Time) (*BudgetCounter, error) {
	c := new(BudgetCounter)
	err := s.db.NewSelect().Model(c).Where("counter = ?", counter).Where("period_start = ?", start.UTC()).Scan(ctx)
	return c, mapErr(err)
}

// GetBudgetLease reads one holder's lease of a counter's period;
// ErrNotFound when it has none.
func (s *Store) GetBudgetLease(ctx context.Context, counter string, start time.Time, holder string) (*BudgetLease, error) {
	l := new(BudgetLease)
	err := s.db.NewSelect().Model(l).Where("counter = ?", counter).Where("period_start = ?", start.UTC()).
		Where("holder = ?", holder).Scan(ctx)
	return l, mapErr(err)
}

// BudgetPolicy finds a policy by id, in whatever workspace: the lease
// endpoint resolves a counter from the policy its name gives, then checks
// the policy's organization.
func (s *Store) BudgetPolicy(ctx context.Context, id uuid.UUID) (*Policy, error) {
	p := new(Policy)
	err := s.db.NewSelect().Model(p).Where("id = ?", id).Scan(ctx)
	return p, mapErr(err)
}

// BudgetKey finds an inference key by id, in whatever workspace, if it is
// one a bundle carries: unrevoked, its owner an active member of its
// organization. Expiry is the caller's to check. ErrNotFound otherwise.
func (s *Store) BudgetKey(ctx context.Context, id uuid.UUID) (*InferenceKey, error) {
	k := new(InferenceKey)
	active := s.db.NewSelect().Model((*Membership)(nil)).ColumnExpr("1").
		Where("membership.org_id = inference_key.org_id").Where("membership.user_id = inference_key.user_id").Where("membership.status = 'active'")
	err := s.db.NewSelect().Model(k).Where("inference_key.id = ?", id).Where("inference_key.revoked_at IS NULL").
		Where("EXISTS (?)", active).Scan(ctx)
	return k, mapErr(err)
}

// ListBudgetCounters returns the counters of some policies whose period
// contains at, for the budget state view.
func (s *Store) ListBudgetCounters(ctx context.Context, policyIDs []uuid.UUID, at time.Time) ([]BudgetCounter, error) {
	var out []BudgetCounter
	if len(policyIDs) == 0 {
		return out, nil
	}
	err := s.db.NewSelect().Model(&out).Where("policy_id IN (?)", bun.List(policyIDs)).
		Where("period_start <= ?", at.UTC()).Where("period_end > ?", at.UTC()).OrderExpr("counter").Scan(ctx)
	return out, mapErr(err)
}

// PruneBudgetLeases deletes the counters and leases of periods that ended
// before cutoff: rate-limit minutes and budget days and months alike.
func (s *Store) PruneBudgetLeases(ctx context.Context, cutoff time.Time) (int64, error) {
	var n int64
	err := s.InTx(ctx, func(tx *Store) error {
		if _, err := tx.db.NewDelete().TableExpr("budget_leases").
			Where("EXISTS (SELECT 1 FROM budget_counters c WHERE c.counter = budget_leases.counter AND c.period_start = budget_leases.period_start AND c.period_end < ?)", cutoff.UTC()).
			Exec(ctx); err != nil {
			return mapErr(err)
		}
		res, err := tx.db.NewDelete().TableExpr("budget_counters").Where("period_end < ?", cutoff.UTC()).Exec(ctx)
		if err != nil {
			return mapErr(err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return n, err
}
