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

// instanceUser is an account with an instance role, and the actor it is
// when it acts with its role's full rights.
func instanceUser(t *testing.T, st *store.Store, role string, serviceAccount bool) (uuid.UUID, backend.Actor) {
	t.Helper()
	now := store.Now()
	u := &store.User{ID: uuid.New(), Email: uuid.NewString() + "@example.test", Name: role, InstanceRole: role,
		ServiceAccount: serviceAccount, CreatedAt: now, UpdatedAt: now}
	if err := st.CreateUser(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	a := backend.User(u.ID, serviceAccount, nil, "req-"+role)
	a.Rights, a.InstanceRole = auth.InstanceRoleRights(role), role
	return u.ID, a
}

func TestInstanceAccountRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st := store.New(db)
		ownerID, owner := instanceUser(t, st, auth.InstanceOwner, false)
		_, admin := instanceUser(t, st, auth.InstanceAdmin, false)
		memberID, _ := instanceUser(t, st, auth.InstanceMember, false)
		robotID, _ := instanceUser(t, st, auth.InstanceMember, true)
		role := func(by backend.Actor, id uuid.UUID, to string) func() error {
			return func() error { _, err := backend.ChangeInstanceRole(ctx, st, by, id, to); return err }
		}
		disable := func(by backend.Actor, id uuid.UUID) func() error {
			return func() error {
				u, err := backend.DisableUser(ctx, st, by, id)
				if err == nil && u.DisabledAt == nil {
					t.Errorf("disabled account %s reads back enabled", id)
				}
				return err
			}
		}
		enable := func(by backend.Actor, id uuid.UUID) func() error {
			return func() error { _, err := backend.EnableUser(ctx, st, by, id); return err }
		}

		checkInstanceRules(t, st, []rule{
			{name: "change the role of nobody", op: role(owner, uuid.New(), auth.InstanceAdmin), kind: backend.NotFound},
			{name: "an admin makes an owner", op: role(admin, memberID, auth.InstanceOwner), kind: backend.Forbidden},
			{name: "an admin demotes the owner", op: role(admin, ownerID, auth.InstanceMember), kind: backend.Forbidden},
			{name: "the last owner steps down", op: role(owner, ownerID, auth.InstanceAdmin), kind: backend.Conflict},
			{name: "a service account gets an instance role", op: role(owner, robotID, auth.InstanceAdmin), kind: backend.Conflict},
			{name: "an admin makes a member admin", op: role(admin, memberID, auth.InstanceAdmin), action: "user.role_changed", by: &admin},
			{name: "an admin disables the owner", op: disable(admin, ownerID), kind: backend.Forbidden},
			{name: "the owner disables themselves", op: disable(owner, ownerID), kind: backend.Conflict},
			{name: "disable nobody", op: disable(owner, uuid.New()), kind: backend.NotFound},
			{name: "the owner disables an admin", op: disable(owner, memberID), action: "user.disabled", by: &owner},
			{name: "disable again: sessions and keys stay gone", op: disable(owner, memberID), action: "user.disabled", by: &owner},
			{name: "enable", op: enable(owner, memberID), action: "user.enabled", by: &owner},
			{name: "enable an enabled account", op: enable(owner, memberID)},
		})
	})
}

func TestDisableUserStopsEverything(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		_, owner := instanceUser(t, w.st, auth.InstanceOwner, false)
		_, keyID := w.org.Key(w.ws.ID, w.alice, nil)
		if _, _, err := backend.StartSession(ctx, w.st, w.alice, backend.SessionStart{TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if _, err := backend.DisableUser(ctx, w.st, owner, w.alice); err != nil {
			t.Fatal(err)
		}
		if ss, err := w.st.ListUserSessions(ctx, w.alice, store.Now()); err != nil || len(ss) != 0 {
			t.Fatalf("sessions after disabling: %d %v", len(ss), err)
		}
		if k, err := w.st.GetInferenceKey(ctx, w.ws.ID, keyID); err != nil || k.RevokedAt == nil {
			t.Fatalf("the disabled account's inference key: %+v %v, want revoked", k, err)
		}
		// Its revocation is audited in the key's organization.
		if !w.audited(t, "inference_key.revoked", owner) {
			t.Fatal("the key's revocation is missing from its organization's audit log")
		}
	})
}

func TestOwnSessionRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st := store.New(db)
		aliceID, alice := instanceUser(t, st, auth.InstanceMember, false)
		bobID, bob := instanceUser(t, st, auth.InstanceMember, false)
		start := func(id uuid.UUID) uuid.UUID {
			se, _, err := backend.StartSession(ctx, st, id, backend.SessionStart{TTL: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			return se.ID
		}
		mine, other, bobs := start(aliceID), start(aliceID), start(bobID)
		checkInstanceRules(t, st, []rule{
			{name: "end another person's session", op: func() error { return backend.EndSession(ctx, st, alice, bobs) }, kind: backend.NotFound},
			{name: "change the password, keeping this session", op: func() error {
				n, err := backend.ChangePassword(ctx, st, alice, "hash", &mine)
				if err == nil && n != 1 {
					t.Errorf("password change ended %d sessions, want the other one", n)
				}
				return err
			}, action: "user.password_changed", by: &alice},
			{name: "end a session already ended", op: func() error { return backend.EndSession(ctx, st, alice, other) }, kind: backend.NotFound},
			{name: "end one's own session", op: func() error { return backend.EndSession(ctx, st, alice, mine) }, action: "user.session_ended", by: &alice},
			{name: "sign out everywhere", op: func() error {
				_, err := backend.EndAllSessions(ctx, st, bob)
				return err
			}, action: "user.signed_out_everywhere", by: &bob},
		})
		if ss, _ := st.ListUserSessions(ctx, bobID, store.Now()); len(ss) != 0 {
			t.Fatalf("bob still has %d sessions", len(ss))
		}
	})
}
