package dataplane_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/fixture"
	"github.com/gw-gateway/gw/server/store/storetest"
)

func TestRefreshFollowsChangesAndDeletions(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		a := newAcme(t, e)
		if e.plane.Ready() {
			t.Fatal("ready before the first sync")
		}
		e.sync(t)
		if !e.plane.Ready() || e.plane.Versions()[a.ID] != 1 {
			t.Fatalf("after sync: ready %v, versions %v", e.plane.Ready(), e.plane.Versions())
		}

		// A refresh without change admits nothing new.
		if err := e.refresh.Refresh(ctx, a.ID); err != nil || e.plane.Versions()[a.ID] != 1 {
			t.Fatalf("refresh without change: %v, version %d", err, e.plane.Versions()[a.ID])
		}
		// A new key works once its organization is refreshed.
		token, _ := a.Key(a.ws, a.owner, nil)
		if w := e.get(token, "/inf/v1/models"); w.Code != http.StatusUnauthorized {
			t.Fatalf("key before refresh: %d", w.Code)
		}
		if err := e.refresh.Refresh(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		if w := e.get(token, "/inf/v1/models"); w.Code != http.StatusOK || e.plane.Versions()[a.ID] != 2 {
			t.Fatalf("key after refresh: %d, version %d", w.Code, e.plane.Versions()[a.ID])
		}

		// Deleting the organization and refreshing it drops its keys.
		if err := e.st.DeleteOrganization(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		if err := e.refresh.Refresh(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		if w := e.get(a.token, "/inf/v1/models"); w.Code != http.StatusUnauthorized {
			t.Fatalf("key of a deleted organization: %d", w.Code)
		}
		if _, ok := e.plane.Versions()[a.ID]; ok {
			t.Fatal("a deleted organization is still admitted")
		}
	})
}

func TestRefreshAllServesTheHealthyAndForgetsTheDeleted(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		kr := fixture.Keyring(t)
		healthy, doomed := fixture.NewOrg(t, e.st, kr, "healthy"), fixture.NewOrg(t, e.st, kr, "doomed")
		var tokens []string
		for _, o := range []*fixture.Org{healthy, doomed} {
			ws := o.Workspace("main")
			token, _ := o.Key(ws, o.Member(auth.MembershipActive), nil)
			o.OrgCredential("openai")
			tokens = append(tokens, token)
		}
		e.sync(t)
		if err := e.st.DeleteOrganization(ctx, doomed.ID); err != nil {
			t.Fatal(err)
		}

		// A third organization whose stored policy no longer parses cannot
		// be compiled; it must not keep the others from being served.
		broken := fixture.NewOrg(t, e.st, kr, "broken")
		brokenWS := broken.Workspace("main")
		brokenToken, _ := broken.Key(brokenWS, broken.Member(auth.MembershipActive), nil)
		now := store.Now()
		if err := e.st.CreatePolicy(ctx, &store.Policy{ID: uuid.New(), OrgID: broken.ID, WorkspaceID: brokenWS, Name: "bad",
			Enabled: true, Definition: `{"target":{"kind":"everyone"}}`, CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}

		if err := e.refresh.RefreshAll(ctx); err == nil {
			t.Fatal("RefreshAll hid the broken organization's failure")
		}
		if !e.plane.Ready() {
			t.Fatal("not ready")
		}
		for token, want := range map[string]int{tokens[0]: http.StatusOK, tokens[1]: http.StatusUnauthorized, brokenToken: http.StatusUnauthorized} {
			if w := e.get(token, "/inf/v1/models"); w.Code != want {
				t.Errorf("got %d, want %d", w.Code, want)
			}
		}
		if _, ok := e.plane.Versions()[doomed.ID]; ok {
			t.Fatal("RefreshAll kept a deleted organization")
		}
	})
}
