package backend_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

func TestEnrollmentRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		_, owner := instanceUser(t, w.st, auth.InstanceOwner, false)
		poller, stranger := uuid.New(), uuid.New()
		ask := func(key uuid.UUID, pub string) func() error {
			return func() error {
				_, err := backend.RequestEnrollment(ctx, w.st, owner, backend.EnrollmentRequest{DataPlaneID: "dp-1",
					PublicKey: pub, Fingerprint: "fp-" + pub, KeyID: key})
				return err
			}
		}
		approve := func(in backend.EnrollmentApproval) func() error {
			return func() error {
				in.DataPlaneID = "dp-1"
				e, _, err := backend.ApproveEnrollment(ctx, w.st, owner, in)
				if err == nil && (e.Status != store.EnrollmentApproved || len(e.OrgIDs) != 1 || e.OrgIDs[0] != w.org.ID) {
					t.Errorf("approved enrollment: %s for %v", e.Status, e.OrgIDs)
				}
				return err
			}
		}
		revoke := func(id string) func() error {
			return func() error { _, err := backend.RevokeEnrollment(ctx, w.st, owner, id); return err }
		}
		wrong := "FP-other"
		checked := "FP-KEY-A"
		acme := []string{w.org.ID.String(), "acme"}

		checkInstanceRules(t, w.st, []rule{
			{name: "a data plane asks", op: ask(poller, "key-a")},
			{name: "it asks again, the same", op: ask(poller, "key-a")},
			{name: "another management key asks for its id", op: ask(stranger, "key-a"), kind: backend.Conflict},
			{name: "another key pair asks for its id", op: ask(poller, "key-b"), kind: backend.Conflict},
			// Issue 27, row 8: another data plane with dp-1's public key.
			{name: "another data plane asks with its public key", op: func() error {
				_, err := backend.RequestEnrollment(ctx, w.st, owner, backend.EnrollmentRequest{DataPlaneID: "dp-2",
					PublicKey: "key-a", Fingerprint: "fp-key-a", KeyID: poller})
				return err
			}, kind: backend.Conflict},
			{name: "approve a data plane nobody enrolled", op: func() error {
				_, _, err := backend.ApproveEnrollment(ctx, w.st, owner, backend.EnrollmentApproval{DataPlaneID: "dp-9", Organizations: acme})
				return err
			}, kind: backend.NotFound},
			{name: "approve with a fingerprint not checked", op: approve(backend.EnrollmentApproval{Organizations: acme, Fingerprint: &wrong}), kind: backend.Conflict},
			{name: "approve for an organization that does not exist", op: approve(backend.EnrollmentApproval{Organizations: []string{"nosuch"}}), kind: backend.Unreadable},
			{name: "approve, naming the organization twice", op: approve(backend.EnrollmentApproval{Organizations: acme, Fingerprint: &checked}),
				action: "data_plane.enrollment_approved", by: &owner},
			{name: "revoke one nobody enrolled", op: revoke("dp-9"), kind: backend.NotFound},
			{name: "revoke", op: revoke("dp-1"), action: "data_plane.enrollment_revoked", by: &owner},
			{name: "revoke again", op: revoke("dp-1")},
			{name: "the revoked data plane asks with a new key pair", op: ask(poller, "key-b"), action: "data_plane.enrollment_requested", by: &owner},
		})
		e, err := w.st.GetEnrollment(ctx, "dp-1")
		if err != nil || e.Status != store.EnrollmentPending || e.PublicKey != "key-b" {
			t.Fatalf("after asking again: %+v %v, want pending with the new key", e, err)
		}
		// dp-1's old key is no live enrollment's any more: another data
		// plane may ask with it. Approving it is refused while a request
		// with the same key is pending for another.
		if _, err := backend.RequestEnrollment(ctx, w.st, owner, backend.EnrollmentRequest{DataPlaneID: "dp-2",
			PublicKey: "key-a", Fingerprint: "fp-key-a", KeyID: stranger}); err != nil {
			t.Fatalf("a revoked data plane's old key: %v", err)
		}
		if _, err := w.st.RequestEnrollment(ctx, &store.DataPlaneEnrollment{DataPlaneID: "dp-3", PublicKey: "key-a",
			Fingerprint: "fp-key-a", KeyID: &stranger, Status: store.EnrollmentPending, RequestedAt: store.Now(), UpdatedAt: store.Now()}); err != nil {
			t.Fatal(err)
		}
		_, _, err = backend.ApproveEnrollment(ctx, w.st, owner, backend.EnrollmentApproval{DataPlaneID: "dp-2", Organizations: acme})
		if kindOf(err) != backend.Conflict {
			t.Fatalf("approving a key another pending data plane has: %v", err)
		}
	})
}
