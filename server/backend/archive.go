package backend

import (
	"context"

	"github.com/gw-gateway/gw/server/store"
)

// ArchiveDeletion is one archived payload the retention sweeper deleted.
type ArchiveDeletion struct {
	Workspace     *store.Workspace
	UsageEventID  string
	Key           string
	RetentionDays int
}

// AuditArchiveDeletion records that the retention sweeper deleted an
// archived payload (issue 32): each deletion is audited.
func AuditArchiveDeletion(ctx context.Context, st *store.Store, d ArchiveDeletion) error {
	return st.InTx(ctx, func(tx *store.Store) error {
		return Audit(ctx, tx, System("archive-retention"), AuditEntry{Action: "archive.payload_deleted", TargetType: "usage_event",
			TargetID: d.UsageEventID, OrgID: &d.Workspace.OrgID, WorkspaceID: &d.Workspace.ID,
			Details: map[string]any{"key": d.Key, "bucket": d.Workspace.Archive.Bucket, "retention_days": d.RetentionDays}})
	})
}
