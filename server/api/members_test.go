package api_test

import (
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/wire"
)

func TestMembers(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		a := tnNewAuditor(e)
		k := e.ownerKey
		org := e.boot.Organization.ID
		ownerID := e.boot.User.ID
		base := "/api/v1/organizations/default/members"
		memberShape := []string{"user_id", "org_id", "email", "name", "service_account", "role", "status", "created_at", "updated_at"}
		users := map[string]wire.SessionResult{}
		cookies := map[string]string{}
		for _, n := range []string{"alice", "bob", "carol", "dan"} {
			s, c := e.signup(n + "@example.com")
			users[n], cookies[n] = s, "cookie:"+c
			a.user(cookies[n], s.User.ID)
		}
		uid := func(n string) string { return users[n].User.ID.String() }
		ev := func(action string) tnAuditWant { return tnOrgEv(action, "user", org) }

		add := []struct {
			name   string
			cred   string
			body   map[string]any
			status int
			loc    []any
			typ    string
		}{
			{"by email, any case", k, map[string]any{"email": "ALICE@Example.com", "role": "admin"}, 200, nil, ""},
			{"by user_id", k, map[string]any{"user_id": uid("bob"), "role": "member"}, 200, nil, ""},
			{"duplicate by email", k, map[string]any{"email": "alice@example.com", "role": "viewer"}, 409, nil, ""},
			{"duplicate by user_id", k, map[string]any{"user_id": uid("bob"), "role": "viewer"}, 409, nil, ""},
			{"unknown email", k, map[string]any{"email": "nobody@example.com", "role": "member"}, 404, nil, ""},
			{"unknown user_id", k, map[string]any{"user_id": uuid.NewString(), "role": "member"}, 404, nil, ""},
			{"neither", k, map[string]any{"role": "member"}, 422, []any{"body"}, "missing"},
			{"bad role", k, map[string]any{"email": "carol@example.com", "role": "king"}, 422, []any{"body", "role"}, "literal_error"},
			{"missing role", k, map[string]any{"email": "carol@example.com"}, 422, []any{"body", "role"}, "missing"},
			{"bad user_id", k, map[string]any{"user_id": "nope", "role": "member"}, 422, []any{"body", "user_id"}, "uuid_parsing"},
			{"bad email", k, map[string]any{"email": "nope", "role": "member"}, 422, []any{"body", "email"}, "string_pattern_mismatch"},
			{"extra member", k, map[string]any{"email": "carol@example.com", "role": "member", "status": "active"}, 422, []any{"body", "status"}, "extra_forbidden"},
			{"admin grants owner", cookies["alice"], map[string]any{"email": "carol@example.com", "role": "owner"}, 403, nil, ""},
			{"admin adds a viewer", cookies["alice"], map[string]any{"email": "carol@example.com", "role": "viewer"}, 200, nil, ""},
			{"member adds", cookies["bob"], map[string]any{"email": "dan@example.com", "role": "viewer"}, 403, nil, ""},
			{"stranger adds", cookies["dan"], map[string]any{"email": "dan@example.com", "role": "viewer"}, 404, nil, ""},
		}
		for _, c := range add {
			r := a.mut(ev("member.added"), "POST", base, c.cred, c.body)
			switch c.status {
			case 200:
				tnWantStatus(t, c.name, r, 200)
				m := tnWantKeys(t, c.name, tnData(t, r.body), memberShape...)
				if m["role"] != c.body["role"] || m["status"] != "active" || m["org_id"] != org.String() || m["service_account"] != false {
					t.Fatalf("%s: %v", c.name, m)
				}
			case 422:
				tnWantValidation(t, c.name, r, c.loc, c.typ)
			default:
				tnWantDetail(t, c.name, r, c.status)
			}
		}
		if got := tnField(t, tnData(t, e.must("GET", base, k, nil)), "email"); !slices.Equal(got,
			[]string{"owner@example.com", "alice@example.com", "bob@example.com", "carol@example.com"}) {
			t.Fatalf("members %v", got)
		}
		// Members can read the list; strangers cannot see the organization.
		e.must("GET", base, cookies["bob"], nil)
		tnWantDetail(t, "stranger lists members", e.tnCall("GET", base, cookies["dan"], nil), 404)

		// Bob, a member, holds an organization key until he is removed.
		bobKey := e.key("/api/v1/organizations/default", cookies["bob"], []string{"organizations.read", "members.read"}, nil)
		e.must("GET", "/api/v1/organizations/default", bobKey.Token, nil)

		patch := []struct {
			name   string
			cred   string
			user   string
			body   map[string]any
			status int
			role   string
			st     string
		}{
			{"admin demotes bob", cookies["alice"], uid("bob"), map[string]any{"role": "viewer"}, 200, "viewer", "active"},
			{"admin promotes bob to owner", cookies["alice"], uid("bob"), map[string]any{"role": "owner"}, 403, "", ""},
			{"admin demotes the owner", cookies["alice"], ownerID.String(), map[string]any{"role": "member"}, 403, "", ""},
			{"admin suspends the owner", cookies["alice"], ownerID.String(), map[string]any{"status": "suspended"}, 403, "", ""},
			{"last owner demoted", k, ownerID.String(), map[string]any{"role": "admin"}, 409, "", ""},
			{"last owner suspended", k, ownerID.String(), map[string]any{"status": "suspended"}, 409, "", ""},
			{"last owner keeps the role", k, ownerID.String(), map[string]any{"role": "owner"}, 200, "owner", "active"},
			{"unknown member", k, uuid.NewString(), map[string]any{"role": "member"}, 404, "", ""},
			{"stranger is not a member", k, uid("dan"), map[string]any{"role": "member"}, 404, "", ""},
			{"bad status", k, uid("bob"), map[string]any{"status": "invited"}, 422, "", ""},
			{"bad role", k, uid("bob"), map[string]any{"role": "boss"}, 422, "", ""},
			{"bad path id", k, "bob", map[string]any{"role": "member"}, 422, "", ""},
			{"viewer changes roles", cookies["bob"], uid("carol"), map[string]any{"role": "admin"}, 403, "", ""},
			{"suspend carol", k, uid("carol"), map[string]any{"status": "suspended"}, 200, "viewer", "suspended"},
		}
		for _, c := range patch {
			r := a.mut(ev("member.updated"), "PATCH", base+"/"+c.user, c.cred, c.body)
			switch c.status {
			case 200:
				tnWantStatus(t, c.name, r, 200)
				m := tnWantKeys(t, c.name, tnData(t, r.body), memberShape...)
				if m["role"] != c.role || m["status"] != c.st || m["user_id"] != c.user {
					t.Fatalf("%s: %v", c.name, m)
				}
			case 422:
				tnWantStatus(t, c.name, r, 422)
			default:
				tnWantDetail(t, c.name, r, c.status)
			}
		}

		// Suspended: the organization disappears for carol, and comes back.
		tnWantDetail(t, "suspended member reads", e.tnCall("GET", "/api/v1/organizations/default", cookies["carol"], nil), 404)
		tnWantDetail(t, "suspended member lists workspaces", e.tnCall("GET", "/api/v1/organizations/default/workspaces", cookies["carol"], nil), 404)
		if got := decodeData[[]wire.Organization](t, e.must("GET", "/api/v1/organizations", cookies["carol"], nil)); len(got) != 0 {
			t.Errorf("a suspended member still lists %d organization(s)", len(got))
		}
		me := decodeData[wire.Me](t, e.must("GET", "/api/v1/auth/me", cookies["carol"], nil))
		if len(me.Memberships) != 1 || me.Memberships[0].Status != "suspended" {
			t.Fatalf("carol's memberships: %+v", me.Memberships)
		}
		tnWantStatus(t, "reactivate", a.mut(ev("member.updated"), "PATCH", base+"/"+uid("carol"), k, map[string]any{"status": "active"}), 200)
		e.must("GET", "/api/v1/organizations/default", cookies["carol"], nil)

		// Removing bob revokes his keys in the organization.
		r := a.mut(ev("member.removed"), "DELETE", base+"/"+uid("bob"), cookies["alice"], nil)
		tnWantStatus(t, "remove bob", r, 200)
		tnWantKeys(t, "removed member", tnData(t, r.body), memberShape...)
		tnWantDetail(t, "bob's key after removal", e.tnCall("GET", "/api/v1/organizations/default", bobKey.Token, nil), 401)
		tnWantDetail(t, "bob's session after removal", e.tnCall("GET", "/api/v1/organizations/default", cookies["bob"], nil), 404)
		for _, mk := range decodeData[[]wire.ManagementKey](t, e.must("GET", "/api/v1/instance/management-keys?user_id="+uid("bob"), k, nil)) {
			if mk.Status != wire.KeyRevoked || mk.RevokedAt == nil {
				t.Fatalf("bob's key after removal: %+v", mk)
			}
		}
		tnWantDetail(t, "remove bob again", a.mut(tnNoEvent, "DELETE", base+"/"+uid("bob"), k, nil), 404)
		tnWantDetail(t, "admin removes the owner", a.mut(tnNoEvent, "DELETE", base+"/"+ownerID.String(), cookies["alice"], nil), 403)
		tnWantDetail(t, "last owner removed", a.mut(tnNoEvent, "DELETE", base+"/"+ownerID.String(), k, nil), 409)
		if got := tnField(t, tnData(t, e.must("GET", base, k, nil)), "email"); slices.Contains(got, "bob@example.com") {
			t.Fatalf("bob still listed: %v", got)
		}

		// With a second owner, the first may step down; then the second is the last.
		tnWantStatus(t, "promote alice", a.mut(ev("member.updated"), "PATCH", base+"/"+uid("alice"), k, map[string]any{"role": "owner"}), 200)
		tnWantStatus(t, "owner steps down", a.mut(ev("member.updated"), "PATCH", base+"/"+ownerID.String(), cookies["alice"],
			map[string]any{"role": "admin"}), 200)
		tnWantDetail(t, "alice is the last owner", a.mut(tnNoEvent, "PATCH", base+"/"+uid("alice"), cookies["alice"],
			map[string]any{"role": "admin"}), 409)
		tnWantDetail(t, "alice removes herself", a.mut(tnNoEvent, "DELETE", base+"/"+uid("alice"), cookies["alice"], nil), 409)

		a.orgs = []uuid.UUID{org}
		a.verify(k)
	})
}

// Workspace members.

func TestWorkspaceMembers(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		a := tnNewAuditor(e)
		k := e.ownerKey
		org := e.boot.Organization.ID
		ws := decodeData[wire.Workspace](t, e.must("POST", "/api/v1/organizations/default/workspaces", k, map[string]any{"name": "Team"}))
		base := "/api/v1/organizations/default/workspaces/team/members"
		shape := []string{"workspace_id", "user_id", "email", "name", "role", "created_at", "updated_at"}
		users := map[string]uuid.UUID{}
		cookies := map[string]string{}
		for _, p := range []struct{ name, role string }{{"wm1", "member"}, {"wm2", "member"}, {"susp", "member"}, {"outsider", ""}} {
			s, c := e.signup(p.name + "@example.com")
			users[p.name], cookies[p.name] = s.User.ID, "cookie:"+c
			a.user(cookies[p.name], s.User.ID)
			if p.role != "" {
				e.must("POST", "/api/v1/organizations/default/members", k, map[string]any{"user_id": s.User.ID, "role": p.role})
			}
		}
		e.must("PATCH", "/api/v1/organizations/default/members/"+users["susp"].String(), k, map[string]any{"status": "suspended"})
		candidates := func() []string {
			raw := e.must("GET", base+"/candidates", k, nil)
			list := tnData(t, raw)
			if arr := list.([]any); len(arr) > 0 {
				tnWantKeys(t, "candidate", arr[0], "user_id", "email", "name")
			}
			return tnField(t, list, "email")
		}
		if got := candidates(); !tnSameSet(got, []string{"owner@example.com", "wm1@example.com", "wm2@example.com"}) {
			t.Fatalf("candidates %v", got)
		}
		ev := func(action string) tnAuditWant { return tnWsEv(action, "user", org, ws.ID) }
		for _, c := range []struct {
			name   string
			cred   string
			body   map[string]any
			status int
			loc    []any
			typ    string
		}{
			{"add wm1 as member", k, map[string]any{"user_id": users["wm1"], "role": "member"}, 200, nil, ""},
			{"add wm2 as viewer", k, map[string]any{"user_id": users["wm2"], "role": "viewer"}, 200, nil, ""},
			{"add again", k, map[string]any{"user_id": users["wm1"], "role": "admin"}, 409, nil, ""},
			{"not an organization member", k, map[string]any{"user_id": users["outsider"], "role": "member"}, 404, nil, ""},
			{"suspended organization member", k, map[string]any{"user_id": users["susp"], "role": "member"}, 404, nil, ""},
			{"unknown user", k, map[string]any{"user_id": uuid.New(), "role": "member"}, 404, nil, ""},
			{"owner is no workspace role", k, map[string]any{"user_id": users["wm1"], "role": "owner"}, 422, []any{"body", "role"}, "literal_error"},
			{"missing user_id", k, map[string]any{"role": "member"}, 422, []any{"body", "user_id"}, "missing"},
			{"email is not accepted", k, map[string]any{"email": "wm1@example.com", "role": "member"}, 422, []any{"body", "email"}, "extra_forbidden"},
			{"workspace member adds", cookies["wm1"], map[string]any{"user_id": e.boot.User.ID, "role": "member"}, 403, nil, ""},
		} {
			r := a.mut(ev("workspace_member.added"), "POST", base, c.cred, c.body)
			switch c.status {
			case 200:
				tnWantStatus(t, c.name, r, 200)
				m := tnWantKeys(t, c.name, tnData(t, r.body), shape...)
				if m["role"] != c.body["role"] || m["workspace_id"] != ws.ID.String() {
					t.Fatalf("%s: %v", c.name, m)
				}
			case 422:
				tnWantValidation(t, c.name, r, c.loc, c.typ)
			default:
				tnWantDetail(t, c.name, r, c.status)
			}
		}
		if got := candidates(); !slices.Equal(got, []string{"owner@example.com"}) {
			t.Fatalf("candidates after adding: %v", got)
		}
		if got := tnField(t, tnData(t, e.must("GET", base, k, nil)), "email"); !slices.Equal(got, []string{"wm1@example.com", "wm2@example.com"}) {
			t.Fatalf("members %v", got)
		}

		// A workspace member reads the workspace but cannot change it.
		wsPath := "/api/v1/organizations/default/workspaces/team"
		wm1Key := e.key(wsPath, cookies["wm1"], []string{"workspaces.read"}, nil)
		e.must("GET", wsPath, cookies["wm1"], nil)
		e.must("GET", base, cookies["wm1"], nil)
		tnWantDetail(t, "member updates the workspace", a.mut(tnNoEvent, "PATCH", wsPath, cookies["wm1"], map[string]any{"name": "Mine"}), 403)
		tnWantDetail(t, "member deletes the workspace", a.mut(tnNoEvent, "DELETE", wsPath, cookies["wm1"], nil), 403)
		tnWantDetail(t, "viewer issues a key", a.mut(tnNoEvent, "POST", wsPath+"/management-keys", cookies["wm2"],
			map[string]any{"permissions": []string{"workspaces.read"}, "label": "x"}), 403)

		for _, c := range []struct {
			name   string
			user   uuid.UUID
			body   map[string]any
			status int
		}{
			{"promote wm2", users["wm2"], map[string]any{"role": "admin"}, 200},
			{"not in the workspace", users["outsider"], map[string]any{"role": "admin"}, 404},
			{"bad role", users["wm2"], map[string]any{"role": "owner"}, 422},
			{"missing role", users["wm2"], map[string]any{}, 422},
		} {
			r := a.mut(ev("workspace_member.updated"), "PATCH", base+"/"+c.user.String(), k, c.body)
			tnWantStatus(t, c.name, r, c.status)
			if c.status == 200 {
				if m := tnWantKeys(t, c.name, tnData(t, r.body), shape...); m["role"] != c.body["role"] || m["email"] != "wm2@example.com" {
					t.Fatalf("%s: %v", c.name, m)
				}
			}
		}
		// As workspace admin, wm2 may now update the workspace and manage its members.
		r := a.mut(tnWsEv("workspace.updated", "workspace", org, ws.ID), "PATCH", wsPath, cookies["wm2"], map[string]any{"name": "Team B"})
		tnWantStatus(t, "workspace admin renames", r, 200)
		tnWantStatus(t, "workspace admin demotes wm1", a.mut(ev("workspace_member.updated"), "PATCH", base+"/"+users["wm1"].String(),
			cookies["wm2"], map[string]any{"role": "viewer"}), 200)

		r = a.mut(ev("workspace_member.removed"), "DELETE", base+"/"+users["wm2"].String(), k, nil)
		if tnWantStatus(t, "remove wm2", r, 200); jsonPath(t, r.body, "data.user_id") != users["wm2"].String() {
			t.Fatalf("remove result: %s", r.body)
		}
		tnWantDetail(t, "removed member reads", e.tnCall("GET", wsPath, cookies["wm2"], nil), 404)
		tnWantDetail(t, "remove again", a.mut(tnNoEvent, "DELETE", base+"/"+users["wm2"].String(), k, nil), 404)
		tnWantValidation(t, "bad path id", a.mut(tnNoEvent, "DELETE", base+"/wm2", k, nil), []any{"path", "user_id"}, "uuid_parsing")
		if got := candidates(); !tnSameSet(got, []string{"owner@example.com", "wm2@example.com"}) {
			t.Fatalf("candidates after removal: %v", got)
		}

		// Leaving the organization leaves its workspaces too, and revokes
		// workspace keys there.
		e.must("GET", wsPath, wm1Key.Token, nil)
		e.must("DELETE", "/api/v1/organizations/default/members/"+users["wm1"].String(), k, nil)
		if got := tnField(t, tnData(t, e.must("GET", base, k, nil)), "email"); len(got) != 0 {
			t.Fatalf("workspace members after leaving the organization: %v", got)
		}
		tnWantDetail(t, "workspace key after leaving the organization", e.tnCall("GET", wsPath, wm1Key.Token, nil), 401)
		e.must("POST", "/api/v1/organizations/default/members", k, map[string]any{"user_id": users["wm1"], "role": "member"})
		tnWantDetail(t, "rejoined member has no workspace", e.tnCall("GET", wsPath, cookies["wm1"], nil), 404)
		if got := candidates(); !tnSameSet(got, []string{"owner@example.com", "wm1@example.com", "wm2@example.com"}) {
			t.Fatalf("candidates after rejoining: %v", got)
		}
		a.orgs = []uuid.UUID{org}
		a.verify(k)
	})
}

// Invitations.

func TestNoGrantingBeyondOwnRights(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		u2, cookie := e.signup("u2@example.com")
		e.must("POST", "/api/v1/organizations/default/members", e.ownerKey, map[string]any{"user_id": u2.User.ID, "role": "member"})
		e.must("POST", wsBase+"/members", e.ownerKey, map[string]any{"user_id": u2.User.ID, "role": "member"})
		// A member cannot issue an inference key owned by someone else.
		code, _ := e.do("POST", wsBase+"/inference-keys", "cookie:"+cookie, map[string]any{"name": "x", "user_id": e.boot.User.ID})
		if code != 403 {
			t.Fatalf("member issuing a key for the owner: %d", code)
		}
		// A key holding only members.manage cannot make an owner.
		narrow := e.key("/api/v1/organizations/default", e.ownerKey, []string{"members.manage"}, nil)
		code, body := e.do("PATCH", "/api/v1/organizations/default/members/"+u2.User.ID.String(), narrow.Token, map[string]any{"role": "owner"})
		if code != 403 {
			t.Fatalf("narrow key granting owner: %d %s", code, body)
		}
		code, _ = e.do("POST", "/api/v1/organizations/default/invitations", narrow.Token, map[string]any{"email": "x@example.com", "role": "admin"})
		if code != 403 {
			t.Fatalf("narrow key inviting an admin: %d", code)
		}
	})
}

func TestSuspensionRevokesManagementKeys(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		u2, cookie := e.signup("u2@example.com")
		e.must("POST", "/api/v1/organizations/default/members", e.ownerKey, map[string]any{"user_id": u2.User.ID, "role": "member"})
		k := e.key("/api/v1/organizations/default", "cookie:"+cookie, []string{"organizations.read"}, nil)
		member := "/api/v1/organizations/default/members/" + u2.User.ID.String()
		e.must("PATCH", member, e.ownerKey, map[string]any{"status": "suspended"})
		e.must("PATCH", member, e.ownerKey, map[string]any{"status": "active"})
		if code, _ := e.do("GET", "/api/v1/organizations/default", k.Token, nil); code != 401 {
			t.Fatalf("key of a suspended-then-reactivated member: %d", code)
		}
	})
}
