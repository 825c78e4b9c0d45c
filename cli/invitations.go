package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/wire"
)

// NewCmdInvitations builds `gw invitations`.
func NewCmdInvitations(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "invitations", Aliases: []string{"invites"}, Short: "Invite people to an organization by email"}
	cmd.AddCommand(
		NewCmdInvitationsList(f, nil),
		NewCmdInvitationsCreate(f, nil),
		NewCmdInvitationsReissue(f, nil),
		NewCmdInvitationsRevoke(f, nil),
		NewCmdInvitationsAccept(f, nil),
	)
	return cmd
}

func invitationTable(invs ...wire.Invitation) Table {
	t := Table{Headers: []string{"id", "email", "role", "status", "expires", "created"}}
	for _, i := range invs {
		t.Rows = append(t.Rows, []string{i.ID.String(), i.Email, i.Role, i.Status, timeCell(&i.ExpiresAt), timeCell(&i.CreatedAt)})
	}
	return t
}

// InvitationsListOptions configure gw invitations list.
type InvitationsListOptions = ListOptions

// NewCmdInvitationsList builds `gw invitations list`.
func NewCmdInvitationsList(f *Factory, runF func(context.Context, *InvitationsListOptions) error) *cobra.Command {
	return newListCmd(f, "List the organization's invitations (tokens are never shown again)", runF, invitationsListRun)
}

func invitationsListRun(ctx context.Context, opts *InvitationsListOptions) error {
	c, s, err := opts.f.AuthedClient()
	if err != nil {
		return err
	}
	org, err := s.RequireOrg()
	if err != nil {
		return err
	}
	invs, err := c.ListInvitations(ctx, org)
	if err != nil {
		return err
	}
	return opts.f.Print(opts.Output, invs, func() Table { return invitationTable(invs...) })
}

// InvitationsCreateOptions configure gw invitations create.
type InvitationsCreateOptions struct {
	f      *Factory
	Output string
	Email  string
	Role   string
}

// NewCmdInvitationsCreate builds `gw invitations create`.
func NewCmdInvitationsCreate(f *Factory, runF func(context.Context, *InvitationsCreateOptions) error) *cobra.Command {
	opts := &InvitationsCreateOptions{f: f}
	cmd := &cobra.Command{
		Use:   "create --email EMAIL [--role ROLE]",
		Short: "Invite a person; prints the invitation token once",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			if err := requireFlags(cmd.Flags(), "email"); err != nil {
				return err
			}
			if err := oneOf("role", opts.Role, auth.OrgRoles...); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return invitationsCreateRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	cmd.Flags().StringVar(&opts.Email, "email", "", "the invitee's email address")
	cmd.Flags().StringVar(&opts.Role, "role", auth.OrgMember, "role on acceptance: "+strings.Join(auth.OrgRoles, ", "))
	return cmd
}

func invitationsCreateRun(ctx context.Context, opts *InvitationsCreateOptions) error {
	c, s, err := opts.f.AuthedClient()
	if err != nil {
		return err
	}
	org, err := s.RequireOrg()
	if err != nil {
		return err
	}
	inv, err := c.CreateInvitation(ctx, org, wire.InvitationCreate{Email: opts.Email, Role: opts.Role})
	if err != nil {
		return err
	}
	return printInvitationToken(opts.f, opts.Output, inv)
}

func printInvitationToken(f *Factory, format string, inv wire.Invitation) error {
	if format == OutputTable {
		fmt.Fprintf(f.IO.ErrOut, "Invitation %s for %s (%s) expires %s; accept with: gw invitations accept TOKEN\n",
			inv.ID, inv.Email, inv.Role, timeCell(&inv.ExpiresAt))
	}
	return f.printOnce(format, "invitation token", inv.Token, inv, func() Table { return invitationTable(inv) })
}

// InvitationsReissueOptions configure gw invitations reissue.
type InvitationsReissueOptions = IDOptions

// NewCmdInvitationsReissue builds `gw invitations reissue`.
func NewCmdInvitationsReissue(f *Factory, runF func(context.Context, *InvitationsReissueOptions) error) *cobra.Command {
	return newIDCmd(f, "reissue INVITATION_ID", "Issue a new token and expiry for an invitation; the old token stops working", runF, invitationsReissueRun)
}

func invitationsReissueRun(ctx context.Context, opts *InvitationsReissueOptions) error {
	c, s, err := opts.f.AuthedClient()
	if err != nil {
		return err
	}
	org, err := s.RequireOrg()
	if err != nil {
		return err
	}
	inv, err := c.ReissueInvitation(ctx, org, opts.ID)
	if err != nil {
		return err
	}
	return printInvitationToken(opts.f, opts.Output, inv)
}

// InvitationsRevokeOptions configure gw invitations revoke.
type InvitationsRevokeOptions = IDOptions

// NewCmdInvitationsRevoke builds `gw invitations revoke`.
func NewCmdInvitationsRevoke(f *Factory, runF func(context.Context, *InvitationsRevokeOptions) error) *cobra.Command {
	return newDestructiveIDCmd(f, "revoke INVITATION_ID", "Revoke a pending invitation", runF, invitationsRevokeRun)
}

func invitationsRevokeRun(ctx context.Context, opts *InvitationsRevokeOptions) error {
	c, s, err := opts.f.AuthedClient()
	if err != nil {
		return err
	}
	org, err := s.RequireOrg()
	if err != nil {
		return err
	}
	if err := opts.f.Confirm(fmt.Sprintf("Revoke invitation %s?", opts.ID), opts.Yes); err != nil {
		return err
	}
	inv, err := c.RevokeInvitation(ctx, org, opts.ID)
	if err != nil {
		return err
	}
	return opts.f.Print(opts.Output, inv, func() Table { return invitationTable(inv) })
}

// InvitationsAcceptOptions configure gw invitations accept.
type InvitationsAcceptOptions struct {
	f      *Factory
	Output string
	Token  string
	// NewAccount creates the invitee's account even when a credential is
	// configured (which would otherwise accept as its user).
	NewAccount bool
	Name       string
	Password   secretInput
}

// NewCmdInvitationsAccept builds `gw invitations accept`.
func NewCmdInvitationsAccept(f *Factory, runF func(context.Context, *InvitationsAcceptOptions) error) *cobra.Command {
	opts := &InvitationsAcceptOptions{f: f}
	cmd := &cobra.Command{
		Use:   "accept TOKEN",
		Short: "Accept an invitation: as the signed-in user, or creating the account with a password",
		Long: `Accept an invitation with the token it came with.

With a credential configured (gw login, or GW_TOKEN) the invitation is accepted
by its user, whose email must be the invited one. Without one, or with
--new-account, the account is created: the password is asked for on the
terminal, or read from --password-file or --password-stdin.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			opts.Token = args[0]
			if err := exclusiveFlags(cmd.Flags(), "password-file", "password-stdin"); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return invitationsAcceptRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	cmd.Flags().BoolVar(&opts.NewAccount, "new-account", false, "create the invitee's account even if a credential is configured")
	cmd.Flags().StringVar(&opts.Name, "name", "", "display name of the new account")
	addSecretInputFlags(cmd, &opts.Password, "password", "new account's password")
	return cmd
}

func invitationsAcceptRun(ctx context.Context, opts *InvitationsAcceptOptions) error {
	c, s, err := opts.f.Client()
	if err != nil {
		return err
	}
	in := wire.InvitationAccept{Token: opts.Token}
	creating := opts.NewAccount || s.Token == "" || opts.Password.given()
	if creating {
		// The server treats any credential as "accept as this user", so
		// an account is created only on an unauthenticated call.
		if c, err = client.New(client.Options{Server: s.Server, Version: Version(), HTTPClient: opts.f.HTTPClient}); err != nil {
			return err
		}
		if in.Password, err = readNewPassword(opts.f.IO, opts.Password); err != nil {
			return err
		}
		in.Name = opts.Name
	}
	res, err := c.AcceptInvitation(ctx, in)
	if err != nil {
		return err
	}
	if creating {
		fmt.Fprintf(opts.f.IO.ErrOut, "Created the account %s; sign in with gw login.\n", res.User.Email)
	}
	return opts.f.Print(opts.Output, res, func() Table {
		return detailTable("user_id", res.User.ID.String(), "email", res.User.Email, "org_id", res.Membership.OrgID.String(),
			"role", res.Membership.Role, "status", res.Membership.Status)
	})
}

// readNewPassword reads the password of a new account; typed at a prompt
// it is asked twice, since nobody can see a typo.
func readNewPassword(ios *IOStreams, in secretInput) (string, error) {
	pw, err := in.read(ios, "password", "Password for the new account: ")
	if err != nil || in.given() {
		return pw, err
	}
	again, err := in.read(ios, "password", "Repeat the password: ")
	if err != nil {
		return "", err
	}
	if again != pw {
		return "", usageError{errors.New("the passwords differ")}
	}
	return pw, nil
}
