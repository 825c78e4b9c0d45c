package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

// ListOptions configure a list command whose only flag is --output.
type ListOptions struct {
	f      *Factory
	Output string
}

// newListCmd builds such a list command: `list`, no arguments, --output
// checked before anything runs.
func newListCmd(f *Factory, short string, runF, run func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{f: f}
	cmd := &cobra.Command{
		Use:   "list",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	return cmd
}

// IDOptions configure a command acting on one resource named by its id,
// with --output (and --yes when it destroys).
type IDOptions struct {
	f      *Factory
	ID     string
	Output string
	Yes    bool
}

// newIDCmd builds a command taking exactly one id argument.
func newIDCmd(f *Factory, use, short string, runF, run func(context.Context, *IDOptions) error) *cobra.Command {
	return idCmd(f, use, short, false, runF, run)
}

// newDestructiveIDCmd is newIDCmd with --yes, for commands that confirm.
func newDestructiveIDCmd(f *Factory, use, short string, runF, run func(context.Context, *IDOptions) error) *cobra.Command {
	return idCmd(f, use, short, true, runF, run)
}

func idCmd(f *Factory, use, short string, destructive bool, runF, run func(context.Context, *IDOptions) error) *cobra.Command {
	opts := &IDOptions{f: f}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			opts.ID = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	if destructive {
		addYesFlag(cmd, &opts.Yes)
	}
	return cmd
}

// printOnce shows a secret that the server returns only in this response:
// the secret alone on stdout (so `TOKEN=$(gw … create)` works), the warning
// on stderr. In json or yaml the whole object, secret included, is the data.
func printOnce(f *Factory, format, what, secret string, data any, table func() Table) error {
	fmt.Fprintf(f.IO.ErrOut, "The %s is shown only once; store it now, it cannot be read back.\n", what)
	if format != OutputTable {
		return f.Print(format, data, table)
	}
	_, err := fmt.Fprintln(f.IO.Out, secret)
	return err
}
