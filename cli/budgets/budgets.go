// Package budgets is `gw budgets`: the state of the workspace's budgets
// and create-for-tag, a cost centre's budget.
package budgets

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/budgetstate"
	"github.com/gw-gateway/gw/client"
)

// ListOptions configure gw budgets.
type ListOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
}

// NewCmd builds `gw budgets`, the state of the workspace's budgets.
// The group is its own list (there is nothing else to do with budgets
// here: they are rules of policies); `gw budgets list` says the same for
// those used to the other groups.
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	build := func(use string) *cobra.Command {
		opts := &ListOptions{IO: f.IO, Client: f.AuthedClient}
		cmd := &cobra.Command{
			Use:   use,
			Short: "Show the workspace's budgets: spent, reserved, remaining, and when each runs out",
			Long: `Show the state of the workspace's budgets (budget rules of its policies) in
their current periods, one row per budget, and for a per_key budget one row
per inference key that has used it:

  key        (shared) for a budget the target's keys share; for a per_key
             budget, the key's name, or (each key) before any key used it
  period     day or month (UTC days and months)
  amount     the budget's amount for the period, in USD
  spent      what the period has spent
  forecast   when the budget runs out at the rate of the last 7 days'
             spend: the workspace's for a shared budget, the key's for a
             per_key one. "lasts the period" when the period ends first,
             "—" without spend in those days, "exhausted" when spent has
             reached the amount.

-o wide adds the aggregation, the amount reserved (allowance data planes
hold and have not reported spent), what remains to grant (amount − spent −
reserved) and when the period resets. Piped, the rows carry every column.

The workspace is the context's, or --workspace. -o json and -o yaml give the
API's budget states with a forecast member.`,
			Example: `  gw budgets
  gw budgets -o wide
  gw budgets --workspace research -o json`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				if err := opts.Output.Check(); err != nil {
					return err
				}
				if runF != nil {
					return runF(cmd.Context(), opts)
				}
				return budgetsRun(cmd.Context(), opts)
			},
		}
		cmdutil.AddOutput(cmd, &opts.Output)
		return cmd
	}
	cmd := build("budgets")
	list := build("list")
	list.Short = "Same as gw budgets"
	cmd.AddCommand(list, NewCmdCreateForTag(f, nil))
	return cmd
}

func budgetsRun(ctx context.Context, opts *ListOptions) error {
	c, org, ws, err := cmdutil.WorkspaceClient(opts.Client)
	if err != nil {
		return err
	}
	states, err := c.ListBudgets(ctx, org, ws)
	if err != nil {
		return err
	}
	rows, note := budgetstate.Forecast(ctx, c, org, ws, states, time.Now())
	if note != "" {
		fmt.Fprintln(opts.IO.ErrOut, note)
	}
	for _, r := range states {
		if r.Warning != nil {
			fmt.Fprintf(opts.IO.ErrOut, "warning: policy %q: %s\n", r.PolicyName, *r.Warning)
		}
	}
	names := cmdutil.NewNameBook(c)
	return opts.Output.Print(opts.IO, rows, func() cmdutil.Table {
		t := budgetstate.Table(rows, func(id string) string { return budgetstate.KeyNameOnly(names.InferenceKeyName(ctx, org, ws, id)) }, true)
		t.Empty = "no budgets in workspace " + ws + ": a policy's budget rules make them"
		return t
	})
}
