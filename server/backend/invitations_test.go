package backend_test

import (
	"context"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/fixture"
	"github.com/gw-gateway/gw/server/store/storetest"
)

func TestInvitationRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		admin := backend.User(w.alice, false, nil, "req-admin")
		admin.Rights = auth.OrgRoleRights(auth.OrgAdmin)
		bob := backend.User(w.bob, false, nil, "req-bob")
		outsider := backend.User(w.outsider, false, nil, "req-outsider")
		anonymous := backend.Actor{Type: "system", RequestID: "req-anonymous"}
		var newcomer backend.Actor // the account accepting creates
		email := func(id backend.Actor) string {
			u, err := w.st.GetUser(ctx, *id.UserID)
			if err != nil {
				t.Fatal(err)
			}
			return u.Email
		}
		hash := "$argon2id$stored-by-the-caller"
		invitations := map[string]*store.Invitation{}
		tokens := map[string]string{}
		stale := map[string]string{} // tokens a reissue replaced
		issue := func(key, email, role string, by backend.Actor) func() error {
			return func() error {
				inv, token, err := backend.IssueInvitation(ctx, w.st, by, backend.InvitationCreate{OrgID: w.org.ID, Email: email, Role: role})
				invitations[key], tokens[key] = inv, token
				return err
			}
		}
		accept := func(key string, by backend.Actor, password *string) func() error {
			return func() error {
				acc, err := backend.AcceptInvitation(ctx, w.st, by, backend.InvitationAccept{Token: tokens[key], PasswordHash: password,
					Session: backend.SessionStart{UserAgent: "test", ClientAddress: "127.0.0.1", TTL: time.Hour}})
				if err == nil && by.UserID == nil {
					if acc.Session == nil || acc.SessionToken == "" || acc.Session.UserID != acc.User.ID {
						t.Errorf("a new account is not signed in: %+v", acc)
					}
					newcomer = backend.User(acc.User.ID, false, nil, by.RequestID)
				}
				if err == nil && (acc.Membership.Role != invitations[key].Role || acc.Invitation.AcceptedBy == nil || *acc.Invitation.AcceptedBy != acc.User.ID) {
					t.Errorf("accepted: %+v", acc)
				}
				return err
			}
		}
		reissue := func(key string, by backend.Actor) func() error {
			return func() error {
				inv, token, err := backend.ReissueInvitation(ctx, w.st, by, w.org.ID, invitations[key].ID)
				if err == nil {
					invitations[key], stale[key], tokens[key] = inv, tokens[key], token
				}
				return err
			}
		}
		revoke := func(key string, by backend.Actor) func() error {
			return func() error {
				_, err := backend.RevokeInvitation(ctx, w.st, by, w.org.ID, invitations[key].ID)
				return err
			}
		}
		other := fixture.NewOrg(t, w.st, fixture.Keyring(t), "initech")
		foreign, _, err := backend.IssueInvitation(ctx, w.st, w.system, backend.InvitationCreate{OrgID: other.ID, Email: "x@example.test", Role: auth.OrgMember})
		if err != nil {
			t.Fatal(err)
		}

		checkRules(t, w.st, w.org.ID, []rule{
			{name: "an admin invites an owner", op: issue("boss", "boss@example.test", auth.OrgOwner, admin), kind: backend.Forbidden},
			{name: "an operator invites an owner", op: issue("boss", "boss@example.test", auth.OrgOwner, w.system), action: "invitation.issued", by: &w.system},
			{name: "an admin reissues an owner's invitation", op: reissue("boss", admin), kind: backend.Forbidden},
			{name: "an admin invites a member", op: issue("new", " New@Example.test ", auth.OrgMember, admin), action: "invitation.issued", by: &admin},
			{name: "reissue", op: reissue("new", admin), action: "invitation.reissued", by: &admin},
			{name: "accept with the token a reissue replaced", op: func() error {
				_, err := backend.AcceptInvitation(ctx, w.st, anonymous, backend.InvitationAccept{Token: stale["new"], PasswordHash: &hash})
				return err
			}, kind: backend.NotFound},
			{name: "create the account without a password", op: accept("new", anonymous, nil), kind: invalid},
			{name: "create the account", op: accept("new", anonymous, &hash), action: "invitation.accepted", by: &newcomer},
			{name: "accept again", op: accept("new", anonymous, &hash), kind: backend.Conflict},
			{name: "revoke an accepted invitation", op: revoke("new", admin), kind: backend.Conflict},
			{name: "reissue an accepted invitation", op: reissue("new", admin), kind: backend.Conflict},
			{name: "invite someone with an account", op: issue("outsider", email(outsider), auth.OrgViewer, admin), action: "invitation.issued", by: &admin},
			{name: "create an account that exists", op: accept("outsider", anonymous, &hash), kind: backend.Conflict},
			{name: "accept someone else's invitation", op: accept("outsider", bob, nil), kind: backend.Forbidden},
			{name: "accept one's own invitation", op: accept("outsider", outsider, nil), action: "invitation.accepted", by: &outsider},
			{name: "invite a member", op: issue("bob", email(bob), auth.OrgMember, admin), action: "invitation.issued", by: &admin},
			{name: "a member accepts", op: accept("bob", bob, nil), kind: backend.Conflict},
			{name: "revoke", op: revoke("bob", admin), action: "invitation.revoked", by: &admin},
			{name: "revoke again", op: revoke("bob", admin)},
			{name: "accept a revoked invitation", op: accept("bob", bob, nil), kind: backend.Conflict},
			{name: "invite to expire", op: issue("late", "late@example.test", auth.OrgMember, admin), action: "invitation.issued", by: &admin},
			{name: "accept an expired invitation", op: func() error {
				inv := invitations["late"]
				inv.ExpiresAt = store.Now().Add(-time.Minute)
				if err := w.st.UpdateInvitation(ctx, inv); err != nil {
					return err
				}
				return accept("late", anonymous, &hash)()
			}, kind: backend.Conflict},
			{name: "reissue another organization's invitation", op: func() error {
				_, _, err := backend.ReissueInvitation(ctx, w.st, w.system, w.org.ID, foreign.ID)
				return err
			}, kind: backend.NotFound},
			{name: "revoke another organization's invitation", op: func() error {
				_, err := backend.RevokeInvitation(ctx, w.st, w.system, w.org.ID, foreign.ID)
				return err
			}, kind: backend.NotFound},
		})
		if u, err := w.st.GetUserByEmail(ctx, "new@example.test"); err != nil || newcomer.UserID == nil || u.ID != *newcomer.UserID {
			t.Fatalf("the invited account (stored by its normalized email): %+v %v", u, err)
		}
	})
}
