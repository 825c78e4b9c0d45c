package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/server/store"
)

// NewCmdDB builds `gw db migrate|status` for operators.
func NewCmdDB(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "db", Short: "Inspect and migrate the database"}
	migrate := &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending migrations (gw serve also does this at start)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := newViper(cmd)
			if err != nil {
				return err
			}
			db, err := openDB(cmd.Context(), readDBOptions(v))
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
	addDBFlags(migrate)
	cmd.AddCommand(migrate, NewCmdDBStatus(f, nil))
	return cmd
}

// DBStatusOptions configure `gw db status`.
type DBStatusOptions struct {
	DBOptions
	Output string
}

// MigrationState is one migration as `gw db status -o json|yaml` shows it.
type MigrationState struct {
	Name    string `json:"name"`
	Applied bool   `json:"applied"`
}

// NewCmdDBStatus builds `gw db status`. It only reads: a database that is
// not there is an error, never created.
func NewCmdDBStatus(f *Factory, runF func(context.Context, *DBStatusOptions) error) *cobra.Command {
	opts := &DBStatusOptions{}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List migrations and whether each is applied",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			v, err := newViper(cmd)
			if err != nil {
				return err
			}
			opts.DBOptions = readDBOptions(v)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return dbStatusRun(cmd.Context(), f, opts)
		},
	}
	addDBFlags(cmd)
	addOutputFlag(cmd, &opts.Output)
	return cmd
}

func dbStatusRun(ctx context.Context, f *Factory, opts *DBStatusOptions) error {
	db, err := openExistingDB(ctx, opts.DBOptions)
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
	return f.Print(opts.Output, states, func() Table {
		t := Table{Headers: []string{"state", "migration"}, Empty: "no migrations"}
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
