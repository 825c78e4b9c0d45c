package cli

import (
	"slices"
	"testing"

	"github.com/spf13/cobra"
)

// TestDestructiveCommandsTakeYes: every command that deletes, removes,
// revokes or retires, or prunes what a file does not list, takes the one
// --yes (-y) of the confirmation rule (issue 26, row 4: gw aliases apply
// --prune deleted at once, without a terminal, where gw policies apply
// --prune refused).
func TestDestructiveCommandsTakeYes(t *testing.T) {
	// Outside the rule: diff changes nothing; context delete forgets the
	// caller's own configuration (confirm.go).
	exempt := []string{"gw policies diff", "gw context delete"}
	f, _, _ := testFactory()
	var checked []string
	walkCommands(NewRootCmd(f), func(c *cobra.Command) {
		destroys := slices.Contains([]string{"delete", "remove", "revoke", "retire"}, c.Name()) || c.Flags().Lookup("prune") != nil
		if !c.Runnable() || !destroys || slices.Contains(exempt, c.CommandPath()) {
			return
		}
		checked = append(checked, c.CommandPath())
		if y := c.Flags().Lookup("yes"); y == nil || y.Shorthand != "y" || y.Value.Type() != "bool" {
			t.Errorf("%s destroys but has no --yes/-y", c.CommandPath())
		}
	})
	if len(checked) < 15 {
		t.Fatalf("only %d destructive commands found: %v", len(checked), checked)
	}
}

// TestAliasesConfirmDeletion: without a terminal, deleting or pruning an
// alias is refused unless --yes is given, and nothing is deleted.
func TestAliasesConfirmDeletion(t *testing.T) {
	e := newResEnv(t)
	e.ok("aliases", "set", "gpt-5.1-codex", "openai/gpt-4o-mini")
	e.ok("aliases", "set", "claude-opus-4-8", "openai/gpt-4o-mini")
	del := "DELETE /api/v1/organizations/" + e.boot.Organization.Slug + "/model-aliases/gpt-5.1-codex"

	r := e.code(ExitUsage, "", "aliases", "delete", "gpt-5.1-codex")
	mustContain(t, "delete", r.errOut, "Delete alias gpt-5.1-codex of organization", "refusing without a terminal to confirm; pass --yes")
	r = e.code(ExitUsage, "aliases: [{name: claude-opus-4-8, targets: [{model: openai/gpt-4o-mini}]}]", "aliases", "apply", "-f", "-", "--prune")
	mustContain(t, "prune", r.errOut, "delete 1 alias of organization", "pass --yes")
	mustContain(t, "prune plan", r.out, `- delete alias "gpt-5.1-codex": not in <stdin>`)
	if n := e.hitCount(del); n != 0 {
		t.Fatalf("%d DELETE requests without confirmation", n)
	}
	mustContain(t, "listed", e.ok("aliases", "list"), "gpt-5.1-codex")

	// Nothing to prune: nothing to confirm.
	e.code(ExitOK, "aliases: [{name: claude-opus-4-8, targets: [{model: openai/gpt-4o-mini}]}, {name: gpt-5.1-codex, targets: [{model: openai/gpt-4o-mini}]}]",
		"aliases", "apply", "-f", "-", "--prune")
	mustContain(t, "prune --yes", e.code(ExitOK, "aliases: [{name: claude-opus-4-8, targets: [{model: openai/gpt-4o-mini}]}]",
		"aliases", "apply", "-f", "-", "--prune", "--yes").out, "deleted alias gpt-5.1-codex")
	mustContain(t, "delete -y", e.ok("aliases", "delete", "claude-opus-4-8", "-y"), "deleted alias claude-opus-4-8")
}
