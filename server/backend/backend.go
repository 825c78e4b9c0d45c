// Package backend holds gw's domain operations that more than one edge
// performs: the HTTP API and the operator's commands (gw serve
// --bootstrap-email, gw admin create-key) call the same function, which
// writes the audit entry for an explicit actor in the same transaction as
// the change. Functions take a *store.Store that may be a transaction, so
// the caller decides what else commits with them.
package backend

import (
	"context"
	"strings"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
)

// Actor is who performs an operation, as the audit log records it.
type Actor struct {
	// Type is user, service_account or system.
	Type   string
	UserID *uuid.UUID
	// KeyID is the management key the actor authenticated with, if any.
	KeyID *uuid.UUID
	// RequestID ties the entry to a request, or names the operator
	// command for a system actor.
	RequestID string
	// Rights are the actor's effective permissions where it acts (key
	// ceiling ∩ role rights), which bound what it may grant (MayGrant);
	// a system actor has no limit.
	Rights auth.Set
	// InstanceRole is the acting user's role on the instance: only an
	// instance owner may act on another owner.
	InstanceRole string
}

// System is an operator command acting without a principal.
func System(command string) Actor { return Actor{Type: "system", RequestID: command} }

// User is a person or service account acting with an optional key.
func User(id uuid.UUID, serviceAccount bool, keyID *uuid.UUID, requestID string) Actor {
	a := Actor{Type: "user", UserID: &id, KeyID: keyID, RequestID: requestID}
	if serviceAccount {
		a.Type = "service_account"
	}
	return a
}

// AuditEntry describes one mutation for the audit log. Details must never
// hold a secret: names, ids, roles and permissions only.
type AuditEntry struct {
	Action      string
	TargetType  string
	TargetID    string
	OrgID       *uuid.UUID
	WorkspaceID *uuid.UUID
	Details     map[string]any
}

// Audit records e for actor in tx, so the log can neither miss a change
// nor record one that rolled back.
func Audit(ctx context.Context, tx *store.Store, actor Actor, e AuditEntry) error {
	return tx.InsertAuditEvent(ctx, &store.AuditEvent{
		ID: uuid.New(), OrgID: e.OrgID, WorkspaceID: e.WorkspaceID,
		ActorType: actor.Type, ActorID: actor.UserID, ActorKeyID: actor.KeyID,
		Action: e.Action, TargetType: e.TargetType, TargetID: e.TargetID,
		RequestID: actor.RequestID, Details: store.JSONMap(e.Details), CreatedAt: store.Now(),
	})
}

// NormalizeEmail is the form emails are stored and compared in.
func NormalizeEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
