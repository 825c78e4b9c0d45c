package store

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun/dialect"
)

// bundleChannel is the PostgreSQL channel on which replicas announce that
// an organization's bundle changed.
const bundleChannel = "gw_bundles"

// NotifyBundleChanged tells the other replicas sharing a PostgreSQL
// database that orgID's bundle changed (uuid.Nil: every organization's,
// after an instance-wide change such as the catalog), so their in-process
// data planes refresh at once. On SQLite there are no other replicas: it
// does nothing.
func (s *Store) NotifyBundleChanged(ctx context.Context, orgID uuid.UUID) error {
	if s.root.Dialect().Name() != dialect.PG {
		return nil
	}
	_, err := s.db.ExecContext(ctx, "SELECT pg_notify(?, ?)", bundleChannel, orgID.String())
	return mapErr(err)
}

// ListenBundleChanges calls changed for every organization a replica
// announces (uuid.Nil for all of them), until ctx ends. It holds one connection of its own (LISTEN
// needs a session) and reconnects after failures.
func ListenBundleChanges(ctx context.Context, databaseURL string, log *slog.Logger, changed func(uuid.UUID)) {
	for ctx.Err() == nil {
		err := listenOnce(ctx, databaseURL, changed)
		if ctx.Err() != nil {
			return
		}
		log.Warn("bundle change listener stopped; reconnecting", "error", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func listenOnce(ctx context.Context, databaseURL string, changed func(uuid.UUID)) error {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+bundleChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if id, err := uuid.Parse(n.Payload); err == nil {
			changed(id)
		}
	}
}
