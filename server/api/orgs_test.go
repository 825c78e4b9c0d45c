package api_test

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/wire"
)

func TestOrganizations(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		a := tnNewAuditor(e)
		k := e.ownerKey
		orgShape := []string{"id", "name", "slug", "require_sso", "created_at", "updated_at"}
		cases := []struct {
			name     string
			path     string
			body     any
			status   int
			slug     string // on success
			loc      []any  // on 422
			typ      string
			notAudit bool
		}{
			{"derived slug", "/api/v1/instance/organizations", map[string]any{"name": "Acme Labs!"}, 200, "acme-labs", nil, "", false},
			{"derived slug taken", "/api/v1/organizations", map[string]any{"name": "Acme  Labs"}, 200, "acme-labs-2", nil, "", false},
			{"nothing to derive from", "/api/v1/organizations", map[string]any{"name": "!!!"}, 200, "org", nil, "", false},
			{"one character", "/api/v1/organizations", map[string]any{"name": "A"}, 200, "a", nil, "", false},
			{"100 characters", "/api/v1/organizations", map[string]any{"name": strings.Repeat("x", 100)}, 200, strings.Repeat("x", 50), nil, "", false},
			{"100 non-ASCII characters", "/api/v1/organizations", map[string]any{"name": strings.Repeat("é", 100)}, 200, "org-2", nil, "", false},
			{"explicit slug", "/api/v1/organizations", map[string]any{"name": "Beta", "slug": "beta-co"}, 200, "beta-co", nil, "", false},
			{"duplicate slug", "/api/v1/organizations", map[string]any{"name": "Beta 2", "slug": "beta-co"}, 409, "", nil, "", false},
			{"duplicate slug (instance path)", "/api/v1/instance/organizations", map[string]any{"name": "Beta 3", "slug": "acme-labs"}, 409, "", nil, "", false},
			{"empty name", "/api/v1/organizations", map[string]any{"name": ""}, 422, "", []any{"body", "name"}, "string_too_short", false},
			{"101 characters", "/api/v1/organizations", map[string]any{"name": strings.Repeat("x", 101)}, 422, "", []any{"body", "name"}, "string_too_long", false},
			{"101 non-ASCII characters", "/api/v1/organizations", map[string]any{"name": strings.Repeat("é", 101)}, 422, "", []any{"body", "name"}, "string_too_long", false},
			{"missing name", "/api/v1/organizations", map[string]any{"slug": "x"}, 422, "", []any{"body", "name"}, "missing", false},
			{"name not a string", "/api/v1/organizations", map[string]any{"name": 7}, 422, "", []any{"body", "name"}, "string_type", false},
			{"uuid-shaped slug", "/api/v1/organizations", map[string]any{"name": "U", "slug": uuid.NewString()}, 422, "", []any{"body", "slug"}, "value_error", false},
			{"slug with capitals", "/api/v1/organizations", map[string]any{"name": "U", "slug": "Bad-Slug"}, 422, "", []any{"body", "slug"}, "string_pattern_mismatch", false},
			{"slug with a leading dash", "/api/v1/organizations", map[string]any{"name": "U", "slug": "-bad"}, 422, "", []any{"body", "slug"}, "string_pattern_mismatch", false},
			{"slug too long", "/api/v1/organizations", map[string]any{"name": "U", "slug": strings.Repeat("s", 64)}, 422, "", []any{"body", "slug"}, "string_too_long", false},
			{"extra member", "/api/v1/organizations", map[string]any{"name": "U", "plan": "pro"}, 422, "", []any{"body", "plan"}, "extra_forbidden", false},
		}
		created := map[string]wire.Organization{}
		for _, c := range cases {
			r := a.mut(tnAuditWant{Action: "organization.created", TargetType: "organization", Level: wire.ScopeOrganization}, "POST", c.path, k, c.body)
			switch c.status {
			case 200:
				tnWantStatus(t, c.name, r, 200)
				m := tnWantKeys(t, c.name, tnData(t, r.body), orgShape...)
				if m["slug"] != c.slug || m["name"] != c.body.(map[string]any)["name"] {
					t.Fatalf("%s: got %v, want slug %s", c.name, m, c.slug)
				}
				o := decodeData[wire.Organization](t, r.body)
				created[o.Slug] = o
				a.wants[len(a.wants)-1].want.Org = o.ID
			case 422:
				tnWantValidation(t, c.name, r, c.loc, c.typ)
			default:
				tnWantDetail(t, c.name, r, c.status)
			}
		}

		// Get by UUID and by slug, on both paths.
		beta := created["beta-co"]
		for _, p := range []string{"/api/v1/organizations/beta-co", "/api/v1/organizations/" + beta.ID.String(),
			"/api/v1/organizations/beta-co/settings", "/api/v1/instance/organizations/beta-co",
			"/api/v1/instance/organizations/" + beta.ID.String()} {
			got := decodeData[wire.Organization](t, e.must("GET", p, k, nil))
			if got.ID != beta.ID || got.Slug != "beta-co" || got.Name != "Beta" || !got.CreatedAt.Equal(beta.CreatedAt) {
				t.Fatalf("GET %s: %+v, want %+v", p, got, beta)
			}
		}
		for _, p := range []string{"/api/v1/organizations/nope", "/api/v1/organizations/" + uuid.NewString(), "/api/v1/instance/organizations/nope"} {
			tnWantDetail(t, "GET "+p, e.tnCall("GET", p, k, nil), 404)
		}

		// Update through the settings path and the instance path.
		betaEv := tnOrgEv("organization.updated", "organization", beta.ID)
		r := a.mut(betaEv, "PATCH", "/api/v1/organizations/beta-co/settings", k, map[string]any{"name": "Beta Renamed", "slug": "beta-new"})
		tnWantStatus(t, "rename", r, 200)
		got := decodeData[wire.Organization](t, r.body)
		if got.ID != beta.ID || got.Name != "Beta Renamed" || got.Slug != "beta-new" || !got.UpdatedAt.After(beta.UpdatedAt) ||
			!got.CreatedAt.Equal(beta.CreatedAt) {
			t.Fatalf("rename: %+v", got)
		}
		tnWantDetail(t, "old slug", e.tnCall("GET", "/api/v1/organizations/beta-co", k, nil), 404)
		if got := decodeData[wire.Organization](t, e.must("GET", "/api/v1/organizations/beta-new/settings", k, nil)); got.Name != "Beta Renamed" {
			t.Fatalf("read back rename: %+v", got)
		}
		r = a.mut(betaEv, "PATCH", "/api/v1/instance/organizations/"+beta.ID.String(), k, map[string]any{"name": "Beta Again"})
		if tnWantStatus(t, "instance rename", r, 200); decodeData[wire.Organization](t, r.body).Slug != "beta-new" {
			t.Fatalf("a name-only update changed the slug: %s", r.body)
		}
		for _, c := range []struct {
			name   string
			body   any
			status int
			loc    []any
			typ    string
		}{
			{"slug taken", map[string]any{"slug": "acme-labs"}, 409, nil, ""},
			{"uuid-shaped slug", map[string]any{"slug": uuid.NewString()}, 422, []any{"body", "slug"}, "value_error"},
			{"empty name", map[string]any{"name": ""}, 422, []any{"body", "name"}, "string_too_short"},
			{"101 characters", map[string]any{"name": strings.Repeat("n", 101)}, 422, []any{"body", "name"}, "string_too_long"},
			{"unknown member", map[string]any{"id": uuid.NewString()}, 422, []any{"body", "id"}, "extra_forbidden"},
		} {
			r := a.mut(betaEv, "PATCH", "/api/v1/organizations/beta-new/settings", k, c.body)
			if c.status == 422 {
				tnWantValidation(t, "update "+c.name, r, c.loc, c.typ)
			} else {
				tnWantDetail(t, "update "+c.name, r, c.status)
			}
		}

		// A key of the organization follows its renames.
		betaKey := e.key("/api/v1/organizations/beta-new", k, []string{"organizations.read", "organizations.update"}, nil)
		a.key(betaKey.Token, betaKey)
		r = a.mut(betaEv, "PATCH", "/api/v1/organizations/beta-new", betaKey.Token, map[string]any{"slug": "beta-final"})
		tnWantStatus(t, "rename with the organization's key", r, 200)
		e.must("GET", "/api/v1/organizations/beta-final", betaKey.Token, nil)
		tnWantDetail(t, "old slug with the organization's key", e.tnCall("GET", "/api/v1/organizations/beta-new", betaKey.Token, nil), 403)

		// Delete, by slug on the organization path and by id on the instance path.
		r = a.mut(tnOrgEv("organization.deleted", "organization", beta.ID), "DELETE", "/api/v1/organizations/beta-final", k, nil)
		tnWantDeleted(t, "delete", r, beta.ID)
		tnWantDetail(t, "get deleted", e.tnCall("GET", "/api/v1/organizations/"+beta.ID.String(), k, nil), 404)
		tnWantDetail(t, "delete again", a.mut(tnNoEvent, "DELETE", "/api/v1/organizations/"+beta.ID.String(), k, nil), 404)
		tnWantDetail(t, "key of a deleted organization", e.tnCall("GET", "/api/v1/auth/me", betaKey.Token, nil), 401)
		one := created["a"]
		r = a.mut(tnOrgEv("organization.deleted", "organization", one.ID), "DELETE", "/api/v1/instance/organizations/"+one.ID.String(), k, nil)
		tnWantDeleted(t, "instance delete", r, one.ID)

		// Listing: staff see every organization, page by page.
		var all []string
		url := "/api/v1/organizations?limit=2"
		for i := 0; ; i++ {
			raw := e.must("GET", url, k, nil)
			tnWantKeys(t, "organization page", tnObj(t, raw), "data", "page")
			p := decodeData[[]wire.Organization](t, raw)
			if len(p) > 2 {
				t.Fatalf("page of %d with limit 2", len(p))
			}
			for _, o := range p {
				all = append(all, o.Slug)
			}
			next := jsonPath(t, raw, "page.next_cursor")
			if next == nil {
				break
			}
			url = "/api/v1/organizations?limit=2&cursor=" + next.(string)
		}
		wantSlugs := []string{"default", "acme-labs", "acme-labs-2", "org", strings.Repeat("x", 50), "org-2"}
		if !slices.Equal(all, wantSlugs) {
			t.Fatalf("staff list %v, want %v", all, wantSlugs)
		}

		// A signed-up member cannot create organizations and lists only theirs.
		bobSes, bob := e.signup("bob@example.com")
		a.user("cookie:"+bob, bobSes.User.ID)
		r = a.mut(tnAuditWant{}, "POST", "/api/v1/organizations", "cookie:"+bob, map[string]any{"name": "Bob's"})
		if d := tnWantDetail(t, "member creates an organization", r, 403); !strings.Contains(d, "organizations.create") {
			t.Fatalf("403 does not name the permission: %s", d)
		}
		tnWantDetail(t, "member creates on the instance path", a.mut(tnAuditWant{}, "POST", "/api/v1/instance/organizations", "cookie:"+bob,
			map[string]any{"name": "Bob's"}), 403)
		raw := e.must("GET", "/api/v1/organizations", "cookie:"+bob, nil)
		if n := len(decodeData[[]wire.Organization](t, raw)); n != 0 || jsonPath(t, raw, "page.next_cursor") != nil {
			t.Fatalf("a new member lists %d organizations: %s", n, raw)
		}
		r = a.mut(tnOrgEv("member.added", "user", e.boot.Organization.ID), "POST", "/api/v1/organizations/default/members", k,
			map[string]any{"user_id": bobSes.User.ID, "role": "member"})
		tnWantStatus(t, "add bob", r, 200)
		r = a.mut(tnOrgEv("member.added", "user", created["acme-labs"].ID), "POST", "/api/v1/organizations/acme-labs/members", k,
			map[string]any{"email": "bob@example.com", "role": "viewer"})
		tnWantStatus(t, "add bob to acme", r, 200)
		mine := decodeData[[]wire.Organization](t, e.must("GET", "/api/v1/organizations", "cookie:"+bob, nil))
		var mineSlugs []string
		for _, o := range mine {
			mineSlugs = append(mineSlugs, o.Slug)
		}
		if !slices.Equal(mineSlugs, []string{"default", "acme-labs"}) {
			t.Fatalf("bob lists %v", mineSlugs)
		}
		e.must("GET", "/api/v1/organizations/acme-labs", "cookie:"+bob, nil)
		tnWantDetail(t, "bob reads a foreign organization", e.tnCall("GET", "/api/v1/organizations/acme-labs-2", "cookie:"+bob, nil), 404)
		tnWantDetail(t, "bob lists all organizations", e.tnCall("GET", "/api/v1/instance/organizations", "cookie:"+bob, nil), 403)
		tnWantDetail(t, "viewer renames", a.mut(tnAuditWant{}, "PATCH", "/api/v1/organizations/acme-labs", "cookie:"+bob,
			map[string]any{"name": "Mine"}), 403)
		tnWantDetail(t, "member deletes", a.mut(tnAuditWant{}, "DELETE", "/api/v1/organizations/default", "cookie:"+bob, nil), 403)

		a.orgs = []uuid.UUID{e.boot.Organization.ID, created["acme-labs"].ID}
		a.verify(k)
	})
}

// Workspaces.

// Two owners demoting each other at once must not leave the organization
// (or the instance) without an owner: the last-owner check has to hold under
// concurrency, not only in sequence.
func TestLastOwnerUnderConcurrency(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		k := e.ownerKey
		alice, aliceCookie := e.signup("alice@example.com")
		aid, oid := alice.User.ID.String(), e.boot.User.ID.String()
		ac := "cookie:" + aliceCookie
		e.must("POST", "/api/v1/organizations/default/members", k, map[string]any{"user_id": aid, "role": "owner"})
		type step struct {
			cred, path string
			body       map[string]any
		}
		race := func(a, b step) [2]int {
			var st [2]int
			var errs [2]error
			var wg sync.WaitGroup
			for i, s := range []step{a, b} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					st[i], errs[i] = tnRawCall(e.srv.URL, "PATCH", s.path, s.cred, s.body)
				}()
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			return st
		}
		members := "/api/v1/organizations/default/members/"
		for round := range 8 {
			e.must("PATCH", members+oid, k, map[string]any{"role": "owner"})
			e.must("PATCH", members+aid, k, map[string]any{"role": "owner"})
			st := race(step{k, members + aid, map[string]any{"role": "admin"}}, step{ac, members + oid, map[string]any{"role": "admin"}})
			owners := 0
			for _, m := range decodeData[[]wire.Member](t, e.must("GET", "/api/v1/organizations/default/members", k, nil)) {
				if m.Role == auth.OrgOwner && m.Status == auth.MembershipActive {
					owners++
				}
			}
			// The loser is refused: 409 (last owner) or, when it was demoted
			// first, 403 (no longer an owner).
			if owners != 1 || st[0]+st[1] != 200+409 && st[0]+st[1] != 200+403 {
				t.Fatalf("organization round %d: statuses %v left %d owners", round, st, owners)
			}
		}
		users := "/api/v1/instance/users/"
		e.must("PATCH", users+aid, k, map[string]any{"instance_role": "owner"})
		for round := range 8 {
			// The winner of the last round promotes the loser back.
			if st, _ := tnRawCall(e.srv.URL, "PATCH", users+aid, k, map[string]any{"instance_role": "owner"}); st != 200 {
				e.must("PATCH", users+oid, ac, map[string]any{"instance_role": "owner"})
			}
			st := race(step{k, users + aid, map[string]any{"instance_role": "admin"}}, step{ac, users + oid, map[string]any{"instance_role": "admin"}})
			owners := 0
			for _, u := range decodeData[[]wire.User](t, e.must("GET", "/api/v1/instance/users", k, nil)) {
				if u.InstanceRole == auth.InstanceOwner {
					owners++
				}
			}
			if owners != 1 {
				t.Fatalf("instance round %d: statuses %v left %d owners", round, st, owners)
			}
		}
	})
}

func TestOrganizationListsHonourTheKeyCeiling(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		k := e.key("/api/v1/instance", e.ownerKey, []string{"usage.ingest"}, nil)
		orgs := decodeData[[]wire.Organization](t, e.must("GET", "/api/v1/organizations", k.Token, nil))
		choices := decodeData[[]wire.EnrollmentChoice](t, e.must("GET", "/api/v1/enrollment/choices", k.Token, nil))
		// The owner belongs to the default organization, so it is listed as
		// a membership — but not every organization as staff would see.
		e.must("POST", "/api/v1/instance/organizations", e.ownerKey, map[string]any{"name": "Other"})
		orgs2 := decodeData[[]wire.Organization](t, e.must("GET", "/api/v1/organizations", k.Token, nil))
		if len(orgs) != 1 || len(orgs2) != 1 || len(choices) != 1 {
			t.Fatalf("a key without organizations.read lists %d then %d organizations, %d choices", len(orgs), len(orgs2), len(choices))
		}
	})
}
