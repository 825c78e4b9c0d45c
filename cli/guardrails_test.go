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

// gw guardrails list|get|apply -f|delete against the real API on both
// databases: a YAML file applied with its plan, applied again with no
// changes, changed (a diff), its problems named by line before anything
// is sent; the organization's and a workspace's levels; --prune and
// delete ask first.
func TestGuardrailsCommands(t *testing.T) {
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
		noSecrets := `  - name: no-secrets
    target: {kind: workspace}
    stages: [input, output]
    detectors:
      - {kind: secrets}
      - {kind: pii, types: [email, credit_card]}
    action: block
    on_error: fail_closed
`
		ticketIDs := `  - name: ticket-ids
    target: {kind: workspace}
    stages: [input]
    detectors:
      - kind: regex
        patterns: ["ACME-[0-9]{6}"]
    action: redact
    on_error: fail_open
`
		file := write("guardrails.yaml", "guardrails:\n"+noSecrets+ticketIDs)
		r := e.gw("", "guardrails", "apply", "-f", file, "--dry-run")
		mustContain(t, "dry run", r.out, `+ create guardrail "no-secrets"`, `+ create guardrail "ticket-ids"`, "plan: 2 to create, 0 to update, 0 to delete; 0 unchanged")
		mustContain(t, "dry run", r.errOut, "dry run: nothing was changed")
		if out := e.gw("", "guardrails", "list").errOut; !strings.Contains(out, "no guardrails") {
			t.Fatalf("a dry run created something: %q", out)
		}
		out := e.ok("guardrails", "apply", "-f", file)
		mustContain(t, "apply", out, "created guardrail no-secrets", "created guardrail ticket-ids")
		out = e.ok("guardrails", "apply", "-f", file)
		mustContain(t, "apply again", out, "no changes: organization "+e.boot.Organization.Slug+" matches "+file+" (2 guardrails)")

		// A change is a diff of what the server keeps.
		noSecrets2 := strings.Replace(noSecrets, "[email, credit_card]", "[email]", 1)
		changed := write("changed.yaml", "guardrails:\n"+noSecrets2+strings.Replace(ticketIDs, "action: redact", "action: flag", 1))
		out = e.ok("guardrails", "apply", "-f", changed)
		mustContain(t, "changed", out, `~ update guardrail "no-secrets"`, `-        "credit_card"`, `~ update guardrail "ticket-ids"`,
			`-  "action": "redact",`, `+  "action": "flag",`, "updated guardrail ticket-ids")

		gs := decodeJSONOut[[]wire.Guardrail](t, e.ok("guardrails", "list", "-o", "json"))
		if len(gs) != 2 || gs[0].WorkspaceID != nil {
			t.Fatalf("the organization's guardrails: %+v", gs)
		}
		g := decodeJSONOut[wire.Guardrail](t, e.ok("guardrails", "get", "ticket-ids", "-o", "json"))
		if g.Action != "flag" || g.Name != "ticket-ids" {
			t.Fatalf("get: %+v", g)
		}
		mustContain(t, "list", e.ok("guardrails", "list"), "no-secrets\ttrue\tinput,output\tsecrets,pii\tblock\tfail_closed\tworkspace\t")

		// Problems are found before anything is sent, each with its line.
		bad := write("bad.yaml", `guardrails:
  - name: broken
    target: {kind: workspace}
    stages: [input]
    detectors:
      - kind: regex
        patterns: ["(unclosed"]
    action: block
    on_error: fail_closed
  - name: broken
    colour: red
    target: {kind: workspace}
    stages: [middle]
    detectors: [{kind: secrets}]
    action: block
    on_error: fail_closed
`)
		r = e.code(ExitUsage, "", "guardrails", "apply", "-f", bad)
		mustContain(t, "problems", r.errOut, bad+":7: guardrail \"broken\" (#1): detectors[0].patterns[0]", bad+":11: guardrail \"broken\" (#2): colour",
			bad+":13: guardrail \"broken\" (#2): stages[0]",
			bad+":10: guardrail \"broken\" (#2): name: duplicate of guardrail #1")

		// A workspace's own level; the organization's is left alone.
		ws := write("ws.yaml", `- name: ws-keywords
  target: {kind: workspace}
  stages: [output]
  detectors: [{kind: keywords, words: [confidential]}]
  action: flag
  on_error: fail_open
`)
		mustContain(t, "workspace apply", e.ok("guardrails", "apply", "-f", ws, "--workspace", e.boot.Workspace.Slug), "created guardrail ws-keywords")
		wgs := decodeJSONOut[[]wire.Guardrail](t, e.ok("guardrails", "list", "--workspace", e.boot.Workspace.Slug, "-o", "json"))
		if len(wgs) != 1 || wgs[0].WorkspaceID == nil || *wgs[0].WorkspaceID != e.boot.Workspace.ID {
			t.Fatalf("the workspace's guardrails: %+v", wgs)
		}

		// --prune deletes what the file does not list, after asking.
		one := write("one.yaml", "guardrails:\n"+noSecrets2)
		r = e.code(ExitUsage, "", "guardrails", "apply", "-f", one, "--prune")
		mustContain(t, "prune without --yes", r.out, `- delete guardrail "ticket-ids": not in `+one)
		mustContain(t, "prune", e.ok("guardrails", "apply", "-f", one, "--prune", "--yes"), "deleted guardrail ticket-ids")
		e.code(ExitUsage, "", "guardrails", "delete", "no-secrets")
		mustContain(t, "delete", e.ok("guardrails", "delete", "no-secrets", "--yes"), "deleted guardrail no-secrets")
		r = e.code(ExitError, "", "guardrails", "get", "no-secrets")
		mustContain(t, "get a deleted one", r.errOut, `no guardrail named "no-secrets" in organization`)
	})
}
