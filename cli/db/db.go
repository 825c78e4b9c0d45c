// Package db is `gw db`: the database's migrations.
package db

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/dbflags"
	"github.com/gw-gateway/gw/server/store"
)

// NewCmd builds `gw db migrate|status` for operators.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "db", Short: "Inspect and migrate the database"}
	migrate := &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending migrations (gw serve also does this at start)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := cmdutil.NewViper(cmd)
			if err != nil {
				return err
			}
			db, err := dbflags.OpenDB(cmd.Context(), dbflags.ReadDBOptions(v))
			if err != nil {
				return err
			}
			defer db.Close()
			applied, err := store.Migrate(cmd.Context(), db)
			if err != nil {
				return err
			}
			if len(applied) == 0 {
				fmt.Fprintln(f.IO.Out, "database is up to date")
			}
			for _, name := range applied {
				fmt.Fprintln(f.IO.Out, "applied", name)
			}
			return nil
		},
	}
	dbflags.AddDBFlags(migrate)
	cmd.AddCommand(migrate, NewCmdStatus(f, nil))
	return cmd
}

// StatusOptions configure `gw db status`.
type StatusOptions struct {
	IO *cmdutil.IOStreams
	dbflags.DBOptions
	Output cmdutil.Output
}

// MigrationState is one migration as `gw db status -o json|yaml` shows it.
type MigrationState struct {
	Name    string `json:"name"`
	Applied bool   `json:"applied"`
}

// NewCmdStatus builds `gw db status`. It only reads: a database that is
// not there is an error, never created.
func NewCmdStatus(f *cmdutil.Factory, runF func(context.Context, *StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List migrations and whether each is applied",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			v, err := cmdutil.NewViper(cmd)
			if err != nil {
				return err
			}
			opts.DBOptions = dbflags.ReadDBOptions(v)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return statusRun(cmd.Context(), opts)
		},
	}
	dbflags.AddDBFlags(cmd)
	cmdutil.AddOutput(cmd, &opts.Output)
	return cmd
}

func statusRun(ctx context.Context, opts *StatusOptions) error {
	db, err := dbflags.OpenExistingDB(ctx, opts.DBOptions)
	if err != nil {
		return err
	}
	defer db.Close()
	st, err := store.Status(ctx, db)
	if err != nil {
		return err
	}
	states := make([]MigrationState, len(st))
	for i, m := range st {
		states[i] = MigrationState{Name: m.Name, Applied: m.Applied}
	}
	return opts.Output.Print(opts.IO, states, func() cmdutil.Table {
		t := cmdutil.Table{Headers: []string{"state", "migration"}, Empty: "no migrations"}
		for _, m := range states {
			state := "pending"
			if m.Applied {
				state = "applied"
			}
			t.Rows = append(t.Rows, []string{state, m.Name})
		}
		return t
	})
}
