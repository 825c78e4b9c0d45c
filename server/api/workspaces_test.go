package api_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/wire"
)

func TestWorkspaces(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		a := tnNewAuditor(e)
		k := e.ownerKey
		org := e.boot.Organization.ID
		e.must("POST", "/api/v1/instance/organizations", k, map[string]any{"name": "Other", "slug": "other"})
		other := decodeData[wire.Organization](t, e.must("GET", "/api/v1/organizations/other", k, nil))
		wsShape := []string{"id", "org_id", "name", "slug", "rate_limits", "required_tags", "tag_values", "mcp_default", "mcp_audit_arguments", "archive", "response_cache", "prompt_cache", "created_at", "updated_at"}
		base := "/api/v1/organizations/default/workspaces"

		type wcase struct {
			name   string
			path   string
			body   any
			status int
			slug   string
			loc    []any
			typ    string
		}
		created := map[string]wire.Workspace{}
		for _, c := range []wcase{
			{"derived slug", base, map[string]any{"name": "Prod EU"}, 200, "prod-eu", nil, ""},
			{"derived slug taken", base, map[string]any{"name": "Prod EU"}, 200, "prod-eu-2", nil, ""},
			{"explicit slug", base, map[string]any{"name": "Staging", "slug": "stage"}, 200, "stage", nil, ""},
			{"100 characters", base, map[string]any{"name": strings.Repeat("w", 100)}, 200, strings.Repeat("w", 50), nil, ""},
			{"one character", base, map[string]any{"name": "Q"}, 200, "q", nil, ""},
			{"same slug in another organization", "/api/v1/organizations/other/workspaces", map[string]any{"name": "S", "slug": "stage"}, 200, "stage", nil, ""},
			{"duplicate slug", base, map[string]any{"name": "Stage 2", "slug": "stage"}, 409, "", nil, ""},
			{"duplicate of the default", base, map[string]any{"name": "D", "slug": "default"}, 409, "", nil, ""},
			{"uuid-shaped slug", base, map[string]any{"name": "U", "slug": uuid.NewString()}, 422, "", []any{"body", "slug"}, "value_error"},
			{"empty name", base, map[string]any{"name": ""}, 422, "", []any{"body", "name"}, "string_too_short"},
			{"101 characters", base, map[string]any{"name": strings.Repeat("w", 101)}, 422, "", []any{"body", "name"}, "string_too_long"},
			{"extra member", base, map[string]any{"name": "X", "org_id": org}, 422, "", []any{"body", "org_id"}, "extra_forbidden"},
			{"not an object", base, []any{"x"}, 422, "", []any{"body"}, "model_type"},
			{"unknown organization", "/api/v1/organizations/nope/workspaces", map[string]any{"name": "X"}, 404, "", nil, ""},
		} {
			r := a.mut(tnAuditWant{Action: "workspace.created", TargetType: "workspace", Level: wire.ScopeWorkspace}, "POST", c.path, k, c.body)
			switch c.status {
			case 200:
				tnWantStatus(t, c.name, r, 200)
				m := tnWantKeys(t, c.name, tnData(t, r.body), wsShape...)
				w := decodeData[wire.Workspace](t, r.body)
				wantOrg := org
				if strings.Contains(c.path, "/other/") {
					wantOrg = other.ID
				}
				if w.Slug != c.slug || m["name"] != c.body.(map[string]any)["name"] || w.OrgID != wantOrg {
					t.Fatalf("%s: %+v", c.name, w)
				}
				if wantOrg == org {
					created[w.Slug] = w
				}
				a.wants[len(a.wants)-1].want.Org, a.wants[len(a.wants)-1].want.WS = wantOrg, w.ID
			case 422:
				tnWantValidation(t, c.name, r, c.loc, c.typ)
			default:
				tnWantDetail(t, c.name, r, c.status)
			}
		}

		raw := e.must("GET", base, k, nil)
		list := tnData(t, raw) // exactly {data}, no page
		tnWantKeys(t, "listed workspace", list.([]any)[0], wsShape...)
		if got := tnField(t, list, "slug"); !tnSameSet(got, []string{"default", "prod-eu", "prod-eu-2", "stage", strings.Repeat("w", 50), "q"}) {
			t.Fatalf("list %v", got)
		}
		if got := tnField(t, tnData(t, e.must("GET", "/api/v1/organizations/other/workspaces", k, nil)), "slug"); !slices.Equal(got, []string{"stage"}) {
			t.Fatalf("other organization lists %v", got)
		}

		stage := created["stage"]
		for _, p := range []string{base + "/stage", base + "/" + stage.ID.String(), base + "/stage/settings",
			"/api/v1/organizations/" + org.String() + "/workspaces/stage"} {
			got := decodeData[wire.Workspace](t, e.must("GET", p, k, nil))
			if got.ID != stage.ID || got.Slug != stage.Slug || got.Name != stage.Name || got.OrgID != stage.OrgID ||
				!got.CreatedAt.Equal(stage.CreatedAt) || !got.UpdatedAt.Equal(stage.UpdatedAt) {
				t.Fatalf("GET %s: %+v, want %+v", p, got, stage)
			}
		}
		// A workspace of another organization is not reachable through this one.
		otherStage := decodeData[wire.Workspace](t, e.must("GET", "/api/v1/organizations/other/workspaces/stage", k, nil))
		tnWantDetail(t, "cross-organization id", e.tnCall("GET", base+"/"+otherStage.ID.String(), k, nil), 404)
		tnWantDetail(t, "unknown workspace", e.tnCall("GET", base+"/nope", k, nil), 404)

		stageEv := tnWsEv("workspace.updated", "workspace", org, stage.ID)
		r := a.mut(stageEv, "PATCH", base+"/stage", k, map[string]any{"name": "Staging Two"})
		tnWantStatus(t, "rename", r, 200)
		if got := decodeData[wire.Workspace](t, r.body); got.Name != "Staging Two" || got.Slug != "stage" || !got.UpdatedAt.After(stage.UpdatedAt) {
			t.Fatalf("rename: %+v", got)
		}
		r = a.mut(stageEv, "PATCH", base+"/"+stage.ID.String()+"/settings", k, map[string]any{"slug": "staging"})
		if tnWantStatus(t, "reslug", r, 200); decodeData[wire.Workspace](t, r.body).Slug != "staging" {
			t.Fatalf("reslug: %s", r.body)
		}
		tnWantDetail(t, "old slug", e.tnCall("GET", base+"/stage", k, nil), 404)
		for _, c := range []wcase{
			{"slug taken", base + "/staging", map[string]any{"slug": "prod-eu"}, 409, "", nil, ""},
			{"uuid-shaped slug", base + "/staging", map[string]any{"slug": uuid.NewString()}, 422, "", []any{"body", "slug"}, "value_error"},
			{"empty name", base + "/staging/settings", map[string]any{"name": ""}, 422, "", []any{"body", "name"}, "string_too_short"},
			{"bad slug", base + "/staging/settings", map[string]any{"slug": "a_b"}, 422, "", []any{"body", "slug"}, "string_pattern_mismatch"},
		} {
			r := a.mut(stageEv, "PATCH", c.path, k, c.body)
			if c.status == 422 {
				tnWantValidation(t, "update "+c.name, r, c.loc, c.typ)
			} else {
				tnWantDetail(t, "update "+c.name, r, c.status)
			}
		}
		// The slug freed in "other" does not clash with this organization's.
		r = a.mut(tnWsEv("workspace.updated", "workspace", other.ID, otherStage.ID), "PATCH", "/api/v1/organizations/other/workspaces/stage",
			k, map[string]any{"slug": "prod-eu"})
		tnWantStatus(t, "slug used in another organization", r, 200)

		r = a.mut(tnWsEv("workspace.deleted", "workspace", org, stage.ID), "DELETE", base+"/staging", k, nil)
		tnWantDeleted(t, "delete", r, stage.ID)
		tnWantDetail(t, "get deleted", e.tnCall("GET", base+"/"+stage.ID.String(), k, nil), 404)
		tnWantDetail(t, "delete again", a.mut(tnNoEvent, "DELETE", base+"/staging", k, nil), 404)
		if got := tnField(t, tnData(t, e.must("GET", base, k, nil)), "slug"); slices.Contains(got, "staging") || len(got) != 5 {
			t.Fatalf("list after delete: %v", got)
		}
		// The slug is free again.
		r = a.mut(tnAuditWant{Action: "workspace.created", TargetType: "workspace", Level: wire.ScopeWorkspace, Org: org}, "POST", base, k,
			map[string]any{"name": "Reborn", "slug": "staging"})
		if tnWantStatus(t, "reuse a deleted slug", r, 200); decodeData[wire.Workspace](t, r.body).ID == stage.ID {
			t.Fatal("a new workspace got the deleted one's id")
		}
		a.orgs = []uuid.UUID{org, other.ID}
		a.verify(k)
	})
}

// Deleting a workspace removes its memberships and keys; its audit trail
// stays.
func TestWorkspaceDeleteCascades(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		a := tnNewAuditor(e)
		k := e.ownerKey
		org := e.boot.Organization.ID
		base := "/api/v1/organizations/default/workspaces"
		r := a.mut(tnAuditWant{Action: "workspace.created", TargetType: "workspace", Level: wire.ScopeWorkspace, Org: org}, "POST", base, k,
			map[string]any{"name": "Doomed"})
		tnWantStatus(t, "create", r, 200)
		ws := decodeData[wire.Workspace](t, r.body)
		a.wants[len(a.wants)-1].want.WS = ws.ID
		ev := func(action, target string) tnAuditWant { return tnWsEv(action, target, org, ws.ID) }

		dave, daveCookie := e.signup("dave@example.com")
		a.user("cookie:"+daveCookie, dave.User.ID)
		tnWantStatus(t, "add dave", a.mut(tnOrgEv("member.added", "user", org), "POST", "/api/v1/organizations/default/members", k,
			map[string]any{"user_id": dave.User.ID, "role": "member"}), 200)
		tnWantStatus(t, "dave joins", a.mut(ev("workspace_member.added", "user"), "POST", base+"/doomed/members", k,
			map[string]any{"user_id": dave.User.ID, "role": "member"}), 200)

		var keys []string
		for _, cred := range []string{k, "cookie:" + daveCookie} {
			r := a.mut(ev("management_key.issued", "management_key"), "POST", base+"/doomed/management-keys", cred,
				map[string]any{"permissions": []string{"workspaces.read"}, "label": "ws"})
			tnWantStatus(t, "workspace key", r, 200)
			mk := decodeData[wire.ManagementKey](t, r.body)
			if mk.Scope.Level != wire.ScopeWorkspace || mk.WorkspaceID == nil || *mk.WorkspaceID != ws.ID {
				t.Fatalf("workspace key scope: %+v", mk)
			}
			a.key(mk.Token, mk)
			keys = append(keys, mk.Token)
			e.must("GET", base+"/doomed", mk.Token, nil)
		}
		// An organization key of dave's stays valid: only the workspace goes.
		daveOrgKey := e.key("/api/v1/organizations/default", "cookie:"+daveCookie, []string{"organizations.read"}, nil)

		r = a.mut(ev("workspace.deleted", "workspace"), "DELETE", base+"/"+ws.ID.String(), k, nil)
		tnWantDeleted(t, "delete", r, ws.ID)

		for i, tok := range keys {
			tnWantDetail(t, fmt.Sprintf("workspace key %d after delete", i), e.tnCall("GET", "/api/v1/auth/me", tok, nil), 401)
			tnWantDetail(t, fmt.Sprintf("workspace key %d on its workspace", i), e.tnCall("GET", base+"/doomed", tok, nil), 401)
		}
		e.must("GET", "/api/v1/organizations/default", daveOrgKey.Token, nil)
		if _, err := e.st.GetWorkspaceMember(ctx, ws.ID, dave.User.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("workspace membership after delete: %v", err)
		}
		if left, err := e.st.ListManagementKeys(ctx, store.KeyFilter{WorkspaceID: &ws.ID}); err != nil || len(left) != 0 {
			t.Fatalf("workspace keys after delete: %d %v", len(left), err)
		}
		// The instance key list no longer shows them either.
		for _, mk := range decodeData[[]wire.ManagementKey](t, e.must("GET", "/api/v1/instance/management-keys", k, nil)) {
			if mk.WorkspaceID != nil && *mk.WorkspaceID == ws.ID {
				t.Fatalf("key %s of the deleted workspace still listed", mk.ID)
			}
		}
		// A new workspace with the same slug starts with no members.
		r = a.mut(tnAuditWant{Action: "workspace.created", TargetType: "workspace", Level: wire.ScopeWorkspace, Org: org}, "POST", base, k,
			map[string]any{"name": "Doomed"})
		if tnWantStatus(t, "recreate", r, 200); decodeData[wire.Workspace](t, r.body).Slug != "doomed" {
			t.Fatalf("recreated slug: %s", r.body)
		}
		if got := tnField(t, tnData(t, e.must("GET", base+"/doomed/members", k, nil)), "user_id"); len(got) != 0 {
			t.Fatalf("recreated workspace has members %v", got)
		}
		if got := tnField(t, tnData(t, e.must("GET", base, "cookie:"+daveCookie, nil)), "slug"); len(got) != 0 {
			t.Fatalf("dave still sees workspaces %v", got)
		}
		tnWantDetail(t, "dave on the recreated workspace", e.tnCall("GET", base+"/doomed", "cookie:"+daveCookie, nil), 404)

		// The deleted workspace's history remains in the organization's feed.
		events, _ := a.activity("/api/v1/organizations/default/activity", k)
		var kept []string
		for _, ev := range events {
			if ev.Scope.WorkspaceID != nil && *ev.Scope.WorkspaceID == ws.ID {
				kept = append(kept, ev.Action)
			}
		}
		if !tnSameSet(kept, []string{"workspace.created", "workspace_member.added", "management_key.issued", "management_key.issued", "workspace.deleted"}) {
			t.Fatalf("events of the deleted workspace: %v", kept)
		}
		a.orgs = []uuid.UUID{org}
		a.verify(k)
	})
}

// Spec 4.8: the list shows the workspaces the caller can read.
func TestWorkspaceListVisibility(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		k := e.ownerKey
		base := "/api/v1/organizations/default/workspaces"
		for _, name := range []string{"Alpha", "Bravo", "Charlie"} {
			e.must("POST", base, k, map[string]any{"name": name})
		}
		people := map[string]string{}
		for _, p := range []struct{ name, orgRole, ws, wsRole string }{
			{"mem", "member", "alpha", "member"},
			{"view", "viewer", "bravo", "viewer"},
			{"adm", "admin", "", ""},
			{"own", "owner", "", ""},
			{"lonely", "member", "", ""},
			{"outsider", "", "", ""},
		} {
			s, c := e.signup(p.name + "@example.com")
			people[p.name] = "cookie:" + c
			if p.orgRole != "" {
				e.must("POST", "/api/v1/organizations/default/members", k, map[string]any{"user_id": s.User.ID, "role": p.orgRole})
			}
			if p.ws != "" {
				e.must("POST", base+"/"+p.ws+"/members", k, map[string]any{"user_id": s.User.ID, "role": p.wsRole})
			}
		}
		everything := []string{"default", "alpha", "bravo", "charlie"}
		memOrgKey := e.key("/api/v1/organizations/default", people["mem"], []string{"workspaces.read", "organizations.read"}, nil).Token
		alphaKey := e.key(base+"/alpha", k, []string{"workspaces.read"}, nil).Token
		cases := []struct {
			who  string
			cred string
			want []string
		}{
			{"instance owner key", k, everything},
			{"organization owner", people["own"], everything},
			{"organization admin", people["adm"], everything},
			{"organization member", people["mem"], []string{"alpha"}},
			{"organization viewer", people["view"], []string{"bravo"}},
			{"member of no workspace", people["lonely"], []string{}},
			{"member's organization key", memOrgKey, []string{"alpha"}},
			{"workspace key", alphaKey, []string{"alpha"}},
		}
		for _, c := range cases {
			raw := e.must("GET", base, c.cred, nil)
			if got := tnField(t, tnData(t, raw), "slug"); !tnSameSet(got, c.want) {
				t.Errorf("%s lists %v, want %v", c.who, got, c.want)
			}
		}
		tnWantDetail(t, "outsider lists", e.tnCall("GET", base, people["outsider"], nil), 404)
		// What is not listed cannot be read either; what is listed can.
		tnWantDetail(t, "member reads a foreign workspace", e.tnCall("GET", base+"/bravo", people["mem"], nil), 404)
		e.must("GET", base+"/alpha", people["mem"], nil)
		e.must("GET", base+"/charlie", people["adm"], nil)
		tnWantDetail(t, "workspace key reads a sibling", e.tnCall("GET", base+"/bravo", alphaKey, nil), 403)
	})
}

// Organization members.

func TestConcurrentCreatesWithDerivedSlugs(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		var wg sync.WaitGroup
		codes := make(chan int, 8)
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, _ := e.do("POST", "/api/v1/organizations/default/workspaces", e.ownerKey, map[string]any{"name": "Race"})
				codes <- code
			}()
		}
		wg.Wait()
		close(codes)
		for c := range codes {
			if c != 200 {
				t.Fatalf("a concurrent create with a derived slug answered %d", c)
			}
		}
	})
}
