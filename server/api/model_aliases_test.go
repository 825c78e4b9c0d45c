package api_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/gw-gateway/gw/wire"
)

func TestModelAliasesAPI(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		const org = "/api/v1/organizations/default/model-aliases"
		const ws = "/api/v1/organizations/default/workspaces/default/model-aliases"
		name := "claude-opus-4-8[1m]"
		one := org + "/" + url.PathEscape(name)
		a := decodeData[wire.ModelAlias](t, e.must("POST", org, e.ownerKey, map[string]any{"name": name,
			"targets": []any{map[string]any{"model": "openai/gpt-4o-mini"}}}))
		if a.Name != name || a.WorkspaceID != nil || len(a.Targets) != 1 || a.Targets[0].Weight != 1 || a.Targets[0].Retired {
			t.Fatalf("created %+v", a)
		}
		if got := decodeData[wire.ModelAlias](t, e.must("GET", one, e.ownerKey, nil)); got.ID != a.ID {
			t.Fatalf("got %+v", got)
		}
		// A workspace's alias of the same name is its own.
		w := decodeData[wire.ModelAlias](t, e.must("POST", ws, e.ownerKey, map[string]any{"name": name,
			"targets": []any{map[string]any{"model": "openai/gpt-4o", "weight": 3}, map[string]any{"model": "openai/gpt-4o-mini", "weight": 1}}}))
		if w.WorkspaceID == nil || len(w.Targets) != 2 {
			t.Fatalf("workspace alias %+v", w)
		}
		for _, c := range []struct {
			name string
			body map[string]any
			want []string
		}{
			{"a catalog model's id", map[string]any{"name": "openai/gpt-4o-mini", "targets": []any{map[string]any{"model": "openai/gpt-4o"}}}, []string{"body.name:string_pattern_mismatch"}},
			{"a target outside the catalog", map[string]any{"name": "gpt-5", "targets": []any{map[string]any{"model": "openai/nope"}}}, []string{"body.targets.0.model:value_error"}},
			{"no targets", map[string]any{"name": "gpt-5", "targets": []any{}}, []string{"body.targets:too_short"}},
			{"a weight of 0", map[string]any{"name": "gpt-5", "targets": []any{map[string]any{"model": "openai/gpt-4o", "weight": 0}}}, []string{"body.targets.0.weight:greater_than_equal"}},
			{"nine targets", map[string]any{"name": "gpt-5", "targets": []any{
				map[string]any{"model": "a"}, map[string]any{"model": "b"}, map[string]any{"model": "c"}, map[string]any{"model": "d"}, map[string]any{"model": "e"},
				map[string]any{"model": "f"}, map[string]any{"model": "g"}, map[string]any{"model": "h"}, map[string]any{"model": "i"}}}, []string{"body.targets:too_long"}},
		} {
			st, raw := e.do("POST", org, e.ownerKey, c.body)
			if st != http.StatusUnprocessableEntity || !containsAll(issueSet(t, raw), c.want) {
				t.Fatalf("%s: %d %s", c.name, st, raw)
			}
		}
		if st, raw := e.do("POST", org, e.ownerKey, map[string]any{"name": name, "targets": []any{map[string]any{"model": "openai/gpt-4o"}}}); st != http.StatusConflict {
			t.Fatalf("a taken name: %d %s", st, raw)
		}

		// catalog.read reads, catalog.manage writes.
		reader := e.key("/api/v1/organizations/default", e.ownerKey, []string{"catalog.read"}, nil).Token
		if st, raw := e.do("GET", one, reader, nil); st != http.StatusOK {
			t.Fatalf("read with catalog.read: %d %s", st, raw)
		}
		for _, c := range []struct{ method, path string }{{"POST", org}, {"PATCH", one}, {"DELETE", one}} {
			if st, raw := e.do(c.method, c.path, reader, map[string]any{"name": "x", "targets": []any{map[string]any{"model": "openai/gpt-4o"}}}); st != http.StatusForbidden {
				t.Fatalf("%s without catalog.manage: %d %s", c.method, st, raw)
			}
		}

		// Another organization's owner never reaches these aliases: the
		// organization is not theirs to know of.
		me, carol := e.signup("carol@example.com")
		e.must("POST", "/api/v1/instance/organizations", e.ownerKey, map[string]any{"name": "Other", "slug": "other"})
		e.must("POST", "/api/v1/organizations/other/members", e.ownerKey, map[string]any{"user_id": me.User.ID, "role": "owner"})
		for _, c := range []struct{ method, path string }{{"GET", org}, {"GET", one}, {"PATCH", one}, {"DELETE", one}, {"GET", ws}, {"POST", ws}} {
			if st, raw := e.do(c.method, c.path, "cookie:"+carol, map[string]any{"name": "y", "targets": []any{map[string]any{"model": "openai/gpt-4o"}}}); st != http.StatusNotFound {
				t.Fatalf("%s %s from another organization: %d %s", c.method, c.path, st, raw)
			}
		}
		if got := decodeData[[]wire.ModelAlias](t, e.must("GET", "/api/v1/organizations/other/model-aliases", "cookie:"+carol, nil)); len(got) != 0 {
			t.Fatalf("the other organization lists %+v", got)
		}
		// A key of the other organization is refused as out of scope.
		outsider := e.key("/api/v1/organizations/other", "cookie:"+carol, []string{"catalog.read"}, nil).Token
		if st, raw := e.do("GET", one, outsider, nil); st != http.StatusForbidden && st != http.StatusNotFound {
			t.Fatalf("another organization's key: %d %s", st, raw)
		}

		// PATCH replaces the targets; DELETE removes the alias.
		p := decodeData[wire.ModelAlias](t, e.must("PATCH", one, e.ownerKey, map[string]any{"targets": []any{map[string]any{"model": "openai/gpt-4o", "weight": 100}}}))
		if len(p.Targets) != 1 || p.Targets[0] != (wire.ModelAliasTarget{Model: "openai/gpt-4o", Weight: 100}) {
			t.Fatalf("patched %+v", p)
		}
		e.must("DELETE", one, e.ownerKey, nil)
		if st, _ := e.do("GET", one, e.ownerKey, nil); st != http.StatusNotFound {
			t.Fatalf("deleted alias answers %d", st)
		}
		if got := decodeData[[]wire.ModelAlias](t, e.must("GET", ws, e.ownerKey, nil)); len(got) != 1 {
			t.Fatalf("the workspace's alias went with the organization's: %+v", got)
		}
	})
}
