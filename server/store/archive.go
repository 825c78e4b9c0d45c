package store

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// GetUsageEvent is the organization's usage event id (ErrNotFound when it
// has none of that id: another organization's answers as unknown).
func (s *Store) GetUsageEvent(ctx context.Context, orgID, id uuid.UUID) (*UsageEvent, error) {
	e := new(UsageEvent)
	err := s.db.NewSelect().Model(e).Where("id = ?", id).Where("org_id = ?", orgID).Scan(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	return e, nil
}

// ArchivingWorkspaces are the workspaces, of every organization, with an
// archive setting (for the retention sweeper).
func (s *Store) ArchivingWorkspaces(ctx context.Context) ([]Workspace, error) {
	var out []Workspace
	err := s.db.NewSelect().Model(&out).Where("archive IS NOT NULL").Order("id").Scan(ctx)
	return out, mapErr(err)
}

// ArchiveCheck is what the control plane last learnt of a workspace's
// archive bucket, stored as JSON text: whether it answered, its error
// if not, when, and by what ("save": the setting was saved; "sweep": the
// hourly retention sweep).
type ArchiveCheck struct {
	OK        bool      `json:"ok"`
	Error     string    `json:"error,omitempty"`
	CheckedAt time.Time `json:"checked_at"`
	By        string    `json:"by"`
}

// Value implements driver.Valuer.
func (c *ArchiveCheck) Value() (driver.Value, error) {
	if c == nil {
		return nil, nil
	}
	b, err := json.Marshal(*c)
	return string(b), err
}

// Scan implements sql.Scanner.
func (c *ArchiveCheck) Scan(src any) error { return scanJSON(src, "ArchiveCheck", c) }

// SetArchiveCheck records what was learnt of a workspace's archive bucket
// (nil forgets it: no enabled archive). It touches no other column, so it
// never races a settings update.
func (s *Store) SetArchiveCheck(ctx context.Context, workspaceID uuid.UUID, c *ArchiveCheck) error {
	return s.write(ctx, func(db bun.IDB) error {
		_, err := db.NewUpdate().Model((*Workspace)(nil)).Set("archive_check = ?", c).Where("id = ?", workspaceID).Exec(ctx)
		return mapErr(err)
	})
}

// TakeLease gives the named lease to holder until now+ttl when it is
// free, expired, or already holder's (a renewal), and says whether holder
// has it. One statement, so two replicas asking together cannot both get
// it: the row's conflict is settled by the database.
func (s *Store) TakeLease(ctx context.Context, name, holder string, ttl time.Duration, now time.Time) (bool, error) {
	var n int64
	err := s.write(ctx, func(db bun.IDB) error {
		res, err := db.NewRaw("INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?) "+
			"ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at "+
			"WHERE leases.holder = excluded.holder OR leases.expires_at <= ?",
			name, holder, now.Add(ttl).UTC(), now.UTC()).Exec(ctx)
		if err != nil {
			return mapErr(err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return n == 1, err
}

// ReleaseLease ends holder's lease on name, if it still has it.
func (s *Store) ReleaseLease(ctx context.Context, name, holder string) error {
	return s.write(ctx, func(db bun.IDB) error {
		_, err := db.NewDelete().TableExpr("leases").Where("name = ?", name).Where("holder = ?", holder).Exec(ctx)
		return mapErr(err)
	})
}
