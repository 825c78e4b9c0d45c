package store

import (
	"context"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// AuthThrottle is one throttled subject's run of attempts (an account's
// sign-ins, an address's sign-ins or invitation guesses), kept in the
// database so that replicas on one PostgreSQL count together.
type AuthThrottle struct {
	bun.BaseModel `bun:"table:auth_throttles"`

	Name          string     `bun:"name,pk"`
	Subject       string     `bun:"subject,pk"`
	Failures      int        `bun:"failures"`
	InFlight      int        `bun:"in_flight"`
	InFlightUntil time.Time  `bun:"in_flight_until"`
	FirstAt       time.Time  `bun:"first_at"`
	LockedUntil   *time.Time `bun:"locked_until"`
}

// UpdateAuthThrottle runs fn on the subject's row, locked until the
// transaction ends, and writes back what fn leaves, or deletes the row when
// fn says drop. A subject without a row gets a fresh one (no failures,
// first seen at now). On PostgreSQL the row lock serializes replicas;
// SQLite transactions are serialized already (_txlock=immediate).
func (s *Store) UpdateAuthThrottle(ctx context.Context, name, subject string, now time.Time, fn func(*AuthThrottle) (drop bool)) error {
	return s.InTx(ctx, func(tx *Store) error {
		now := now.UTC()
		fresh := &AuthThrottle{Name: name, Subject: subject, InFlightUntil: now, FirstAt: now}
		if _, err := tx.db.NewInsert().Model(fresh).On("CONFLICT (name, subject) DO NOTHING").Exec(ctx); err != nil {
			return mapErr(err)
		}
		row := &AuthThrottle{Name: name, Subject: subject}
		q := tx.db.NewSelect().Model(row).WherePK()
		if tx.root.Dialect().Name() == dialect.PG {
			q = q.For("UPDATE")
		}
		if err := q.Scan(ctx); err != nil {
			return mapErr(err)
		}
		if fn(row) {
			_, err := tx.db.NewDelete().Model(row).WherePK().Exec(ctx)
			return mapErr(err)
		}
		row.InFlightUntil, row.FirstAt = row.InFlightUntil.UTC(), row.FirstAt.UTC()
		if row.LockedUntil != nil {
			t := row.LockedUntil.UTC()
			row.LockedUntil = &t
		}
		_, err := tx.db.NewUpdate().Model(row).WherePK().Exec(ctx)
		return mapErr(err)
	})
}

// DeleteStaleAuthThrottles drops rows whose window began before
// windowStart, with no lockout running and no attempt in flight at now.
func (s *Store) DeleteStaleAuthThrottles(ctx context.Context, windowStart, now time.Time) (int64, error) {
	res, err := s.db.NewDelete().Model((*AuthThrottle)(nil)).
		Where("first_at < ?", windowStart.UTC()).
		Where("locked_until IS NULL OR locked_until < ?", now.UTC()).
		Where("in_flight = 0 OR in_flight_until < ?", now.UTC()).Exec(ctx)
	if err != nil {
		return 0, mapErr(err)
	}
	return res.RowsAffected()
}
