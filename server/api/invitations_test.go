package api_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/wire"
)

func TestInvitations(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		a := tnNewAuditor(e)
		k := e.ownerKey
		org := e.boot.Organization.ID
		base := "/api/v1/organizations/default/invitations"
		invShape := []string{"id", "org_id", "email", "role", "status", "invited_by", "accepted_by", "expires_at", "accepted_at",
			"revoked_at", "created_at", "updated_at"}
		ev := func(action string) tnAuditWant { return tnOrgEv(action, "invitation", org) }

		alice, aliceCookie := e.signup("alice@example.com")
		a.user("cookie:"+aliceCookie, alice.User.ID)
		e.must("POST", "/api/v1/organizations/default/members", k, map[string]any{"user_id": alice.User.ID, "role": "admin"})

		issue := func(cred, email, role string) (wire.Invitation, tnResult) {
			t.Helper()
			r := a.mut(ev("invitation.issued"), "POST", base, cred, map[string]any{"email": email, "role": role})
			if r.status != 200 {
				return wire.Invitation{}, r
			}
			tnWantKeys(t, "issued invitation", tnData(t, r.body), append(slices.Clone(invShape), "token")...)
			inv := decodeData[wire.Invitation](t, r.body)
			if !strings.HasPrefix(inv.Token, auth.InvitationPrefix) || inv.Status != "pending" || inv.OrgID != org || inv.Role != role {
				t.Fatalf("issued: %+v", inv)
			}
			if d := time.Until(inv.ExpiresAt); d < 6*24*time.Hour || d > 8*24*time.Hour {
				t.Fatalf("invitation expires in %v", d)
			}
			a.secret(inv.Token)
			return inv, r
		}
		inv1, _ := issue(k, "New.Person@Example.com", "member")
		if inv1.Email != "new.person@example.com" || inv1.InvitedBy == nil || *inv1.InvitedBy != e.boot.User.ID {
			t.Fatalf("inv1: %+v", inv1)
		}
		inv2, _ := issue("cookie:"+aliceCookie, "other@example.com", "viewer")
		inv3, _ := issue(k, "third@example.com", "admin")
		inv4, _ := issue(k, "x@example.com", "member")
		for _, c := range []struct {
			name   string
			cred   string
			body   map[string]any
			status int
			loc    []any
			typ    string
		}{
			{"bad email", k, map[string]any{"email": "nope", "role": "member"}, 422, []any{"body", "email"}, "string_pattern_mismatch"},
			{"bad role", k, map[string]any{"email": "a@b.c", "role": "king"}, 422, []any{"body", "role"}, "literal_error"},
			{"extra member", k, map[string]any{"email": "a@b.c", "role": "member", "token": "inv_x"}, 422, []any{"body", "token"}, "extra_forbidden"},
			{"admin invites an owner", "cookie:" + aliceCookie, map[string]any{"email": "boss@example.com", "role": "owner"}, 403, nil, ""},
		} {
			r := a.mut(ev("invitation.issued"), "POST", base, c.cred, c.body)
			if c.status == 422 {
				tnWantValidation(t, c.name, r, c.loc, c.typ)
			} else {
				tnWantDetail(t, c.name, r, c.status)
			}
		}

		// The list is the complete set, without tokens and without page.
		list := func() []wire.Invitation {
			t.Helper()
			raw := e.must("GET", base, k, nil)
			for _, it := range tnData(t, raw).([]any) {
				tnWantKeys(t, "listed invitation", it, invShape...)
			}
			for _, s := range a.secrets {
				if strings.HasPrefix(s, auth.InvitationPrefix) && strings.Contains(string(raw), s) {
					t.Fatal("the invitation list shows a token")
				}
			}
			return decodeData[[]wire.Invitation](t, raw)
		}
		statusOf := func(id uuid.UUID) string {
			for _, inv := range list() {
				if inv.ID == id {
					return inv.Status
				}
			}
			t.Fatalf("invitation %s not listed", id)
			return ""
		}
		if got := list(); len(got) != 4 || got[0].ID != inv1.ID {
			t.Fatalf("list: %+v", got)
		}

		// Reissue: a new token; the old one stops working.
		r := a.mut(ev("invitation.reissued"), "POST", base+"/"+inv1.ID.String()+"/reissue", k, nil)
		tnWantStatus(t, "reissue", r, 200)
		re := decodeData[wire.Invitation](t, r.body)
		a.secret(re.Token)
		if re.ID != inv1.ID || re.Token == "" || re.Token == inv1.Token || re.Status != "pending" {
			t.Fatalf("reissued: %+v", re)
		}
		password := "new person password"
		a.secret(password)
		accept := func(what, cred string, body map[string]any, w tnAuditWant) tnResult {
			t.Helper()
			return a.mut(w, "POST", "/api/v1/invitations/accept", cred, body)
		}
		tnWantDetail(t, "old token", accept("old", "", map[string]any{"token": inv1.Token, "password": password}, tnNoEvent), 404)
		tnWantDetail(t, "unknown token", accept("unknown", "", map[string]any{"token": "inv_nothing", "password": password}, tnNoEvent), 404)
		if got := list(); len(got) != 4 {
			t.Fatalf("reissue changed the list: %d", len(got))
		}

		// Accepting without a session creates the account; it needs a password.
		tnWantValidation(t, "accept without password", accept("nopw", "", map[string]any{"token": re.Token}, tnNoEvent),
			[]any{"body", "password"}, "missing")
		tnWantValidation(t, "accept with a short password", accept("short", "", map[string]any{"token": re.Token, "password": "short"}, tnNoEvent),
			[]any{"body", "password"}, "string_too_short")
		if st := statusOf(inv1.ID); st != "pending" {
			t.Fatalf("failed accepts changed the status to %s", st)
		}
		if _, err := e.st.GetUserByEmail(ctx, "new.person@example.com"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a failed accept created the account: %v", err)
		}
		r = accept("create", "", map[string]any{"token": re.Token, "password": password, "name": "New Person"},
			ev("invitation.accepted"))
		tnWantStatus(t, "accept", r, 200)
		tnWantKeys(t, "accepted", tnData(t, r.body), "user", "membership")
		acc := decodeData[wire.InvitationAccepted](t, r.body)
		newID := acc.User.ID
		a.wants[len(a.wants)-1].want.TargetID = inv1.ID.String()
		a.wants[len(a.wants)-1].actor = tnActorWant{Type: "user", ID: &newID}
		if acc.User.Email != "new.person@example.com" || acc.User.Name != "New Person" || acc.User.InstanceRole != auth.InstanceMember ||
			acc.Membership.OrgID != org || acc.Membership.Role != "member" || acc.Membership.Status != "active" ||
			acc.Membership.UserID != newID || !slices.Equal(acc.User.Orgs, []uuid.UUID{org}) {
			t.Fatalf("accepted: %+v", acc)
		}
		c := tnSessionCookie(r.cookies)
		if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode {
			t.Fatalf("accept set no proper session cookie: %+v", c)
		}
		a.secret(c.Value)
		e.must("GET", "/api/v1/organizations/default", "cookie:"+c.Value, nil)
		if me := decodeData[wire.Me](t, e.must("GET", "/api/v1/auth/me", "cookie:"+c.Value, nil)); me.User.ID != newID {
			t.Fatalf("me: %+v", me)
		}
		// The account signs in with the password.
		tnWantStatus(t, "login", e.tnCall("POST", "/api/v1/auth/login", "", map[string]any{"email": "new.person@example.com", "password": password}), 200)
		for _, inv := range list() {
			if inv.ID == inv1.ID && (inv.Status != "accepted" || inv.AcceptedBy == nil || *inv.AcceptedBy != newID || inv.AcceptedAt == nil) {
				t.Fatalf("accepted invitation lists as %+v", inv)
			}
		}
		tnWantDetail(t, "accept again", accept("again", "", map[string]any{"token": re.Token, "password": password}, tnNoEvent), 409)
		tnWantDetail(t, "accept again signed in", accept("again", "cookie:"+c.Value, map[string]any{"token": re.Token}, tnNoEvent), 409)
		tnWantDetail(t, "reissue accepted", a.mut(tnNoEvent, "POST", base+"/"+inv1.ID.String()+"/reissue", k, nil), 409)
		tnWantDetail(t, "revoke accepted", a.mut(tnNoEvent, "POST", base+"/"+inv1.ID.String()+"/revoke", k, nil), 409)

		// Revoke, both ways; revoked invitations cannot be accepted.
		for _, c := range []struct {
			name   string
			method string
			inv    wire.Invitation
		}{{"POST revoke", "POST", inv2}, {"DELETE", "DELETE", inv3}} {
			path := base + "/" + c.inv.ID.String()
			if c.method == "POST" {
				path += "/revoke"
			}
			r := a.mut(ev("invitation.revoked"), c.method, path, k, nil)
			tnWantStatus(t, c.name, r, 200)
			got := decodeData[wire.Invitation](t, r.body)
			if got.Status != "revoked" || got.RevokedAt == nil || got.Token != "" {
				t.Fatalf("%s: %+v", c.name, got)
			}
			tnWantDetail(t, c.name+" then accept", accept("revoked", "", map[string]any{"token": c.inv.Token, "password": password}, tnNoEvent), 409)
			// Revoking again changes nothing and records nothing.
			r = a.mut(tnNoEvent, c.method, path, k, nil)
			if tnWantStatus(t, c.name+" again", r, 200); decodeData[wire.Invitation](t, r.body).Status != "revoked" {
				t.Fatalf("%s again: %s", c.name, r.body)
			}
			if st := statusOf(c.inv.ID); st != "revoked" {
				t.Fatalf("%s lists as %s", c.name, st)
			}
		}
		tnWantDetail(t, "revoke unknown", a.mut(tnNoEvent, "DELETE", base+"/"+uuid.NewString(), k, nil), 404)

		// Signed in as someone else: refused, and nothing changes.
		tnWantDetail(t, "accept as another email", accept("other", "cookie:"+aliceCookie, map[string]any{"token": inv4.Token}, tnNoEvent), 403)
		if st := statusOf(inv4.ID); st != "pending" {
			t.Fatalf("inv4 is %s", st)
		}
		// Signed out while the account exists: sign in first.
		xs, xCookie := e.signup("x@example.com")
		a.user("cookie:"+xCookie, xs.User.ID)
		tnWantDetail(t, "accept for an existing account without a session", accept("exists", "",
			map[string]any{"token": inv4.Token, "password": password}, tnNoEvent), 409)
		r = accept("signed in", "cookie:"+xCookie, map[string]any{"token": inv4.Token}, ev("invitation.accepted"))
		tnWantStatus(t, "accept signed in", r, 200)
		a.wants[len(a.wants)-1].want.TargetID = inv4.ID.String()
		if tnSessionCookie(r.cookies) != nil {
			t.Fatal("accepting while signed in started another session")
		}
		e.must("GET", "/api/v1/organizations/default", "cookie:"+xCookie, nil)

		// An expired invitation cannot be accepted until it is reissued.
		inv5, _ := issue(k, "late@example.com", "viewer")
		if _, err := e.st.DB().NewUpdate().Model((*store.Invitation)(nil)).Set("expires_at = ?", store.Now().Add(-time.Hour)).
			Where("id = ?", inv5.ID).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if st := statusOf(inv5.ID); st != "expired" {
			t.Fatalf("expired invitation lists as %s", st)
		}
		tnWantDetail(t, "accept expired", accept("expired", "", map[string]any{"token": inv5.Token, "password": password}, tnNoEvent), 409)
		r = a.mut(ev("invitation.reissued"), "POST", base+"/"+inv5.ID.String()+"/reissue", k, nil)
		tnWantStatus(t, "reissue expired", r, 200)
		re5 := decodeData[wire.Invitation](t, r.body)
		a.secret(re5.Token)
		if re5.Status != "pending" {
			t.Fatalf("reissued expired: %+v", re5)
		}

		// Only owners hand out owner invitations, reissues included: a
		// reissued owner token in an admin's hands would let the admin create
		// the invited account and become an owner through it.
		bossInv, _ := issue(k, "boss@example.com", "owner")
		tnWantDetail(t, "admin reissues an owner invitation", a.mut(tnNoEvent, "POST", base+"/"+bossInv.ID.String()+"/reissue",
			"cookie:"+aliceCookie, nil), 403)
		r = a.mut(ev("invitation.reissued"), "POST", base+"/"+inv4.ID.String()+"/reissue", k, nil)
		tnWantDetail(t, "reissue accepted (signed-in path)", r, 409)
		r = a.mut(ev("invitation.reissued"), "POST", base+"/"+bossInv.ID.String()+"/reissue", k, nil)
		tnWantStatus(t, "owner reissues an owner invitation", r, 200)
		a.secret(jsonPath(t, r.body, "data.token").(string))

		// Members read the list; viewers cannot issue.
		e.must("GET", base, "cookie:"+c.Value, nil)
		tnWantDetail(t, "member issues", a.mut(tnNoEvent, "POST", base, "cookie:"+c.Value, map[string]any{"email": "q@example.com", "role": "viewer"}), 403)

		a.orgs = []uuid.UUID{org}
		a.verify(k)
	})
}

// Invitations still create accounts when self-service sign-up is off.
func TestInvitationWithSignupDisabled(t *testing.T) {
	t.Parallel()
	tnEachEnvOpts(t, api.Options{SignupDisabled: true}, func(t *testing.T, e *env) {
		r := e.tnCall("POST", "/api/v1/auth/signup", "", map[string]any{"email": "solo@example.com", "password": "a long enough password"})
		tnWantDetail(t, "signup", r, 403)
		if tnSessionCookie(r.cookies) != nil {
			t.Fatal("refused signup set a cookie")
		}
		tnWantDetail(t, "login after refused signup", e.tnCall("POST", "/api/v1/auth/login", "",
			map[string]any{"email": "solo@example.com", "password": "a long enough password"}), 401)
		inv := decodeData[wire.Invitation](t, e.must("POST", "/api/v1/organizations/default/invitations", e.ownerKey,
			map[string]any{"email": "solo@example.com", "role": "member"}))
		r = e.tnCall("POST", "/api/v1/invitations/accept", "", map[string]any{"token": inv.Token, "password": "a long enough password"})
		tnWantStatus(t, "accept", r, 200)
		if c := tnSessionCookie(r.cookies); c == nil {
			t.Fatal("no session after accepting")
		}
	})
}

// Service accounts.
