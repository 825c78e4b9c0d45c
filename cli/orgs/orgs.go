// Package orgs is `gw orgs`: organizations.
package orgs

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// NewCmd builds `gw orgs`.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "orgs", Aliases: []string{"organizations"}, Short: "Manage organizations"}
	cmd.AddCommand(
		NewCmdList(f, nil),
		NewCmdGet(f, nil),
		NewCmdCreate(f, nil),
		NewCmdUpdate(f, nil),
		NewCmdDelete(f, nil),
	)
	return cmd
}

func orgTable(orgs ...wire.Organization) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"id", "slug", "name", "created"}}
	for _, o := range orgs {
		t.Rows = append(t.Rows, []string{o.ID.String(), o.Slug, o.Name, cmdutil.TimeCell(&o.CreatedAt)})
	}
	return t
}

func orgDetail(o wire.Organization) cmdutil.Table {
	return cmdutil.DetailTable("id", o.ID.String(), "slug", o.Slug, "name", o.Name,
		"created_at", cmdutil.TimeCell(&o.CreatedAt), "updated_at", cmdutil.TimeCell(&o.UpdatedAt))
}

// ListOptions configure gw orgs list.
type ListOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	Paging cmdutil.Paging
}

// NewCmdList builds `gw orgs list`.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the organizations you belong to (all of them for instance staff)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := opts.Paging.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return listRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmdutil.AddPagingFlags(cmd, &opts.Paging)
	return cmd
}

func listRun(ctx context.Context, opts *ListOptions) error {
	c, _, err := opts.Client()
	if err != nil {
		return err
	}
	orgs, err := cmdutil.FollowPages(ctx, opts.Paging, opts.IO.ErrOut, func(ctx context.Context, limit int, cursor string) (wire.Page[wire.Organization], error) {
		return c.ListOrganizations(ctx, limit, cursor)
	})
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, orgs, func() cmdutil.Table { return orgTable(orgs...) })
}

// GetOptions configure gw orgs get.
type GetOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	// Org is the argument; empty means the effective organization.
	Org string
}

// NewCmdGet builds `gw orgs get`.
func NewCmdGet(f *cmdutil.Factory, runF func(context.Context, *GetOptions) error) *cobra.Command {
	opts := &GetOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "get [ORG]",
		Short: "Show an organization (default: the current one)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if len(args) == 1 {
				opts.Org = args[0]
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

// orgArg is the organization a command names, or the effective one.
func orgArg(s cmdutil.Settings, given string) (string, error) {
	if given != "" {
		return given, nil
	}
	return s.RequireOrg()
}

func getRun(ctx context.Context, opts *GetOptions) error {
	c, s, err := opts.Client()
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
	return opts.Output.Print(opts.IO, o, func() cmdutil.Table { return orgDetail(o) })
}

// CreateOptions configure gw orgs create.
type CreateOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	Name   string
	Slug   string
}

// NewCmdCreate builds `gw orgs create`.
func NewCmdCreate(f *cmdutil.Factory, runF func(context.Context, *CreateOptions) error) *cobra.Command {
	opts := &CreateOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "create --name NAME [--slug SLUG]",
		Short: "Create an organization (needs organizations.create at instance scope)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := cmdutil.RequireFlags(cmd.Flags(), "name"); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return createRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmd.Flags().StringVar(&opts.Name, "name", "", "display name (1 to 100 characters)")
	cmd.Flags().StringVar(&opts.Slug, "slug", "", "URL name, lowercase letters, digits and dashes (default: derived from the name)")
	return cmd
}

func createRun(ctx context.Context, opts *CreateOptions) error {
	c, _, err := opts.Client()
	if err != nil {
		return err
	}
	o, err := c.CreateOrganization(ctx, wire.OrganizationCreate{Name: opts.Name, Slug: opts.Slug})
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, o, func() cmdutil.Table { return orgDetail(o) })
}

// UpdateOptions configure gw orgs update.
type UpdateOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	Org    string
	Name   *string
	Slug   *string
}

// NewCmdUpdate builds `gw orgs update`.
func NewCmdUpdate(f *cmdutil.Factory, runF func(context.Context, *UpdateOptions) error) *cobra.Command {
	opts := &UpdateOptions{IO: f.IO, Client: f.AuthedClient}
	var rename cmdutil.RenameFlags
	cmd := &cobra.Command{
		Use:   "update [ORG] [--name NAME] [--slug SLUG]",
		Short: "Rename an organization or change its slug (default: the current one)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
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
			return updateRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	rename.Add(cmd)
	return cmd
}

func updateRun(ctx context.Context, opts *UpdateOptions) error {
	c, s, err := opts.Client()
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
	return opts.Output.Print(opts.IO, o, func() cmdutil.Table { return orgDetail(o) })
}

// DeleteOptions configure gw orgs delete.
type DeleteOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	Org    string
	Yes    bool
}

// NewCmdDelete builds `gw orgs delete`.
func NewCmdDelete(f *cmdutil.Factory, runF func(context.Context, *DeleteOptions) error) *cobra.Command {
	opts := &DeleteOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "delete ORG",
		Short: "Delete an organization with its workspaces, members, keys and credentials",
		// The organization is never taken from the context here: deleting
		// whatever happens to be current is too easy a mistake.
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			opts.Org = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return deleteRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmdutil.AddYesFlag(cmd, &opts.Yes)
	return cmd
}

func deleteRun(ctx context.Context, opts *DeleteOptions) error {
	c, _, err := opts.Client()
	if err != nil {
		return err
	}
	if err := cmdutil.Confirm(opts.IO, fmt.Sprintf("Delete organization %s with all its workspaces, keys and credentials?", opts.Org), opts.Yes); err != nil {
		return err
	}
	d, err := c.DeleteOrganization(ctx, opts.Org)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, d, func() cmdutil.Table { return cmdutil.DeletedTable(d) })
}
