package tui

import (
	"io"

	"github.com/charmbracelet/lipgloss"

	"github.com/gw-gateway/gw/tui/internal/noprobe"
)

// bubbletea's init has run by now (this package imports it) without
// querying the terminal; see package noprobe.
func init() { noprobe.Restore() }

// queryTerminal gives lipgloss a renderer on out that asks the terminal
// for its colours now, before the program takes the terminal over (then
// the answer would be read as key presses). The default renderer's answer
// was fixed at init without asking, and only the dashboard should ask.
func queryTerminal(out io.Writer) {
	r := lipgloss.NewRenderer(out)
	r.HasDarkBackground()
	lipgloss.SetDefaultRenderer(r)
}
