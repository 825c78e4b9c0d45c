// Package guardrails is `gw guardrails`: the guardrails of an organization
// (applying to every workspace) or of a workspace (issue 32,
// docs/guardrails.md): list, get, apply a declarative file, delete.
package guardrails

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// NewCmd builds `gw guardrails`.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "guardrails",
		Short: "Manage guardrails: what is blocked, redacted or flagged in requests and answers",
		Long: `Guardrails inspect every text a caller sends (stage input) and every answer
(stage output) with detectors (pii, secrets, regex, keywords, a webhook), and
block, redact or flag what they find; on_error says what a failing detector
does (fail_closed blocks, fail_open passes). An organization's guardrails
apply to every workspace; --workspace W (or --scope workspace) acts on a
workspace's own. gw usage guardrails counts what they did.`,
	}
	cmd.AddCommand(NewCmdList(f, nil), NewCmdGet(f, nil), NewCmdApply(f, nil), NewCmdDelete(f, nil))
	return cmd
}

// addScopeFlag is --scope, as gw aliases has it.
func addScopeFlag(cmd *cobra.Command, scope *string) {
	cmd.Flags().StringVar(scope, "scope", "org", "whose guardrails: org or workspace (default org, or workspace when --workspace is given)")
}

// Level is where a command acts: the client, the scope and how messages
// name it.
type Level struct {
	Client *client.Client
	Scope  client.Scope
	Name   string
}

func level(get func() (*client.Client, cmdutil.Settings, error), scope string) (Level, error) {
	c, s, err := get()
	if err != nil {
		return Level{}, err
	}
	if scope == "workspace" {
		org, ws, err := s.RequireWorkspace()
		return Level{c, client.WorkspaceScope(org, ws), "workspace " + ws}, err
	}
	org, err := s.RequireOrg()
	return Level{c, client.OrgScope(org), "organization " + org}, err
}

// find is the level's guardrail named ref (its name, or its id).
func find(ctx context.Context, l Level, ref string) (wire.Guardrail, error) {
	gs, err := l.Client.ListGuardrails(ctx, l.Scope)
	if err != nil {
		return wire.Guardrail{}, err
	}
	for _, g := range gs {
		if g.Name == ref || g.ID.String() == strings.ToLower(ref) {
			return g, nil
		}
	}
	if _, err := uuid.Parse(ref); err == nil {
		return wire.Guardrail{}, fmt.Errorf("guardrail %s not found in %s", ref, l.Name)
	}
	return wire.Guardrail{}, fmt.Errorf("no guardrail named %q in %s (gw guardrails list shows them)", ref, l.Name)
}

func table(gs ...wire.Guardrail) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"name", "enabled", "stages", "detectors", "action", "on error", "target", "id", "updated"},
		Wide: []string{"id", "updated"}, Shrink: []string{"name", "detectors"}, Empty: "no guardrails"}
	for _, g := range gs {
		kinds := make([]string, len(g.Detectors))
		for i, d := range g.Detectors {
			kinds[i] = d.Kind
		}
		t.Rows = append(t.Rows, []string{g.Name, fmt.Sprint(g.Enabled), strings.Join(g.Stages, ","), strings.Join(kinds, ","),
			g.Action, g.OnError, targetKind(g.Target), g.ID.String(), cmdutil.TimeCell(&g.UpdatedAt)})
	}
	return t
}

// targetKind is the kind of a policies' target, as JSON.
func targetKind(t wire.PolicyTarget) string {
	var v struct {
		Kind string `json:"kind"`
	}
	if json.Unmarshal(t, &v) != nil || v.Kind == "" {
		return "-"
	}
	return v.Kind
}

// ListOptions configure gw guardrails list.
type ListOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	Scope  string
}

// NewCmdList builds `gw guardrails list`.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the guardrails of the organization (or, with --workspace, a workspace's own)",
		Example: `  gw guardrails list
  gw guardrails list --workspace search -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := cmdutil.CheckScope(cmd, &opts.Scope, "org", "workspace"); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			l, err := level(opts.Client, opts.Scope)
			if err != nil {
				return err
			}
			gs, err := l.Client.ListGuardrails(cmd.Context(), l.Scope)
			if err != nil {
				return err
			}
			return opts.Output.Print(opts.IO, gs, func() cmdutil.Table { return table(gs...) })
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	addScopeFlag(cmd, &opts.Scope)
	return cmd
}

// GetOptions configure gw guardrails get.
type GetOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	Scope  string
	Ref    string
}

// NewCmdGet builds `gw guardrails get`.
func NewCmdGet(f *cmdutil.Factory, runF func(context.Context, *GetOptions) error) *cobra.Command {
	opts := &GetOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "get NAME|ID",
		Short: "Show a guardrail (-o yaml gives its detectors; a webhook's secret only as has_secret)",
		Example: `  gw guardrails get no-secrets -o yaml
  gw guardrails get pii --workspace search`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := cmdutil.CheckScope(cmd, &opts.Scope, "org", "workspace"); err != nil {
				return err
			}
			opts.Ref = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			l, err := level(opts.Client, opts.Scope)
			if err != nil {
				return err
			}
			g, err := find(cmd.Context(), l, opts.Ref)
			if err != nil {
				return err
			}
			return opts.Output.Print(opts.IO, g, func() cmdutil.Table { return table(g) })
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	addScopeFlag(cmd, &opts.Scope)
	return cmd
}

// DeleteOptions configure gw guardrails delete.
type DeleteOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Scope  string
	Ref    string
	Yes    bool
}

// NewCmdDelete builds `gw guardrails delete`.
func NewCmdDelete(f *cmdutil.Factory, runF func(context.Context, *DeleteOptions) error) *cobra.Command {
	opts := &DeleteOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "delete NAME|ID",
		Short: "Delete a guardrail (asks on a terminal; --yes otherwise)",
		Example: `  gw guardrails delete no-secrets
  gw guardrails delete pii --workspace search --yes`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.CheckScope(cmd, &opts.Scope, "org", "workspace"); err != nil {
				return err
			}
			opts.Ref = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			l, err := level(opts.Client, opts.Scope)
			if err != nil {
				return err
			}
			g, err := find(cmd.Context(), l, opts.Ref)
			if err != nil {
				return err
			}
			q := fmt.Sprintf("Delete guardrail %s of %s? Requests are no longer inspected by it.", g.Name, l.Name)
			if err := cmdutil.Confirm(opts.IO, q, opts.Yes); err != nil {
				return err
			}
			if _, err := l.Client.DeleteGuardrail(cmd.Context(), l.Scope, g.ID.String()); err != nil {
				return err
			}
			_, err = fmt.Fprintf(opts.IO.Out, "deleted guardrail %s\n", g.Name)
			return err
		},
	}
	addScopeFlag(cmd, &opts.Scope)
	cmdutil.AddYesFlag(cmd, &opts.Yes)
	return cmd
}

var errNoFile = errors.New("-f FILE is required (- reads stdin)")
