package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// NewCmdKeys builds `gw keys`, the management keys.
func NewCmdKeys(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Manage management keys (sk-cp-…) at instance, organization or workspace scope",
	}
	cmd.AddCommand(
		NewCmdKeysList(f, nil),
		NewCmdKeysGet(f, nil),
		NewCmdKeysCreate(f, nil),
		NewCmdKeysRevoke(f, nil),
	)
	return cmd
}

func addKeyScopeFlag(cmd *cobra.Command, scope *string) {
	cmd.Flags().StringVar(scope, "scope", "org", "where the keys live: instance, org or workspace (default org, or workspace when --workspace is given; org and workspace from --org/--workspace or the context)")
}

func checkKeyScope(cmd *cobra.Command, scope *string) error {
	return checkScope(cmd, scope, "instance", "org", "workspace")
}

func keyScopeCell(k wire.ManagementKey) string {
	switch {
	case k.Scope.WorkspaceID != nil:
		return "workspace:" + k.Scope.WorkspaceID.String()
	case k.Scope.OrgID != nil:
		return "organization:" + k.Scope.OrgID.String()
	}
	return orDash(k.Scope.Level)
}

func keyDetail(k wire.ManagementKey) Table {
	return detailTable("id", k.ID.String(), "prefix", k.Prefix, "label", k.Label, "status", k.Status,
		"scope", k.Scope.Level, "org_id", uuidCell(k.OrgID), "workspace_id", uuidCell(k.WorkspaceID),
		"user_id", k.UserID.String(), "parent_id", uuidCell(k.ParentID), "permissions", strings.Join(k.Permissions, ","),
		"expires_at", timeCell(k.ExpiresAt), "revoked_at", timeCell(k.RevokedAt),
		"created_at", timeCell(&k.CreatedAt), "updated_at", timeCell(&k.UpdatedAt))
}

// KeysListOptions configure gw keys list.
type KeysListOptions struct {
	f      *Factory
	Output string
	Scope  string
	// User filters by owner (UUID or email); instance scope only.
	User string
}

// NewCmdKeysList builds `gw keys list`.
func NewCmdKeysList(f *Factory, runF func(context.Context, *KeysListOptions) error) *cobra.Command {
	opts := &KeysListOptions{f: f}
	cmd := &cobra.Command{
		Use:   "list [--scope instance|org|workspace] [--user USER]",
		Short: "List management keys (metadata only; tokens are never shown again)",
		Long: `List the management keys of a scope. At instance scope the list spans every
scope, and --user (a UUID, or an email looked up among the instance's users)
shows only the keys issued to one principal.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			if err := checkKeyScope(cmd, &opts.Scope); err != nil {
				return err
			}
			if opts.User != "" && opts.Scope != "instance" {
				return usageError{errors.New("--user filters instance-scope listings only: add --scope instance")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return keysListRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
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

func keysListRun(ctx context.Context, opts *KeysListOptions) error {
	c, s, err := opts.f.AuthedClient()
	if err != nil {
		return err
	}
	scope, err := scopeFor(s, opts.Scope, "instance")
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
	return opts.f.Print(opts.Output, ks, func() Table { return namedKeyTable(ctx, newNameBook(c), ks) })
}

// namedKeyTable is the list for people: scopes and owners by name (ids
// where a name cannot be read); -o json keeps the ids.
func namedKeyTable(ctx context.Context, names *nameBook, ks []wire.ManagementKey) Table {
	t := Table{Headers: []string{"label", "prefix", "status", "scope", "owner", "expires", "id"}}
	for _, k := range ks {
		owner := k.UserID.String()
		if k.OrgID != nil {
			owner = names.memberName(ctx, k.OrgID.String(), owner)
		}
		t.Rows = append(t.Rows, []string{k.Label, k.Prefix, k.Status, names.scopeLine(ctx, k.Scope), owner, timeCell(k.ExpiresAt), k.ID.String()})
	}
	return t
}

// KeysGetOptions configure gw keys get.
type KeysGetOptions struct {
	f      *Factory
	Output string
	Scope  string
	ID     string
}

// NewCmdKeysGet builds `gw keys get`.
func NewCmdKeysGet(f *Factory, runF func(context.Context, *KeysGetOptions) error) *cobra.Command {
	opts := &KeysGetOptions{f: f}
	cmd := &cobra.Command{
		Use:   "get KEY [--scope instance|org|workspace]",
		Short: "Show a management key's metadata and permissions (KEY: id, label or prefix)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			if err := checkKeyScope(cmd, &opts.Scope); err != nil {
				return err
			}
			opts.ID = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return keysGetRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	addKeyScopeFlag(cmd, &opts.Scope)
	return cmd
}

func keysGetRun(ctx context.Context, opts *KeysGetOptions) error {
	c, s, err := opts.f.AuthedClient()
	if err != nil {
		return err
	}
	scope, err := scopeFor(s, opts.Scope, "instance")
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
	return opts.f.Print(opts.Output, k, func() Table { return keyDetail(k) })
}

// KeysCreateOptions configure gw keys create.
type KeysCreateOptions struct {
	f           *Factory
	Output      string
	Scope       string
	Permissions []string
	Label       string
	ExpiresAt   *time.Time
}

// NewCmdKeysCreate builds `gw keys create`.
func NewCmdKeysCreate(f *Factory, runF func(context.Context, *KeysCreateOptions) error) *cobra.Command {
	opts := &KeysCreateOptions{f: f}
	var perms []string
	var expiry expiryFlags
	cmd := &cobra.Command{
		Use:   "create --permissions P1,P2 --label LABEL [--scope instance|org|workspace]",
		Short: "Issue a management key; prints its token once",
		Long: `Issue a management key at a scope, owned by you, carrying --permissions at
most (no more than your own credential holds, and no wider scope). The token
is printed once, on stdout; the server keeps only its hash.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			if err := checkKeyScope(cmd, &opts.Scope); err != nil {
				return err
			}
			if err := requireFlags(cmd.Flags(), "permissions", "label"); err != nil {
				return err
			}
			var err error
			if opts.ExpiresAt, err = expiry.Resolve(time.Now()); err != nil {
				return err
			}
			if opts.Permissions, err = permissionList(perms); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return keysCreateRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	addKeyScopeFlag(cmd, &opts.Scope)
	cmd.Flags().StringSliceVar(&perms, "permissions", nil, "comma-separated permissions (see docs/permissions.md)")
	cmd.Flags().StringVar(&opts.Label, "label", "", "where the key will live, e.g. ci, laptop, data-plane (1 to 80 characters)")
	addExpiryFlags(cmd, &expiry)
	return cmd
}

func keysCreateRun(ctx context.Context, opts *KeysCreateOptions) error {
	c, s, err := opts.f.AuthedClient()
	if err != nil {
		return err
	}
	scope, err := scopeFor(s, opts.Scope, "instance")
	if err != nil {
		return err
	}
	k, err := c.CreateManagementKey(ctx, scope, wire.ManagementKeyCreate{Permissions: opts.Permissions, Label: opts.Label, ExpiresAt: opts.ExpiresAt})
	if err != nil {
		return err
	}
	if opts.Output == OutputTable {
		fmt.Fprintf(opts.f.IO.ErrOut, "Issued management key %s (%s), scope %s.\n", k.ID, k.Prefix, keyScopeCell(k))
	}
	return printOnce(opts.f, opts.Output, "management key", k.Token, k, func() Table { return keyDetail(k) })
}

// KeysRevokeOptions configure gw keys revoke.
type KeysRevokeOptions struct {
	f      *Factory
	Output string
	Scope  string
	ID     string
	Yes    bool
}

// NewCmdKeysRevoke builds `gw keys revoke`.
func NewCmdKeysRevoke(f *Factory, runF func(context.Context, *KeysRevokeOptions) error) *cobra.Command {
	opts := &KeysRevokeOptions{f: f}
	cmd := &cobra.Command{
		Use:   "revoke KEY [--scope instance|org|workspace]",
		Short: "Revoke a management key (id, label or prefix; idempotent); anything using it stops working",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			if err := checkKeyScope(cmd, &opts.Scope); err != nil {
				return err
			}
			opts.ID = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return keysRevokeRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	addKeyScopeFlag(cmd, &opts.Scope)
	addYesFlag(cmd, &opts.Yes)
	return cmd
}

func keysRevokeRun(ctx context.Context, opts *KeysRevokeOptions) error {
	c, s, err := opts.f.AuthedClient()
	if err != nil {
		return err
	}
	scope, err := scopeFor(s, opts.Scope, "instance")
	if err != nil {
		return err
	}
	id, err := resolveManagementKey(ctx, c, scope, opts.ID)
	if err != nil {
		return err
	}
	if err := opts.f.Confirm(fmt.Sprintf("Revoke management key %s? Anything using it stops working.", describeForPrompt(opts.f.IO, opts.Yes, opts.ID, func() (string, error) {
		k, err := c.GetManagementKey(ctx, scope, id)
		return fmt.Sprintf("%q (%s…, %s)", k.Label, k.Prefix, k.Status), err
	})), opts.Yes); err != nil {
		return err
	}
	k, err := c.RevokeManagementKey(ctx, scope, id)
	if err != nil {
		return err
	}
	return opts.f.Print(opts.Output, k, func() Table { return keyDetail(k) })
}
