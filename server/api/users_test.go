package api_test

import (
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/wire"
)

func TestInstanceUsers(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		a := tnNewAuditor(e)
		k := e.ownerKey
		ownerID := e.boot.User.ID
		base := "/api/v1/instance/users"
		userShape := []string{"id", "email", "name", "instance_role", "service_account", "managing_org_id", "created_at", "updated_at", "orgs"}
		ids2 := map[string]uuid.UUID{}
		cookies := map[string]string{}
		for _, n := range []string{"alice", "bob"} {
			s, c := e.signup(n + "@example.com")
			ids2[n], cookies[n] = s.User.ID, "cookie:"+c
			a.user(cookies[n], s.User.ID)
		}
		e.must("POST", "/api/v1/organizations/default/members", k, map[string]any{"user_id": ids2["bob"], "role": "viewer"})

		raw := e.must("GET", base, k, nil)
		list := tnData(t, raw)
		for _, it := range list.([]any) {
			tnWantKeys(t, "listed user", it, userShape...)
		}
		if got := tnField(t, list, "email"); !slices.Equal(got, []string{"owner@example.com", "alice@example.com", "bob@example.com"}) {
			t.Fatalf("users %v", got)
		}
		bob := decodeData[wire.User](t, e.must("GET", base+"/"+ids2["bob"].String(), k, nil))
		if bob.Email != "bob@example.com" || bob.InstanceRole != "member" || !slices.Equal(bob.Orgs, []uuid.UUID{e.boot.Organization.ID}) ||
			bob.ServiceAccount || bob.ManagingOrgID != nil {
			t.Fatalf("bob: %+v", bob)
		}
		tnWantDetail(t, "get unknown", e.tnCall("GET", base+"/"+uuid.NewString(), k, nil), 404)
		tnWantValidation(t, "get bad id", e.tnCall("GET", base+"/bob", k, nil), []any{"path", "user_id"}, "uuid_parsing")
		tnWantDetail(t, "member lists users", e.tnCall("GET", base, cookies["bob"], nil), 403)

		ev := tnInstEv("user.role_changed", "user")
		steps := []struct {
			name   string
			cred   string
			user   uuid.UUID
			body   any
			status int
			loc    []any
			typ    string
		}{
			{"invalid role", k, ids2["bob"], map[string]any{"instance_role": "superuser"}, 422, []any{"body", "instance_role"}, "literal_error"},
			{"missing role", k, ids2["bob"], map[string]any{}, 422, []any{"body", "instance_role"}, "missing"},
			{"extra member", k, ids2["bob"], map[string]any{"instance_role": "admin", "email": "x@y.z"}, 422, []any{"body", "email"}, "extra_forbidden"},
			{"unknown user", k, uuid.New(), map[string]any{"instance_role": "admin"}, 404, nil, ""},
			{"member changes roles", cookies["bob"], ids2["bob"], map[string]any{"instance_role": "admin"}, 403, nil, ""},
			{"owner makes alice admin", k, ids2["alice"], map[string]any{"instance_role": "admin"}, 200, nil, ""},
			{"admin grants owner", cookies["alice"], ids2["bob"], map[string]any{"instance_role": "owner"}, 403, nil, ""},
			{"admin promotes herself", cookies["alice"], ids2["alice"], map[string]any{"instance_role": "owner"}, 403, nil, ""},
			{"admin demotes the owner", cookies["alice"], ownerID, map[string]any{"instance_role": "member"}, 403, nil, ""},
			{"admin grants admin", cookies["alice"], ids2["bob"], map[string]any{"instance_role": "admin"}, 200, nil, ""},
			{"last owner demotes himself", k, ownerID, map[string]any{"instance_role": "admin"}, 409, nil, ""},
			{"owner grants owner", k, ids2["alice"], map[string]any{"instance_role": "owner"}, 200, nil, ""},
			{"a second owner lets the first step down", k, ownerID, map[string]any{"instance_role": "admin"}, 200, nil, ""},
			{"alice is the last owner", cookies["alice"], ids2["alice"], map[string]any{"instance_role": "member"}, 409, nil, ""},
			{"former owner (now admin) demotes alice", k, ids2["alice"], map[string]any{"instance_role": "admin"}, 403, nil, ""},
			{"alice demotes bob", cookies["alice"], ids2["bob"], map[string]any{"instance_role": "member"}, 200, nil, ""},
		}
		for _, s := range steps {
			r := a.mut(ev, "PATCH", base+"/"+s.user.String(), s.cred, s.body)
			switch s.status {
			case 200:
				tnWantStatus(t, s.name, r, 200)
				m := tnWantKeys(t, s.name, tnData(t, r.body), userShape...)
				if m["instance_role"] != s.body.(map[string]any)["instance_role"] || m["id"] != s.user.String() {
					t.Fatalf("%s: %v", s.name, m)
				}
				got := decodeData[wire.User](t, e.must("GET", base+"/"+s.user.String(), k, nil))
				if got.InstanceRole != m["instance_role"] {
					t.Fatalf("%s: reads back %s", s.name, got.InstanceRole)
				}
			case 422:
				tnWantValidation(t, s.name, r, s.loc, s.typ)
			default:
				tnWantDetail(t, s.name, r, s.status)
			}
		}
		// Bob's demotion took his instance rights away again.
		tnWantDetail(t, "demoted bob lists users", e.tnCall("GET", base, cookies["bob"], nil), 403)
		// The demoted first owner's key still works with admin rights.
		e.must("GET", base, k, nil)
		a.verify(k)
	})
}
