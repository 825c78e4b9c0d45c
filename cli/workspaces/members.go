package workspaces

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/wire"
)

// NewCmdMembers builds `gw workspaces members`.
func NewCmdMembers(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "members", Short: "Manage the members of a workspace (who must be organization members)"}
	cmd.AddCommand(
		NewCmdMembersList(f, nil),
		NewCmdMembersAdd(f, nil),
		NewCmdMembersUpdate(f, nil),
		NewCmdMembersRemove(f, nil),
	)
	return cmd
}

func workspaceMemberTable(ms ...wire.WorkspaceMember) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"user_id", "email", "name", "role"}}
	for _, m := range ms {
		t.Rows = append(t.Rows, []string{m.UserID.String(), m.Email, cmdutil.OrDash(m.Name), m.Role})
	}
	return t
}

// MembersListOptions configure gw workspaces members list.
type MembersListOptions = cmdutil.ListOptions

// NewCmdMembersList builds `gw workspaces members list`.
func NewCmdMembersList(f *cmdutil.Factory, runF func(context.Context, *MembersListOptions) error) *cobra.Command {
	return cmdutil.NewListCmd(f, "List the workspace's members", runF, membersListRun)
}

func membersListRun(ctx context.Context, opts *MembersListOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, ws, err := s.RequireWorkspace()
	if err != nil {
		return err
	}
	ms, err := c.ListWorkspaceMembers(ctx, org, ws)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, ms, func() cmdutil.Table { return workspaceMemberTable(ms...) })
}

// MembersAddOptions configure gw workspaces members add.
type MembersAddOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	User   string
	Role   string
}

// NewCmdMembersAdd builds `gw workspaces members add`.
func NewCmdMembersAdd(f *cmdutil.Factory, runF func(context.Context, *MembersAddOptions) error) *cobra.Command {
	opts := &MembersAddOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "add USER [--role ROLE]",
		Short: "Add an organization member (UUID or email) to the workspace",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			opts.User = args[0]
			if err := cmdutil.OneOf("role", opts.Role, auth.WorkspaceRoles...); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return membersAddRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmd.Flags().StringVar(&opts.Role, "role", auth.WorkspaceMember, "role: "+strings.Join(auth.WorkspaceRoles, ", "))
	return cmd
}

func membersAddRun(ctx context.Context, opts *MembersAddOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, ws, err := s.RequireWorkspace()
	if err != nil {
		return err
	}
	id, err := cmdutil.MemberRef(ctx, c, org, opts.User)
	if err != nil {
		return err
	}
	m, err := c.AddWorkspaceMember(ctx, org, ws, wire.WorkspaceMemberAdd{UserID: id, Role: opts.Role})
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, m, func() cmdutil.Table { return workspaceMemberTable(m) })
}

// MembersUpdateOptions configure gw workspaces members update.
type MembersUpdateOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	User   string
	Role   string
}

// NewCmdMembersUpdate builds `gw workspaces members update`.
func NewCmdMembersUpdate(f *cmdutil.Factory, runF func(context.Context, *MembersUpdateOptions) error) *cobra.Command {
	opts := &MembersUpdateOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "update USER --role ROLE",
		Short: "Change a workspace member's role",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			opts.User = args[0]
			if err := cmdutil.RequireFlags(cmd.Flags(), "role"); err != nil {
				return err
			}
			if err := cmdutil.OneOf("role", opts.Role, auth.WorkspaceRoles...); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return membersUpdateRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmd.Flags().StringVar(&opts.Role, "role", "", "new role: "+strings.Join(auth.WorkspaceRoles, ", "))
	return cmd
}

func membersUpdateRun(ctx context.Context, opts *MembersUpdateOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, ws, err := s.RequireWorkspace()
	if err != nil {
		return err
	}
	id, err := cmdutil.MemberRef(ctx, c, org, opts.User)
	if err != nil {
		return err
	}
	m, err := c.UpdateWorkspaceMember(ctx, org, ws, id.String(), wire.WorkspaceMemberUpdate{Role: opts.Role})
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, m, func() cmdutil.Table { return workspaceMemberTable(m) })
}

// MembersRemoveOptions configure gw workspaces members remove.
type MembersRemoveOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	User   string
	Yes    bool
}

// NewCmdMembersRemove builds `gw workspaces members remove`.
func NewCmdMembersRemove(f *cmdutil.Factory, runF func(context.Context, *MembersRemoveOptions) error) *cobra.Command {
	opts := &MembersRemoveOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "remove USER",
		Short: "Remove a member from the workspace (they stay in the organization)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			opts.User = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return membersRemoveRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmdutil.AddYesFlag(cmd, &opts.Yes)
	return cmd
}

func membersRemoveRun(ctx context.Context, opts *MembersRemoveOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, ws, err := s.RequireWorkspace()
	if err != nil {
		return err
	}
	id, err := cmdutil.MemberRef(ctx, c, org, opts.User)
	if err != nil {
		return err
	}
	if err := cmdutil.Confirm(opts.IO, fmt.Sprintf("Remove %s from workspace %s?", opts.User, ws), opts.Yes); err != nil {
		return err
	}
	m, err := c.RemoveWorkspaceMember(ctx, org, ws, id.String())
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, m, func() cmdutil.Table { return workspaceMemberTable(m) })
}
