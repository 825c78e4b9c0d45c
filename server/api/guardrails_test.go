package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/wire"
)

func TestGuardrailsAPI(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		const org = "/api/v1/organizations/default/guardrails"
		const ws = "/api/v1/organizations/default/workspaces/default/guardrails"
		const secret = "whsec-0123456789abcdef-SECRET"
		body := func() map[string]any {
			return map[string]any{"name": "no-secrets", "target": map[string]any{"kind": "workspace"},
				"stages": []any{"input", "output"}, "action": "redact", "on_error": "fail_closed",
				"detectors": []any{
					map[string]any{"kind": "secrets"},
					map[string]any{"kind": "pii", "types": []any{"email", "credit_card"}},
					map[string]any{"kind": "regex", "patterns": []any{`PRJ-[0-9]{4}`}},
					map[string]any{"kind": "keywords", "words": []any{"Project Falcon"}},
					map[string]any{"kind": "webhook", "url": "http://93.184.216.34/check", "timeout_ms": 500, "secret": secret},
				}}
		}
		created, raw := e.do("POST", org, e.ownerKey, body())
		if created != http.StatusOK && created != http.StatusCreated {
			t.Fatalf("create: %d %s", created, raw)
		}
		if strings.Contains(string(raw), secret) {
			t.Fatalf("the secret was answered back: %s", raw)
		}
		g := decodeData[wire.Guardrail](t, raw)
		if g.WorkspaceID != nil || !g.Enabled || len(g.Detectors) != 5 || !g.Detectors[4].HasSecret || g.Detectors[0].HasSecret ||
			string(g.Target) != `{"kind":"workspace"}` || g.Action != "redact" {
			t.Fatalf("created %+v", g)
		}
		one := org + "/" + g.ID.String()
		if got := decodeData[wire.Guardrail](t, e.must("GET", one, e.ownerKey, nil)); got.ID != g.ID || !got.Detectors[4].HasSecret {
			t.Fatalf("got %+v", got)
		}
		w := decodeData[wire.Guardrail](t, e.must("POST", ws, e.ownerKey, map[string]any{"name": "no-secrets",
			"target": map[string]any{"kind": "selected_keys", "key_ids": []any{"k1"}}, "stages": []any{"input"},
			"detectors": []any{map[string]any{"kind": "secrets"}}, "action": "block", "on_error": "fail_open", "enabled": false}))
		if w.WorkspaceID == nil || w.Enabled {
			t.Fatalf("workspace guardrail %+v", w)
		}

		bad := func(mut func(b map[string]any)) map[string]any { b := body(); b["name"] = "other"; mut(b); return b }
		det := func(d ...any) func(map[string]any) { return func(b map[string]any) { b["detectors"] = d } }
		for _, c := range []struct {
			name string
			body map[string]any
			want []string
		}{
			{"an unknown member", bad(func(b map[string]any) { b["mode"] = "x" }), []string{"body.mode:extra_forbidden"}},
			{"an unknown detector member", bad(det(map[string]any{"kind": "secrets", "rules": []any{}})), []string{"body.detectors.0.rules:extra_forbidden"}},
			{"a regex that does not compile", bad(det(map[string]any{"kind": "regex", "patterns": []any{"ok", "a(b"}})), []string{"body.detectors.0.patterns.1:value_error"}},
			{"a webhook URL that is not http", bad(det(map[string]any{"kind": "webhook", "url": "ftp://example.com/x"})), []string{"body.detectors.0.url:url_parsing"}},
			{"a webhook at the metadata service", bad(det(map[string]any{"kind": "webhook", "url": "http://169.254.169.254/x"})), []string{"body.detectors.0.url"}},
			{"a pii type", bad(det(map[string]any{"kind": "pii", "types": []any{"dna"}})), []string{"body.detectors.0.types.0:literal_error"}},
			{"a detector kind", bad(det(map[string]any{"kind": "magic"})), []string{"body.detectors.0:union_tag_invalid"}},
			{"an action", bad(func(b map[string]any) { b["action"] = "drop" }), []string{"body.action:literal_error"}},
			{"a stage", bad(func(b map[string]any) { b["stages"] = []any{"middle"} }), []string{"body.stages.0:literal_error"}},
			{"a target", bad(func(b map[string]any) { b["target"] = map[string]any{"kind": "everyone"} }), []string{"body.target:union_tag_invalid"}},
			{"no on_error", bad(func(b map[string]any) { delete(b, "on_error") }), []string{"body.on_error:missing"}},
		} {
			st, raw := e.do("POST", org, e.ownerKey, c.body)
			if st != http.StatusUnprocessableEntity || !containsAllPrefix(issueSet(t, raw), c.want) {
				t.Fatalf("%s: %d %s", c.name, st, raw)
			}
		}
		if st, raw := e.do("POST", org, e.ownerKey, body()); st != http.StatusConflict {
			t.Fatalf("a taken name: %d %s", st, raw)
		}

		// policies.read reads, policies.manage writes.
		reader := e.key("/api/v1/organizations/default", e.ownerKey, []string{"policies.read"}, nil).Token
		if st, raw := e.do("GET", one, reader, nil); st != http.StatusOK {
			t.Fatalf("read with policies.read: %d %s", st, raw)
		}
		for _, c := range []struct{ method, path string }{{"POST", org}, {"PATCH", one}, {"DELETE", one}} {
			if st, raw := e.do(c.method, c.path, reader, map[string]any{"name": "x"}); st != http.StatusForbidden {
				t.Fatalf("%s without policies.manage: %d %s", c.method, st, raw)
			}
		}

		// Another organization's owner never reaches them.
		me, carol := e.signup("carol@example.com")
		e.must("POST", "/api/v1/instance/organizations", e.ownerKey, map[string]any{"name": "Other", "slug": "other"})
		e.must("POST", "/api/v1/organizations/other/members", e.ownerKey, map[string]any{"user_id": me.User.ID, "role": "owner"})
		for _, c := range []struct{ method, path string }{{"GET", org}, {"GET", one}, {"PATCH", one}, {"DELETE", one}, {"GET", ws}} {
			if st, raw := e.do(c.method, c.path, "cookie:"+carol, map[string]any{"name": "y"}); st != http.StatusNotFound {
				t.Fatalf("%s %s from another organization: %d %s", c.method, c.path, st, raw)
			}
		}
		if st, raw := e.do("GET", "/api/v1/organizations/other/guardrails/"+g.ID.String(), "cookie:"+carol, nil); st != http.StatusNotFound {
			t.Fatalf("another organization's id: %d %s", st, raw)
		}

		// PATCH changes what it names; the webhook keeps its secret while
		// its URL stays, and loses it when the URL changes.
		p := decodeData[wire.Guardrail](t, e.must("PATCH", one, e.ownerKey, map[string]any{"action": "block", "detectors": []any{
			map[string]any{"kind": "webhook", "url": "http://93.184.216.34/check"}, map[string]any{"kind": "webhook", "url": "http://93.184.216.34/other"}}}))
		if p.Action != "block" || p.Name != "no-secrets" || len(p.Detectors) != 2 || !p.Detectors[0].HasSecret || p.Detectors[1].HasSecret {
			t.Fatalf("patched %+v", p)
		}
		if st, raw := e.do("PATCH", one, e.ownerKey, map[string]any{"detectors": []any{map[string]any{"kind": "regex", "patterns": []any{"("}}}}); st != http.StatusUnprocessableEntity ||
			!strings.Contains(string(raw), "missing closing )") {
			t.Fatalf("a bad regex on update: %d %s", st, raw)
		}
		e.must("DELETE", one, e.ownerKey, nil)
		if st, _ := e.do("GET", one, e.ownerKey, nil); st != http.StatusNotFound {
			t.Fatalf("deleted guardrail answers %d", st)
		}
		wsList := decodeData[[]wire.Guardrail](t, e.must("GET", ws, e.ownerKey, nil))
		if len(wsList) != 1 {
			t.Fatalf("the workspace's guardrail went with the organization's: %+v", wsList)
		}
		if got := decodeData[[]wire.Guardrail](t, e.must("GET", org, e.ownerKey, nil)); len(got) != 0 {
			t.Fatalf("the organization's guardrails after its one was deleted: %+v", got)
		}
		// The workspace's own: read, changed and deleted at its place.
		wsOne := ws + "/" + wsList[0].ID.String()
		if got := decodeData[wire.Guardrail](t, e.must("GET", wsOne, e.ownerKey, nil)); got.ID != wsList[0].ID || got.WorkspaceID == nil {
			t.Fatalf("the workspace's guardrail: %+v", got)
		}
		if got := decodeData[wire.Guardrail](t, e.must("PATCH", wsOne, e.ownerKey, map[string]any{"enabled": false})); got.Enabled {
			t.Fatalf("disabled: %+v", got)
		}
		e.must("DELETE", wsOne, e.ownerKey, nil)
		if st, _ := e.do("GET", wsOne, e.ownerKey, nil); st != http.StatusNotFound {
			t.Fatalf("the deleted workspace guardrail answers %d", st)
		}
	})
}

// containsAllPrefix: every wanted issue ("loc:type", or a loc alone) is in
// the set.
func containsAllPrefix(set []string, want []string) bool {
	for _, w := range want {
		found := false
		for _, k := range set {
			if k == w || strings.HasPrefix(k, w+":") {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}
