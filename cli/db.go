package cli

import (
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
	status := &cobra.Command{
		Use:   "status",
		Short: "List migrations and whether each is applied",
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
			st, err := store.Status(cmd.Context(), db)
			if err != nil {
				return err
			}
			for _, m := range st {
				state := "pending"
				if m.Applied {
					state = "applied"
				}
				fmt.Fprintf(f.IO.Out, "%-8s %s\n", state, m.Name)
			}
			return nil
		},
	}
	addDBFlags(migrate)
	addDBFlags(status)
	cmd.AddCommand(migrate, status)
	return cmd
}
