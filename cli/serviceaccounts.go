package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/wire"
)

// NewCmdServiceAccounts builds `gw service-accounts`.
func NewCmdServiceAccounts(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "service-accounts", Aliases: []string{"sa"}, Short: "Manage an organization's service accounts (machine principals)"}
	cmd.AddCommand(
		NewCmdServiceAccountsList(f, nil),
		NewCmdServiceAccountsGet(f, nil),
		NewCmdServiceAccountsCreate(f, nil),
		NewCmdServiceAccountsDelete(f, nil),
	)
	return cmd
}

func serviceAccountTable(us ...wire.User) Table {
	t := Table{Headers: []string{"id", "name", "email", "created"}}
	for _, u := range us {
		t.Rows = append(t.Rows, []string{u.ID.String(), u.Name, u.Email, timeCell(&u.CreatedAt)})
	}
	return t
}

func serviceAccountDetail(u wire.User) Table {
	orgs := make([]string, len(u.Orgs))
	for i, o := range u.Orgs {
		orgs[i] = o.String()
	}
	return detailTable("id", u.ID.String(), "name", u.Name, "email", u.Email, "managing_org_id", uuidCell(u.ManagingOrgID),
		"orgs", orDash(strings.Join(orgs, ",")), "created_at", timeCell(&u.CreatedAt), "updated_at", timeCell(&u.UpdatedAt))
}

// ServiceAccountsListOptions configure gw service-accounts list.
type ServiceAccountsListOptions = ListOptions

// NewCmdServiceAccountsList builds `gw service-accounts list`.
func NewCmdServiceAccountsList(f *Factory, runF func(context.Context, *ServiceAccountsListOptions) error) *cobra.Command {
	return newListCmd(f, "List the organization's service accounts", runF, serviceAccountsListRun)
}

func serviceAccountsListRun(ctx context.Context, opts *ServiceAccountsListOptions) error {
	c, s, err := opts.f.AuthedClient()
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
	return opts.f.Print(opts.Output, us, func() Table { return serviceAccountTable(us...) })
}

// ServiceAccountsGetOptions configure gw service-accounts get.
type ServiceAccountsGetOptions = IDOptions

// NewCmdServiceAccountsGet builds `gw service-accounts get`.
func NewCmdServiceAccountsGet(f *Factory, runF func(context.Context, *ServiceAccountsGetOptions) error) *cobra.Command {
	return newIDCmd(f, "get ACCOUNT", "Show a service account (ACCOUNT: id, name or email)", runF, serviceAccountsGetRun)
}

func serviceAccountsGetRun(ctx context.Context, opts *ServiceAccountsGetOptions) error {
	c, s, err := opts.f.AuthedClient()
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
	return opts.f.Print(opts.Output, u, func() Table { return serviceAccountDetail(u) })
}

// ServiceAccountsCreateOptions configure gw service-accounts create.
type ServiceAccountsCreateOptions struct {
	f           *Factory
	Output      string
	Name        string
	Permissions []string
	Label       string
	ExpiresAt   *time.Time
}

// NewCmdServiceAccountsCreate builds `gw service-accounts create`.
func NewCmdServiceAccountsCreate(f *Factory, runF func(context.Context, *ServiceAccountsCreateOptions) error) *cobra.Command {
	opts := &ServiceAccountsCreateOptions{f: f}
	var perms []string
	var expiry expiryFlags
	cmd := &cobra.Command{
		Use:   "create --name NAME --permissions P1,P2 [--label LABEL]",
		Short: "Create a service account with its first management key; prints the key once",
		Long: `Create a service account in the organization together with its first
management key, an organization-scope key carrying --permissions (no more
than your own credential holds). The key's token is printed once, on stdout.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			if err := requireFlags(cmd.Flags(), "name", "permissions"); err != nil {
				return err
			}
			var err error
			if opts.ExpiresAt, err = expiry.Resolve(time.Now()); err != nil {
				return err
			}
			if opts.Permissions, err = permissionList(perms); err != nil {
				return err
			}
			if opts.Label == "" {
				opts.Label = truncateRunes(opts.Name, 80)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return serviceAccountsCreateRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	cmd.Flags().StringVar(&opts.Name, "name", "", "the service account's name (1 to 100 characters)")
	cmd.Flags().StringSliceVar(&perms, "permissions", nil, "comma-separated permissions of its key (see docs/permissions.md)")
	cmd.Flags().StringVar(&opts.Label, "label", "", "where the key will live, e.g. ci (default: the name)")
	addExpiryFlags(cmd, &expiry)
	return cmd
}

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

func serviceAccountsCreateRun(ctx context.Context, opts *ServiceAccountsCreateOptions) error {
	c, s, err := opts.f.AuthedClient()
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
	if opts.Output == OutputTable {
		fmt.Fprintf(opts.f.IO.ErrOut, "Created service account %s (%s) with management key %s (%s).\n",
			b.ServiceAccount.Name, b.ServiceAccount.ID, b.ManagementKey.ID, b.ManagementKey.Prefix)
	}
	return printOnce(opts.f, opts.Output, "service account's management key", b.ManagementKey.Token, b,
		func() Table { return serviceAccountDetail(b.ServiceAccount) })
}

// ServiceAccountsDeleteOptions configure gw service-accounts delete.
type ServiceAccountsDeleteOptions = IDOptions

// NewCmdServiceAccountsDelete builds `gw service-accounts delete`.
func NewCmdServiceAccountsDelete(f *Factory, runF func(context.Context, *ServiceAccountsDeleteOptions) error) *cobra.Command {
	return newDestructiveIDCmd(f, "delete ACCOUNT", "Delete a service account (id, name or email) and revoke its keys", runF, serviceAccountsDeleteRun)
}

func serviceAccountsDeleteRun(ctx context.Context, opts *ServiceAccountsDeleteOptions) error {
	c, s, err := opts.f.AuthedClient()
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
	if err := opts.f.Confirm(fmt.Sprintf("Delete service account %s (%s) and revoke its keys?", opts.ID, id), opts.Yes); err != nil {
		return err
	}
	d, err := c.DeleteServiceAccount(ctx, org, id)
	if err != nil {
		return err
	}
	return opts.f.Print(opts.Output, d, func() Table { return deletedTable(d) })
}
