// Package toolpolicies is `gw tool-policies`: a workspace's rules over
// which MCP tools each key may list and call (docs/mcp.md). They are a
// sibling of `gw policies`, not a kind in its files: the policy file's
// schema is the spec's, closed.
package toolpolicies

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
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
	Output cmdutil.Output
	File   string
}

// File is what a tool policy file holds: the policies of one workspace,
// each created or, when one of its name exists, replaced.
type File struct {
	ToolPolicies []wire.ToolPolicyCreate `json:"tool_policies"`
}

// NewCmdApply builds `gw tool-policies apply`.
func NewCmdApply(f *cmdutil.Factory, runF func(context.Context, *ApplyOptions) error) *cobra.Command {
	opts := &ApplyOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Create or replace the tool policies a JSON file lists, by name",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := cmdutil.RequireFlags(cmd.Flags(), "file"); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return applyRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmd.Flags().StringVarP(&opts.File, "file", "f", "", `a JSON file: {"tool_policies": [{"name", "enabled", "definition": {"target", "rules"}}]}`)
	return cmd
}

// readFile reads and decodes a tool policy file strictly: a member it
// does not know is an error, here and again on the server.
func readFile(path string) (File, error) {
	var f File
	raw, err := os.ReadFile(path)
	if err != nil {
		return f, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return f, fmt.Errorf("%s: %w", path, err)
	}
	if len(f.ToolPolicies) == 0 {
		return f, fmt.Errorf("%s lists no tool_policies", path)
	}
	return f, nil
}

func applyRun(ctx context.Context, opts *ApplyOptions) error {
	file, err := readFile(opts.File)
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
	existing, err := c.ListToolPolicies(ctx, org, ws)
	if err != nil {
		return err
	}
	byName := map[string]wire.ToolPolicy{}
	for _, p := range existing {
		byName[p.Name] = p
	}
	var out []wire.ToolPolicy
	for _, in := range file.ToolPolicies {
		var p wire.ToolPolicy
		if old, ok := byName[in.Name]; ok {
			def := in.Definition
			p, err = c.UpdateToolPolicy(ctx, org, ws, old.ID.String(), wire.ToolPolicyUpdate{Enabled: in.Enabled, Definition: &def})
		} else {
			p, err = c.CreateToolPolicy(ctx, org, ws, in)
		}
		if err != nil {
			return fmt.Errorf("tool policy %q: %w", in.Name, err)
		}
		out = append(out, p)
	}
	return opts.Output.Print(opts.IO, out, func() cmdutil.Table { return table(out...) })
}
