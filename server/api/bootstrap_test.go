package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

func TestBootstrapFlow(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := tnFreshEnv(t, db, api.Options{})
		a := tnNewAuditor(e)
		status := func() bool {
			m := tnWantKeys(t, "bootstrap status", tnData(t, e.must("GET", "/api/v1/bootstrap", "", nil)), "bootstrapped")
			b, ok := m["bootstrapped"].(bool)
			if !ok {
				t.Fatalf("bootstrapped is not a boolean: %v", m)
			}
			return b
		}
		if status() {
			t.Fatal("fresh instance says bootstrapped")
		}
		good := map[string]any{"token": setupToken, "email": "Root@Example.com", "password": "root password 123",
			"organization_name": "Acme Corp", "workspace_name": "Prod"}
		with := func(k string, v any) map[string]any {
			m := map[string]any{}
			for k2, v2 := range good {
				m[k2] = v2
			}
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
			return m
		}
		bad := []struct {
			name   string
			body   any
			status int
			loc    []any
			typ    string
		}{
			{"wrong token", with("token", "setup_wrong"), 403, nil, ""},
			{"missing token", with("token", nil), 422, []any{"body", "token"}, "missing"},
			{"short password", with("password", "short"), 422, []any{"body", "password"}, "string_too_short"},
			{"bad email", with("email", "root"), 422, []any{"body", "email"}, "string_pattern_mismatch"},
			{"extra member", with("admin", true), 422, []any{"body", "admin"}, "extra_forbidden"},
			{"org name too long", with("organization_name", strings.Repeat("o", 101)), 422, []any{"body", "organization_name"}, "string_too_long"},
			{"empty body", "", 422, []any{"body"}, "missing"},
		}
		for _, c := range bad {
			r := a.mut(tnInstEv("instance.bootstrapped", "user"), "POST", "/api/v1/bootstrap", "", c.body)
			if c.status == 422 {
				tnWantValidation(t, c.name, r, c.loc, c.typ)
			} else {
				tnWantDetail(t, c.name, r, c.status)
			}
			if tnSessionCookie(r.cookies) != nil {
				t.Fatalf("%s: a failed bootstrap set a session cookie", c.name)
			}
		}
		if status() {
			t.Fatal("failed bootstraps bootstrapped the instance")
		}

		r := e.tnCall("POST", "/api/v1/bootstrap", "", good)
		tnWantStatus(t, "bootstrap", r, 200)
		res := decodeData[wire.BootstrapResult](t, r.body)
		m := tnWantKeys(t, "bootstrap result", tnData(t, r.body), "user", "organization", "workspace", "management_key")
		tnWantKeys(t, "bootstrap workspace", m["workspace"], "id", "org_id", "name", "slug", "rate_limits", "required_tags", "tag_values", "mcp_default", "mcp_audit_arguments", "archive", "response_cache", "prompt_cache", "created_at", "updated_at")
		if res.User.Email != "root@example.com" || res.User.InstanceRole != auth.InstanceOwner || res.User.ServiceAccount {
			t.Fatalf("bootstrap user: %+v", res.User)
		}
		if res.Organization.Slug != "acme-corp" || res.Organization.Name != "Acme Corp" || res.Workspace.Slug != "prod" ||
			res.Workspace.OrgID != res.Organization.ID || !slices.Equal(res.User.Orgs, []uuid.UUID{res.Organization.ID}) {
			t.Fatalf("bootstrap tenancy: %+v %+v %+v", res.Organization, res.Workspace, res.User.Orgs)
		}
		k := res.ManagementKey
		if !strings.HasPrefix(k.Token, auth.ManagementKeyPrefix) || k.Scope.Level != wire.ScopeInstance || k.Status != wire.KeyActive ||
			len(k.Permissions) != len(auth.All) || k.UserID != res.User.ID {
			t.Fatalf("bootstrap key: %+v", k)
		}
		c := tnSessionCookie(r.cookies)
		if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode {
			t.Fatalf("bootstrap session cookie: %+v", c)
		}
		uid := res.User.ID
		a.wants = append(a.wants, tnRecorded{want: tnAuditWant{Action: "instance.bootstrapped", TargetType: "user", TargetID: uid.String(),
			Level: wire.ScopeOrganization, Org: res.Organization.ID}, reqID: r.reqID, actor: tnActorWant{Type: "user", ID: &uid}, what: "bootstrap"})
		a.wants = append(a.wants, tnRecorded{want: tnAuditWant{Action: "management_key.issued", TargetType: "management_key", TargetID: k.ID.String(),
			Level: wire.ScopeInstance}, reqID: r.reqID, actor: tnActorWant{Type: "user", ID: &uid}, what: "bootstrap key"})
		a.key(k.Token, k)
		a.secret(setupToken, "root password 123", c.Value)

		me := decodeData[wire.Me](t, e.must("GET", "/api/v1/auth/me", k.Token, nil))
		if me.Credential != "management_key" || me.User.ID != uid {
			t.Fatalf("me with the bootstrap key: %+v", me)
		}
		me = decodeData[wire.Me](t, e.must("GET", "/api/v1/auth/me", "cookie:"+c.Value, nil))
		if me.Credential != "session" || me.User.ID != uid || len(me.Memberships) != 1 || me.Memberships[0].Role != auth.OrgOwner {
			t.Fatalf("me with the bootstrap session: %+v", me)
		}
		if !status() {
			t.Fatal("bootstrapped instance says not bootstrapped")
		}
		for _, body := range []any{good, with("email", "second@example.com"), with("token", "setup_wrong")} {
			r := a.mut(tnInstEv("instance.bootstrapped", "user"), "POST", "/api/v1/bootstrap", "", body)
			tnWantDetail(t, "second bootstrap", r, http.StatusConflict)
		}
		if tok, err := e.api.PrepareSetup(context.Background(), ""); err != nil || tok != "" {
			t.Fatalf("PrepareSetup after bootstrap: %q %v", tok, err)
		}
		users := decodeData[[]wire.User](t, e.must("GET", "/api/v1/instance/users", k.Token, nil))
		if len(users) != 1 {
			t.Fatalf("users after bootstrap: %+v", users)
		}
		a.orgs = []uuid.UUID{res.Organization.ID}
		a.verify(k.Token)
	})
}

func TestBootstrapConcurrent(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := tnFreshEnv(t, db, api.Options{})
		const n = 6
		statuses := make([]int, n)
		bodies := make([][]byte, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				raw, _ := json.Marshal(map[string]any{"token": setupToken, "email": fmt.Sprintf("racer%d@example.com", i),
					"password": "racing password"})
				<-start
				resp, err := http.Post(e.srv.URL+"/api/v1/bootstrap", "application/json", strings.NewReader(string(raw)))
				if err != nil {
					errs[i] = err
					return
				}
				defer resp.Body.Close()
				statuses[i] = resp.StatusCode
				bodies[i], _ = io.ReadAll(resp.Body)
			}()
		}
		close(start)
		wg.Wait()
		winners := 0
		var token string
		for i := range n {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			switch statuses[i] {
			case 200:
				winners++
				token = decodeData[wire.BootstrapResult](t, bodies[i]).ManagementKey.Token
			case 409:
			default:
				t.Errorf("racer %d: %d %s", i, statuses[i], bodies[i])
			}
		}
		if winners != 1 {
			t.Fatalf("%d bootstraps succeeded, want exactly 1 (statuses %v)", winners, statuses)
		}
		users := decodeData[[]wire.User](t, e.must("GET", "/api/v1/instance/users", token, nil))
		orgs := decodeData[[]wire.Organization](t, e.must("GET", "/api/v1/instance/organizations", token, nil))
		if len(users) != 1 || len(orgs) != 1 {
			t.Fatalf("after the race: %d users, %d organizations", len(users), len(orgs))
		}
	})
}

// Organizations.
