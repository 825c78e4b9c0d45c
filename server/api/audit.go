package api

import (
	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
)

// auditEntry describes one mutation for the audit log; its OrgID and
// WorkspaceID default to the request's resolved scope.
type auditEntry = backend.AuditEntry

// actor is who makes the request, for the audit log: the principal and the
// key it authenticated with, or the system for unauthenticated routes.
func (r *Request) actor() backend.Actor {
	if r.P == nil {
		return backend.Actor{Type: "system", RequestID: r.ID}
	}
	var keyID *uuid.UUID
	if r.P.Key != nil {
		keyID = &r.P.Key.ID
	}
	a := backend.User(r.P.User.ID, r.P.User.ServiceAccount, keyID, r.ID)
	a.Rights, a.InstanceRole = r.Rights, r.P.User.InstanceRole
	return a
}

// audit records e in the same transaction as the mutation it describes.
func (r *Request) audit(tx *store.Store, e auditEntry) error {
	if e.OrgID == nil && r.Org != nil {
		e.OrgID = &r.Org.ID
	}
	if e.WorkspaceID == nil && r.WS != nil {
		e.WorkspaceID = &r.WS.ID
	}
	return backend.Audit(r.ctx, tx, r.actor(), e)
}
