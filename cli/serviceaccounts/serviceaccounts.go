// Package serviceaccounts is `gw service-accounts`: non-human principals and their keys.
package serviceaccounts

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// NewCmd builds `gw service-accounts`.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "service-accounts", Aliases: []string{"sa"}, Short: "Manage an organization's service accounts (machine principals)"}
	cmd.AddCommand(
		NewCmdList(f, nil),
		NewCmdGet(f, nil),
		NewCmdCreate(f, nil),
		NewCmdDelete(f, nil),
	)
	return cmd
}

func serviceAccountTable(us ...wire.User) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"id", "name", "email", "created"}}
	for _, u := range us {
		t.Rows = append(t.Rows, []string{u.ID.String(), u.Name, u.Email, cmdutil.TimeCell(&u.CreatedAt)})
	}
	return t
}

func serviceAccountDetail(u wire.User) cmdutil.Table {
	orgs := make([]string, len(u.Orgs))
	for i, o := range u.Orgs {
		orgs[i] = o.String()
	}
	return cmdutil.DetailTable("id", u.ID.String(), "name", u.Name, "email", u.Email, "managing_org_id", cmdutil.UUIDCell(u.ManagingOrgID),
		"orgs", cmdutil.OrDash(strings.Join(orgs, ",")), "created_at", cmdutil.TimeCell(&u.CreatedAt), "updated_at", cmdutil.TimeCell(&u.UpdatedAt))
}

// ListOptions configure gw service-accounts list.
type ListOptions = cmdutil.ListOptions

// NewCmdList builds `gw service-accounts list`.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	return cmdutil.NewListCmd(f, "List the organization's service accounts", runF, listRun)
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
	us, err := c.ListServiceAccounts(ctx, org)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, us, func() cmdutil.Table { return serviceAccountTable(us...) })
}

// GetOptions configure gw service-accounts get.
type GetOptions = cmdutil.IDOptions

// NewCmdGet builds `gw service-accounts get`.
func NewCmdGet(f *cmdutil.Factory, runF func(context.Context, *GetOptions) error) *cobra.Command {
	return cmdutil.NewIDCmd(f, "get ACCOUNT", "Show a service account (ACCOUNT: id, name or email)", runF, getRun)
}

func getRun(ctx context.Context, opts *GetOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, err := s.RequireOrg()
	if err != nil {
		return err
	}
	id, err := resolveServiceAccount(ctx, c, org, opts.ID)
	if err != nil {
		return err
	}
	u, err := c.GetServiceAccount(ctx, org, id)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, u, func() cmdutil.Table { return serviceAccountDetail(u) })
}

// CreateOptions configure gw service-accounts create.
type CreateOptions struct {
	IO          *cmdutil.IOStreams
	Client      func() (*client.Client, cmdutil.Settings, error)
	Output      cmdutil.Output
	Name        string
	Permissions []string
	Label       string
	ExpiresAt   *time.Time
}

// NewCmdCreate builds `gw service-accounts create`.
func NewCmdCreate(f *cmdutil.Factory, runF func(context.Context, *CreateOptions) error) *cobra.Command {
	opts := &CreateOptions{IO: f.IO, Client: f.AuthedClient}
	var perms []string
	var expiry cmdutil.ExpiryFlags
	cmd := &cobra.Command{
		Use:   "create --name NAME --permissions P1,P2 [--label LABEL]",
		Short: "Create a service account with its first management key; prints the key once",
		Long: `Create a service account in the organization together with its first
management key, an organization-scope key carrying --permissions (no more
than your own credential holds). The key's token is printed once, on stdout.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := cmdutil.RequireFlags(cmd.Flags(), "name", "permissions"); err != nil {
				return err
			}
			var err error
			if opts.ExpiresAt, err = expiry.Resolve(time.Now()); err != nil {
				return err
			}
			if opts.Permissions, err = cmdutil.PermissionList(perms); err != nil {
				return err
			}
			if opts.Label == "" {
				opts.Label = truncateRunes(opts.Name, 80)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return createRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmd.Flags().StringVar(&opts.Name, "name", "", "the service account's name (1 to 100 characters)")
	cmd.Flags().StringSliceVar(&perms, "permissions", nil, "comma-separated permissions of its key (see docs/permissions.md)")
	cmd.Flags().StringVar(&opts.Label, "label", "", "where the key will live, e.g. ci (default: the name)")
	cmdutil.AddExpiryFlags(cmd, &expiry)
	return cmd
}

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
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
	b, err := c.CreateServiceAccount(ctx, org, wire.ServiceAccountCreate{Name: opts.Name,
		ManagementKey: wire.ManagementKeyCreate{Permissions: opts.Permissions, Label: opts.Label, ExpiresAt: opts.ExpiresAt}})
	if err != nil {
		return err
	}
	if opts.Output.Format == cmdutil.OutputTable {
		fmt.Fprintf(opts.IO.ErrOut, "Created service account %s (%s) with management key %s (%s).\n",
			b.ServiceAccount.Name, b.ServiceAccount.ID, b.ManagementKey.ID, b.ManagementKey.Prefix)
	}
	return opts.Output.PrintOnce(opts.IO, "service account's management key", b.ManagementKey.Token, b,
		func() cmdutil.Table { return serviceAccountDetail(b.ServiceAccount) })
}

// DeleteOptions configure gw service-accounts delete.
type DeleteOptions = cmdutil.IDOptions

// NewCmdDelete builds `gw service-accounts delete`.
func NewCmdDelete(f *cmdutil.Factory, runF func(context.Context, *DeleteOptions) error) *cobra.Command {
	return cmdutil.NewDestructiveIDCmd(f, "delete ACCOUNT", "Delete a service account (id, name or email) and revoke its keys", runF, deleteRun)
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
	id, err := resolveServiceAccount(ctx, c, org, opts.ID)
	if err != nil {
		return err
	}
	if err := cmdutil.Confirm(opts.IO, fmt.Sprintf("Delete service account %s (%s) and revoke its keys?", opts.ID, id), opts.Yes); err != nil {
		return err
	}
	d, err := c.DeleteServiceAccount(ctx, org, id)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, d, func() cmdutil.Table { return cmdutil.DeletedTable(d) })
}
