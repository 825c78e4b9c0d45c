package backend_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
)

// invalid is the kind a rules table expects for a field problem (a
// validate.Errors), which is not a domain refusal.
const invalid backend.Kind = -2

// rule is a row of a rules table: an operation, the refusal it meets (0
// for none), and when it succeeds, the audit event it leaves last in the
// organization and the actor that event names. A row with an empty action
// must leave the organization's audit log as it was, as every refusal
// must.
type rule struct {
	name   string
	op     func() error
	kind   backend.Kind
	action string
	// by is read after op runs, which may fill it in (an account the
	// operation creates).
	by *backend.Actor
	// events is how many events the operation audits, action the last;
	// one when zero.
	events int
}

// checkRules runs rows in order against organization org's audit log.
func checkRules(t *testing.T, st *store.Store, org uuid.UUID, rows []rule) {
	t.Helper()
	checkRulesIn(t, st, &org, rows)
}

// checkInstanceRules runs rows against the whole instance's audit log,
// for operations on accounts and data planes, which belong to no
// organization.
func checkInstanceRules(t *testing.T, st *store.Store, rows []rule) {
	t.Helper()
	checkRulesIn(t, st, nil, rows)
}

func checkRulesIn(t *testing.T, st *store.Store, org *uuid.UUID, rows []rule) {
	t.Helper()
	for _, r := range rows {
		before := auditEvents(t, st, org)
		err := r.op()
		got := kindOf(err)
		if _, ok := validate.AsError(err); ok {
			got = invalid
		}
		if got != r.kind {
			t.Fatalf("%s: %v (kind %d), want kind %d", r.name, err, got, r.kind)
		}
		after := auditEvents(t, st, org)
		if r.action == "" || r.kind != 0 {
			if len(after) != len(before) {
				t.Fatalf("%s: audited %s, want nothing audited", r.name, after[0].Action)
			}
			continue
		}
		if want := max(r.events, 1); len(after) != len(before)+want {
			t.Fatalf("%s: %d audit events, want %d", r.name, len(after)-len(before), want)
		}
		if e := after[0]; e.Action != r.action || !sameActor(e, *r.by) {
			t.Fatalf("%s: audited %s by %s %v (key %v, request %q), want %s by %s %v (request %q)", r.name,
				e.Action, e.ActorType, e.ActorID, e.ActorKeyID, e.RequestID, r.action, r.by.Type, r.by.UserID, r.by.RequestID)
		}
	}
}

// auditEvents is the organization's audit log (the instance's for nil),
// newest first.
func auditEvents(t *testing.T, st *store.Store, org *uuid.UUID) []store.AuditEvent {
	t.Helper()
	events, _, err := st.ListAuditEvents(context.Background(), org, store.PageQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func sameActor(e store.AuditEvent, a backend.Actor) bool {
	same := func(x, y *uuid.UUID) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return e.ActorType == a.Type && same(e.ActorID, a.UserID) && same(e.ActorKeyID, a.KeyID) && e.RequestID == a.RequestID
}
