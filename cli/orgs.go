package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/wire"
)

// NewCmdOrgs builds `gw orgs`.
func NewCmdOrgs(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "orgs", Aliases: []string{"organizations"}, Short: "Manage organizations"}
	cmd.AddCommand(
		NewCmdOrgsList(f, nil),
		NewCmdOrgsGet(f, nil),
		NewCmdOrgsCreate(f, nil),
		NewCmdOrgsUpdate(f, nil),
		NewCmdOrgsDelete(f, nil),
	)
	return cmd
}

func orgTable(orgs ...wire.Organization) Table {
	t := Table{Headers: []string{"id", "slug", "name", "created"}}
	for _, o := range orgs {
		t.Rows = append(t.Rows, []string{o.ID.String(), o.Slug, o.Name, timeCell(&o.CreatedAt)})
	}
	return t
}

func orgDetail(o wire.Organization) Table {
	return detailTable("id", o.ID.String(), "slug", o.Slug, "name", o.Name,
		"created_at", timeCell(&o.CreatedAt), "updated_at", timeCell(&o.UpdatedAt))
}

// OrgsListOptions configure gw orgs list.
type OrgsListOptions struct {
	f      *Factory
	Output string
	Paging resourcePaging
}

// NewCmdOrgsList builds `gw orgs list`.
func NewCmdOrgsList(f *Factory, runF func(context.Context, *OrgsListOptions) error) *cobra.Command {
	opts := &OrgsListOptions{f: f}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the organizations you belong to (all of them for instance staff)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			if err := opts.Paging.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return orgsListRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	addPagingFlags(cmd, &opts.Paging)
	return cmd
}

func orgsListRun(ctx context.Context, opts *OrgsListOptions) error {
	c, _, err := opts.f.AuthedClient()
	if err != nil {
		return err
	}
	orgs, err := followPages(ctx, opts.Paging, opts.f.IO.ErrOut, func(ctx context.Context, limit int, cursor string) (wire.Page[wire.Organization], error) {
		return c.ListOrganizations(ctx, limit, cursor)
	})
	if err != nil {
		return err
	}
	return opts.f.Print(opts.Output, orgs, func() Table { return orgTable(orgs...) })
}

// OrgsGetOptions configure gw orgs get.
type OrgsGetOptions struct {
	f      *Factory
	Output string
	// Org is the argument; empty means the effective organization.
	Org string
}

// NewCmdOrgsGet builds `gw orgs get`.
func NewCmdOrgsGet(f *Factory, runF func(context.Context, *OrgsGetOptions) error) *cobra.Command {
	opts := &OrgsGetOptions{f: f}
	cmd := &cobra.Command{
		Use:   "get [ORG]",
		Short: "Show an organization (default: the current one)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			if len(args) == 1 {
				opts.Org = args[0]
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return orgsGetRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	return cmd
}

// orgArg is the organization a command names, or the effective one.
func orgArg(s Settings, given string) (string, error) {
	if given != "" {
		return given, nil
	}
	return s.RequireOrg()
}

func orgsGetRun(ctx context.Context, opts *OrgsGetOptions) error {
	c, s, err := opts.f.AuthedClient()
	if err != nil {
		return err
	}
	org, err := orgArg(s, opts.Org)
	if err != nil {
		return err
	}
	o, err := c.GetOrganization(ctx, org)
	if err != nil {
		return err
	}
	return opts.f.Print(opts.Output, o, func() Table { return orgDetail(o) })
}

// OrgsCreateOptions configure gw orgs create.
type OrgsCreateOptions struct {
	f      *Factory
	Output string
	Name   string
	Slug   string
}

// NewCmdOrgsCreate builds `gw orgs create`.
func NewCmdOrgsCreate(f *Factory, runF func(context.Context, *OrgsCreateOptions) error) *cobra.Command {
	opts := &OrgsCreateOptions{f: f}
	cmd := &cobra.Command{
		Use:   "create --name NAME [--slug SLUG]",
		Short: "Create an organization (needs organizations.create at instance scope)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			if err := requireFlags(cmd.Flags(), "name"); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return orgsCreateRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	cmd.Flags().StringVar(&opts.Name, "name", "", "display name (1 to 100 characters)")
	cmd.Flags().StringVar(&opts.Slug, "slug", "", "URL name, lowercase letters, digits and dashes (default: derived from the name)")
	return cmd
}

func orgsCreateRun(ctx context.Context, opts *OrgsCreateOptions) error {
	c, _, err := opts.f.AuthedClient()
	if err != nil {
		return err
	}
	o, err := c.CreateOrganization(ctx, wire.OrganizationCreate{Name: opts.Name, Slug: opts.Slug})
	if err != nil {
		return err
	}
	return opts.f.Print(opts.Output, o, func() Table { return orgDetail(o) })
}

// OrgsUpdateOptions configure gw orgs update.
type OrgsUpdateOptions struct {
	f      *Factory
	Output string
	Org    string
	Name   *string
	Slug   *string
}

// NewCmdOrgsUpdate builds `gw orgs update`.
func NewCmdOrgsUpdate(f *Factory, runF func(context.Context, *OrgsUpdateOptions) error) *cobra.Command {
	opts := &OrgsUpdateOptions{f: f}
	var rename renameFlags
	cmd := &cobra.Command{
		Use:   "update [ORG] [--name NAME] [--slug SLUG]",
		Short: "Rename an organization or change its slug (default: the current one)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			if len(args) == 1 {
				opts.Org = args[0]
			}
			var err error
			if opts.Name, opts.Slug, err = rename.Read(cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return orgsUpdateRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	rename.Add(cmd)
	return cmd
}

func orgsUpdateRun(ctx context.Context, opts *OrgsUpdateOptions) error {
	c, s, err := opts.f.AuthedClient()
	if err != nil {
		return err
	}
	org, err := orgArg(s, opts.Org)
	if err != nil {
		return err
	}
	o, err := c.UpdateOrganization(ctx, org, wire.OrganizationUpdate{Name: opts.Name, Slug: opts.Slug})
	if err != nil {
		return err
	}
	return opts.f.Print(opts.Output, o, func() Table { return orgDetail(o) })
}

// OrgsDeleteOptions configure gw orgs delete.
type OrgsDeleteOptions struct {
	f      *Factory
	Output string
	Org    string
	Yes    bool
}

// NewCmdOrgsDelete builds `gw orgs delete`.
func NewCmdOrgsDelete(f *Factory, runF func(context.Context, *OrgsDeleteOptions) error) *cobra.Command {
	opts := &OrgsDeleteOptions{f: f}
	cmd := &cobra.Command{
		Use:   "delete ORG",
		Short: "Delete an organization with its workspaces, members, keys and credentials",
		// The organization is never taken from the context here: deleting
		// whatever happens to be current is too easy a mistake.
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			opts.Org = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return orgsDeleteRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	addYesFlag(cmd, &opts.Yes)
	return cmd
}

func orgsDeleteRun(ctx context.Context, opts *OrgsDeleteOptions) error {
	c, _, err := opts.f.AuthedClient()
	if err != nil {
		return err
	}
	if err := opts.f.Confirm(fmt.Sprintf("Delete organization %s with all its workspaces, keys and credentials?", opts.Org), opts.Yes); err != nil {
		return err
	}
	d, err := c.DeleteOrganization(ctx, opts.Org)
	if err != nil {
		return err
	}
	return opts.f.Print(opts.Output, d, func() Table { return deletedTable(d) })
}
