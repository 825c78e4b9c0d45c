package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/wire"
)

// NewCmdMembers builds `gw members`, the organization's members.
func NewCmdMembers(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "members", Short: "Manage the members of an organization"}
	cmd.AddCommand(
		NewCmdMembersList(f, nil),
		NewCmdMembersAdd(f, nil),
		NewCmdMembersUpdate(f, nil),
		NewCmdMembersRemove(f, nil),
	)
	return cmd
}

// NewCmdWorkspaceMembers builds `gw workspaces members`.
func NewCmdWorkspaceMembers(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "members", Short: "Manage the members of a workspace (who must be organization members)"}
	cmd.AddCommand(
		NewCmdWorkspaceMembersList(f, nil),
		NewCmdWorkspaceMembersAdd(f, nil),
		NewCmdWorkspaceMembersUpdate(f, nil),
		NewCmdWorkspaceMembersRemove(f, nil),
	)
	return cmd
}

func principalKind(serviceAccount bool) string {
	if serviceAccount {
		return "service-account"
	}
	return "user"
}

func memberTable(ms ...wire.Member) Table {
	t := Table{Headers: []string{"user_id", "email", "name", "role", "status", "kind"}}
	for _, m := range ms {
		t.Rows = append(t.Rows, []string{m.UserID.String(), m.Email, orDash(m.Name), m.Role, m.Status, principalKind(m.ServiceAccount)})
	}
	return t
}

func workspaceMemberTable(ms ...wire.WorkspaceMember) Table {
	t := Table{Headers: []string{"user_id", "email", "name", "role"}}
	for _, m := range ms {
		t.Rows = append(t.Rows, []string{m.UserID.String(), m.Email, orDash(m.Name), m.Role})
	}
	return t
}

// MembersListOptions configure gw members list.
type MembersListOptions = ListOptions

// NewCmdMembersList builds `gw members list`.
func NewCmdMembersList(f *Factory, runF func(context.Context, *MembersListOptions) error) *cobra.Command {
	return newListCmd(f, "List the organization's members, people and service accounts", runF, membersListRun)
}

func membersListRun(ctx context.Context, opts *MembersListOptions) error {
	c, s, err := opts.f.AuthedClient()
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
	return opts.f.Print(opts.Output, ms, func() Table { return memberTable(ms...) })
}

// MembersAddOptions configure gw members add.
type MembersAddOptions struct {
	f      *Factory
	Output string
	// User is a user UUID or an email address of an existing account.
	User string
	Role string
}

// NewCmdMembersAdd builds `gw members add`.
func NewCmdMembersAdd(f *Factory, runF func(context.Context, *MembersAddOptions) error) *cobra.Command {
	opts := &MembersAddOptions{f: f}
	cmd := &cobra.Command{
		Use:   "add USER [--role ROLE]",
		Short: "Add an existing user (UUID or email) to the organization; invite people without an account",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			opts.User = args[0]
			if err := oneOf("role", opts.Role, auth.OrgRoles...); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return membersAddRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	cmd.Flags().StringVar(&opts.Role, "role", auth.OrgMember, "role: "+strings.Join(auth.OrgRoles, ", "))
	return cmd
}

func membersAddRun(ctx context.Context, opts *MembersAddOptions) error {
	c, s, err := opts.f.AuthedClient()
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
	return opts.f.Print(opts.Output, m, func() Table { return memberTable(m) })
}

// MembersUpdateOptions configure gw members update.
type MembersUpdateOptions struct {
	f      *Factory
	Output string
	User   string
	Role   *string
	Status *string
}

// NewCmdMembersUpdate builds `gw members update`.
func NewCmdMembersUpdate(f *Factory, runF func(context.Context, *MembersUpdateOptions) error) *cobra.Command {
	opts := &MembersUpdateOptions{f: f}
	var role, status string
	cmd := &cobra.Command{
		Use:   "update USER [--role ROLE] [--status active|suspended]",
		Short: "Change a member's role, or suspend and reactivate them",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			opts.User = args[0]
			if cmd.Flags().Changed("role") {
				if err := oneOf("role", role, auth.OrgRoles...); err != nil {
					return err
				}
				opts.Role = &role
			}
			if cmd.Flags().Changed("status") {
				if err := oneOf("status", status, "active", "suspended"); err != nil {
					return err
				}
				opts.Status = &status
			}
			if opts.Role == nil && opts.Status == nil {
				return usageError{fmt.Errorf("nothing to change: pass --role or --status")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return membersUpdateRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	cmd.Flags().StringVar(&role, "role", "", "new role: "+strings.Join(auth.OrgRoles, ", "))
	cmd.Flags().StringVar(&status, "status", "", "active, or suspended (keeps the membership but refuses the member's keys)")
	return cmd
}

func membersUpdateRun(ctx context.Context, opts *MembersUpdateOptions) error {
	c, s, err := opts.f.AuthedClient()
	if err != nil {
		return err
	}
	org, err := s.RequireOrg()
	if err != nil {
		return err
	}
	id, err := memberRef(ctx, c, org, opts.User)
	if err != nil {
		return err
	}
	m, err := c.UpdateMember(ctx, org, id.String(), wire.MemberUpdate{Role: opts.Role, Status: opts.Status})
	if err != nil {
		return err
	}
	return opts.f.Print(opts.Output, m, func() Table { return memberTable(m) })
}

// MembersRemoveOptions configure gw members remove.
type MembersRemoveOptions struct {
	f      *Factory
	Output string
	User   string
	Yes    bool
}

// NewCmdMembersRemove builds `gw members remove`.
func NewCmdMembersRemove(f *Factory, runF func(context.Context, *MembersRemoveOptions) error) *cobra.Command {
	opts := &MembersRemoveOptions{f: f}
	cmd := &cobra.Command{
		Use:   "remove USER",
		Short: "Remove a member from the organization; their keys in it are revoked",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			opts.User = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return membersRemoveRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	addYesFlag(cmd, &opts.Yes)
	return cmd
}

func membersRemoveRun(ctx context.Context, opts *MembersRemoveOptions) error {
	c, s, err := opts.f.AuthedClient()
	if err != nil {
		return err
	}
	org, err := s.RequireOrg()
	if err != nil {
		return err
	}
	id, err := memberRef(ctx, c, org, opts.User)
	if err != nil {
		return err
	}
	if err := opts.f.Confirm(fmt.Sprintf("Remove %s from %s and revoke their keys there?", opts.User, org), opts.Yes); err != nil {
		return err
	}
	m, err := c.RemoveMember(ctx, org, id.String())
	if err != nil {
		return err
	}
	return opts.f.Print(opts.Output, m, func() Table { return memberTable(m) })
}

// WorkspaceMembersListOptions configure gw workspaces members list.
type WorkspaceMembersListOptions = ListOptions

// NewCmdWorkspaceMembersList builds `gw workspaces members list`.
func NewCmdWorkspaceMembersList(f *Factory, runF func(context.Context, *WorkspaceMembersListOptions) error) *cobra.Command {
	return newListCmd(f, "List the workspace's members", runF, workspaceMembersListRun)
}

func workspaceMembersListRun(ctx context.Context, opts *WorkspaceMembersListOptions) error {
	c, s, err := opts.f.AuthedClient()
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
	return opts.f.Print(opts.Output, ms, func() Table { return workspaceMemberTable(ms...) })
}

// WorkspaceMembersAddOptions configure gw workspaces members add.
type WorkspaceMembersAddOptions struct {
	f      *Factory
	Output string
	User   string
	Role   string
}

// NewCmdWorkspaceMembersAdd builds `gw workspaces members add`.
func NewCmdWorkspaceMembersAdd(f *Factory, runF func(context.Context, *WorkspaceMembersAddOptions) error) *cobra.Command {
	opts := &WorkspaceMembersAddOptions{f: f}
	cmd := &cobra.Command{
		Use:   "add USER [--role ROLE]",
		Short: "Add an organization member (UUID or email) to the workspace",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			opts.User = args[0]
			if err := oneOf("role", opts.Role, auth.WorkspaceRoles...); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return workspaceMembersAddRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	cmd.Flags().StringVar(&opts.Role, "role", auth.WorkspaceMember, "role: "+strings.Join(auth.WorkspaceRoles, ", "))
	return cmd
}

func workspaceMembersAddRun(ctx context.Context, opts *WorkspaceMembersAddOptions) error {
	c, s, err := opts.f.AuthedClient()
	if err != nil {
		return err
	}
	org, ws, err := s.RequireWorkspace()
	if err != nil {
		return err
	}
	id, err := memberRef(ctx, c, org, opts.User)
	if err != nil {
		return err
	}
	m, err := c.AddWorkspaceMember(ctx, org, ws, wire.WorkspaceMemberAdd{UserID: id, Role: opts.Role})
	if err != nil {
		return err
	}
	return opts.f.Print(opts.Output, m, func() Table { return workspaceMemberTable(m) })
}

// WorkspaceMembersUpdateOptions configure gw workspaces members update.
type WorkspaceMembersUpdateOptions struct {
	f      *Factory
	Output string
	User   string
	Role   string
}

// NewCmdWorkspaceMembersUpdate builds `gw workspaces members update`.
func NewCmdWorkspaceMembersUpdate(f *Factory, runF func(context.Context, *WorkspaceMembersUpdateOptions) error) *cobra.Command {
	opts := &WorkspaceMembersUpdateOptions{f: f}
	cmd := &cobra.Command{
		Use:   "update USER --role ROLE",
		Short: "Change a workspace member's role",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			opts.User = args[0]
			if err := requireFlags(cmd.Flags(), "role"); err != nil {
				return err
			}
			if err := oneOf("role", opts.Role, auth.WorkspaceRoles...); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return workspaceMembersUpdateRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	cmd.Flags().StringVar(&opts.Role, "role", "", "new role: "+strings.Join(auth.WorkspaceRoles, ", "))
	return cmd
}

func workspaceMembersUpdateRun(ctx context.Context, opts *WorkspaceMembersUpdateOptions) error {
	c, s, err := opts.f.AuthedClient()
	if err != nil {
		return err
	}
	org, ws, err := s.RequireWorkspace()
	if err != nil {
		return err
	}
	id, err := memberRef(ctx, c, org, opts.User)
	if err != nil {
		return err
	}
	m, err := c.UpdateWorkspaceMember(ctx, org, ws, id.String(), wire.WorkspaceMemberUpdate{Role: opts.Role})
	if err != nil {
		return err
	}
	return opts.f.Print(opts.Output, m, func() Table { return workspaceMemberTable(m) })
}

// WorkspaceMembersRemoveOptions configure gw workspaces members remove.
type WorkspaceMembersRemoveOptions struct {
	f      *Factory
	Output string
	User   string
	Yes    bool
}

// NewCmdWorkspaceMembersRemove builds `gw workspaces members remove`.
func NewCmdWorkspaceMembersRemove(f *Factory, runF func(context.Context, *WorkspaceMembersRemoveOptions) error) *cobra.Command {
	opts := &WorkspaceMembersRemoveOptions{f: f}
	cmd := &cobra.Command{
		Use:   "remove USER",
		Short: "Remove a member from the workspace (they stay in the organization)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			opts.User = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return workspaceMembersRemoveRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	addYesFlag(cmd, &opts.Yes)
	return cmd
}

func workspaceMembersRemoveRun(ctx context.Context, opts *WorkspaceMembersRemoveOptions) error {
	c, s, err := opts.f.AuthedClient()
	if err != nil {
		return err
	}
	org, ws, err := s.RequireWorkspace()
	if err != nil {
		return err
	}
	id, err := memberRef(ctx, c, org, opts.User)
	if err != nil {
		return err
	}
	if err := opts.f.Confirm(fmt.Sprintf("Remove %s from workspace %s?", opts.User, ws), opts.Yes); err != nil {
		return err
	}
	m, err := c.RemoveWorkspaceMember(ctx, org, ws, id.String())
	if err != nil {
		return err
	}
	return opts.f.Print(opts.Output, m, func() Table { return workspaceMemberTable(m) })
}
