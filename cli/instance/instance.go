// Package instance is `gw instance`: settings of the whole instance, for
// its owners (the egress address policy: docs/security.md).
package instance

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// NewCmd builds `gw instance`.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "instance", Short: "Settings of the whole instance (instance-scope keys: gw login --instance)"}
	settings := &cobra.Command{Use: "settings", Short: "Show or change the instance-wide settings"}
	settings.AddCommand(NewCmdGet(f, nil), NewCmdUpdate(f, nil))
	cmd.AddCommand(settings)
	return cmd
}

// GetOptions configure gw instance settings get.
type GetOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
}

// NewCmdGet builds `gw instance settings get`.
func NewCmdGet(f *cmdutil.Factory, runF func(context.Context, *GetOptions) error) *cobra.Command {
	opts := &GetOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:     "get",
		Short:   "Show the instance-wide settings: the egress policy and the ranges gw always refuses",
		Example: "  gw instance settings get\n  gw instance settings get -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return getRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	return cmd
}

func getRun(ctx context.Context, opts *GetOptions) error {
	c, _, err := opts.Client()
	if err != nil {
		return err
	}
	s, err := c.GetInstanceSettings(ctx)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, s, func() cmdutil.Table { return settingsTable(s) })
}

// UpdateOptions configure gw instance settings update.
type UpdateOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	// Deny and Allow replace the egress setting's lists; NoEgress empties
	// both.
	Deny, Allow []string
	NoEgress    bool
}

// NewCmdUpdate builds `gw instance settings update`.
func NewCmdUpdate(f *cmdutil.Factory, runF func(context.Context, *UpdateOptions) error) *cobra.Command {
	opts := &UpdateOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "update (--egress-deny CIDR… [--egress-allow CIDR…] | --no-egress)",
		Short: "Replace the egress policy: ranges refused for every URL gw calls, and exceptions",
		Long: `Replace the instance's egress policy, which every URL gw calls is held to when it is
saved and when it is dialled: --egress-deny refuses ranges, --egress-allow makes exceptions to
them and to gw serve --egress-deny-private, and lifts a built-in refusal (cloud metadata,
link-local, unspecified) only when it names that very range. The lists given replace the
setting whole; --no-egress empties it. Instance owners only.`,
		Example: `  gw instance settings update --egress-deny 10.0.0.0/8 --egress-allow 10.1.0.0/16
  gw instance settings update --no-egress`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			given := cmd.Flags().Changed("egress-deny") || cmd.Flags().Changed("egress-allow")
			switch {
			case opts.NoEgress && given:
				return cmdutil.UsageError{Err: errors.New("--no-egress empties the egress policy: it takes no --egress-deny or --egress-allow")}
			case !opts.NoEgress && !given:
				return cmdutil.UsageError{Err: errors.New("nothing to change: pass --egress-deny and --egress-allow (the lists replace the policy), or --no-egress")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return updateRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmd.Flags().StringSliceVar(&opts.Deny, "egress-deny", nil, "a CIDR range or address gw may not call (repeatable, or comma-separated)")
	cmd.Flags().StringSliceVar(&opts.Allow, "egress-allow", nil, "an exception to the denied ranges (repeatable, or comma-separated)")
	cmd.Flags().BoolVar(&opts.NoEgress, "no-egress", false, "empty the egress policy (the built-in refusals stay)")
	return cmd
}

func updateRun(ctx context.Context, opts *UpdateOptions) error {
	c, _, err := opts.Client()
	if err != nil {
		return err
	}
	egress := &wire.EgressSettingUpdate{Deny: opts.Deny, Allow: opts.Allow}
	s, err := c.UpdateInstanceSettings(ctx, wire.InstanceSettingsUpdate{Egress: egress})
	if err != nil {
		return cmdutil.WithFlags(err,
			cmdutil.FlagField{Loc: "body.egress.deny", Flag: "--egress-deny", Want: "CIDR ranges or addresses, e.g. 10.0.0.0/8", Input: true},
			cmdutil.FlagField{Loc: "body.egress.allow", Flag: "--egress-allow", Want: "CIDR ranges or addresses, e.g. 10.1.0.0/16", Input: true})
	}
	return opts.Output.Print(opts.IO, s, func() cmdutil.Table { return settingsTable(s) })
}

// settingsTable shows the settings as field and value rows.
func settingsTable(s wire.InstanceSettings) cmdutil.Table {
	list := func(xs []string) string {
		if len(xs) == 0 {
			return "-"
		}
		return strings.Join(xs, ", ")
	}
	return cmdutil.Table{Headers: []string{"setting", "value"}, Rows: [][]string{
		{"egress deny", list(s.Egress.Deny)},
		{"egress allow", list(s.Egress.Allow)},
		{"always refused", list(s.BuiltinDeny)},
		{"deny private (this server's --egress-deny-private)", strconv.FormatBool(s.EgressDenyPrivate)},
		{"revision", strconv.FormatInt(s.Revision, 10)},
		{"updated", cmdutil.TimeCell(s.UpdatedAt)},
	}}
}
