// Package keys is `gw keys`: management keys.
package keys

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// NewCmd builds `gw keys`, the management keys.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Manage management keys (sk-cp-…) at instance, organization or workspace scope",
	}
	cmd.AddCommand(
		NewCmdList(f, nil),
		NewCmdGet(f, nil),
		NewCmdCreate(f, nil),
		NewCmdRevoke(f, nil),
	)
	return cmd
}

func addKeyScopeFlag(cmd *cobra.Command, scope *string) {
	cmd.Flags().StringVar(scope, "scope", "org", "where the keys live: instance, org or workspace (default org, or workspace when --workspace is given; org and workspace from --org/--workspace or the context)")
}

func checkKeyScope(cmd *cobra.Command, scope *string) error {
	return cmdutil.CheckScope(cmd, scope, "instance", "org", "workspace")
}

func keyDetail(k wire.ManagementKey) cmdutil.Table {
	return cmdutil.DetailTable("id", k.ID.String(), "prefix", k.Prefix, "label", k.Label, "status", k.Status,
		"scope", k.Scope.Level, "org_id", cmdutil.UUIDCell(k.OrgID), "workspace_id", cmdutil.UUIDCell(k.WorkspaceID),
		"user_id", k.UserID.String(), "parent_id", cmdutil.UUIDCell(k.ParentID), "permissions", strings.Join(k.Permissions, ","),
		"expires_at", cmdutil.TimeCell(k.ExpiresAt), "revoked_at", cmdutil.TimeCell(k.RevokedAt),
		"created_at", cmdutil.TimeCell(&k.CreatedAt), "updated_at", cmdutil.TimeCell(&k.UpdatedAt))
}

// ListOptions configure gw keys list.
type ListOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	Scope  string
	// User filters by owner (UUID or email); instance scope only.
	User string
}

// NewCmdList builds `gw keys list`.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "list [--scope instance|org|workspace] [--user USER]",
		Short: "List management keys (metadata only; tokens are never shown again)",
		Long: `List the management keys of a scope. At instance scope the list spans every
scope, and --user (a UUID, or an email looked up among the instance's users)
shows only the keys issued to one principal.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := checkKeyScope(cmd, &opts.Scope); err != nil {
				return err
			}
			if opts.User != "" && opts.Scope != "instance" {
				return cmdutil.UsageError{Err: errors.New("--user filters instance-scope listings only: add --scope instance")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return listRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	addKeyScopeFlag(cmd, &opts.Scope)
	cmd.Flags().StringVar(&opts.User, "user", "", "only keys issued to this user or service account (UUID or email; with --scope instance)")
	return cmd
}

// instanceUserRef resolves a principal given by UUID or email among the
// instance's users.
func instanceUserRef(ctx context.Context, c *client.Client, ref string) (string, error) {
	if id, err := uuid.Parse(ref); err == nil {
		return id.String(), nil
	}
	users, err := c.ListUsers(ctx)
	if err != nil {
		return "", err
	}
	for _, u := range users {
		if strings.EqualFold(u.Email, ref) {
			return u.ID.String(), nil
		}
	}
	return "", fmt.Errorf("no user or service account has the email %s", ref)
}

func listRun(ctx context.Context, opts *ListOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	scope, err := cmdutil.ScopeFor(s, opts.Scope, "instance")
	if err != nil {
		return err
	}
	var user string
	if opts.User != "" {
		if user, err = instanceUserRef(ctx, c, opts.User); err != nil {
			return err
		}
	}
	ks, err := c.ListManagementKeys(ctx, scope, user)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, ks, func() cmdutil.Table { return namedKeyTable(ctx, cmdutil.NewNameBook(c), ks) })
}

// namedKeyTable is the list for people: scopes and owners by name (ids
// where a name cannot be read); -o json keeps the ids.
func namedKeyTable(ctx context.Context, names *cmdutil.NameBook, ks []wire.ManagementKey) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"label", "prefix", "status", "scope", "owner", "expires", "id"}}
	for _, k := range ks {
		owner := k.UserID.String()
		if k.OrgID != nil {
			owner = names.MemberName(ctx, k.OrgID.String(), owner)
		}
		t.Rows = append(t.Rows, []string{k.Label, k.Prefix, k.Status, names.ScopeLine(ctx, k.Scope), owner, cmdutil.TimeCell(k.ExpiresAt), k.ID.String()})
	}
	return t
}

// GetOptions configure gw keys get.
type GetOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	Scope  string
	ID     string
}

// NewCmdGet builds `gw keys get`.
func NewCmdGet(f *cmdutil.Factory, runF func(context.Context, *GetOptions) error) *cobra.Command {
	opts := &GetOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "get KEY [--scope instance|org|workspace]",
		Short: "Show a management key's metadata and permissions (KEY: id, label or prefix)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := checkKeyScope(cmd, &opts.Scope); err != nil {
				return err
			}
			opts.ID = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return getRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	addKeyScopeFlag(cmd, &opts.Scope)
	return cmd
}

func getRun(ctx context.Context, opts *GetOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	scope, err := cmdutil.ScopeFor(s, opts.Scope, "instance")
	if err != nil {
		return err
	}
	id, err := resolveManagementKey(ctx, c, scope, opts.ID)
	if err != nil {
		return err
	}
	k, err := c.GetManagementKey(ctx, scope, id)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, k, func() cmdutil.Table { return keyDetail(k) })
}

// CreateOptions configure gw keys create.
type CreateOptions struct {
	IO          *cmdutil.IOStreams
	Client      func() (*client.Client, cmdutil.Settings, error)
	Output      cmdutil.Output
	Scope       string
	Permissions []string
	Label       string
	ExpiresAt   *time.Time
}

// NewCmdCreate builds `gw keys create`.
func NewCmdCreate(f *cmdutil.Factory, runF func(context.Context, *CreateOptions) error) *cobra.Command {
	opts := &CreateOptions{IO: f.IO, Client: f.AuthedClient}
	var perms []string
	var expiry cmdutil.ExpiryFlags
	cmd := &cobra.Command{
		Use:   "create --permissions P1,P2 --label LABEL [--scope instance|org|workspace]",
		Short: "Issue a management key; prints its token once",
		Long: `Issue a management key at a scope, owned by you, carrying --permissions at
most (no more than your own credential holds, and no wider scope). The token
is printed once, on stdout; the server keeps only its hash.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := checkKeyScope(cmd, &opts.Scope); err != nil {
				return err
			}
			if err := cmdutil.RequireFlags(cmd.Flags(), "permissions", "label"); err != nil {
				return err
			}
			var err error
			if opts.ExpiresAt, err = expiry.Resolve(time.Now()); err != nil {
				return err
			}
			if opts.Permissions, err = cmdutil.PermissionList(perms); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return createRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	addKeyScopeFlag(cmd, &opts.Scope)
	cmd.Flags().StringSliceVar(&perms, "permissions", nil, "comma-separated permissions (see docs/permissions.md)")
	cmd.Flags().StringVar(&opts.Label, "label", "", "where the key will live, e.g. ci, laptop, data-plane (1 to 80 characters)")
	cmdutil.AddExpiryFlags(cmd, &expiry)
	return cmd
}

func createRun(ctx context.Context, opts *CreateOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	scope, err := cmdutil.ScopeFor(s, opts.Scope, "instance")
	if err != nil {
		return err
	}
	k, err := c.CreateManagementKey(ctx, scope, wire.ManagementKeyCreate{Permissions: opts.Permissions, Label: opts.Label, ExpiresAt: opts.ExpiresAt})
	if err != nil {
		return err
	}
	if opts.Output.Format == cmdutil.OutputTable {
		fmt.Fprintf(opts.IO.ErrOut, "Issued management key %s (%s), scope %s.\n", k.ID, k.Prefix, keyScopeCell(k))
	}
	return opts.Output.PrintOnce(opts.IO, "management key", k.Token, k, func() cmdutil.Table { return keyDetail(k) })
}

// RevokeOptions configure gw keys revoke.
type RevokeOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	Scope  string
	ID     string
	Yes    bool
}

// NewCmdRevoke builds `gw keys revoke`.
func NewCmdRevoke(f *cmdutil.Factory, runF func(context.Context, *RevokeOptions) error) *cobra.Command {
	opts := &RevokeOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "revoke KEY [--scope instance|org|workspace]",
		Short: "Revoke a management key (id, label or prefix; idempotent); anything using it stops working",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := checkKeyScope(cmd, &opts.Scope); err != nil {
				return err
			}
			opts.ID = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return revokeRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	addKeyScopeFlag(cmd, &opts.Scope)
	cmdutil.AddYesFlag(cmd, &opts.Yes)
	return cmd
}

func revokeRun(ctx context.Context, opts *RevokeOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	scope, err := cmdutil.ScopeFor(s, opts.Scope, "instance")
	if err != nil {
		return err
	}
	id, err := resolveManagementKey(ctx, c, scope, opts.ID)
	if err != nil {
		return err
	}
	if err := cmdutil.Confirm(opts.IO, fmt.Sprintf("Revoke management key %s? Anything using it stops working.", cmdutil.DescribeForPrompt(opts.IO, opts.Yes, opts.ID, func() (string, error) {
		k, err := c.GetManagementKey(ctx, scope, id)
		return fmt.Sprintf("%q (%s…, %s)", k.Label, k.Prefix, k.Status), err
	})), opts.Yes); err != nil {
		return err
	}
	k, err := c.RevokeManagementKey(ctx, scope, id)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, k, func() cmdutil.Table { return keyDetail(k) })
}
