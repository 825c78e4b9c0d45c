// Package admin is `gw admin`: operator commands on the database itself (recovery keys, secret-key rotation).
package admin

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/dbflags"
	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
)

// CreateKeyOptions configure gw admin create-key.
type CreateKeyOptions struct {
	IO *cmdutil.IOStreams
	dbflags.DBOptions
	Email       string
	Permissions []string
	Label       string
}

// NewCmd builds `gw admin`, the operator's direct-database commands.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "admin", Short: "Operator commands that work on the database directly"}
	cmd.AddCommand(NewCmdCreateKey(f, nil), NewCmdRotateSecretKey(f, nil))
	return cmd
}

// NewCmdCreateKey builds `gw admin create-key`.
func NewCmdCreateKey(f *cmdutil.Factory, runF func(context.Context, *CreateKeyOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create-key",
		Short: "Print a new instance-scope management key (recovery; needs database access)",
		Long: `Mint an instance-scope management key directly in the database and print it
once. For recovery when no credential is left; the key belongs to an instance
owner (--email, or the first owner). --data-dir (or --database-url) must name
the running server's database: a place with no gw database is refused, never
created.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := cmdutil.NewViper(cmd)
			if err != nil {
				return err
			}
			opts := &CreateKeyOptions{IO: f.IO, DBOptions: dbflags.ReadDBOptions(v), Email: v.GetString("email"), Label: v.GetString("label")}
			for _, p := range v.GetStringSlice("permissions") {
				if p = strings.TrimSpace(p); p != "" {
					opts.Permissions = append(opts.Permissions, p)
				}
			}
			if len(opts.Permissions) == 0 {
				opts.Permissions = auth.Names()
			}
			for _, p := range opts.Permissions {
				if !auth.Known(p) {
					return cmdutil.UsageError{Err: fmt.Errorf("unknown permission %q (see docs/permissions.md)", p)}
				}
			}
			if opts.Label == "" {
				return cmdutil.UsageError{Err: fmt.Errorf("--label is required")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return createKeyRun(cmd.Context(), opts)
		},
	}
	dbflags.AddDBFlags(cmd)
	cmd.Flags().StringSlice("permissions", nil, "comma-separated permissions (default: all 31)")
	cmd.Flags().String("label", "", "where the key will live, e.g. recovery (1 to 80 characters)")
	cmd.Flags().String("email", "", "instance owner or admin who owns the key (default: the first owner)")
	return cmd
}

func createKeyRun(ctx context.Context, opts *CreateKeyOptions) error {
	db, err := dbflags.OpenServerDB(ctx, opts.DBOptions)
	if err != nil {
		return err
	}
	defer db.Close()
	// A server's database, maybe of an older gw: bring it up to this one.
	if _, err := store.Migrate(ctx, db); err != nil {
		return err
	}
	st := store.New(db)
	defer st.Close() // before db.Close: the writers' connection goes back first
	k, token, err := backend.CreateRecoveryKey(ctx, st, backend.System("gw admin create-key"), opts.Email, opts.Permissions, opts.Label)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "created instance key %s (%s) for user %s; it is shown only once:\n", k.ID, k.Prefix, k.UserID)
	_, err = fmt.Fprintln(opts.IO.Out, token)
	return err
}
