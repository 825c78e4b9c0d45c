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
	"github.com/gw-gateway/gw/server/store/storetest"
)

func TestManagementKeyRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		org, ws := &w.org.ID, &w.ws.ID
		expires := store.Now().Add(time.Hour)
		admin := orgAdminWithKey(t, w, &expires)
		ownerOnly := admin.Rights.Missing(auth.OrgRoleRights(auth.OrgOwner).Sorted())
		if len(ownerOnly) == 0 {
			t.Fatal("an admin holds every owner permission; the escalation rows test nothing")
		}
		allowed := []string{string(auth.MembersRead)}
		keys := map[string]*store.ManagementKey{}
		issue := func(name string, by backend.Actor, owner uuid.UUID, perms []string, until *time.Time) func() error {
			return func() error {
				k, token, err := backend.IssueManagementKey(ctx, w.st, by, backend.KeyIssue{Owner: owner, OrgID: org,
					Permissions: perms, Label: name, ExpiresAt: until})
				if err == nil && (token == "" || (by.KeyID != nil && (k.ParentID == nil || *k.ParentID != *by.KeyID))) {
					t.Errorf("%s: token %q, parent %v, want the issuing key %v", name, token, k.ParentID, by.KeyID)
				}
				keys[name] = k
				return err
			}
		}
		in := func(view backend.KeyView, name string) func() error {
			return func() error { _, err := backend.ManagementKeyIn(ctx, w.st, view, keys[name].ID); return err }
		}
		revoke := func(view backend.KeyView, name string) func() error {
			return func() error {
				k, err := backend.RevokeManagementKey(ctx, w.st, admin, view, keys[name].ID)
				if err == nil && k.RevokedAt == nil {
					t.Errorf("%s reads back unrevoked", name)
				}
				return err
			}
		}
		orgView := backend.KeyView{OrgID: org}
		other := uuid.New()
		later := expires.Add(time.Minute)

		checkRules(t, w.st, w.org.ID, []rule{
			{name: "issue a permission the actor lacks", op: issue("up", admin, w.alice, ownerOnly, &expires), kind: backend.Forbidden},
			{name: "outlive the issuing key", op: issue("long", admin, w.alice, allowed, &later), kind: backend.Forbidden},
			{name: "never expire under an expiring key", op: issue("forever", admin, w.alice, allowed, nil), kind: backend.Forbidden},
			{name: "issue within the actor's rights and expiry", op: issue("child", admin, w.alice, allowed, &expires), action: "management_key.issued", by: &admin},
			{name: "an operator command issues anything", op: issue("ops", w.system, w.bob, ownerOnly, nil), action: "management_key.issued", by: &w.system},
			{name: "read a key in view", op: in(orgView, "child")},
			{name: "read it from another organization", op: in(backend.KeyView{OrgID: &other}, "child"), kind: backend.NotFound},
			{name: "read an organization's key from a workspace", op: in(backend.KeyView{OrgID: org, WorkspaceID: ws}, "child"), kind: backend.NotFound},
			{name: "read another's key when limited to one's own", op: in(backend.KeyView{OrgID: org, OwnerID: &w.bob}, "child"), kind: backend.NotFound},
			{name: "revoke from another organization", op: revoke(backend.KeyView{OrgID: &other}, "child"), kind: backend.NotFound},
			{name: "revoke the issuing key and what it issued", op: func() error {
				keys["issuer"] = &store.ManagementKey{ID: *admin.KeyID}
				return revoke(orgView, "issuer")()
			}, action: "management_key.revoked", by: &admin, events: 2},
			{name: "revoke again", op: revoke(orgView, "issuer")},
		})
		if k, err := w.st.GetManagementKey(ctx, keys["child"].ID); err != nil || k.RevokedAt == nil {
			t.Fatalf("the issued key survived its issuer: %+v %v", k, err)
		}
	})
}

// orgAdminWithKey is an organization admin acting with a key of theirs
// that expires at expires.
func orgAdminWithKey(t *testing.T, w *world, expires *time.Time) backend.Actor {
	t.Helper()
	k, _, err := backend.MintManagementKey(context.Background(), w.st, w.system, backend.KeySpec{Owner: w.alice, OrgID: &w.org.ID,
		Permissions: auth.OrgRoleRights(auth.OrgAdmin).Sorted(), Label: "admin", ExpiresAt: expires})
	if err != nil {
		t.Fatal(err)
	}
	a := backend.User(w.alice, false, &k.ID, "req-admin-key")
	a.Rights = auth.OrgRoleRights(auth.OrgAdmin)
	return a
}
