// Package invitations is `gw invitations`: inviting people to an organization, and accepting.
package invitations

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/wire"
)

// NewCmd builds `gw invitations`.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "invitations", Aliases: []string{"invites"}, Short: "Invite people to an organization by email"}
	cmd.AddCommand(
		NewCmdList(f, nil),
		NewCmdCreate(f, nil),
		NewCmdReissue(f, nil),
		NewCmdRevoke(f, nil),
		NewCmdAccept(f, nil),
	)
	return cmd
}

func invitationTable(invs ...wire.Invitation) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"id", "email", "role", "status", "expires", "created"}}
	for _, i := range invs {
		t.Rows = append(t.Rows, []string{i.ID.String(), i.Email, i.Role, i.Status, cmdutil.TimeCell(&i.ExpiresAt), cmdutil.TimeCell(&i.CreatedAt)})
	}
	return t
}

// ListOptions configure gw invitations list.
type ListOptions = cmdutil.ListOptions

// NewCmdList builds `gw invitations list`.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	return cmdutil.NewListCmd(f, "List the organization's invitations (tokens are never shown again)", runF, listRun)
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
	invs, err := c.ListInvitations(ctx, org)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, invs, func() cmdutil.Table { return invitationTable(invs...) })
}

// CreateOptions configure gw invitations create.
type CreateOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	Email  string
	Role   string
}

// NewCmdCreate builds `gw invitations create`.
func NewCmdCreate(f *cmdutil.Factory, runF func(context.Context, *CreateOptions) error) *cobra.Command {
	opts := &CreateOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "create --email EMAIL [--role ROLE]",
		Short: "Invite a person; prints the invitation token once",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := cmdutil.RequireFlags(cmd.Flags(), "email"); err != nil {
				return err
			}
			if err := cmdutil.OneOf("role", opts.Role, auth.OrgRoles...); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return createRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmd.Flags().StringVar(&opts.Email, "email", "", "the invitee's email address")
	cmd.Flags().StringVar(&opts.Role, "role", auth.OrgMember, "role on acceptance: "+strings.Join(auth.OrgRoles, ", "))
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
	inv, err := c.CreateInvitation(ctx, org, wire.InvitationCreate{Email: opts.Email, Role: opts.Role})
	if err != nil {
		return err
	}
	return printInvitationToken(opts.IO, &opts.Output, inv)
}

func printInvitationToken(io *cmdutil.IOStreams, out *cmdutil.Output, inv wire.Invitation) error {
	if out.Format == cmdutil.OutputTable {
		fmt.Fprintf(io.ErrOut, "Invitation %s for %s (%s) expires %s; accept with: gw invitations accept TOKEN\n",
			inv.ID, inv.Email, inv.Role, cmdutil.TimeCell(&inv.ExpiresAt))
	}
	return out.PrintOnce(io, "invitation token", inv.Token, inv, func() cmdutil.Table { return invitationTable(inv) })
}

// ReissueOptions configure gw invitations reissue.
type ReissueOptions = cmdutil.IDOptions

// NewCmdReissue builds `gw invitations reissue`.
func NewCmdReissue(f *cmdutil.Factory, runF func(context.Context, *ReissueOptions) error) *cobra.Command {
	return cmdutil.NewIDCmd(f, "reissue INVITATION_ID", "Issue a new token and expiry for an invitation; the old token stops working", runF, reissueRun)
}

func reissueRun(ctx context.Context, opts *ReissueOptions) error {
	c, s, err := opts.Client()
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
	return printInvitationToken(opts.IO, &opts.Output, inv)
}

// RevokeOptions configure gw invitations revoke.
type RevokeOptions = cmdutil.IDOptions

// NewCmdRevoke builds `gw invitations revoke`.
func NewCmdRevoke(f *cmdutil.Factory, runF func(context.Context, *RevokeOptions) error) *cobra.Command {
	return cmdutil.NewDestructiveIDCmd(f, "revoke INVITATION_ID", "Revoke a pending invitation", runF, revokeRun)
}

func revokeRun(ctx context.Context, opts *RevokeOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, err := s.RequireOrg()
	if err != nil {
		return err
	}
	if err := cmdutil.Confirm(opts.IO, fmt.Sprintf("Revoke invitation %s?", opts.ID), opts.Yes); err != nil {
		return err
	}
	inv, err := c.RevokeInvitation(ctx, org, opts.ID)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, inv, func() cmdutil.Table { return invitationTable(inv) })
}

// AcceptOptions configure gw invitations accept.
type AcceptOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	Token  string
	// NewAccount creates the invitee's account even when a credential is
	// configured (which would otherwise accept as its user).
	NewAccount bool
	Name       string
	// Email signs in to an existing account with its password and accepts
	// as it; without it gw asks for it when the account turns out to exist.
	Email    string
	Password cmdutil.SecretInput
	// Anonymous is a client without a credential, for the server named.
	Anonymous func(server string) (*client.Client, error)
}

// NewCmdAccept builds `gw invitations accept`.
func NewCmdAccept(f *cmdutil.Factory, runF func(context.Context, *AcceptOptions) error) *cobra.Command {
	opts := &AcceptOptions{IO: f.IO, Client: f.Client, Anonymous: f.AnonymousClient}
	cmd := &cobra.Command{
		Use:   "accept TOKEN",
		Short: "Accept an invitation: as the signed-in user, by signing in with a password, or creating the account",
		Long: `Accept an invitation with the token it came with.

With a credential configured (gw login, or GW_TOKEN) the invitation is accepted
by its user, whose email must be the invited one. Without one, or with
--new-account, the account is created when none has the invited email. When
one does (someone who has an account but belongs to no organization yet, and
so cannot gw login), gw signs in to it with its email (--email, or asked on
the terminal) and password, and accepts as it. Passwords are asked for on the
terminal, or read from --password-file or --password-stdin.`,
		Example: `  gw invitations accept inv_… --password-file ~/.gw-password
  gw invitations accept inv_… --email bob@example.com --password-stdin < pw.txt`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			opts.Token = args[0]
			if err := cmdutil.ExclusiveFlags(cmd.Flags(), "password-file", "password-stdin"); err != nil {
				return err
			}
			if err := cmdutil.ExclusiveFlags(cmd.Flags(), "email", "new-account"); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return acceptRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmd.Flags().BoolVar(&opts.NewAccount, "new-account", false, "create the invitee's account even if a credential is configured")
	cmd.Flags().StringVar(&opts.Name, "name", "", "display name of the new account")
	cmd.Flags().StringVar(&opts.Email, "email", "", "sign in to your existing account with this email (and its password) and accept as it")
	cmdutil.AddSecretInputFlags(cmd, &opts.Password, "password", "password (the new account's, or your account's with --email)")
	return cmd
}

func acceptRun(ctx context.Context, opts *AcceptOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	if opts.Email != "" {
		return acceptSignedIn(ctx, opts, s.Server, opts.Email)
	}
	if !opts.NewAccount && s.Token != "" && !opts.Password.Given() {
		res, err := c.AcceptInvitation(ctx, wire.InvitationAccept{Token: opts.Token})
		if err != nil {
			return err
		}
		return printAccepted(opts, res)
	}
	// The server treats any credential as "accept as this user", so the
	// rest goes without one. A first call without a password changes
	// nothing and says which way is open: a missing password means the
	// account is to be created; a conflict, that it exists and its owner
	// must sign in.
	anon, err := opts.Anonymous(s.Server)
	if err != nil {
		return err
	}
	in := wire.InvitationAccept{Token: opts.Token}
	_, err = anon.AcceptInvitation(ctx, in)
	switch {
	case accountExists(err):
		if opts.NewAccount {
			return fmt.Errorf("%w (drop --new-account; gw then signs in to it)", err)
		}
		email, err := promptEmail(opts.IO)
		if err != nil {
			return err
		}
		return acceptSignedIn(ctx, opts, s.Server, email)
	case !passwordMissing(err):
		return err // the token is unknown, spent or expired; nothing was accepted
	}
	if in.Password, err = readNewPassword(opts.IO, opts.Password); err != nil {
		return err
	}
	in.Name = opts.Name
	res, err := anon.AcceptInvitation(ctx, in)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "Created the account %s; sign in with gw login.\n", res.User.Email)
	return printAccepted(opts, res)
}

// accountExists recognises the server's refusal to create an account for
// an email that has one.
func accountExists(err error) bool {
	var ae *client.APIError
	return errors.As(err, &ae) && ae.Status == http.StatusConflict && strings.Contains(ae.Detail, "sign in")
}

// passwordMissing recognises the 422 asking for the new account's password.
func passwordMissing(err error) bool {
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusUnprocessableEntity {
		return false
	}
	for _, is := range ae.Issues {
		if len(is.Loc) > 0 && is.Loc[len(is.Loc)-1] == "password" {
			return true
		}
	}
	return false
}

func promptEmail(ios *cmdutil.IOStreams) (string, error) {
	if !ios.CanPrompt() {
		return "", cmdutil.UsageError{Err: errors.New("an account with the invited email exists: pass --email EMAIL (with --password-file or --password-stdin) to sign in to it and accept")}
	}
	fmt.Fprint(ios.ErrOut, "An account with the invited email exists. Its email: ")
	var email string
	_, _ = fmt.Fscanln(ios.In, &email)
	if email = strings.TrimSpace(email); email == "" {
		return "", cmdutil.UsageError{Err: errors.New("no email given")}
	}
	return email, nil
}

// acceptSignedIn accepts as an existing account. gw login cannot help a
// person who belongs to no organization (a key is always for one), so gw
// signs in the way the browser does: a session from email and password,
// used for this one call and ended right after.
func acceptSignedIn(ctx context.Context, opts *AcceptOptions, server, email string) error {
	ios := opts.IO
	pw, err := opts.Password.Read(ios, "password", "Password for "+email+": ")
	if err != nil {
		return err
	}
	sc, err := opts.Anonymous(server)
	if err != nil {
		return err
	}
	if _, err := sc.Login(ctx, wire.Credentials{Email: email, Password: pw}); err != nil {
		return fmt.Errorf("sign in as %s: %w", email, err)
	}
	defer func() { _, _ = sc.Logout(context.WithoutCancel(ctx)) }()
	res, err := sc.AcceptInvitation(ctx, wire.InvitationAccept{Token: opts.Token})
	if err != nil {
		return err
	}
	org := cmdutil.NewNameBook(sc).OrgName(ctx, res.Membership.OrgID.String())
	fmt.Fprintf(ios.ErrOut, "Signed in as %s and joined organization %s as %s. Get a key for it with: gw login --server %s\n",
		res.User.Email, org, res.Membership.Role, server)
	return printAccepted(opts, res)
}

func printAccepted(opts *AcceptOptions, res wire.InvitationAccepted) error {
	return opts.Output.Print(opts.IO, res, func() cmdutil.Table {
		return cmdutil.DetailTable("user_id", res.User.ID.String(), "email", res.User.Email, "org_id", res.Membership.OrgID.String(),
			"role", res.Membership.Role, "status", res.Membership.Status)
	})
}

// readNewPassword reads the password of a new account; typed at a prompt
// it is asked twice, since nobody can see a typo.
func readNewPassword(ios *cmdutil.IOStreams, in cmdutil.SecretInput) (string, error) {
	pw, err := in.Read(ios, "password", "Password for the new account: ")
	if err != nil || in.Given() {
		return pw, err
	}
	again, err := in.Read(ios, "password", "Repeat the password: ")
	if err != nil {
		return "", err
	}
	if again != pw {
		return "", cmdutil.UsageError{Err: errors.New("the passwords differ")}
	}
	return pw, nil
}
