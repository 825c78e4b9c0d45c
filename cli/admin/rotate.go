package admin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/dbflags"
	"github.com/gw-gateway/gw/server/reseal"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
)

// RotateSecretKeyOptions configure gw admin rotate-secret-key.
type RotateSecretKeyOptions struct {
	IO *cmdutil.IOStreams
	dbflags.DBOptions
	dbflags.SecretOptions
	// NewKeyFile holds the new key; empty generates one (file-based keys).
	NewKeyFile string
}

// NewCmdRotateSecretKey builds `gw admin rotate-secret-key`.
func NewCmdRotateSecretKey(f *cmdutil.Factory, runF func(context.Context, *RotateSecretKeyOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rotate-secret-key",
		Short: "Re-seal every stored secret with a new secret key",
		Long: `Rotate the key that seals provider secrets and the bundle signing key.

With a key file (the default), a new key is generated (or read from
--new-key-file), written beside the old one as secret.key.next, every sealed
value is re-sealed with it in one transaction, and the files are switched:
secret.key becomes the new key, secret.key.previous the old. A rotation cut
short can simply be run again; the server opens values sealed with either key
meanwhile.

With GW_SECRET_KEY, pass the new key in --new-key-file and set GW_SECRET_KEY
to it before restarting the servers.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := cmdutil.NewViper(cmd)
			if err != nil {
				return err
			}
			db := dbflags.ReadDBOptions(v)
			opts := &RotateSecretKeyOptions{IO: f.IO, DBOptions: db, SecretOptions: dbflags.ReadSecretOptions(v, db), NewKeyFile: v.GetString("new-key-file")}
			if opts.Key != "" && opts.NewKeyFile == "" {
				return cmdutil.UsageError{Err: errors.New("the secret key comes from GW_SECRET_KEY: give the new key with --new-key-file")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return rotateSecretKeyRun(cmd.Context(), opts)
		},
	}
	dbflags.AddDBFlags(cmd)
	dbflags.AddSecretFlags(cmd)
	cmd.Flags().String("new-key-file", "", "file holding the new key (64 hex digits); generated when omitted")
	return cmd
}

func rotateSecretKeyRun(ctx context.Context, opts *RotateSecretKeyOptions) error {
	// The server's database and key first: a wrong --data-dir must not
	// leave a fresh database or key files behind (issue 26, row 7), and
	// loading a key file that is not there would generate one.
	db, err := dbflags.OpenServerDB(ctx, opts.DBOptions)
	if err != nil {
		return err
	}
	defer db.Close()
	if opts.Key == "" {
		if _, err := os.Stat(opts.KeyFile); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("no secret key at %s; pass the running server's --secret-key-file (or GW_SECRET_KEY)", opts.KeyFile)
		}
	}
	old, err := dbflags.LoadKeyring(opts.SecretOptions)
	if err != nil {
		return err
	}
	files := secrets.KeyFiles{Current: opts.KeyFile}
	var next secrets.Key
	if opts.NewKeyFile != "" {
		raw, err := os.ReadFile(opts.NewKeyFile)
		if err != nil {
			return fmt.Errorf("read new key: %w", err)
		}
		if next, err = secrets.ParseKey(string(raw)); err != nil {
			return fmt.Errorf("%s: %w", opts.NewKeyFile, err)
		}
	} else if next, err = secrets.GenerateKey(); err != nil {
		return err
	}
	fileBased := opts.Key == ""
	if fileBased {
		// Written before any value is re-sealed, so a crash leaves a key
		// for everything in the database.
		if err := secrets.WriteKeyFile(files.Next(), next); err != nil {
			return err
		}
	}
	if _, err := store.Migrate(ctx, db); err != nil {
		return err
	}
	// Values sealed with any key of the old ring (an interrupted earlier
	// rotation included) still open.
	ring := secrets.NewKeyring(next, old.Keys()...)
	st := store.New(db)
	defer st.Close() // before db.Close: the writers' connection goes back first
	n, err := reseal.All(ctx, st, ring)
	if err != nil {
		return fmt.Errorf("re-seal: %w", err)
	}
	if fileBased {
		if err := os.Rename(files.Current, files.Previous()); err != nil {
			return fmt.Errorf("keep old key: %w", err)
		}
		if err := os.Rename(files.Next(), files.Current); err != nil {
			return fmt.Errorf("install new key: %w", err)
		}
		fmt.Fprintf(opts.IO.Out, "re-sealed %d secrets with key %s; the old key is in %s (delete it once every server runs with the new one)\n",
			n, next.ID, files.Previous())
		return nil
	}
	fmt.Fprintf(opts.IO.Out, "re-sealed %d secrets with key %s; set GW_SECRET_KEY to the new key and restart the servers\n", n, next.ID)
	return nil
}
