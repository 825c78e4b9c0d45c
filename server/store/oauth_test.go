package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/fixture"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// The grants a bundle carries: unrevoked, not idle past a refresh token's
// lifetime, of an active member whose account is not disabled; and a code
// or refresh token is used once, whichever of two redemptions comes first.
func TestLiveOAuthGrants(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st := store.New(db)
		org := fixture.NewOrg(t, st, fixture.Keyring(t), "acme")
		ws := org.Workspace("main")
		person, suspended, disabled := org.Member(auth.MembershipActive), org.Member(auth.MembershipActive), org.Member(auth.MembershipActive)
		now := store.Now()
		grant := func(user uuid.UUID, created time.Time, used *time.Time) uuid.UUID {
			g := &store.OAuthGrant{ID: uuid.New(), OrgID: org.ID, WorkspaceID: ws, UserID: user, ClientID: "https://app.example.com/c.json",
				ClientName: "app", Resource: "https://gw.example.com/inf/v1/mcp", Scope: "inference", CreatedAt: created, LastUsedAt: used}
			if err := st.CreateOAuthGrant(ctx, g); err != nil {
				t.Fatal(err)
			}
			return g.ID
		}
		old := now.Add(-40 * 24 * time.Hour)
		recent := now.Add(-time.Hour)
		live := grant(person, now, nil)
		usedLately := grant(person, old, &recent)
		grant(person, old, &old) // idle
		revoked := grant(person, now, nil)
		if ok, err := st.RevokeOAuthGrant(ctx, revoked, "test", now); err != nil || !ok {
			t.Fatalf("revoke: %v %v", ok, err)
		}
		if ok, _ := st.RevokeOAuthGrant(ctx, revoked, "again", now); ok {
			t.Fatal("a second revocation reported a change")
		}
		grant(suspended, now, nil)
		org.SetMemberStatus(suspended, auth.MembershipSuspended)
		d := grant(disabled, now, nil)
		if _, err := db.NewUpdate().Model((*store.User)(nil)).Set("disabled_at = ?", now).Where("id = ?", disabled).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := st.LiveOAuthGrantsForOrg(ctx, org.ID, now.Add(-store.OAuthRefreshTTL))
		if err != nil {
			t.Fatal(err)
		}
		want := map[uuid.UUID]bool{live: true, usedLately: true}
		if len(got) != 2 || !want[got[0].ID] || !want[got[1].ID] {
			t.Fatalf("live grants: %+v (disabled person's %s)", got, d)
		}

		if err := st.CreateOAuthCode(ctx, &store.OAuthCode{CodeHash: "h", GrantID: live, ClientID: "c", RedirectURI: "r", CodeChallenge: "x",
			ExpiresAt: now.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		first, err1 := st.UseOAuthCode(ctx, "h", now)
		second, err2 := st.UseOAuthCode(ctx, "h", now)
		if err1 != nil || err2 != nil || !first || second {
			t.Fatalf("code used: %v %v %v %v", first, second, err1, err2)
		}
		if err := st.CreateOAuthRefreshToken(ctx, &store.OAuthRefreshToken{TokenHash: "r", GrantID: live, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		first, _ = st.UseOAuthRefreshToken(ctx, "r", now)
		second, _ = st.UseOAuthRefreshToken(ctx, "r", now)
		if !first || second {
			t.Fatalf("refresh token used: %v %v", first, second)
		}
	})
}
