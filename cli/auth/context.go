package auth

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/config"
)

// ContextOptions configure the gw context subcommands.
type ContextOptions struct {
	IO     *cmdutil.IOStreams
	Config func() (*config.File, error)
	Output cmdutil.Output
	// Name is the context a use or delete acts on.
	Name string
}

// contextView is a context as listed: never its token, which stays in the
// 0600 file.
type contextView struct {
	Name      string `json:"name"`
	Current   bool   `json:"current"`
	Server    string `json:"server"`
	Org       string `json:"org"`
	Workspace string `json:"workspace"`
	KeyID     string `json:"key_id"`
	LoggedIn  bool   `json:"logged_in"`
	// The names login stored, which the table shows instead of ids.
	orgName, workspaceName string
}

// NewCmdContext builds `gw context`.
func NewCmdContext(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "context",
		Short: "List, switch and delete configuration contexts",
		Long: `A context is a server with a management key and a default organization and
workspace, stored in $XDG_CONFIG_HOME/gw/config.yaml. gw login creates or
updates one and makes it current; commands use the current one unless
--context (or GW_CONTEXT) names another.`,
	}
	cmd.AddCommand(NewCmdContextList(f, nil), NewCmdContextUse(f, nil), NewCmdContextDelete(f, nil))
	return cmd
}

func newContextOptions(f *cmdutil.Factory) *ContextOptions {
	return &ContextOptions{IO: f.IO, Config: f.Config}
}

// completeContextNames offers the stored context names for NAME.
func completeContextNames(f *cmdutil.Factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		cfg, err := f.Config()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return cfg.Names(), cobra.ShellCompDirectiveNoFileComp
	}
}

// NewCmdContextList builds `gw context list`.
func NewCmdContextList(f *cmdutil.Factory, runF func(context.Context, *ContextOptions) error) *cobra.Command {
	opts := newContextOptions(f)
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List contexts; the current one is marked",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return contextListRun(opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	return cmd
}

func contextListRun(opts *ContextOptions) error {
	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	views := []contextView{}
	for _, n := range cfg.Names() {
		c := cfg.Contexts[n]
		views = append(views, contextView{Name: n, Current: n == cfg.CurrentContext, Server: c.Server, Org: c.Org,
			Workspace: c.Workspace, KeyID: c.KeyID, LoggedIn: c.Token != "", orgName: c.OrgName, workspaceName: c.WorkspaceName})
	}
	if len(views) == 0 && opts.Output.Format == cmdutil.OutputTable {
		fmt.Fprintln(opts.IO.ErrOut, "No contexts yet: run gw login --server URL.")
		return nil
	}
	return opts.Output.Print(opts.IO, views, func() cmdutil.Table {
		t := cmdutil.Table{Headers: []string{"current", "name", "server", "org", "workspace", "logged in"}}
		for _, v := range views {
			cur, in := "", "no"
			if v.Current {
				cur = "*"
			}
			if v.LoggedIn {
				in = "yes"
			}
			org, ws := orOther(v.orgName, v.Org), orOther(v.workspaceName, v.Workspace)
			if v.Org == "" && v.LoggedIn {
				org = "(instance)"
			}
			t.Rows = append(t.Rows, []string{cur, v.Name, v.Server, dashIfEmpty(org), dashIfEmpty(ws), in})
		}
		return t
	})
}

// orOther is name, else id.
func orOther(name, id string) string {
	if name != "" {
		return name
	}
	return id
}

// dashIfEmpty keeps empty table cells visible, so columns stay aligned for
// awk when piped.
func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// NewCmdContextUse builds `gw context use NAME`.
func NewCmdContextUse(f *cmdutil.Factory, runF func(context.Context, *ContextOptions) error) *cobra.Command {
	opts := newContextOptions(f)
	return &cobra.Command{
		Use:               "use NAME",
		Short:             "Make a context the current one",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeContextNames(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return contextUseRun(opts)
		},
	}
}

func contextUseRun(opts *ContextOptions) error {
	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	if err := cfg.Use(opts.Name); err != nil {
		return cmdutil.UsageError{Err: err}
	}
	if err := cfg.Save(); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "Switched to context %q (%s).\n", opts.Name, cfg.Contexts[opts.Name].Server)
	return nil
}

// NewCmdContextDelete builds `gw context delete NAME`.
func NewCmdContextDelete(f *cmdutil.Factory, runF func(context.Context, *ContextOptions) error) *cobra.Command {
	opts := newContextOptions(f)
	return &cobra.Command{
		Use:     "delete NAME",
		Aliases: []string{"rm"},
		Short:   "Delete a context from the configuration file (its key is not revoked; see gw logout)",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return contextDeleteRun(opts)
		},
		ValidArgsFunction: completeContextNames(f),
	}
}

func contextDeleteRun(opts *ContextOptions) error {
	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	entry := cfg.Contexts[opts.Name]
	if err := cfg.Delete(opts.Name); err != nil {
		return cmdutil.UsageError{Err: err}
	}
	if err := cfg.Save(); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "Deleted context %q.\n", opts.Name)
	if entry.Token != "" {
		// Deleting only forgets: say so, cmdutil.Since the key may still be used by
		// anyone who has a copy.
		fmt.Fprintf(opts.IO.ErrOut, "Its key %s was not revoked and stays valid on %s; gw logout --context NAME revokes a key before deleting.\n",
			entry.KeyID, entry.Server)
	}
	if cfg.CurrentContext == "" && len(cfg.Contexts) > 0 {
		fmt.Fprintln(opts.IO.ErrOut, "No context is current now; pick one with gw context use NAME.")
	}
	return nil
}
