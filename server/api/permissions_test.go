package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/auth"
)

// TestEveryScopedRouteChecksCredentials walks the route table: every scoped
// route must answer 401 without a credential, 403 for a key lacking its
// permission (and holding every other one), 403 for a key of another
// organization, and 404 for a signed-in stranger — before any handler runs.
func TestEveryScopedRouteChecksCredentials(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		const org, ws = "default", "default"
		e.must("POST", "/api/v1/instance/organizations", e.ownerKey, map[string]any{"name": "Other", "slug": "other"})
		otherOrgKey := e.key("/api/v1/organizations/other", e.ownerKey, auth.Names(), nil).Token
		_, strangerCookie := e.signup("stranger@example.com")

		cache := map[string]string{}
		lacking := func(level auth.Level, missing []auth.Permission) string {
			var perms []string
			for _, p := range auth.All {
				skip := false
				for _, m := range missing {
					skip = skip || p == m
				}
				if !skip {
					perms = append(perms, string(p))
				}
			}
			prefix := map[auth.Level]string{
				auth.LevelInstance:     "/api/v1/instance",
				auth.LevelOrganization: "/api/v1/organizations/" + org,
				auth.LevelWorkspace:    "/api/v1/organizations/" + org + "/workspaces/" + ws,
			}[level]
			id := prefix + strings.Join(perms, ",")
			if cache[id] == "" {
				cache[id] = e.key(prefix, e.ownerKey, perms, nil).Token
			}
			return cache[id]
		}

		uuidish := "00000000-0000-4000-8000-000000000000"
		checked := 0
		for _, rt := range e.api.Routes() {
			if rt.Access != api.Scoped {
				continue
			}
			path := strings.NewReplacer("{org_id}", org, "{workspace_ref}", ws, "{key_id}", uuidish,
				"{user_id}", uuidish, "{invitation_id}", uuidish).Replace(rt.Path)
			name := rt.Method + " " + rt.Path
			if st, body := e.do(rt.Method, path, "", nil); st != http.StatusUnauthorized {
				t.Errorf("%s without credential: %d %s", name, st, body)
			}
			if st, body := e.do(rt.Method, path, lacking(rt.Level(), rt.Perms), nil); st != http.StatusForbidden {
				t.Errorf("%s with a key lacking %v: %d %s", name, rt.Perms, st, body)
			} else if !strings.Contains(string(body), "missing permission") {
				t.Errorf("%s: 403 body does not name the missing permission: %s", name, body)
			}
			if rt.Level() != auth.LevelInstance {
				if st, body := e.do(rt.Method, path, otherOrgKey, nil); st != http.StatusForbidden {
					t.Errorf("%s with another organization's key: %d %s", name, st, body)
				}
				if st, body := e.do(rt.Method, path, "cookie:"+strangerCookie, nil); st != http.StatusNotFound {
					t.Errorf("%s as a signed-in stranger: %d %s", name, st, body)
				}
			} else if st, body := e.do(rt.Method, path, otherOrgKey, nil); st != http.StatusForbidden {
				t.Errorf("%s with an organization key: %d %s", name, st, body)
			}
			checked++
		}
		if checked < 40 {
			t.Fatalf("only %d scoped routes checked; the route table shrank?", checked)
		}
	})
}

// A foreign organization's key is refused the same way whether or not the
// organization it names exists, so keys cannot probe for tenants.
func TestForeignKeyDoesNotLeakExistence(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		e.must("POST", "/api/v1/instance/organizations", e.ownerKey, map[string]any{"name": "Other", "slug": "other"})
		k := e.key("/api/v1/organizations/other", e.ownerKey, auth.Names(), nil).Token
		st1, b1 := e.do("GET", "/api/v1/organizations/default/workspaces", k, nil)
		st2, b2 := e.do("GET", "/api/v1/organizations/no-such-org/workspaces", k, nil)
		// The answer echoes the name the caller sent, and nothing more.
		same := strings.ReplaceAll(string(b1), `\"default\"`, `\"no-such-org\"`) == string(b2)
		if st1 != 403 || st2 != 403 || !same {
			t.Fatalf("existing: %d %s; missing: %d %s", st1, b1, st2, b2)
		}
	})
}
