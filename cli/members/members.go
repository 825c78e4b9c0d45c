// Package members is `gw members`: the members of an organization.
package members

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/wire"
)

// NewCmd builds `gw members`, the organization's members.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "members", Short: "Manage the members of an organization"}
	cmd.AddCommand(
		NewCmdList(f, nil),
		NewCmdAdd(f, nil),
		NewCmdUpdate(f, nil),
		NewCmdRemove(f, nil),
	)
	return cmd
}

func principalKind(serviceAccount bool) string {
	if serviceAccount {
		return "service-account"
	}
	return "user"
}

func memberTable(ms ...wire.Member) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"user_id", "email", "name", "role", "status", "kind"}}
	for _, m := range ms {
		t.Rows = append(t.Rows, []string{m.UserID.String(), m.Email, cmdutil.OrDash(m.Name), m.Role, m.Status, principalKind(m.ServiceAccount)})
	}
	return t
}

// ListOptions configure gw members list.
type ListOptions = cmdutil.ListOptions

// NewCmdList builds `gw members list`.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	return cmdutil.NewListCmd(f, "List the organization's members, people and service accounts", runF, listRun)
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
	ms, err := c.ListMembers(ctx, org)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, ms, func() cmdutil.Table { return memberTable(ms...) })
}

// AddOptions configure gw members add.
type AddOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	// User is a user UUID or an email address of an existing account.
	User string
	Role string
}

// NewCmdAdd builds `gw members add`.
func NewCmdAdd(f *cmdutil.Factory, runF func(context.Context, *AddOptions) error) *cobra.Command {
	opts := &AddOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "add USER [--role ROLE]",
		Short: "Add an existing user (UUID or email) to the organization; invite people without an account",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			opts.User = args[0]
			if err := cmdutil.OneOf("role", opts.Role, auth.OrgRoles...); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return addRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmd.Flags().StringVar(&opts.Role, "role", auth.OrgMember, "role: "+strings.Join(auth.OrgRoles, ", "))
	return cmd
}

func addRun(ctx context.Context, opts *AddOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, err := s.RequireOrg()
	if err != nil {
		return err
	}
	in := wire.MemberAdd{Role: opts.Role}
	if id, err := uuid.Parse(opts.User); err == nil {
		in.UserID = &id
	} else {
		in.Email = opts.User
	}
	m, err := c.AddMember(ctx, org, in)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, m, func() cmdutil.Table { return memberTable(m) })
}

// UpdateOptions configure gw members update.
type UpdateOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	User   string
	Role   *string
	Status *string
}

// NewCmdUpdate builds `gw members update`.
func NewCmdUpdate(f *cmdutil.Factory, runF func(context.Context, *UpdateOptions) error) *cobra.Command {
	opts := &UpdateOptions{IO: f.IO, Client: f.AuthedClient}
	var role, status string
	cmd := &cobra.Command{
		Use:   "update USER [--role ROLE] [--status active|suspended]",
		Short: "Change a member's role, or suspend and reactivate them",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			opts.User = args[0]
			if cmd.Flags().Changed("role") {
				if err := cmdutil.OneOf("role", role, auth.OrgRoles...); err != nil {
					return err
				}
				opts.Role = &role
			}
			if cmd.Flags().Changed("status") {
				if err := cmdutil.OneOf("status", status, "active", "suspended"); err != nil {
					return err
				}
				opts.Status = &status
			}
			if opts.Role == nil && opts.Status == nil {
				return cmdutil.UsageError{Err: fmt.Errorf("nothing to change: pass --role or --status")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return updateRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmd.Flags().StringVar(&role, "role", "", "new role: "+strings.Join(auth.OrgRoles, ", "))
	cmd.Flags().StringVar(&status, "status", "", "active, or suspended (keeps the membership but refuses the member's keys)")
	return cmd
}

func updateRun(ctx context.Context, opts *UpdateOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, err := s.RequireOrg()
	if err != nil {
		return err
	}
	id, err := cmdutil.MemberRef(ctx, c, org, opts.User)
	if err != nil {
		return err
	}
	m, err := c.UpdateMember(ctx, org, id.String(), wire.MemberUpdate{Role: opts.Role, Status: opts.Status})
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, m, func() cmdutil.Table { return memberTable(m) })
}

// RemoveOptions configure gw members remove.
type RemoveOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	User   string
	Yes    bool
}

// NewCmdRemove builds `gw members remove`.
func NewCmdRemove(f *cmdutil.Factory, runF func(context.Context, *RemoveOptions) error) *cobra.Command {
	opts := &RemoveOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "remove USER",
		Short: "Remove a member from the organization; their keys in it are revoked",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			opts.User = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return removeRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmdutil.AddYesFlag(cmd, &opts.Yes)
	return cmd
}

func removeRun(ctx context.Context, opts *RemoveOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, err := s.RequireOrg()
	if err != nil {
		return err
	}
	id, err := cmdutil.MemberRef(ctx, c, org, opts.User)
	if err != nil {
		return err
	}
	if err := cmdutil.Confirm(opts.IO, fmt.Sprintf("Remove %s from %s and revoke their keys there?", opts.User, org), opts.Yes); err != nil {
		return err
	}
	m, err := c.RemoveMember(ctx, org, id.String())
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, m, func() cmdutil.Table { return memberTable(m) })
}
