package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

func TestEnrollmentLifecycle(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		s := store.New(db)
		now := store.Now()
		var orgs []uuid.UUID
		for _, slug := range []string{"a", "b"} {
			o := &store.Organization{ID: uuid.New(), Name: slug, Slug: slug, CreatedAt: now, UpdatedAt: now}
			if err := s.CreateOrganization(ctx, o); err != nil {
				t.Fatal(err)
			}
			orgs = append(orgs, o.ID)
		}
		key := uuid.New()
		first, err := s.RequestEnrollment(ctx, &store.DataPlaneEnrollment{DataPlaneID: "dp-1", PublicKey: "pk1", Fingerprint: "f1",
			KeyID: &key, Status: store.EnrollmentPending, RequestedAt: now, UpdatedAt: now})
		if err != nil || first.Status != store.EnrollmentPending || len(first.OrgIDs) != 0 || first.PlatformCredentials {
			t.Fatalf("request: %+v %v", first, err)
		}
		// A second request does not replace the key.
		again, err := s.RequestEnrollment(ctx, &store.DataPlaneEnrollment{DataPlaneID: "dp-1", PublicKey: "pk2", Fingerprint: "f2",
			Status: store.EnrollmentPending, RequestedAt: now, UpdatedAt: now})
		if err != nil || again.PublicKey != "pk1" || again.KeyID == nil || *again.KeyID != key {
			t.Fatalf("second request: %+v %v", again, err)
		}
		if err := s.ApproveEnrollment(ctx, "dp-1", orgs[:1], true, now); err != nil {
			t.Fatal(err)
		}
		if err := s.ApproveEnrollment(ctx, "dp-missing", orgs[:1], false, now); err == nil {
			t.Fatal("approved a data plane that never asked")
		}
		got, err := s.GetEnrollment(ctx, "dp-1")
		if err != nil || got.Status != store.EnrollmentApproved || len(got.OrgIDs) != 1 || got.OrgIDs[0] != orgs[0] || !got.PlatformCredentials {
			t.Fatalf("approved: %+v %v", got, err)
		}
		if done, err := s.RevokeEnrollment(ctx, "dp-1", now.Add(time.Second)); err != nil || !done {
			t.Fatalf("revoke: %v %v", done, err)
		}
		if done, err := s.RevokeEnrollment(ctx, "dp-1", now.Add(time.Second)); err != nil || done {
			t.Fatalf("second revoke: %v %v", done, err)
		}
		// A renewed enrollment (a new key pair) starts without platform
		// credentials, like a new one.
		if err := s.RenewEnrollment(ctx, "dp-1", "pk3", "f3", key, now); err != nil {
			t.Fatal(err)
		}
		if got, err := s.GetEnrollment(ctx, "dp-1"); err != nil || got.PlatformCredentials || got.Status != store.EnrollmentPending {
			t.Fatalf("renewed: %+v %v", got, err)
		}
		// Deleting an organization takes it out of every enrollment.
		if err := s.ApproveEnrollment(ctx, "dp-1", orgs, false, now); err != nil {
			t.Fatal(err)
		}
		if _, err := db.NewDelete().Model((*store.Organization)(nil)).Where("id = ?", orgs[1]).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		list, err := s.ListEnrollments(ctx)
		if err != nil || len(list) != 1 || list[0].Status != store.EnrollmentApproved || list[0].RevokedAt != nil ||
			len(list[0].OrgIDs) != 1 || list[0].OrgIDs[0] != orgs[0] {
			t.Fatalf("list: %+v %v", list, err)
		}
	})
}
