package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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
	return printOnce(f, format, "invitation token", inv.Token, inv, func() Table { return invitationTable(inv) })
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
	// Email signs in to an existing account with its password and accepts
	// as it; without it gw asks for it when the account turns out to exist.
	Email    string
	Password secretInput
}

// NewCmdInvitationsAccept builds `gw invitations accept`.
func NewCmdInvitationsAccept(f *Factory, runF func(context.Context, *InvitationsAcceptOptions) error) *cobra.Command {
	opts := &InvitationsAcceptOptions{f: f}
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
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			opts.Token = args[0]
			if err := exclusiveFlags(cmd.Flags(), "password-file", "password-stdin"); err != nil {
				return err
			}
			if err := exclusiveFlags(cmd.Flags(), "email", "new-account"); err != nil {
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
	cmd.Flags().StringVar(&opts.Email, "email", "", "sign in to your existing account with this email (and its password) and accept as it")
	addSecretInputFlags(cmd, &opts.Password, "password", "password (the new account's, or your account's with --email)")
	return cmd
}

func invitationsAcceptRun(ctx context.Context, opts *InvitationsAcceptOptions) error {
	c, s, err := opts.f.Client()
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
	anon, err := client.New(client.Options{Server: s.Server, Version: Version(), HTTPClient: opts.f.HTTPClient})
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
		email, err := promptEmail(opts.f.IO)
		if err != nil {
			return err
		}
		return acceptSignedIn(ctx, opts, s.Server, email)
	case !passwordMissing(err):
		return err // the token is unknown, spent or expired; nothing was accepted
	}
	if in.Password, err = readNewPassword(opts.f.IO, opts.Password); err != nil {
		return err
	}
	in.Name = opts.Name
	res, err := anon.AcceptInvitation(ctx, in)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.f.IO.ErrOut, "Created the account %s; sign in with gw login.\n", res.User.Email)
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

func promptEmail(ios *IOStreams) (string, error) {
	if !ios.CanPrompt() {
		return "", usageError{errors.New("an account with the invited email exists: pass --email EMAIL (with --password-file or --password-stdin) to sign in to it and accept")}
	}
	fmt.Fprint(ios.ErrOut, "An account with the invited email exists. Its email: ")
	var email string
	_, _ = fmt.Fscanln(ios.In, &email)
	if email = strings.TrimSpace(email); email == "" {
		return "", usageError{errors.New("no email given")}
	}
	return email, nil
}

// acceptSignedIn accepts as an existing account. gw login cannot help a
// person who belongs to no organization (a key is always for one), so gw
// signs in the way the browser does: a session from email and password,
// used for this one call and ended right after.
func acceptSignedIn(ctx context.Context, opts *InvitationsAcceptOptions, server, email string) error {
	ios := opts.f.IO
	pw, err := opts.Password.Read(ios, "password", "Password for "+email+": ")
	if err != nil {
		return err
	}
	sc, err := client.New(client.Options{Server: server, Version: Version(), HTTPClient: opts.f.HTTPClient})
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
	org := newNameBook(sc).orgName(ctx, res.Membership.OrgID.String())
	fmt.Fprintf(ios.ErrOut, "Signed in as %s and joined organization %s as %s. Get a key for it with: gw login --server %s\n",
		res.User.Email, org, res.Membership.Role, server)
	return printAccepted(opts, res)
}

func printAccepted(opts *InvitationsAcceptOptions, res wire.InvitationAccepted) error {
	return opts.f.Print(opts.Output, res, func() Table {
		return detailTable("user_id", res.User.ID.String(), "email", res.User.Email, "org_id", res.Membership.OrgID.String(),
			"role", res.Membership.Role, "status", res.Membership.Status)
	})
}

// readNewPassword reads the password of a new account; typed at a prompt
// it is asked twice, since nobody can see a typo.
func readNewPassword(ios *IOStreams, in secretInput) (string, error) {
	pw, err := in.Read(ios, "password", "Password for the new account: ")
	if err != nil || in.Given() {
		return pw, err
	}
	again, err := in.Read(ios, "password", "Repeat the password: ")
	if err != nil {
		return "", err
	}
	if again != pw {
		return "", usageError{errors.New("the passwords differ")}
	}
	return pw, nil
}
