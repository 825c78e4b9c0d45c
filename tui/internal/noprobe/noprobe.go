// Package noprobe keeps bubbletea v1's package initialisation from
// querying the terminal.
//
// bubbletea's init asks lipgloss for the terminal's background colour, so
// that the answer arrives before a program takes the terminal over. It
// runs in every gw command, not only in the dashboard: on a terminal that
// does not answer, each command waited termenv's 5 s timeout and left the
// query's escape bytes in its output.
//
// termenv never queries when TERM is "dumb". Go initialises packages in
// import-path order, each as soon as its imports are initialised (the
// spec's "Package initialization"); this package imports only "os", which
// termenv imports too, and its path sorts before github.com/muesli/termenv,
// so its init runs before termenv's, lipgloss's and bubbletea's. It sets
// TERM=dumb; Restore, called from package tui's init (which runs after
// bubbletea's, since tui imports it), puts TERM back. The dashboard then
// asks the terminal itself, just before it starts (tui.Run).
package noprobe

import "os"

var (
	term, hadTerm = os.LookupEnv("TERM")
	restored      bool
)

func init() {
	os.Setenv("TERM", "dumb")
}

// Restore puts TERM back as the process was given it. Calls after the
// first do nothing, so a TERM set later by the program is kept.
func Restore() {
	if restored {
		return
	}
	restored = true
	if hadTerm {
		os.Setenv("TERM", term)
	} else {
		os.Unsetenv("TERM")
	}
}
