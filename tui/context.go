package tui

import (
	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
)

// ProgramContext is what the root model shares with every component, as in
// gh-dash: the screen size, the styles, the keys, and the names resolved
// for the ids a breakdown shows. Components hold a pointer to it and read
// it when they render; only the root writes it.
type ProgramContext struct {
	Width, Height int
	Styles        Styles
	Keys          KeyMap
	// Labels maps ids (workspaces, members, inference keys) to names; ids
	// without a name are shown as they are.
	Labels map[string]string
}

// Label names an id for a person: its resolved name, "(none)" for the
// empty key under which a breakdown counts requests without that
// dimension (e.g. no owner), else the id itself.
func (c *ProgramContext) Label(id string) string {
	if id == "" {
		return "(none)"
	}
	if name, ok := c.Labels[id]; ok && name != "" {
		return name
	}
	return id
}

// component is one part of the screen. Like soft-serve's common.Component,
// it is a bubbletea model that also knows its size and its own keys, so
// the root can lay out the screen and build the help line from the parts.
type component interface {
	tea.Model
	help.KeyMap
	SetSize(width, height int)
}

// Styles are the dashboard's colours and emphasis. They use the terminal's
// 16 ANSI colours, so they follow the user's theme on light and dark
// backgrounds alike.
type Styles struct {
	Title    lipgloss.Style
	Faint    lipgloss.Style
	Bold     lipgloss.Style
	Error    lipgloss.Style
	Notice   lipgloss.Style
	Up       lipgloss.Style
	Down     lipgloss.Style
	Box      lipgloss.Style
	Section  lipgloss.Style
	Header   lipgloss.Style
	Cell     lipgloss.Style
	Selected lipgloss.Style
	Axis     lipgloss.Style
	Bar      lipgloss.Style
}

// DefaultStyles are the dashboard's styles.
func DefaultStyles() Styles {
	return Styles{
		Title:    lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("6")),
		Faint:    lipgloss.NewStyle().Faint(true),
		Bold:     lipgloss.NewStyle().Bold(true),
		Error:    lipgloss.NewStyle().Foreground(lipgloss.Color("1")),
		Notice:   lipgloss.NewStyle().Foreground(lipgloss.Color("3")),
		Up:       lipgloss.NewStyle().Foreground(lipgloss.Color("3")),
		Down:     lipgloss.NewStyle().Foreground(lipgloss.Color("4")),
		Box:      lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(lipgloss.Color("8")).Padding(0, 1),
		Section:  lipgloss.NewStyle().Bold(true),
		Header:   lipgloss.NewStyle().Bold(true).Padding(0, 1),
		Cell:     lipgloss.NewStyle().Padding(0, 1),
		Selected: lipgloss.NewStyle().Reverse(true),
		Axis:     lipgloss.NewStyle().Foreground(lipgloss.Color("8")),
		Bar:      lipgloss.NewStyle().Foreground(lipgloss.Color("6")),
	}
}

// KeyMap holds the root's keys; the chart and the breakdown table bring
// their own (ShortHelp/FullHelp of each component).
type KeyMap struct {
	Period    key.Binding
	PeriodN   key.Binding // 1–4 pick a period directly; matched by digit in the root
	Workspace key.Binding
	ClearAll  key.Binding
	Refresh   key.Binding
	Help      key.Binding
	Quit      key.Binding
	Metric    key.Binding
	NextBy    key.Binding
	PrevBy    key.Binding
	FilterRow key.Binding
}

// DefaultKeyMap is the dashboard's keys. None of them collides with the
// breakdown table's navigation keys (arrows, j/k, b/f, u/d, g/G, space),
// which the root passes on to the table.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Period:    key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "next period")),
		PeriodN:   key.NewBinding(key.WithKeys("1", "2", "3", "4"), key.WithHelp("1-4", "period")),
		Workspace: key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "workspace")),
		ClearAll:  key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "clear filters")),
		Refresh:   key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "refresh")),
		Help:      key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "more")),
		Quit:      key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Metric:    key.NewBinding(key.WithKeys("m"), key.WithHelp("m", "metric")),
		NextBy:    key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "breakdown")),
		PrevBy:    key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous breakdown")),
		FilterRow: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "filter")),
	}
}
