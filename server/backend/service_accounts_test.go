package backend_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/fixture"
	"github.com/gw-gateway/gw/server/store/storetest"
)

func TestServiceAccountRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		org, err := w.st.GetOrganization(ctx, w.org.ID)
		if err != nil {
			t.Fatal(err)
		}
		expires := store.Now().Add(time.Hour)
		admin := orgAdminWithKey(t, w, &expires)
		ownerOnly := admin.Rights.Missing(auth.OrgRoleRights(auth.OrgOwner).Sorted())
		var made *backend.ServiceAccountCreated
		create := func(perms []string) func() error {
			return func() error {
				var err error
				made, err = backend.CreateServiceAccount(ctx, w.st, admin, backend.ServiceAccountCreate{Org: org, Name: "ci",
					Key: backend.KeyIssue{Permissions: perms, Label: "ci", ExpiresAt: &expires}})
				return err
			}
		}
		del := func(orgID uuid.UUID) func() error {
			return func() error {
				_, err := backend.DeleteServiceAccount(ctx, w.st, admin, orgID, made.Account.ID)
				return err
			}
		}
		other := fixture.NewOrg(t, w.st, fixture.Keyring(t), "initech")

		checkRules(t, w.st, w.org.ID, []rule{
			{name: "a first key beyond the actor's rights", op: create(ownerOnly), kind: backend.Forbidden},
			{name: "create", op: func() error {
				if err := create([]string{string(auth.MembersRead)})(); err != nil {
					return err
				}
				if k := made.Key; k.UserID != made.Account.ID || k.OrgID == nil || *k.OrgID != org.ID || k.WorkspaceID != nil ||
					k.ParentID == nil || *k.ParentID != *admin.KeyID || made.Membership.OrgID != org.ID || !made.Account.ServiceAccount {
					t.Errorf("made: %+v %+v %+v", made.Account, made.Membership, made.Key)
				}
				return nil
			}, action: "management_key.issued", by: &admin, events: 2},
			{name: "find it", op: func() error { _, err := backend.ServiceAccountIn(ctx, w.st, org.ID, made.Account.ID); return err }},
			{name: "find it from another organization", op: func() error {
				_, err := backend.ServiceAccountIn(ctx, w.st, other.ID, made.Account.ID)
				return err
			}, kind: backend.NotFound},
			{name: "find a person", op: func() error { _, err := backend.ServiceAccountIn(ctx, w.st, org.ID, w.alice); return err }, kind: backend.NotFound},
			{name: "delete from another organization", op: del(other.ID), kind: backend.NotFound},
			{name: "delete", op: del(org.ID), action: "service_account.deleted", by: &admin},
			{name: "delete again", op: del(org.ID), kind: backend.NotFound},
		})
		if sas, err := w.st.ListServiceAccounts(ctx, org.ID); err != nil || len(sas) != 0 {
			t.Fatalf("service accounts left: %+v %v (the refused create must leave none)", sas, err)
		}
		if k, err := w.st.GetManagementKey(ctx, made.Key.ID); err != nil || k.RevokedAt == nil {
			t.Fatalf("the deleted account's key: %+v %v", k, err)
		}
	})
}
