package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// gw tool-policies apply -f reads YAML and shows its plan as a diff, like
// gw policies apply (issue 30), against the real API on both databases:
// --dry-run changes nothing, a second apply says "no changes", a change
// is a diff of the definition as the server reads it, --prune asks.
func TestToolPoliciesApplyPlan(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newResEnvOn(t, db)
		dir := t.TempDir()
		write := func(name, body string) string {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}
		readonly := `  - name: github-readonly
    definition:
      target: {kind: workspace}
      rules:
        - match: {servers: [github], tools: ["get_*", "list_*"]}
          phase: list
          action: {kind: allow}
        - match: {servers: [github], tools: ["*"], arguments: {/repo: {prefix: "acme/"}}}
          phase: call
          action: {kind: allow}
`
		search := `  - name: search
    enabled: false
    definition:
      target: {kind: workspace}
      rules:
        - match: {servers: [search]}
          phase: list
          action: {kind: allow}
`
		file := write("tp.yaml", "tool_policies:\n"+readonly+search)
		r := e.gw("", "tool-policies", "apply", "-f", file, "--dry-run")
		mustContain(t, "dry run", r.out, `+ create tool policy "github-readonly"`, `"get_*",`, "plan: 2 to create, 0 to update, 0 to delete; 0 unchanged")
		if ps := decodeJSONOut[[]wire.ToolPolicy](t, e.ok("tool-policies", "list", "-o", "json")); len(ps) != 0 {
			t.Fatalf("a dry run created %v", ps)
		}
		mustContain(t, "apply", e.ok("tool-policies", "apply", "-f", file), "created tool policy github-readonly", "created tool policy search")
		mustContain(t, "apply again", e.ok("tool-policies", "apply", "-f", file),
			"no changes: workspace "+e.boot.Workspace.Slug+" matches "+file+" (2 tool policies)")

		changed := write("changed.yaml", "tool_policies:\n"+strings.Replace(readonly, `prefix: "acme/"`, `prefix: "acme-oss/"`, 1)+
			strings.Replace(search, "enabled: false", "enabled: true", 1))
		out := e.ok("tool-policies", "apply", "-f", changed)
		mustContain(t, "changed", out, `~ update tool policy "github-readonly"`, `"prefix": "acme/"`, `"prefix": "acme-oss/"`,
			`~ update tool policy "search"`, `-  "enabled": false,`, `+  "enabled": true,`, "updated tool policy search")
		var removed, added bool
		for _, l := range strings.Split(out, "\n") {
			l = strings.TrimSpace(l)
			removed = removed || (strings.HasPrefix(l, "-") && strings.Contains(l, `"prefix": "acme/"`))
			added = added || (strings.HasPrefix(l, "+") && strings.Contains(l, `"prefix": "acme-oss/"`))
		}
		if !removed || !added {
			t.Errorf("the diff does not show the prefix changed:\n%s", out)
		}
		ps := decodeJSONOut[[]wire.ToolPolicy](t, e.ok("tool-policies", "list", "-o", "json"))
		if len(ps) != 2 {
			t.Fatalf("tool policies: %+v", ps)
		}
		for _, p := range ps {
			if p.Name == "search" && !p.Enabled {
				t.Errorf("search was not enabled: %+v", p)
			}
		}

		one := write("one.yaml", "tool_policies:\n"+strings.Replace(search, "enabled: false", "enabled: true", 1))
		r = e.code(ExitUsage, "", "tool-policies", "apply", "-f", one, "--prune")
		mustContain(t, "prune without --yes", r.out, `- delete tool policy "github-readonly": not in `+one)
		mustContain(t, "prune", e.ok("tool-policies", "apply", "-f", one, "--prune", "--yes"), "deleted tool policy github-readonly")
		if ps := decodeJSONOut[[]wire.ToolPolicy](t, e.ok("tool-policies", "list", "-o", "json")); len(ps) != 1 || ps[0].Name != "search" {
			t.Fatalf("after the prune: %+v", ps)
		}
	})
}
