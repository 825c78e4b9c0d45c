package cmdutil

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/client"
)

// ListOptions configure a list command whose only flag is --output.
type ListOptions struct {
	IO     *IOStreams
	Client func() (*client.Client, Settings, error)
	Output Output
}

// NewListCmd builds such a list command: `list`, no arguments, --output
// checked before anything runs.
func NewListCmd(f *Factory, short string, runF, run func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "list",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	AddOutput(cmd, &opts.Output)
	return cmd
}

// IDOptions configure a command acting on one resource named by its id,
// with --output (and --yes when it destroys).
type IDOptions struct {
	IO     *IOStreams
	Client func() (*client.Client, Settings, error)
	ID     string
	Output Output
	Yes    bool
}

// NewIDCmd builds a command taking exactly one id argument.
func NewIDCmd(f *Factory, use, short string, runF, run func(context.Context, *IDOptions) error) *cobra.Command {
	return idCmd(f, use, short, false, runF, run)
}

// NewDestructiveIDCmd is NewIDCmd with --yes, for commands that confirm.
func NewDestructiveIDCmd(f *Factory, use, short string, runF, run func(context.Context, *IDOptions) error) *cobra.Command {
	return idCmd(f, use, short, true, runF, run)
}

func idCmd(f *Factory, use, short string, destructive bool, runF, run func(context.Context, *IDOptions) error) *cobra.Command {
	opts := &IDOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			opts.ID = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	AddOutput(cmd, &opts.Output)
	if destructive {
		AddYesFlag(cmd, &opts.Yes)
	}
	return cmd
}
