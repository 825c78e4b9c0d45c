package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gw-gateway/gw/wire"
)

// walkCommands calls fn for every command of the tree below root.
func walkCommands(root *cobra.Command, fn func(*cobra.Command)) {
	for _, c := range root.Commands() {
		fn(c)
		walkCommands(c, fn)
	}
}

// TestGlobalFlagsKeepTheirMeaning: a command's own flag named like a
// global one (--workspace, --org, --server, --context) takes the same
// kind of value, so that it cannot shadow the global flag with another
// meaning, as a boolean --workspace in the aliases commands once did
// (issue 26, row 3).
func TestGlobalFlagsKeepTheirMeaning(t *testing.T) {
	f, _, _ := testFactory()
	root := NewRootCmd(f)
	walkCommands(root, func(c *cobra.Command) {
		c.LocalNonPersistentFlags().VisitAll(func(fl *pflag.Flag) {
			g := root.PersistentFlags().Lookup(fl.Name)
			if g == nil {
				return
			}
			// data-planes enroll --org takes several organizations: the
			// same meaning, more than one of them.
			if fl.Value.Type() != g.Value.Type() && fl.Value.Type() != "stringSlice" {
				t.Errorf("%s --%s is a %s; the global --%s is a %s (%s)", c.CommandPath(), fl.Name, fl.Value.Type(), g.Name, g.Value.Type(), g.Usage)
			}
		})
	})
}

// TestWorkspaceFlagMeansOneThing: --workspace WS names the workspace in
// every command; where a command acts at several levels it makes the
// level the workspace, and a --scope that says otherwise is refused
// rather than the workspace ignored.
func TestWorkspaceFlagMeansOneThing(t *testing.T) {
	e := newResEnv(t)
	e.ok("workspaces", "create", "--name", "Search")

	// issue 26 row 3: "no workspace: pass --workspace" before.
	mustContain(t, "set", e.ok("aliases", "set", "gpt-5.1-codex", "openai/gpt-4o-mini", "--workspace", "search"), "created alias gpt-5.1-codex")
	got := decodeJSONOut[[]wire.ModelAlias](t, e.ok("aliases", "list", "--workspace", "search", "-o", "json"))
	if len(got) != 1 || got[0].WorkspaceID == nil {
		t.Fatalf("search's aliases: %+v", got)
	}
	if org := decodeJSONOut[[]wire.ModelAlias](t, e.ok("aliases", "list", "-o", "json")); len(org) != 0 {
		t.Fatalf("the organization's aliases: %+v", org)
	}
	// GW_WORKSPACE (default) supplies the workspace of --scope workspace
	// but does not choose the level.
	if def := decodeJSONOut[[]wire.ModelAlias](t, e.ok("aliases", "list", "--scope", "workspace", "-o", "json")); len(def) != 0 {
		t.Fatalf("the default workspace's aliases: %+v", def)
	}
	mustContain(t, "delete", e.ok("aliases", "delete", "gpt-5.1-codex", "--workspace", "search", "--yes"), "deleted alias gpt-5.1-codex")

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"aliases", "list", "--scope", "org", "--workspace", "search"}, "--workspace search names a workspace, but --scope org acts on the organization"},
		{[]string{"keys", "list", "--scope", "instance", "--workspace", "search"}, "but --scope instance acts on the whole instance"},
		{[]string{"credentials", "list", "--scope", "platform", "--org", "x"}, "--org x names an organization, but --scope platform"},
		{[]string{"catalog", "list", "--scope", "org", "--workspace", "search"}, "pass --scope workspace, or drop --workspace"},
	} {
		r := e.code(ExitUsage, "", c.args...)
		mustContain(t, strings.Join(c.args, " "), r.errOut, c.want)
	}
	// --workspace alone: the workspace's keys.
	k := decodeJSONOut[wire.ManagementKey](t, e.ok("keys", "create", "--workspace", "search", "--label", "ws", "--permissions", "workspaces.read", "-o", "json"))
	if k.Scope.Level != "workspace" {
		t.Fatalf("key created with --workspace search: %+v", k.Scope)
	}
}
