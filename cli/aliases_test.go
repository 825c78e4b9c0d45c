package cli

import (
	"strings"
	"testing"
)

func TestAliasesCommands(t *testing.T) {
	e := newResEnv(t)
	mustContain(t, "set", e.ok("aliases", "set", "claude-opus-4-8[1m]", "openai/gpt-4o-mini"), "created alias claude-opus-4-8[1m]")
	mustContain(t, "set again", e.ok("aliases", "set", "claude-opus-4-8[1m]", "openai/gpt-4o=3", "openai/gpt-4o-mini"), "updated alias", "openai/gpt-4o=3")
	mustContain(t, "list", e.ok("aliases", "list"), "claude-opus-4-8[1m]", "openai/gpt-4o=3, openai/gpt-4o-mini=1")
	file := `aliases:
  - name: claude-opus-4-8[1m]
    targets:
      - {model: openai/gpt-4o, weight: 3}
      - {model: openai/gpt-4o-mini}
  - name: gpt-5.1-codex
    targets:
      - model: openai/gpt-4o-mini
`
	mustContain(t, "apply", e.code(ExitOK, file, "aliases", "apply", "-f", "-").out, "created alias gpt-5.1-codex")
	mustContain(t, "apply again", e.code(ExitOK, file, "aliases", "apply", "-f", "-").out, "no changes")
	mustContain(t, "workspace apply", e.code(ExitOK, file, "aliases", "apply", "-f", "-", "--scope", "workspace").out, "created alias claude-opus-4-8[1m]")
	e.code(ExitUsage, "aliases: [{name: x}]", "aliases", "apply", "-f", "-")
	mustContain(t, "delete", e.ok("aliases", "delete", "gpt-5.1-codex", "--yes"), "deleted alias gpt-5.1-codex")
	mustContain(t, "prune", e.code(ExitOK, "aliases: []", "aliases", "apply", "-f", "-", "--prune", "--yes").out, "deleted alias claude-opus-4-8[1m]")
	if r := e.gw("", "aliases", "set", "gpt-5", "openai/nope"); r.code == ExitOK {
		t.Fatalf("a target outside the catalog: %+v", r)
	}
}

// TestAliasesApplyFile: gw aliases apply reads its file as gw policies
// apply does (issue 26, row 5): every problem at once with its line, the
// models checked against the catalog before any change, a plan, and
// --dry-run; its help shows the file.
func TestAliasesApplyFile(t *testing.T) {
	e := newResEnv(t)
	post := "POST /api/v1/organizations/" + e.boot.Organization.Slug + "/model-aliases"

	help := e.ok("aliases", "apply", "--help")
	mustContain(t, "help", help, "aliases:\n    - name: claude-opus-4-8", "weight: 3", "--dry-run")

	// "cannot unmarshal !!seq into cli.aliasFile" before.
	bad := `aliases:
  - name: a/b
    targets:
      - {model: openai/gpt-4o, weight: 0}
  - name: gpt-5.1-codex
    tragets: []
`
	r := e.code(ExitUsage, bad, "aliases", "apply", "-f", "-")
	mustContain(t, "bad file", r.errOut, "<stdin> is not valid (4 problems):",
		`<stdin>:2: alias "a/b" (#1): name: an alias name is 1 to 128 letters`,
		`<stdin>:4: alias "a/b" (#1): targets[0].weight: Input should be greater than or equal to 1`,
		`<stdin>:5: alias "gpt-5.1-codex" (#2): targets: Field required`,
		`<stdin>:6: alias "gpt-5.1-codex" (#2): tragets: Extra inputs are not permitted`)
	mustNotContain(t, "bad file", r.errOut, "cli.", "unmarshal")
	mustContain(t, "wrong shape", e.code(ExitUsage, "aliases: {name: x}", "aliases", "apply", "-f", "-").errOut,
		"<stdin>:1: aliases: Input should be a valid list of aliases")

	// Models outside the catalog: all named, with their lines, and
	// nothing created (the first alias is valid).
	unknown := `aliases:
  - name: claude-opus-4-8
    targets: [{model: openai/gpt-4o-mini}]
  - name: gpt-5.1-codex
    targets:
      - model: openai/nope
      - model: anthropic/nada
`
	r = e.code(ExitUsage, unknown, "aliases", "apply", "-f", "-")
	mustContain(t, "unknown models", r.errOut,
		`<stdin>:6: alias "gpt-5.1-codex" (#2): targets[0].model: openai/nope is not a model of the catalog in force`,
		`<stdin>:7: alias "gpt-5.1-codex" (#2): targets[1].model: anthropic/nada is not a model`)
	if n := e.hitCount(post); n != 0 {
		t.Fatalf("%d aliases created from a file with problems", n)
	}

	// The plan, and --dry-run.
	e.ok("aliases", "set", "claude-opus-4-8", "openai/gpt-4o")
	e.ok("aliases", "set", "old", "openai/gpt-4o")
	file := `aliases:
  - name: claude-opus-4-8
    targets:
      - {model: openai/gpt-4o, weight: 3}
      - {model: openai/gpt-4o-mini}
  - name: gpt-5.1-codex
    targets: [{model: openai/gpt-4o-mini}]
`
	r = e.code(ExitOK, file, "aliases", "apply", "-f", "-", "--dry-run")
	mustContain(t, "dry run", r.out,
		"+ create alias \"gpt-5.1-codex\"\n    + openai/gpt-4o-mini=1\n",
		"~ update alias \"claude-opus-4-8\": targets\n", "    -openai/gpt-4o=1\n    +openai/gpt-4o=3\n    +openai/gpt-4o-mini=1\n",
		"plan: 1 to create, 1 to update, 0 to delete; 0 unchanged",
		`note: 1 alias of organization `+e.boot.Organization.Slug+` not in <stdin> is kept (--prune deletes it): "old"`)
	mustContain(t, "dry run stderr", r.errOut, "dry run: nothing was changed")
	if n := e.hitCount(post); n != 2 {
		t.Fatalf("a dry run created aliases: %d POSTs", n)
	}
	r = e.code(ExitOK, file, "aliases", "apply", "-f", "-")
	mustContain(t, "apply", r.out, "created alias gpt-5.1-codex", "updated alias claude-opus-4-8")
	mustContain(t, "apply stderr", r.errOut, "applied 2 changes to organization")
	mustContain(t, "again", e.code(ExitOK, file, "aliases", "apply", "-f", "-").out, "no changes: organization "+e.boot.Organization.Slug+" matches <stdin> (2 aliases)")
}

func mustNotContain(t *testing.T, what, got string, unwanted ...string) {
	t.Helper()
	for _, u := range unwanted {
		if strings.Contains(got, u) {
			t.Errorf("%s contains %q:\n%s", what, u, got)
		}
	}
}
