package cmdutil

import "github.com/spf13/cobra"

// One confirmation rule holds for every command that destroys something
// on the server (deletes, removes, revokes, retires, or prunes what a file
// does not list): it asks on a terminal, naming what goes, and without a
// terminal it refuses (exit 2) unless --yes is given, so a script never
// deletes by accident and never hangs on a question (issue 26, row 4).
// The question is Factory.Confirm; the flag is AddYesFlag. A prune that
// finds nothing to delete has nothing to confirm. gw context delete and
// gw logout are outside the rule: they act on the caller's own
// configuration and credential, which gw login gives back.

// AddYesFlag is the --yes (-y) of every destructive command.
func AddYesFlag(cmd *cobra.Command, yes *bool) {
	cmd.Flags().BoolVarP(yes, "yes", "y", false, "do not ask for confirmation (needed without a terminal)")
}
