package api_test

import (
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/wire"
)

func TestServiceAccounts(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		a := tnNewAuditor(e)
		k := e.ownerKey
		org := e.boot.Organization.ID
		base := "/api/v1/organizations/default/service-accounts"
		userShape := []string{"id", "email", "name", "instance_role", "service_account", "managing_org_id", "created_at", "updated_at", "orgs"}
		keyShape := []string{"id", "user_id", "org_id", "workspace_id", "parent_id", "prefix", "permissions", "label", "expires_at",
			"revoked_at", "created_at", "updated_at", "scope", "status"}
		saPerms := []string{"workspaces.read", "workspaces.create", "members.read"}

		r := a.mut(tnOrgEv("service_account.created", "user", org), "POST", base, k,
			map[string]any{"name": "CI bot", "management_key": map[string]any{"permissions": saPerms, "label": "ci"}})
		tnWantStatus(t, "create", r, 200)
		bundle := tnWantKeys(t, "bundle", tnData(t, r.body), "service_account", "membership", "management_key")
		sam := tnWantKeys(t, "service_account", bundle["service_account"], userShape...)
		tnWantKeys(t, "membership", bundle["membership"], "user_id", "org_id", "role", "status")
		tnWantKeys(t, "management_key", bundle["management_key"], append(slices.Clone(keyShape), "token")...)
		tnWantKeys(t, "management_key.scope", jsonPath(t, r.body, "data.management_key.scope"), "level", "org_id", "workspace_id")
		if sam["service_account"] != true {
			t.Fatalf("service_account flag: %v", sam)
		}
		b := decodeData[wire.ServiceAccountBundle](t, r.body)
		sa, m, mk := b.ServiceAccount, b.Membership, b.ManagementKey
		if sa.Name != "CI bot" || sa.InstanceRole != auth.InstanceMember || sa.ManagingOrgID == nil || *sa.ManagingOrgID != org ||
			!slices.Equal(sa.Orgs, []uuid.UUID{org}) || sa.Email == "" {
			t.Fatalf("service account: %+v", sa)
		}
		if m.UserID != sa.ID || m.OrgID != org || m.Status != "active" || m.Role == "" {
			t.Fatalf("membership: %+v", m)
		}
		wantPerms := slices.Clone(saPerms)
		sort.Strings(wantPerms)
		gotPerms := slices.Clone(mk.Permissions)
		sort.Strings(gotPerms)
		if mk.UserID != sa.ID || !strings.HasPrefix(mk.Token, auth.ManagementKeyPrefix) || !strings.HasPrefix(mk.Token, mk.Prefix) ||
			mk.Scope.Level != wire.ScopeOrganization || mk.Scope.OrgID == nil || *mk.Scope.OrgID != org || mk.Scope.WorkspaceID != nil ||
			mk.OrgID == nil || *mk.OrgID != org || mk.WorkspaceID != nil || mk.ParentID == nil || *mk.ParentID != e.boot.ManagementKey.ID ||
			mk.Label != "ci" || mk.Status != wire.KeyActive || mk.RevokedAt != nil || mk.ExpiresAt != nil || !slices.Equal(gotPerms, wantPerms) {
			t.Fatalf("management key: %+v", mk)
		}
		a.also(r, tnOrgEv("management_key.issued", "management_key", org), k)
		a.wants[len(a.wants)-1].want.TargetID = mk.ID.String()
		a.saKey(mk.Token, mk)

		// The key works, as the service account, within its ceiling.
		me := decodeData[wire.Me](t, e.must("GET", "/api/v1/auth/me", mk.Token, nil))
		if me.Credential != "management_key" || me.User.ID != sa.ID || !me.User.ServiceAccount || me.Key == nil || me.Key.ID != mk.ID {
			t.Fatalf("me as the service account: %+v", me)
		}
		e.must("GET", "/api/v1/organizations/default/workspaces", mk.Token, nil)
		r = a.mut(tnAuditWant{Action: "workspace.created", TargetType: "workspace", Level: wire.ScopeWorkspace, Org: org}, "POST",
			"/api/v1/organizations/default/workspaces", mk.Token, map[string]any{"name": "Built by CI"})
		tnWantStatus(t, "service account creates a workspace", r, 200)
		a.wants[len(a.wants)-1].want.WS = tnUUID(t, jsonPath(t, r.body, "data.id"))
		tnWantDetail(t, "beyond the key's ceiling", a.mut(tnNoEvent, "DELETE", "/api/v1/organizations/default/workspaces/built-by-ci", mk.Token, nil), 403)
		tnWantDetail(t, "outside the key's scope", e.tnCall("GET", "/api/v1/instance/users", mk.Token, nil), 403)
		// Nobody signs in as a service account.
		bad := e.tnCall("POST", "/api/v1/auth/login", "", map[string]any{"email": sa.Email, "password": "whatever password"})
		unknown := e.tnCall("POST", "/api/v1/auth/login", "", map[string]any{"email": "nobody@example.com", "password": "whatever password"})
		if tnWantDetail(t, "login as a service account", bad, 401); string(bad.body) != string(unknown.body) {
			t.Fatalf("service-account login %s differs from unknown email %s", bad.body, unknown.body)
		}

		// Both permissions are required, and nothing beyond the caller's may be handed on.
		orgPrefix := "/api/v1/organizations/default"
		onlyMembers := e.key(orgPrefix, k, []string{"members.manage", "members.read"}, nil)
		onlyIssue := e.key(orgPrefix, k, []string{"management-keys.issue", "members.read"}, nil)
		both := e.key(orgPrefix, k, []string{"members.manage", "management-keys.issue", "members.read", "workspaces.read"}, nil)
		soon := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		expiring := e.key(orgPrefix, k, []string{"members.manage", "management-keys.issue", "members.read"}, map[string]any{"expires_at": soon})
		for _, x := range []wire.ManagementKey{onlyMembers, onlyIssue, both, expiring} {
			a.key(x.Token, x)
		}
		_, memberCookie := e.signup("member@example.com")
		memberID := decodeData[wire.Me](t, e.must("GET", "/api/v1/auth/me", "cookie:"+memberCookie, nil)).User.ID
		a.user("cookie:"+memberCookie, memberID)
		e.must("POST", orgPrefix+"/members", k, map[string]any{"user_id": memberID, "role": "member"})
		saBody := func(perms ...string) map[string]any {
			if perms == nil {
				perms = []string{}
			}
			return map[string]any{"name": "Bot", "management_key": map[string]any{"permissions": perms, "label": "bot"}}
		}
		countSAs := func() int { return len(tnData(t, e.must("GET", base, k, nil)).([]any)) }
		before := countSAs()
		for _, c := range []struct {
			name   string
			cred   string
			body   any
			status int
			loc    []any
			typ    string
		}{
			{"key with members.manage only", onlyMembers.Token, saBody("members.read"), 403, nil, ""},
			{"key with management-keys.issue only", onlyIssue.Token, saBody("members.read"), 403, nil, ""},
			{"organization member", "cookie:" + memberCookie, saBody("members.read"), 403, nil, ""},
			{"permissions beyond the caller's", both.Token, saBody("workspaces.read", "workspaces.create"), 403, nil, ""},
			{"instance permission", both.Token, saBody("organizations.create"), 403, nil, ""},
			{"outliving the issuing key", expiring.Token, saBody("members.read"), 403, nil, ""},
			{"missing management_key", k, map[string]any{"name": "Bot"}, 422, []any{"body", "management_key"}, "missing"},
			{"no permissions", k, saBody(), 422, []any{"body", "management_key", "permissions"}, "too_short"},
			{"unknown permission", k, saBody("root"), 422, []any{"body", "management_key", "permissions", 0}, "literal_error"},
			{"label too long", k, map[string]any{"name": "Bot", "management_key": map[string]any{"permissions": []string{"members.read"},
				"label": strings.Repeat("l", 81)}}, 422, []any{"body", "management_key", "label"}, "string_too_long"},
			{"extra in the key", k, map[string]any{"name": "Bot", "management_key": map[string]any{"permissions": []string{"members.read"},
				"label": "l", "scope": "instance"}}, 422, []any{"body", "management_key", "scope"}, "extra_forbidden"},
			{"missing name", k, map[string]any{"management_key": map[string]any{"permissions": []string{"members.read"}, "label": "l"}},
				422, []any{"body", "name"}, "missing"},
		} {
			r := a.mut(tnOrgEv("service_account.created", "user", org), "POST", base, c.cred, c.body)
			if c.status == 422 {
				tnWantValidation(t, c.name, r, c.loc, c.typ)
			} else {
				tnWantDetail(t, c.name, r, c.status)
			}
		}
		if n := countSAs(); n != before {
			t.Fatalf("refused creations left %d service accounts (had %d)", n, before)
		}
		r = a.mut(tnOrgEv("service_account.created", "user", org), "POST", base, both.Token, saBody("members.read", "workspaces.read"))
		tnWantStatus(t, "key with both permissions", r, 200)
		sa2 := decodeData[wire.ServiceAccountBundle](t, r.body)
		a.also(r, tnOrgEv("management_key.issued", "management_key", org), both.Token)
		a.wants[len(a.wants)-1].want.TargetID = sa2.ManagementKey.ID.String()
		a.secret(sa2.ManagementKey.Token)
		if sa2.ManagementKey.ParentID == nil || *sa2.ManagementKey.ParentID != both.ID {
			t.Fatalf("parent of a key issued by a key: %+v", sa2.ManagementKey)
		}
		r = a.mut(tnOrgEv("service_account.created", "user", org), "POST", base, expiring.Token,
			map[string]any{"name": "Short-lived", "management_key": map[string]any{"permissions": []string{"members.read"}, "label": "s", "expires_at": soon}})
		tnWantStatus(t, "expiring key within the issuer's life", r, 200)
		a.also(r, tnOrgEv("management_key.issued", "management_key", org), expiring.Token)
		a.wants[len(a.wants)-1].want.TargetID = jsonPath(t, r.body, "data.management_key.id").(string)
		a.secret(jsonPath(t, r.body, "data.management_key.token").(string))

		// List and get.
		raw := e.must("GET", base, k, nil)
		list := tnData(t, raw)
		for _, it := range list.([]any) {
			tnWantKeys(t, "listed service account", it, userShape...)
		}
		if got := tnField(t, list, "id"); !slices.Contains(got, sa.ID.String()) || !slices.Contains(got, sa2.ServiceAccount.ID.String()) ||
			slices.Contains(got, memberID.String()) || len(got) != 3 {
			t.Fatalf("service accounts %v", got)
		}
		got := decodeData[wire.User](t, e.must("GET", base+"/"+sa.ID.String(), k, nil))
		if got.ID != sa.ID || !got.ServiceAccount || got.Name != "CI bot" {
			t.Fatalf("get: %+v", got)
		}
		e.must("GET", base+"/"+sa.ID.String(), "cookie:"+memberCookie, nil)
		tnWantDetail(t, "get a person", e.tnCall("GET", base+"/"+memberID.String(), k, nil), 404)
		tnWantDetail(t, "get unknown", e.tnCall("GET", base+"/"+uuid.NewString(), k, nil), 404)
		tnWantValidation(t, "get bad id", e.tnCall("GET", base+"/bot", k, nil), []any{"path", "user_id"}, "uuid_parsing")
		members := tnField(t, tnData(t, e.must("GET", orgPrefix+"/members", k, nil)), "user_id")
		if !slices.Contains(members, sa.ID.String()) {
			t.Fatalf("service account is not listed as a member: %v", members)
		}
		tnWantDetail(t, "service account gets an instance role", a.mut(tnNoEvent, "PATCH", "/api/v1/instance/users/"+sa.ID.String(), k,
			map[string]any{"instance_role": "admin"}), 409)

		// Delete: the key dies, and reads back revoked.
		tnWantDetail(t, "member deletes", a.mut(tnNoEvent, "DELETE", base+"/"+sa.ID.String(), "cookie:"+memberCookie, nil), 403)
		r = a.mut(tnOrgEv("service_account.deleted", "user", org), "DELETE", base+"/"+sa.ID.String(), k, nil)
		tnWantDeleted(t, "delete", r, sa.ID)
		tnWantDetail(t, "deleted service account's key", e.tnCall("GET", "/api/v1/organizations/default/workspaces", mk.Token, nil), 401)
		keys := decodeData[[]wire.ManagementKey](t, e.must("GET", "/api/v1/instance/management-keys?user_id="+sa.ID.String(), k, nil))
		if len(keys) != 1 || keys[0].ID != mk.ID || keys[0].Status != wire.KeyRevoked || keys[0].RevokedAt == nil || keys[0].Token != "" {
			t.Fatalf("keys of the deleted service account: %+v", keys)
		}
		tnWantDetail(t, "get deleted", e.tnCall("GET", base+"/"+sa.ID.String(), k, nil), 404)
		tnWantDetail(t, "delete again", a.mut(tnNoEvent, "DELETE", base+"/"+sa.ID.String(), k, nil), 404)
		if got := tnField(t, tnData(t, e.must("GET", base, k, nil)), "id"); slices.Contains(got, sa.ID.String()) || len(got) != 2 {
			t.Fatalf("service accounts after delete: %v", got)
		}
		if got := tnField(t, tnData(t, e.must("GET", orgPrefix+"/members", k, nil)), "user_id"); slices.Contains(got, sa.ID.String()) {
			t.Fatalf("deleted service account still a member")
		}
		for _, u := range decodeData[[]wire.User](t, e.must("GET", "/api/v1/instance/users", k, nil)) {
			if u.ID == sa.ID {
				t.Errorf("deleted service account still listed among instance users: %+v", u)
			}
		}
		tnWantDetail(t, "instance get of a deleted service account", e.tnCall("GET", "/api/v1/instance/users/"+sa.ID.String(), k, nil), 404)
		tnWantDetail(t, "re-add a deleted service account", a.mut(tnNoEvent, "POST", orgPrefix+"/members", k,
			map[string]any{"user_id": sa.ID, "role": "member"}), 404)
		// The other service account's key is untouched.
		e.must("GET", orgPrefix+"/workspaces", sa2.ManagementKey.Token, nil)

		a.orgs = []uuid.UUID{org}
		a.verify(k)
	})
}

// Instance users.
