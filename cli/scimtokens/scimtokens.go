// Package scimtokens is `gw scim-tokens`: the tokens an organization's
// identity provider (Okta, Microsoft Entra ID) provisions people with
// over SCIM 2.0 (docs/identity.md).
package scimtokens

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// NewCmd builds `gw scim-tokens`.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "scim-tokens", Short: "Manage an organization's SCIM tokens (provisioning from Okta or Microsoft Entra ID)"}
	cmd.AddCommand(NewCmdList(f, nil), NewCmdCreate(f, nil), NewCmdDelete(f, nil))
	return cmd
}

func tokenTable(ts ...wire.SCIMToken) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"id", "label", "prefix", "created", "last used"}}
	for _, k := range ts {
		t.Rows = append(t.Rows, []string{k.ID.String(), k.Label, k.Prefix, cmdutil.TimeCell(&k.CreatedAt), cmdutil.TimeCell(k.LastUsedAt)})
	}
	return t
}

// ListOptions configure gw scim-tokens list.
type ListOptions = cmdutil.ListOptions

// NewCmdList builds `gw scim-tokens list`.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	cmd := cmdutil.NewListCmd(f, "List the organization's SCIM tokens (never their secrets)", runF, listRun)
	cmd.Example = "  gw scim-tokens list\n  gw scim-tokens list --org acme -o json"
	return cmd
}

func listRun(ctx context.Context, opts *ListOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, err := s.RequireOrg()
	if err != nil {
		return err
	}
	ts, err := c.ListSCIMTokens(ctx, org)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, ts, func() cmdutil.Table { return tokenTable(ts...) })
}

// CreateOptions configure gw scim-tokens create.
type CreateOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	Label  string
}

// NewCmdCreate builds `gw scim-tokens create`.
func NewCmdCreate(f *cmdutil.Factory, runF func(context.Context, *CreateOptions) error) *cobra.Command {
	opts := &CreateOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "create --label LABEL",
		Short: "Create a SCIM token; prints the secret once",
		Long: `Create a SCIM token for the organization's identity provider. The secret
is printed once, on stdout; the SCIM base URL to give the provider is
printed on stderr (docs/identity.md says how to set up Okta and Entra).`,
		Example: "  gw scim-tokens create --label okta\n  gw scim-tokens create --label entra --org acme -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := cmdutil.RequireFlags(cmd.Flags(), "label"); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return createRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmd.Flags().StringVar(&opts.Label, "label", "", "which provisioning client holds it, e.g. okta (1 to 80 characters)")
	return cmd
}

func createRun(ctx context.Context, opts *CreateOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, err := s.RequireOrg()
	if err != nil {
		return err
	}
	t, err := c.CreateSCIMToken(ctx, org, wire.SCIMTokenCreate{Label: opts.Label})
	if err != nil {
		return err
	}
	if opts.Output.Format == cmdutil.OutputTable {
		fmt.Fprintf(opts.IO.ErrOut, "Created SCIM token %s (%s). SCIM base URL: %s\n", t.ID, t.Prefix, t.SCIMURL)
	}
	return opts.Output.PrintOnce(opts.IO, "SCIM token", t.Token, t, func() cmdutil.Table { return tokenTable(t) })
}

// DeleteOptions configure gw scim-tokens delete.
type DeleteOptions = cmdutil.IDOptions

// NewCmdDelete builds `gw scim-tokens delete`.
func NewCmdDelete(f *cmdutil.Factory, runF func(context.Context, *DeleteOptions) error) *cobra.Command {
	cmd := cmdutil.NewDestructiveIDCmd(f, "delete ID", "Delete a SCIM token: its provisioning client is refused from then on", runF, deleteRun)
	cmd.Example = "  gw scim-tokens delete 0b9c5f5e-1111-4222-8333-444455556666 --yes"
	return cmd
}

func deleteRun(ctx context.Context, opts *DeleteOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, err := s.RequireOrg()
	if err != nil {
		return err
	}
	if err := cmdutil.Confirm(opts.IO, fmt.Sprintf("Delete SCIM token %s? Its provisioning client will be refused.", opts.ID), opts.Yes); err != nil {
		return err
	}
	d, err := c.DeleteSCIMToken(ctx, org, opts.ID)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, d, func() cmdutil.Table { return cmdutil.DeletedTable(d) })
}
