package backend

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/store"
)

// BatchIn is the workspace's batch id; another workspace's (in this
// organization or another) is not found, as one that never existed.
func BatchIn(ctx context.Context, st *store.Store, workspaceID uuid.UUID, id string) (*store.Batch, error) {
	b, err := st.Batch(ctx, workspaceID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(NotFound, "batch %q not found", id)
	}
	return b, err
}

// CancelBatch stops a workspace's batch from spending: its pending lines
// are cancelled (never sent, they cost nothing) and a line in flight is
// left to end. It is audited in the same transaction; a batch that has
// already ended is answered as it is, and nothing is recorded.
func CancelBatch(ctx context.Context, st *store.Store, actor Actor, workspaceID uuid.UUID, id string) (*store.Batch, error) {
	var out *store.Batch
	err := st.InTx(ctx, func(tx *store.Store) error {
		before, err := BatchIn(ctx, tx, workspaceID, id)
		if err != nil {
			return err
		}
		if out, err = tx.CancelBatch(ctx, workspaceID, id, store.Now()); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return errorf(NotFound, "batch %q not found", id)
			}
			return err
		}
		if out.Status == before.Status {
			return nil
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "batch.cancelled", TargetType: "batch", TargetID: id,
			OrgID: &out.OrgID, WorkspaceID: &out.WorkspaceID,
			Details: map[string]any{"from": before.Status, "status": out.Status}})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
