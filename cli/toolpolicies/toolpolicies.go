// Package toolpolicies is `gw tool-policies`: a workspace's rules over
// which MCP tools each key may list and call (docs/mcp.md). They are a
// sibling of `gw policies`, not a kind in its files: the policy file's
// schema is the spec's, closed.
package toolpolicies

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/declfile"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/toolpolicy"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// NewCmd builds `gw tool-policies`.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tool-policies",
		Short: "Manage a workspace's tool policies: which MCP tools each key may list and call",
		Long: `Tool policies decide which tools of the MCP servers gw serves a key may list
(phase list) and call (phase call, which may test the call's arguments).
Deny by default: a tool no tool policy allows is unreachable unless the
workspace's mcp_default is "allow"; any matching deny wins.`,
	}
	cmd.AddCommand(NewCmdList(f, nil), NewCmdApply(f, nil))
	return cmd
}

func table(ps ...wire.ToolPolicy) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"id", "name", "enabled", "target", "rules", "updated"}}
	for _, p := range ps {
		t.Rows = append(t.Rows, []string{p.ID.String(), p.Name, fmt.Sprint(p.Enabled), p.Definition.Target.Kind,
			fmt.Sprint(len(p.Definition.Rules)), cmdutil.TimeCell(&p.UpdatedAt)})
	}
	return t
}

// ListOptions configure gw tool-policies list.
type ListOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
}

// NewCmdList builds `gw tool-policies list`.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the workspace's tool policies",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			c, s, err := opts.Client()
			if err != nil {
				return err
			}
			org, ws, err := s.RequireWorkspace()
			if err != nil {
				return err
			}
			ps, err := c.ListToolPolicies(cmd.Context(), org, ws)
			if err != nil {
				return err
			}
			return opts.Output.Print(opts.IO, ps, func() cmdutil.Table { return table(ps...) })
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	return cmd
}

// ApplyOptions configure gw tool-policies apply.
type ApplyOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	File   string
	Prune  bool
	DryRun bool
	Yes    bool
}

const fileHelp = `The file (YAML or JSON; -f - reads stdin) lists the workspace's tool policies:

  tool_policies:
    - name: github-readonly
      enabled: true                      # the default
      definition:
        target: {kind: workspace}        # or selected_users, selected_keys
        rules:
          - match: {servers: [github], tools: ["get_*", "list_*"]}
            phase: list
            action: {kind: allow}
          - match: {servers: [github], tools: ["*"], arguments: {/repo: {prefix: "acme/"}}}
            phase: call
            action: {kind: allow}

A bare list (without "tool_policies:") is read the same. Policies are matched
to the workspace's by name. Each definition is checked with the server's
rules before anything is sent (a glob or regex that does not compile, a
member the schema does not have); problems are reported as FILE:LINE: tool
policy "NAME" (#N): LOCATION: PROBLEM, all at once.`

// NewCmdApply builds `gw tool-policies apply`.
func NewCmdApply(f *cmdutil.Factory, runF func(context.Context, *ApplyOptions) error) *cobra.Command {
	opts := &ApplyOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Make the workspace's tool policies match a file, after showing the plan (--prune deletes the others)",
		Long: `Create and update the workspace's tool policies so that they match FILE,
after showing what will change as a diff. Applying the same file twice
changes nothing the second time.

` + fileHelp + `

Tool policies the file does not list are left alone, unless --prune is
given: then they are deleted, after a confirmation on a terminal (--yes
confirms without one). --dry-run shows the plan and changes nothing.`,
		Example: `  gw tool-policies apply -f tool-policies.yaml --dry-run
  gw tool-policies apply -f tool-policies.yaml --workspace search
  gw tool-policies apply -f tool-policies.yaml --prune --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.File == "" {
				return cmdutil.UsageError{Err: errors.New("-f FILE is required (- reads stdin)")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return applyRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.File, "file", "f", "", "the tool policy file, YAML or JSON (- for stdin)")
	cmd.Flags().BoolVar(&opts.Prune, "prune", false, "also delete the workspace's tool policies that the file does not list")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "show what would change and change nothing")
	cmdutil.AddYesFlag(cmd, &opts.Yes)
	return cmd
}

// spec is one tool policy of a file: what is sent, and what is compared.
type spec struct {
	Name   string
	Create wire.ToolPolicyCreate
	Doc    doc
}

// doc is a tool policy as a plan compares it: its definition as the
// server reads it (toolpolicy.ParseDefinition), so that the file's
// spelling and the server's answer compare alike.
type doc struct {
	Enabled    bool                  `json:"enabled"`
	Definition toolpolicy.Definition `json:"definition"`
}

// parseItem reads one tool policy with the server's rules; issues are
// relative to the item.
func parseItem(v any) (doc, []validate.Issue) {
	var errs validate.Errors
	d := doc{Enabled: true}
	if o := validate.ReadObject(v, nil, &errs); o != nil {
		if raw, ok := o.Require("name"); ok {
			validate.String(raw, validate.Loc{"name"}, validate.StringRule{Min: 1, Max: 100}, &errs)
		}
		if raw, ok := o.Raw("enabled"); ok {
			d.Enabled, _ = validate.Bool(raw, validate.Loc{"enabled"}, &errs)
		}
		if raw, ok := o.Require("definition"); ok {
			d.Definition = toolpolicy.ParseDefinition(raw, validate.Loc{"definition"}, &errs)
		}
		o.Close()
	}
	if ve, ok := validate.AsError(errs.Err()); ok {
		return d, ve.Issues
	}
	return d, nil
}

// readFile reads and checks a tool policy file; its problems are usage
// errors, found before any request.
func readFile(path string, stdin io.Reader) (string, []spec, error) {
	name, items, lines, problems, err := declfile.ReadResources(path, stdin, "tool_policies", "tool policy")
	if err != nil {
		return name, nil, err
	}
	specs := make([]spec, 0, len(items))
	for _, it := range items {
		if it.Name == "" {
			continue // its problem is said
		}
		d, issues := parseItem(it.Value)
		if len(issues) > 0 {
			problems = append(problems, declfile.ItemProblems(name, lines, it.Loc, "tool policy", it.Name, it.Index, issues)...)
			continue
		}
		s := spec{Name: it.Name, Doc: d}
		if err := declfile.DecodeStrict(name, lines, "tool policy", it, &s.Create); err != nil {
			problems = append(problems, err.Error())
			continue
		}
		specs = append(specs, s)
	}
	if len(problems) > 0 {
		return name, nil, cmdutil.UsageError{Err: &declfile.FileError{File: name, Problems: problems, PerItem: true}}
	}
	return name, specs, nil
}

// currentDoc reads a stored tool policy as a file's would be read.
func currentDoc(p wire.ToolPolicy) (doc, error) {
	raw, err := json.Marshal(p.Definition)
	if err != nil {
		return doc{}, err
	}
	def, err := toolpolicy.ParseDefinitionJSON(raw)
	if err != nil {
		return doc{}, fmt.Errorf("tool policy %q as stored does not read: %w", p.Name, err)
	}
	return doc{Enabled: p.Enabled, Definition: def}, nil
}

func applyRun(ctx context.Context, opts *ApplyOptions) error {
	file, specs, err := readFile(opts.File, opts.IO.In)
	if err != nil {
		return err
	}
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, ws, err := s.RequireWorkspace()
	if err != nil {
		return err
	}
	current, err := c.ListToolPolicies(ctx, org, ws)
	if err != nil {
		return err
	}
	desired := make([]declfile.Resource, len(specs))
	for i, s := range specs {
		desired[i] = declfile.Resource{Name: s.Name, Doc: s.Doc}
	}
	have := make([]declfile.Resource, len(current))
	for i, p := range current {
		d, err := currentDoc(p)
		if err != nil {
			return err
		}
		have[i] = declfile.Resource{Name: p.Name, Doc: d}
	}
	level := "workspace " + ws
	plan := declfile.PlanResources("tool policy", "tool policies", file, level, desired, have, opts.Prune)
	if err := plan.Render(opts.IO.Out); err != nil {
		return err
	}
	switch {
	case len(plan.Steps) == 0:
		return nil
	case opts.DryRun:
		fmt.Fprintln(opts.IO.ErrOut, "dry run: nothing was changed")
		return nil
	}
	if n := plan.Count(declfile.StepDelete); n > 0 {
		q := fmt.Sprintf("delete %d %s of %s not in %s?", n, declfile.Plural(n, "tool policy", "tool policies"), level, file)
		if err := cmdutil.Confirm(opts.IO, q, opts.Yes); err != nil {
			return err
		}
	}
	for i, st := range plan.Steps {
		switch st.Kind {
		case declfile.StepCreate:
			_, err = c.CreateToolPolicy(ctx, org, ws, specs[st.Desired].Create)
		case declfile.StepUpdate:
			in := specs[st.Desired].Create
			enabled := in.Enabled == nil || *in.Enabled
			_, err = c.UpdateToolPolicy(ctx, org, ws, current[st.Current].ID.String(), wire.ToolPolicyUpdate{Enabled: &enabled, Definition: &in.Definition})
		case declfile.StepDelete:
			_, err = c.DeleteToolPolicy(ctx, org, ws, current[st.Current].ID.String())
		}
		if err != nil {
			return fmt.Errorf("%s tool policy %q: %w (%d of %d changes were applied before it)", st.Kind, st.Name, err, i, len(plan.Steps))
		}
		fmt.Fprintf(opts.IO.Out, "%sd tool policy %s\n", st.Kind, st.Name)
	}
	fmt.Fprintf(opts.IO.ErrOut, "applied %d %s to %s\n", len(plan.Steps), declfile.Plural(len(plan.Steps), "change", "changes"), level)
	return nil
}
