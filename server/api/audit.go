package api

import (
	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/store"
)

// auditEntry describes one mutation for the audit log. Details must never
// hold a secret: callers pass names, ids, roles and permissions only.
type auditEntry struct {
	Action     string
	TargetType string
	TargetID   string
	// OrgID and WorkspaceID default to the request's resolved scope.
	OrgID, WorkspaceID *uuid.UUID
	Details            map[string]any
}

// audit records e in the same transaction as the mutation it describes, so
// the log can neither miss a change nor record one that rolled back.
func (r *Request) audit(tx *store.Store, e auditEntry) error {
	ev := &store.AuditEvent{
		ID: uuid.New(), OrgID: e.OrgID, WorkspaceID: e.WorkspaceID,
		ActorType: "system", Action: e.Action, TargetType: e.TargetType, TargetID: e.TargetID,
		RequestID: r.ID, Details: store.JSONMap(e.Details), CreatedAt: store.Now(),
	}
	if ev.OrgID == nil && r.Org != nil {
		ev.OrgID = &r.Org.ID
	}
	if ev.WorkspaceID == nil && r.WS != nil {
		ev.WorkspaceID = &r.WS.ID
	}
	if r.P != nil {
		ev.ActorType = "user"
		if r.P.User.ServiceAccount {
			ev.ActorType = "service_account"
		}
		ev.ActorID = &r.P.User.ID
		if r.P.Key != nil {
			ev.ActorKeyID = &r.P.Key.ID
		}
	}
	return tx.InsertAuditEvent(r.ctx, ev)
}
