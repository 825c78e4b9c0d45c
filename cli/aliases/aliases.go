// Package aliases is `gw aliases`: the model aliases (virtual models) of
// an organization or a workspace, one by one or from a file.
package aliases

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/wire"
)

// NewCmd builds `gw aliases`, the model aliases (virtual models)
// of the organization or, with --scope workspace, of a workspace.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "aliases",
		Short: "Manage model aliases: names agents ask for, routed to catalog models",
		Long: `A model alias is a name, such as Claude Code's claude-opus-4-8 or Codex's
gpt-5.1-codex, that gw routes to one of up to eight catalog models by weight,
the others serving as fallbacks. Aliases belong to the organization, or with
--scope workspace to a workspace (the current one, or the one --workspace
names: --workspace WS alone means --scope workspace), where they override the
organization's alias of the same name. See docs/agents.md.

Keep them in a file and apply it: gw aliases apply -f aliases.yaml shows its
plan, then creates and updates the aliases to match the file (and with --prune
deletes the others); --dry-run shows the plan alone.`,
		Example: `  gw aliases set claude-opus-4-8 anthropic/claude-opus-4-8
  gw aliases set gpt-5.1-codex openai/gpt-5.1-codex=3 anthropic/claude-sonnet-4-5=1
  gw aliases list
  gw aliases apply -f aliases.yaml --workspace search`,
	}
	cmd.AddCommand(NewCmdList(f), NewCmdSet(f), NewCmdDelete(f), NewCmdApply(f, nil))
	return cmd
}

// addAliasScopeFlag is --scope for the aliases commands: the level whose
// aliases they act on.
func addAliasScopeFlag(cmd *cobra.Command, scope *string) {
	cmd.Flags().StringVar(scope, "scope", "org", "whose aliases: org or workspace (default org, or workspace when --workspace is given)")
}

// aliasLevel is the client, the organization and the workspace ("" for the
// organization's aliases) a command acts on.
func aliasLevel(get func() (*client.Client, cmdutil.Settings, error), scope string) (*client.Client, string, string, error) {
	c, s, err := get()
	if err != nil {
		return nil, "", "", err
	}
	if scope == "workspace" {
		org, ws, err := s.RequireWorkspace()
		return c, org, ws, err
	}
	org, err := s.RequireOrg()
	return c, org, "", err
}

// ListOptions configure gw aliases list.
type ListOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	Scope  string
}

// NewCmdList builds `gw aliases list`.
func NewCmdList(f *cmdutil.Factory) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the model aliases",
		Example: `  gw aliases list
  gw aliases list --workspace search -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := cmdutil.CheckScope(cmd, &opts.Scope, "org", "workspace"); err != nil {
				return err
			}
			c, org, ws, err := aliasLevel(opts.Client, opts.Scope)
			if err != nil {
				return err
			}
			as, err := c.ListModelAliases(cmd.Context(), org, ws)
			if err != nil {
				return err
			}
			return opts.Output.Print(opts.IO, as, func() cmdutil.Table {
				t := cmdutil.Table{Headers: []string{"name", "targets", "updated"}, Empty: "no model aliases"}
				for _, a := range as {
					t.Rows = append(t.Rows, []string{a.Name, cmdutil.DescribeAliasTargets(a.Targets), a.UpdatedAt.UTC().Format("2006-01-02T15:04:05Z")})
				}
				return t
			})
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	addAliasScopeFlag(cmd, &opts.Scope)
	return cmd
}

// parseTargets reads MODEL[=WEIGHT] arguments, held to the API's
// bounds here so that a mistake names the argument.
func parseTargets(args []string) ([]wire.ModelAliasTargetIn, error) {
	if len(args) > backend.AliasMaxTargets {
		return nil, cmdutil.UsageError{Err: fmt.Errorf("an alias has at most %d targets, not %d", backend.AliasMaxTargets, len(args))}
	}
	out := make([]wire.ModelAliasTargetIn, 0, len(args))
	for _, a := range args {
		model, weight, hasWeight := strings.Cut(a, "=")
		if model == "" {
			return nil, cmdutil.UsageError{Err: fmt.Errorf("target %q: want MODEL[=WEIGHT], e.g. openai/gpt-4o=3", a)}
		}
		t := wire.ModelAliasTargetIn{Model: model}
		if hasWeight {
			n, err := strconv.Atoi(weight)
			if err != nil || n < 1 || n > backend.AliasMaxWeight {
				return nil, cmdutil.UsageError{Err: fmt.Errorf("target %q: the weight must be a whole number from 1 to %d", a, backend.AliasMaxWeight)}
			}
			t.Weight = &n
		}
		out = append(out, t)
	}
	return out, nil
}

// aliasFields are an alias request's fields and the arguments that set
// them.
var aliasFields = []cmdutil.FlagField{
	{Loc: "body.name", Flag: "NAME", Input: true},
	{Loc: "body.targets", Flag: "MODEL", Input: true},
}

func isNotFound(err error) bool {
	var ae *client.APIError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

// setAlias replaces the alias's targets, or creates it.
func setAlias(ctx context.Context, c *client.Client, org, ws, name string, targets []wire.ModelAliasTargetIn) (wire.ModelAlias, bool, error) {
	a, err := c.UpdateModelAlias(ctx, org, ws, name, wire.ModelAliasUpdate{Targets: targets})
	if !isNotFound(err) {
		return a, false, err
	}
	a, err = c.CreateModelAlias(ctx, org, ws, wire.ModelAliasCreate{Name: name, Targets: targets})
	return a, true, err
}

// SetOptions configure gw aliases set.
type SetOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Scope  string
}

// NewCmdSet builds `gw aliases set`.
func NewCmdSet(f *cmdutil.Factory) *cobra.Command {
	opts := &SetOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "set NAME MODEL[=WEIGHT]...",
		Short: "Create an alias, or replace its targets (1 to 8, weight 1 to 100, default 1)",
		Example: `  gw aliases set claude-opus-4-8 anthropic/claude-opus-4-8
  gw aliases set 'claude-sonnet-4-5[1m]' openai/gpt-4o=3 anthropic/claude-sonnet-4-5=1 --workspace search`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !backend.AliasNamePattern.MatchString(args[0]) {
				return cmdutil.UsageError{Err: fmt.Errorf("NAME %q: %s", args[0], aliasNameHelp)}
			}
			targets, err := parseTargets(args[1:])
			if err != nil {
				return err
			}
			if err := cmdutil.CheckScope(cmd, &opts.Scope, "org", "workspace"); err != nil {
				return err
			}
			c, org, ws, err := aliasLevel(opts.Client, opts.Scope)
			if err != nil {
				return err
			}
			a, created, err := setAlias(cmd.Context(), c, org, ws, args[0], targets)
			if err != nil {
				return cmdutil.WithFlags(err, aliasFields...)
			}
			verb := "updated"
			if created {
				verb = "created"
			}
			_, err = fmt.Fprintf(opts.IO.Out, "%s alias %s → %s\n", verb, a.Name, cmdutil.DescribeAliasTargets(a.Targets))
			return err
		},
	}
	addAliasScopeFlag(cmd, &opts.Scope)
	return cmd
}

// aliasLevelName names the level an alias command acts on, for
// questions and messages.
func aliasLevelName(org, ws string) string {
	if ws != "" {
		return "workspace " + ws
	}
	return "organization " + org
}

// DeleteOptions configure gw aliases delete.
type DeleteOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Scope  string
	Yes    bool
}

// NewCmdDelete builds `gw aliases delete`.
func NewCmdDelete(f *cmdutil.Factory) *cobra.Command {
	opts := &DeleteOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete an alias (asks on a terminal; --yes otherwise)",
		Example: `  gw aliases delete claude-opus-4-8
  gw aliases delete gpt-5.1-codex --workspace search --yes`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.CheckScope(cmd, &opts.Scope, "org", "workspace"); err != nil {
				return err
			}
			c, org, ws, err := aliasLevel(opts.Client, opts.Scope)
			if err != nil {
				return err
			}
			q := fmt.Sprintf("Delete alias %s of %s? Requests for it get 404 where no other alias has its name.", args[0], aliasLevelName(org, ws))
			if err := cmdutil.Confirm(opts.IO, q, opts.Yes); err != nil {
				return err
			}
			if _, err := c.DeleteModelAlias(cmd.Context(), org, ws, args[0]); err != nil {
				return err
			}
			_, err = fmt.Fprintf(opts.IO.Out, "deleted alias %s\n", args[0])
			return err
		},
	}
	addAliasScopeFlag(cmd, &opts.Scope)
	cmdutil.AddYesFlag(cmd, &opts.Yes)
	return cmd
}
